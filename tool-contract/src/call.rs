//! The call context a tool's body sees during one attempt.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::key::IntentKey;

/// What the body of a tool can know about the attempt it runs in.
///
/// Send [`Call::key`] downstream as the `Idempotency-Key` header so the receiver can deduplicate.
#[derive(Debug, Clone)]
pub struct Call {
    pub(crate) task_id: Arc<str>,
    pub(crate) key: IntentKey,
    pub(crate) attempt: u32,
    pub(crate) attempt_id: Arc<str>,
    pub(crate) deadline: Instant,
}

impl Call {
    /// A call context for driving a tool body by hand (tests, adapters).
    pub fn new(task_id: &str, key: IntentKey, attempt: u32, budget: Duration) -> Call {
        let now = Instant::now();
        Call {
            task_id: task_id.into(),
            key,
            attempt,
            attempt_id: attempt_id(task_id, &key, attempt).into(),
            deadline: now.checked_add(budget).unwrap_or(now),
        }
    }

    /// The intent key, the same on every attempt of the intent.
    pub fn key(&self) -> IntentKey {
        self.key
    }

    /// The attempt number, from 1; it continues across restarts when the task has an attempt log.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// `{task}-{first 8 hex of the key}-a{attempt}`: unique across the intents of a task.
    pub fn attempt_id(&self) -> &str {
        &self.attempt_id
    }

    /// The task this attempt works for.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// How long this attempt may still run before it is cancelled.
    pub fn budget_left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// `{task}-{first 8 hex of the key}-a{n}`.
pub(crate) fn attempt_id(task: &str, key: &IntentKey, attempt: u32) -> String {
    let hex = key.hex();
    let mut id = String::with_capacity(task.len() + 12 + 10);
    id.push_str(task);
    id.push('-');
    // The digits are ASCII by construction.
    id.push_str(std::str::from_utf8(&hex[..8]).unwrap_or_default());
    id.push_str("-a");
    crate::text::push_decimal(&mut id, u64::from(attempt));
    id
}
