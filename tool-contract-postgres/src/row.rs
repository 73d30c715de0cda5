//! A record as a row of `tool_contract.attempts`, and back.

use serde::de::DeserializeOwned;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use tool_contract::IntentKey;
use tool_contract::journal::inspect::Stored;
use tool_contract::journal::{Phase, Record, RecordRef};

/// The columns a record is written to by the parameters `$1..$15` ([`Fields::params`]).
pub(crate) const WRITTEN: &str = "intent, attempt, phase, task, tool, attempt_id, started, budget_left_s, outcome, effect_applied, \
     probe, message, retry_at, value, settled";

/// The columns a record is read from, in the order [`record_of`] reads them: [`WRITTEN`] and the
/// approval account, which only an unfenced record carries ([`Fields::approval`]).
pub(crate) const COLUMNS: &str = "intent, attempt, phase, task, tool, attempt_id, started, budget_left_s, outcome, effect_applied, \
     probe, message, retry_at, value, settled, approval";

/// How many columns [`COLUMNS`] names: what a query selects after them starts here.
pub(crate) const AFTER_COLUMNS: usize = 16;

/// A record's fields as statement parameters, copied out of the caller's record (a store that answers
/// later must not borrow it).
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    pub(crate) intent: [u8; 16],
    /// The intent as the statement parameter (`bytea` takes a slice or a `Vec`, not an array).
    intent_param: Vec<u8>,
    pub(crate) attempt: i64,
    pub(crate) attempt_id: String,
    phase: &'static str,
    task: String,
    tool: String,
    started: String,
    budget_left_s: i64,
    outcome: Option<&'static str>,
    effect_applied: Option<&'static str>,
    probe: Option<&'static str>,
    message: Option<String>,
    retry_at: Option<String>,
    value: Option<serde_json::Value>,
    settled: Option<serde_json::Value>,
    /// An approval record's account, written by [`crate::sql::append`]'s `$17` only.
    pub(crate) approval: Option<serde_json::Value>,
}

impl Fields {
    pub(crate) fn of(record: &RecordRef<'_>) -> Fields {
        Fields {
            intent: *record.intent_key.as_bytes(),
            intent_param: record.intent_key.as_bytes().to_vec(),
            attempt: i64::from(record.attempt),
            attempt_id: record.attempt_id.to_owned(),
            phase: match record.phase {
                Phase::Start => "start",
                Phase::End => "end",
                Phase::Settled => "settled",
                Phase::Approval => "approval",
            },
            task: record.task.to_owned(),
            tool: record.call.to_owned(),
            started: record.started.to_owned(),
            // A budget past 292 billion years is kept as the largest one a column holds.
            budget_left_s: i64::try_from(record.budget_left_s).unwrap_or(i64::MAX),
            outcome: record.outcome.map(|o| o.as_str()),
            effect_applied: record.effect_applied.map(|a| a.as_str()),
            probe: record.probe.map(|p| p.as_str()),
            message: record.message.map(str::to_owned),
            retry_at: record.retry_at.map(str::to_owned),
            value: record.value.cloned(),
            settled: record.settled.and_then(|settled| serde_json::to_value(settled).ok()),
            approval: record.approval.and_then(|approval| serde_json::to_value(approval).ok()),
        }
    }

    /// The parameters `$1` to `$15`, in the order of [`COLUMNS`].
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 15] {
        [
            &self.intent_param,
            &self.attempt,
            &self.phase,
            &self.task,
            &self.tool,
            &self.attempt_id,
            &self.started,
            &self.budget_left_s,
            &self.outcome,
            &self.effect_applied,
            &self.probe,
            &self.message,
            &self.retry_at,
            &self.value,
            &self.settled,
        ]
    }
}

/// The record a row of [`COLUMNS`] holds; what is wrong with it otherwise.
pub(crate) fn record_of(row: &Row) -> Result<Record, String> {
    let get = |i: usize| -> Result<Option<String>, String> {
        row.try_get::<_, Option<String>>(i).map_err(|e| format!("column {i}: {e}"))
    };
    let text = |i: usize| -> Result<String, String> { get(i)?.ok_or_else(|| format!("column {i} is null")) };
    let intent: &[u8] = row.try_get(0).map_err(|e| format!("intent: {e}"))?;
    let intent: [u8; 16] = intent.try_into().map_err(|_| format!("intent of {} bytes", intent.len()))?;
    let attempt: i64 = row.try_get(1).map_err(|e| format!("attempt: {e}"))?;
    let budget: i64 = row.try_get(7).map_err(|e| format!("budget_left_s: {e}"))?;
    let phase = match text(2)?.as_str() {
        "start" => Phase::Start,
        "end" => Phase::End,
        "settled" => Phase::Settled,
        "approval" => Phase::Approval,
        other => return Err(format!("phase {other:?}")),
    };
    let approval: Option<serde_json::Value> = row.try_get(15).map_err(|e| format!("approval: {e}"))?;
    let approval = match approval {
        Some(approval) => Some(serde_json::from_value(approval).map_err(|e| format!("approval: {e}"))?),
        None => None,
    };
    let settled: Option<serde_json::Value> = row.try_get(14).map_err(|e| format!("settled: {e}"))?;
    let settled = match settled {
        Some(settled) => Some(serde_json::from_value(settled).map_err(|e| format!("settled: {e}"))?),
        None => None,
    };
    let record = Record {
        phase,
        task: text(3)?,
        call: text(4)?,
        intent_key: key_of(intent),
        attempt: u32::try_from(attempt).map_err(|_| format!("attempt {attempt}"))?,
        attempt_id: text(5)?,
        started: text(6)?,
        budget_left_s: u64::try_from(budget).map_err(|_| format!("budget_left_s {budget}"))?,
        outcome: word(get(8)?)?,
        effect_applied: word(get(9)?)?,
        probe: word(get(10)?)?,
        message: get(11)?,
        retry_at: get(12)?,
        value: row.try_get(13).map_err(|e| format!("value: {e}"))?,
        settled,
        approval,
    };
    // The rule the fields keep together, as deserialising a record checks it.
    match record.problem() {
        Some(problem) => Err(problem),
        None => Ok(record),
    }
}

/// A row of [`COLUMNS`] followed by its owner and write time, as [`crate::sql::records`] selects it.
pub(crate) fn stored_of(row: &Row) -> Result<Stored, String> {
    Ok(Stored {
        record: record_of(row)?,
        owner: row.try_get(AFTER_COLUMNS).map_err(|e| format!("owner: {e}"))?,
        written_at: row.try_get(AFTER_COLUMNS + 1).map_err(|e| format!("written_at: {e}"))?,
    })
}

/// The key of 16 stored bytes.
pub(crate) fn key_of(bytes: [u8; 16]) -> IntentKey {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(32);
    for b in bytes {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    // 32 lowercase hex digits always parse.
    IntentKey::parse(&hex).unwrap_or_else(|_| IntentKey::derive("", "", "", &hex, None))
}

/// An outcome, effect or probe verdict from the word it is stored as.
fn word<T: DeserializeOwned>(stored: Option<String>) -> Result<Option<T>, String> {
    stored
        .map(|s| serde_json::from_value(serde_json::Value::String(s.clone())).map_err(|_| format!("{s:?}")))
        .transpose()
}
