use std::fmt;

use tool_contract::{Class, IntentKey, Probe, tool};

/// A support thread, with no `Deserialize` or `JsonSchema`: a model cannot fill it in.
#[derive(Clone)]
pub struct ThreadId(u32);

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread-{}", self.0)
    }
}

/// Finds the notice carrying `key`.
pub async fn notice_landed(thread: &ThreadId, text: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, text, key);
    Probe::NotLanded
}

/// Post a notice to a support thread.
#[tool(effect = "send", probe = notice_landed, target = thread)]
pub async fn post_notice(thread: ThreadId, text: String) -> Result<u64, Class> {
    let _ = (thread, text);
    Ok(1)
}

fn main() {}
