//! The report every tool call returns: one closed contract for the caller.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::key::IntentKey;

/// What the caller should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Completed; the effect landed, if the tool has one. Continue.
    Ok,
    /// Did not complete and is likely to change; retry only under the tool's policy.
    Retryable,
    /// The same call gives the same answer; change something before calling again.
    Permanent,
    /// Cannot tell whether the effect landed; resolve it by reading the world, never by guessing.
    Unknown,
}

/// Whether the call changed the world. Independent of [`Outcome`]: a `200 queued` has applied nothing,
/// and a timeout on a POST may have applied everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Applied {
    /// The effect landed.
    Yes,
    /// Nothing was applied (always the case for a read).
    No,
    /// It may or may not have landed.
    Unknown,
    /// Bulk work: some items landed, others did not.
    Partial,
}

impl Outcome {
    /// The lowercase wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Retryable => "retryable",
            Outcome::Permanent => "permanent",
            Outcome::Unknown => "unknown",
        }
    }
}

impl Applied {
    /// The lowercase wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Applied::Yes => "yes",
            Applied::No => "no",
            Applied::Unknown => "unknown",
            Applied::Partial => "partial",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of one item of bulk work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// The caller's name for the item (a row number, an email address).
    pub id: String,
    /// What the caller should do about this item.
    pub outcome: Outcome,
    /// Whether this item's effect landed (`yes`, `no` or `unknown`; never `partial`).
    pub applied: Applied,
    /// Why it did not complete; `None` for an item that is `ok`.
    pub reason: Option<String>,
}

impl Item {
    /// An item whose effect landed.
    pub fn ok(id: impl Into<String>) -> Item {
        Item { id: id.into(), outcome: Outcome::Ok, applied: Applied::Yes, reason: None }
    }

    /// An item that was refused for good: the same item will be refused again.
    pub fn permanent(id: impl Into<String>, reason: impl Into<String>) -> Item {
        Item { id: id.into(), outcome: Outcome::Permanent, applied: Applied::No, reason: Some(reason.into()) }
    }

    /// An item that was not applied and may succeed later.
    pub fn retryable(id: impl Into<String>, reason: impl Into<String>) -> Item {
        Item { id: id.into(), outcome: Outcome::Retryable, applied: Applied::No, reason: Some(reason.into()) }
    }

    /// An item whose fate is unknown: it may have landed.
    pub fn unknown(id: impl Into<String>, reason: impl Into<String>) -> Item {
        Item {
            id: id.into(),
            outcome: Outcome::Unknown,
            applied: Applied::Unknown,
            reason: Some(reason.into()),
        }
    }
}

/// The contract every tool returns.
///
/// Its JSON form is the wire contract an agent, a model or a log reader sees:
///
/// ```
/// use tool_contract::{Applied, Outcome, Report};
///
/// let report: Report<u32> = serde_json::from_str(r#"{
///     "outcome": "retryable",
///     "effect_applied": "no",
///     "attempt_id": "ord-7741-e7196e5f-a2",
///     "idempotency_key": "e7196e5fd13c36a04d6b298b6cfad716",
///     "retry_after_s": 30,
///     "deadline_left_s": 42,
///     "message": "503 from /orders after 8.1s; no response body",
///     "value": null,
///     "items": []
/// }"#).unwrap();
/// assert_eq!(report.outcome, Outcome::Retryable);
/// assert_eq!(report.effect_applied, Applied::No);
/// assert_eq!(report.retry_after_s, Some(30));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report<T> {
    /// What the caller should do next.
    pub outcome: Outcome,
    /// Whether the world changed.
    pub effect_applied: Applied,
    /// The attempt this report speaks for (`{task}-{first 8 hex of the key}-a{n}`); empty when no
    /// attempt was started.
    pub attempt_id: String,
    /// The intent key the attempts carried downstream.
    pub idempotency_key: IntentKey,
    /// How long the service asked the caller to wait, in whole seconds.
    pub retry_after_s: Option<u64>,
    /// The task's budget left when the report was made, in whole seconds (rounded down): always the
    /// true figure. The caller stops and reports when it is `0`, or when `retry_after_s` is larger
    /// than it; never "try once more".
    pub deadline_left_s: u64,
    /// One line for the model.
    pub message: String,
    /// The tool's value, present only when the outcome is `ok`.
    pub value: Option<T>,
    /// Per-item results for bulk work; empty for a single act.
    pub items: Vec<Item>,
    /// Why the report says what it says, for code to match on (`message` is for the model and the
    /// operator, never to be parsed). Not part of the JSON contract: a report read back from JSON
    /// has [`Reason::Unrecorded`].
    #[serde(skip)]
    pub reason: Reason,
}

