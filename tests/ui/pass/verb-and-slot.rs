//! `verb` renames the act in the intent key; `slot` separates acts repeated on purpose in one task.

use std::time::Duration;

use tool_contract::key::Intent;
use tool_contract::{Call, Class, IntentKey, Probe, Task, tool};

/// Finds the reminder carrying `key`.
pub async fn reminder_landed(user: &String, n: &u32, key: IntentKey) -> Probe<IntentKey> {
    let _ = (user, n, key);
    Probe::NotLanded
}

/// Send reminder number `n` to a user.
#[tool(effect = "send", probe = reminder_landed, verb = "remind", target = user, slot = n)]
pub async fn send_reminder(call: &Call, user: String, n: u32) -> Result<IntentKey, Class> {
    let _ = (user, n);
    Ok(call.key())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("onboarding-3", "agent:crm", Duration::from_secs(10));
    let first = send_reminder(&task, "ada".to_owned(), 1).await;
    let second = send_reminder(&task, "ada".to_owned(), 2).await;
    assert_ne!(first.idempotency_key, second.idempotency_key);
    // The key is `hex(sha256("onboarding-3|agent:crm|remind|ada|1"))[..32]`, derivable in any language.
    let expected = Intent::new("onboarding-3", "agent:crm", "remind", "ada").slot("1").key();
    assert_eq!(first.idempotency_key, expected);
    assert_eq!(first.value, Some(expected));
}
