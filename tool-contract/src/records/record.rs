//! The records of the attempt log, as data: a [`Record`] and its borrowed form, the [`Phase`] it is
//! in, and what a store knows of one intent ([`Recall`], [`LastWord`]).

use serde::{Deserialize, Serialize};

use super::{ApprovalNote, Settlement, Verdict};
use crate::key::IntentKey;
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome};

/// Whether a record is a promise made before an attempt, the account given after it, or a person's
/// word on it (a settlement, an approval).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Written before the attempt starts.
    Start,
    /// Written after the attempt (or after a probe resolved it).
    End,
    /// A person's verdict on an attempt left in doubt ([`Settlement`]): a fact like an end record, and
    /// one no later record of the same attempt replaces.
    Settled,
    /// A question to a person before the next attempt of a `money` call, or its answer
    /// ([`ApprovalNote`]): history, never an intent's last word.
    Approval,
    /// A step of an MCP task that keeps a call of the intent for a client to poll (created, cancel
    /// requested, ended), its account as the record's `value`, written and read by the MCP adapter:
    /// history, never an intent's last word, never an attempt's.
    #[serde(rename = "mcp_task")]
    McpTask,
}

impl Phase {
    /// The phase as the log writes it: `start`, `end`, `settled`, `approval` or `mcp_task`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Phase::Start => "start",
            Phase::End => "end",
            Phase::Settled => "settled",
            Phase::Approval => "approval",
            Phase::McpTask => "mcp_task",
        }
    }

    /// The phase the log's word `word` names ([`Phase::as_str`]), if any.
    pub fn parse(word: &str) -> Option<Phase> {
        [Phase::Start, Phase::End, Phase::Settled, Phase::Approval, Phase::McpTask]
            .into_iter()
            .find(|p| p.as_str() == word)
    }
}

/// One line of the attempt log.
///
/// Its fields keep one rule together, which deserialising a record checks ([`Record::problem`]): a
/// `settled` record carries its [`Settlement`] and no other record does, and the settlement's verdict
/// agrees with the outcome and the effect; an `approval` record carries its [`ApprovalNote`] and no
/// outcome, effect, probe or value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "wire::Record")]
pub struct Record {
    /// `start`, `end`, `settled` or `approval`.
    pub phase: Phase,
    /// The task's id.
    pub task: String,
    /// The tool's name.
    pub call: String,
    /// The intent key.
    pub intent_key: IntentKey,
    /// The attempt number, from 1, continuing across restarts.
    pub attempt: u32,
    /// `{task}-{first 8 hex of the key}-a{attempt}`.
    pub attempt_id: String,
    /// When the attempt started, RFC 3339 UTC.
    pub started: String,
    /// The task's budget left when the attempt started, whole seconds.
    pub budget_left_s: u64,
    /// The outcome; `null` on a start record.
    pub outcome: Option<Outcome>,
    /// What is known of the effect; `null` on a start record.
    pub effect_applied: Option<Applied>,
    /// The probe's verdict, when a probe ran.
    pub probe: Option<ProbeMark>,
    /// The one-line message; `null` on a start record.
    pub message: Option<String>,
    /// On an end record after the service asked to wait (`Retry-After`): the earliest instant for the
    /// next attempt, RFC 3339 UTC, so a restarted process waits too. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<String>,
    /// On a side effect's record about an attempt that did not end `ok`: the latest instant its
    /// request could have left (RFC 3339 UTC, rounded up to the second, on the clock of the process
    /// that made the attempt): when the attempt's call ended, written first by the attempt's own end
    /// record and carried over, as it stands, by every later record about the attempt (a probe's
    /// verdict, a settlement). A later call's landing horizon runs from it. Absent when the attempt
    /// ended in a way that says nothing of it (a process killed mid-call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_by: Option<String>,
    /// On a side effect's records of a call made by name (a model's JSON arguments): the first 32 hex
    /// characters of the SHA-256 of the arguments the attempt ran with, in their canonical JSON (keys
    /// sorted, no whitespace). The intent key ignores the arguments; this says whether a later call of
    /// the intent brought the same ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    /// The tool's value as JSON, on an `ok` end record (and on a `landed` settlement that names one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// On a `settled` record: who settled the attempt, how, and on what evidence. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<Settlement>,
    /// On an `approval` record: the question asked before the next attempt, or its answer, with who
    /// and why. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalNote>,
}

