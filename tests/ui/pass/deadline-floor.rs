//! `deadline_floor` takes "250ms", "2s" or "1m": no attempt starts with less of the task's budget left.

use std::time::Duration;

use tool_contract::{Applied, Class, Outcome, Task, tool};

/// A read that needs at least two seconds.
#[tool(effect = "read", deadline_floor = "2s")]
pub async fn slow_report() -> Result<u32, Class> {
    Ok(7)
}

/// A read that needs at least 250 milliseconds.
#[tool(effect = "read", deadline_floor = "250ms")]
pub async fn quick_report() -> Result<u32, Class> {
    Ok(7)
}

/// A read that needs at least a minute.
#[tool(effect = "read", deadline_floor = "1m")]
pub async fn nightly_report() -> Result<u32, Class> {
    Ok(7)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("report-1", "agent", Duration::from_secs(1));
    let refused = slow_report(&task).await;
    assert_eq!((refused.outcome, refused.effect_applied), (Outcome::Retryable, Applied::No));
    assert_eq!(refused.deadline_left_s, 0);
    assert_eq!(quick_report(&task).await.value, Some(7));
    assert_eq!(nightly_report(&task).await.outcome, Outcome::Retryable);
}
