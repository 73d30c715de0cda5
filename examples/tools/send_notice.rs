//! A `send` tool: the reply is lost after the notice was posted, the probe finds the notice by its
//! intent key, and no second notice is posted.
//!
//! `cargo run -p tool-contract-examples --example send_notice`
#![warn(clippy::pedantic)]

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_contract::classify::Classify;
use tool_contract::{Applied, Call, Class, IntentKey, Outcome, Probe, Task, tool};

/// A support thread, by number.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
pub struct ThreadId(pub u32);

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread-{}", self.0)
    }
}

/// A posted notice.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NoticeId(pub u64);

/// How posting fails.
#[derive(Debug)]
pub enum ThreadError {
    /// A moderator locked the thread.
    Locked,
    /// The reply was lost after the notice was sent.
    ReplyLost,
}

impl Classify for ThreadError {
    fn classify(&self) -> Class {
        match self {
            ThreadError::Locked => Class::permanent("the thread is locked by a moderator"),
            ThreadError::ReplyLost => Class::unknown("connection dropped after the notice was sent"),
        }
    }
}

/// The support desk: each notice with the intent key it was posted under.
static POSTED: Mutex<Vec<(ThreadId, IntentKey, String)>> = Mutex::new(Vec::new());

/// Finds the notice carrying `key` in the thread.
async fn notice_landed(thread: &ThreadId, text: &String, key: IntentKey) -> Probe<NoticeId> {
    // A real probe reads the thread over the network; this one reads memory.
    tokio::task::yield_now().await;
    let _ = text;
    let posted = POSTED.lock().unwrap();
    match posted.iter().position(|(t, k, _)| t == thread && *k == key) {
        Some(i) => Probe::Landed(NoticeId(i as u64 + 1)),
        None => Probe::NotLanded,
    }
}

/// Post a notice to a support thread.
#[tool(effect = "send", probe = notice_landed, target = thread, deadline_floor = "2s")]
pub async fn post_notice(
    call: &Call,
    /// The thread to post to.
    thread: ThreadId,
    /// The notice, as the customer will read it.
    text: String,
) -> Result<NoticeId, ThreadError> {
    if thread.0 == 0 {
        return Err(ThreadError::Locked);
    }
    POSTED.lock().unwrap().push((thread, call.key(), text));
    // The connection drops before the reply arrives.
    Err(ThreadError::ReplyLost)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("ticket-5", "agent:support", Duration::from_secs(30));
    let report = post_notice(&task, ThreadId(9), "Your refund was sent.".to_owned()).await;
    println!("{}", serde_json::to_string_pretty(&report).expect("a report serialises"));
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes));
    assert_eq!(report.value, Some(NoticeId(1)));
    assert_eq!(POSTED.lock().unwrap().len(), 1, "one notice, not two");

    let locked = post_notice(&task, ThreadId(0), "hello".to_owned()).await;
    assert_eq!((locked.outcome, locked.effect_applied), (Outcome::Permanent, Applied::No));
}

/// `cargo test` runs the example too (`test = true` in its `[[example]]`).
#[test]
fn the_example_runs() {
    main();
}