/// A [`Record`] by reference to its parts: what [`Journal::append`](crate::journal::Journal::append) takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordRef<'a> {
    /// `start`, `end`, `settled` or `approval`.
    pub phase: Phase,
    /// The task's id.
    pub task: &'a str,
    /// The tool's name.
    pub call: &'a str,
    /// The intent key.
    pub intent_key: IntentKey,
    /// The attempt number.
    pub attempt: u32,
    /// The attempt's id.
    pub attempt_id: &'a str,
    /// When the attempt started, RFC 3339 UTC.
    pub started: &'a str,
    /// The task's budget left when the attempt started, whole seconds.
    pub budget_left_s: u64,
    /// The outcome; `None` on a start record.
    pub outcome: Option<Outcome>,
    /// What is known of the effect.
    pub effect_applied: Option<Applied>,
    /// The probe's verdict, when a probe ran.
    pub probe: Option<ProbeMark>,
    /// The one-line message.
    pub message: Option<&'a str>,
    /// The earliest instant for the next attempt, when the service asked to wait.
    pub retry_at: Option<&'a str>,
    /// The latest instant the attempt's request could have left ([`Record::sent_by`]).
    pub sent_by: Option<&'a str>,
    /// The digest of the call's arguments ([`Record::args`]).
    pub args: Option<&'a str>,
    /// The tool's value as JSON.
    pub value: Option<&'a serde_json::Value>,
    /// A settlement's account, on a `settled` record.
    pub settled: Option<&'a Settlement>,
    /// An approval's account, on an `approval` record.
    pub approval: Option<&'a ApprovalNote>,
}

impl RecordRef<'_> {
    /// The record itself.
    pub fn to_record(&self) -> Record {
        Record {
            phase: self.phase,
            task: self.task.to_owned(),
            call: self.call.to_owned(),
            intent_key: self.intent_key,
            attempt: self.attempt,
            attempt_id: self.attempt_id.to_owned(),
            started: self.started.to_owned(),
            budget_left_s: self.budget_left_s,
            outcome: self.outcome,
            effect_applied: self.effect_applied,
            probe: self.probe,
            message: self.message.map(str::to_owned),
            retry_at: self.retry_at.map(str::to_owned),
            sent_by: self.sent_by.map(str::to_owned),
            args: self.args.map(str::to_owned),
            value: self.value.cloned(),
            settled: self.settled.cloned(),
            approval: self.approval.cloned(),
        }
    }
}

impl Record {
    /// The record by reference to its parts.
    pub fn as_record_ref(&self) -> RecordRef<'_> {
        RecordRef {
            phase: self.phase,
            task: &self.task,
            call: &self.call,
            intent_key: self.intent_key,
            attempt: self.attempt,
            attempt_id: &self.attempt_id,
            started: &self.started,
            budget_left_s: self.budget_left_s,
            outcome: self.outcome,
            effect_applied: self.effect_applied,
            probe: self.probe,
            message: self.message.as_deref(),
            retry_at: self.retry_at.as_deref(),
            sent_by: self.sent_by.as_deref(),
            args: self.args.as_deref(),
            value: self.value.as_ref(),
            settled: self.settled.as_ref(),
            approval: self.approval.as_ref(),
        }
    }

    /// A record of `phase` about the same attempt as this one (its task, tool, intent, attempt, stamp
    /// and budget), saying nothing else yet: what a person's settlement or approval starts from.
    pub(crate) fn about(&self, phase: Phase) -> Record {
        Record {
            phase,
            task: self.task.clone(),
            call: self.call.clone(),
            intent_key: self.intent_key,
            attempt: self.attempt,
            attempt_id: self.attempt_id.clone(),
            started: self.started.clone(),
            budget_left_s: self.budget_left_s,
            outcome: None,
            effect_applied: None,
            probe: None,
            message: None,
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: None,
        }
    }

    /// What breaks the rule the record's fields keep together, if anything: a `settled` record
    /// carries its [`Settlement`] (and no other record does), a `landed` one says `ok` with effect
    /// `yes`, a `not_landed` one `retryable` with effect `no` and no value, and its evidence and
    /// settler are given ([`Settlement::problem`]). Deserialising a record checks it, and so does every
    /// store's reader.
    pub fn problem(&self) -> Option<String> {
        if self.phase == Phase::McpTask {
            return self.task_problem();
        }
        match (self.phase, &self.approval) {
            (Phase::Approval, Some(note)) => {
                if self.outcome.is_some() || self.effect_applied.is_some() || self.probe.is_some() {
                    return Some("an `approval` record has no outcome, effect or probe".into());
                }
                if self.value.is_some() || self.settled.is_some() || self.retry_at.is_some() {
                    return Some("an `approval` record has no value, settlement or `retry_at`".into());
                }
                if self.sent_by.is_some() || self.args.is_some() {
                    return Some("an `approval` record has no `sent_by` or `args`".into());
                }
                return note.problem();
            }
            (Phase::Approval, None) => {
                return Some("an `approval` record needs its `approval` account".into());
            }
            (_, Some(_)) => return Some("only an `approval` record carries `approval`".into()),
            (_, None) => {}
        }
        let settled = match (self.phase, &self.settled) {
            (Phase::Settled, Some(settled)) => settled,
            (Phase::Settled, None) => return Some("a `settled` record needs its `settled` account".into()),
            (_, Some(_)) => return Some("only a `settled` record carries `settled`".into()),
            (_, None) => return None,
        };
        if let Some(problem) = settled.problem() {
            return Some(problem);
        }
        let (outcome, effect) = match settled.verdict {
            Verdict::Landed => (Outcome::Ok, Applied::Yes),
            Verdict::NotLanded => (Outcome::Retryable, Applied::No),
        };
        if self.outcome != Some(outcome) || self.effect_applied != Some(effect) {
            return Some(format!(
                "a `{}` settlement says outcome `{outcome}` and effect `{effect}`",
                settled.verdict.as_str()
            ));
        }
        if settled.verdict == Verdict::NotLanded && self.value.is_some() {
            return Some("a `not_landed` settlement has no value".into());
        }
        None
    }
}

