//! What `#[tool]` writes, by hand. `post_notice` and `post_notice_by_hand` are the same tool: the
//! attribute turns the author's `async fn` into a wrapper that takes the task in place of the call
//! context and returns a `Report`, and runs the body once per attempt through the engine.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tool_contract::{
    Call, Class, Classify, EffectKind, IntentKey, Probe, Report, Task, ToolSpec, engine, tool,
};

/// A support thread.
#[derive(Clone, Debug)]
pub struct ThreadId(u32);

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread-{}", self.0)
    }
}

/// A posted notice.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct NoticeId(u64);

/// What went wrong.
pub enum ThreadError {
    /// The reply was lost after the notice was sent.
    Dropped,
}

impl Classify for ThreadError {
    fn classify(&self) -> Class {
        match self {
            ThreadError::Dropped => Class::unknown("connection dropped after the notice was sent"),
        }
    }
}

/// Finds the notice carrying `key`.
pub async fn notice_landed(thread: &ThreadId, text: &String, key: IntentKey) -> Probe<NoticeId> {
    let _ = (text, key);
    Probe::Landed(NoticeId(u64::from(thread.0)))
}

/// Post a notice to a support thread.
#[tool(effect = "send", probe = notice_landed, target = thread, deadline_floor = "2s")]
pub async fn post_notice(call: &Call, thread: ThreadId, text: String) -> Result<NoticeId, ThreadError> {
    let _ = (call, thread, text);
    Err(ThreadError::Dropped)
}

/// The wrapper `#[tool]` generates for `post_notice`, written out.
pub async fn post_notice_by_hand(task: &Task, thread: ThreadId, text: String) -> Report<NoticeId> {
    // Everything the attribute says, as a constant.
    const SPEC: ToolSpec =
        ToolSpec::new("post_notice", EffectKind::Send).deadline_floor(Duration::from_millis(2000));
    // `target = thread` (no `slot`): the key depends on the intent, never on the text.
    let key = task.key(&SPEC, &thread, None);
    engine::run(
        task,
        &SPEC,
        key,
        // One attempt: fresh copies of the arguments (so tool arguments are `Clone`), the author's
        // body with `call` lent to it.
        |call: Call| {
            let thread = thread.clone();
            let text = text.clone();
            async move {
                let call = &call;
                let _ = (call, thread, text);
                Err::<NoticeId, ThreadError>(ThreadError::Dropped)
            }
        },
        // The probe: the same arguments by reference, then the key.
        |key: IntentKey| {
            let (thread, text) = (&thread, &text);
            async move { notice_landed(thread, text, key).await }
        },
    )
    .await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("ticket-5", "agent:support", Duration::from_secs(30));
    let generated = post_notice(&task, ThreadId(9), "refund sent".to_owned()).await;
    let by_hand = post_notice_by_hand(&task, ThreadId(9), "refund sent".to_owned()).await;
    assert_eq!(generated.value, Some(NoticeId(9)));
    assert_eq!(
        (generated.outcome, generated.effect_applied, generated.idempotency_key, generated.value),
        (by_hand.outcome, by_hand.effect_applied, by_hand.idempotency_key, by_hand.value),
    );
}
