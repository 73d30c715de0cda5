//! The wrapper's future is `Send` when the arguments, the value and the error are: a tool call can be
//! spawned on a multi-threaded runtime.

use std::time::Duration;

use tool_contract::{Call, Class, IntentKey, Outcome, Probe, Task, tool};

/// A client shared between tasks.
pub struct Desk;

impl Desk {
    /// Finds the notice carrying `key`.
    pub async fn notice_landed(&self, thread: &String, text: &String, key: IntentKey) -> Probe<u64> {
        let _ = (thread, text, key);
        Probe::NotLanded
    }

    /// Post a notice.
    #[tool(effect = "send", probe = Self::notice_landed, target = thread)]
    pub async fn post_notice(&self, call: &Call, thread: String, text: String) -> Result<u64, Class> {
        tokio::task::yield_now().await;
        Ok(u64::from(call.attempt()) + thread.len() as u64 + text.len() as u64)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    static DESK: Desk = Desk;
    let task = Task::new("ticket-5", "agent:support", Duration::from_secs(10));
    let spawned = tokio::spawn(async move { DESK.post_notice(&task, "t".to_owned(), "hi".to_owned()).await });
    let report = spawned.await.unwrap();
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(4)));
}
