//! The example: a `send` tool whose probe finds the sent notice, keyed on the thread.

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_contract::classify::Classify;
use tool_contract::{Call, Class, IntentKey, Outcome, Probe, Report, Task, tool};

#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ThreadId(u32);

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread-{}", self.0)
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NoticeId(u64);

pub enum ThreadError {
    Locked,
}

impl Classify for ThreadError {
    fn classify(&self) -> Class {
        match self {
            ThreadError::Locked => Class::retryable("thread is locked"),
        }
    }
}

/// Finds the notice carrying `key` in the thread.
pub async fn notice_landed(thread: &ThreadId, text: &String, key: IntentKey) -> Probe<NoticeId> {
    let _ = (thread, text, key);
    Probe::NotLanded
}

/// Post a notice to a support thread.
#[tool(effect = "send", probe = notice_landed, target = thread, deadline_floor = "2s")]
pub async fn post_notice(call: &Call, thread: ThreadId, text: String) -> Result<NoticeId, ThreadError> {
    let _ = (call.key(), call.attempt(), call.budget_left(), &text);
    if thread.0 == 0 {
        return Err(ThreadError::Locked);
    }
    Ok(NoticeId(u64::from(thread.0) * 100 + u64::from(call.attempt())))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("ord-7741", "agent:support", Duration::from_secs(30));
    let report: Report<NoticeId> = post_notice(&task, ThreadId(9), "shipped".to_owned()).await;
    assert_eq!(report.outcome, Outcome::Ok);
    assert_eq!(report.value, Some(NoticeId(901)));
}