impl Record {
    /// What breaks the rule of an `mcp_task` record: its account is its `value`, a JSON object, and it
    /// carries nothing of an attempt's end or a person's word.
    fn task_problem(&self) -> Option<String> {
        if self.outcome.is_some() || self.effect_applied.is_some() || self.probe.is_some() {
            return Some("an `mcp_task` record has no outcome, effect or probe".into());
        }
        if self.settled.is_some() || self.approval.is_some() || self.retry_at.is_some() {
            return Some("an `mcp_task` record has no settlement, approval or `retry_at`".into());
        }
        if self.sent_by.is_some() || self.args.is_some() {
            return Some("an `mcp_task` record has no `sent_by` or `args`".into());
        }
        match &self.value {
            Some(serde_json::Value::Object(_)) => None,
            _ => Some("an `mcp_task` record needs its account as an object in `value`".into()),
        }
    }
}

/// The form a record is read in, checked by [`Record::problem`] before it becomes a [`Record`].
mod wire {
    use super::*;

    #[derive(Deserialize)]
    pub(super) struct Record {
        phase: Phase,
        task: String,
        call: String,
        intent_key: IntentKey,
        attempt: u32,
        attempt_id: String,
        started: String,
        budget_left_s: u64,
        outcome: Option<Outcome>,
        effect_applied: Option<Applied>,
        probe: Option<ProbeMark>,
        message: Option<String>,
        #[serde(default)]
        retry_at: Option<String>,
        #[serde(default)]
        sent_by: Option<String>,
        #[serde(default)]
        args: Option<String>,
        #[serde(default)]
        value: Option<serde_json::Value>,
        #[serde(default)]
        settled: Option<Settlement>,
        #[serde(default)]
        approval: Option<ApprovalNote>,
    }

    impl TryFrom<Record> for super::Record {
        type Error = String;

        fn try_from(wire: Record) -> Result<Self, String> {
            // Taken apart whole: a field added to one form and not the other does not compile.
            let Record {
                phase,
                task,
                call,
                intent_key,
                attempt,
                attempt_id,
                started,
                budget_left_s,
                outcome,
                effect_applied,
                probe,
                message,
                retry_at,
                sent_by,
                args,
                value,
                settled,
                approval,
            } = wire;
            let record = super::Record {
                phase,
                task,
                call,
                intent_key,
                attempt,
                attempt_id,
                started,
                budget_left_s,
                outcome,
                effect_applied,
                probe,
                message,
                retry_at,
                sent_by,
                args,
                value,
                settled,
                approval,
            };
            match record.problem() {
                Some(problem) => Err(problem),
                None => Ok(record),
            }
        }
    }
}

/// How hard an append must try before it returns.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// On stable storage before the future resolves (side-effecting starts).
    Synced,
    /// Handed to the store's writer before the future resolves, written at once and riding the next
    /// sync (end records). The file log writes on its own thread, so a stalled disk never blocks the
    /// caller: a killed process may lose the records of its last moments, a crashed machine those not
    /// yet synced. Losing an end record is safe: the attempt then reads as unfinished and is probed.
    Buffered,
    /// May stay in the process until the next append or [`Journal::flush`](crate::journal::Journal::flush) (a read's start record,
    /// written out together with its end record when the read is done at once, and flushed as soon as
    /// the read has to wait). Losing it loses nothing a read needs: a read has no effect to resolve.
    Lazy,
}

/// What the log knows of one intent.
#[derive(Debug, Clone, PartialEq)]
pub struct Recall {
    /// The highest attempt number recorded for the intent.
    pub attempts: u32,
    /// The intent's last record.
    pub last: Record,
}

/// The last word the log holds on an intent.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum LastWord<'a> {
    /// Its last attempt started and never ended: after a crash, it may have landed.
    Unfinished,
    /// It ended `ok`, with the value when one was recorded.
    Ok(Option<&'a serde_json::Value>),
    /// It ended with this outcome (never `ok`).
    Ended(Outcome),
}