/// Why a report says what it says: what code matches on, as it matches on
/// [`std::io::ErrorKind`] rather than an error's text. The report's `outcome` and `effect_applied` say
/// what to do; this says which rule of the contract decided it.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::effect::EffectKind;
/// use tool_contract::probe::NoProbe;
/// use tool_contract::spec::ToolSpec;
/// use tool_contract::{Class, Reason, Task, engine};
///
/// const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let task = Task::new("ticket-5", "agent", Duration::from_secs(30));
/// let key = task.key(&SEND, &"thread-9", None);
/// let report = engine::run(&task, &SEND, key, |_| async { Err::<u64, _>(Class::unknown("reset")) }, NoProbe).await;
/// assert_eq!(report.reason, Reason::NoProbe);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Reason {
    /// An attempt answered: the tool's value.
    Done,
    /// The attempt log holds the intent as done: answered from it, nothing repeated.
    Replayed,
    /// A probe found an earlier attempt landed: not repeated.
    Landed,
    /// A person settled the intent as landed (a [`Settlement`](crate::journal::Settlement) in the attempt
    /// log): answered from it, nothing attempted and nothing probed.
    Settled,
    /// As the tool's last attempt answered (its error, classified), with nothing more to do under
    /// the policy: a `permanent` refusal, a retryable error past which no retry was due.
    Answered,
    /// The tool's attempts ran out (`max_attempts`).
    GaveUp,
    /// A `destructive` tool is never retried automatically.
    NeverRetried,
    /// A side effect has no probe to check before a second attempt, or to resolve the first.
    NoProbe,
    /// The probe could not tell whether an earlier attempt landed.
    ProbeFailed,
    /// The probe (or a person) found nothing, but the attempt's landing horizon has not passed and the
    /// budget cannot wait for it: the service may still apply the request.
    BeforeHorizon,
    /// Whether an earlier attempt landed cannot be told.
    InDoubt,
    /// The budget cannot hold the next attempt (or the wait before it): nothing more was started.
    BudgetSpent,
    /// The service asked to wait longer than the budget left (`retry_after_s`).
    AskedToWait,
    /// The service's retry budget, shared by all tasks, refused a retry.
    RetryBudgetSpent,
    /// A second attempt of a `money` tool needs an approver, and none is configured.
    NoApprover,
    /// The approver refused a second attempt, or did not answer in time.
    Denied,
    /// The attempt log could not be claimed, read or written: nothing was started.
    StoreFailed,
    /// Another worker runs this intent: nothing was started.
    Busy,
    /// Per-item results: the items say which landed (bulk work, pages).
    Items,
    /// The model's arguments did not decode: nothing was started.
    BadArguments,
    /// The report was read from JSON, which does not carry a reason.
    #[default]
    Unrecorded,
}

impl<T> Report<T> {
    /// `true` when the caller can go on with the value.
    pub fn is_ok(&self) -> bool {
        self.outcome == Outcome::Ok
    }

    /// Turn the value into another type, keeping every other field.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Report<U> {
        Report {
            outcome: self.outcome,
            effect_applied: self.effect_applied,
            attempt_id: self.attempt_id,
            idempotency_key: self.idempotency_key,
            retry_after_s: self.retry_after_s,
            deadline_left_s: self.deadline_left_s,
            message: self.message,
            value: self.value.map(f),
            items: self.items,
            reason: self.reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Intent;

    fn sample() -> Report<Vec<String>> {
        Report {
            outcome: Outcome::Unknown,
            effect_applied: Applied::Partial,
            attempt_id: "ord-7741-e7196e5f-a2".into(),
            idempotency_key: Intent::new("ord-7741", "agent:billing", "charge_card", "card-42").key(),
            retry_after_s: None,
            deadline_left_s: 0,
            message: "1 of 2 rows written; 1 unresolved".into(),
            value: None,
            items: vec![Item::ok("row-1"), Item::unknown("row-2", "connection dropped after send")],
            reason: Reason::Items,
        }
    }

    #[test]
    fn json_shape_is_the_wire_contract() {
        let json = serde_json::to_value(sample()).unwrap();
        let expected = serde_json::json!({
            "outcome": "unknown",
            "effect_applied": "partial",
            "attempt_id": "ord-7741-e7196e5f-a2",
            "idempotency_key": "e7196e5fd13c36a04d6b298b6cfad716",
            "retry_after_s": null,
            "deadline_left_s": 0,
            "message": "1 of 2 rows written; 1 unresolved",
            "value": null,
            "items": [
                {"id": "row-1", "outcome": "ok", "applied": "yes", "reason": null},
                {"id": "row-2", "outcome": "unknown", "applied": "unknown", "reason": "connection dropped after send"}
            ]
        });
        assert_eq!(json, expected);
    }

    #[test]
    fn round_trips() {
        let report = sample();
        let text = serde_json::to_string(&report).unwrap();
        let back = serde_json::from_str::<Report<Vec<String>>>(&text).unwrap();
        assert_eq!(back.reason, Reason::Unrecorded, "the reason is not on the wire");
        assert_eq!(Report { reason: report.reason, ..back }, report);
    }

    #[test]
    fn rejects_values_outside_the_closed_sets() {
        assert!(serde_json::from_str::<Outcome>("\"failed\"").is_err());
        assert!(serde_json::from_str::<Applied>("true").is_err());
        assert!(serde_json::from_str::<Outcome>("\"Ok\"").is_err());
    }
}
