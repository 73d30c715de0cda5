//! What a store folds the records into: each intent's [`Recall`] and its last approval record.
//! Which record wins is decided once, in [`crate::rules`]; every store folds through here.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use super::{Durability, LastWord, Phase, Recall, Record, Settlement};
use crate::key::IntentKey;
use crate::report::Outcome;
use crate::rules::may_follow;

impl Recall {
    /// What the log knows of an intent after its first record.
    pub fn from_record(record: Record) -> Recall {
        Recall { attempts: record.attempt, last: record }
    }

    /// Fold the intent's next record in, by the rule of [`index_record`].
    pub fn update(&mut self, record: &Record) {
        if crate::rules::supersedes(
            record.phase,
            record.probe,
            record.attempt,
            self.attempts,
            self.last.phase,
        ) {
            self.last = record.clone();
        }
        if crate::rules::counts_as_attempt(record.phase) {
            self.attempts = self.attempts.max(record.attempt);
        }
    }

    /// The intent's last word.
    pub fn last_word(&self) -> LastWord<'_> {
        match (self.last.phase, self.last.outcome) {
            // An approval record is never a last word once anything else is known; alone, the intent
            // is treated as unfinished, which only probes.
            (Phase::Start | Phase::Approval | Phase::McpTask, _) | (Phase::End, None) => LastWord::Unfinished,
            (Phase::End | Phase::Settled, Some(Outcome::Ok)) => LastWord::Ok(self.last.value.as_ref()),
            (Phase::End | Phase::Settled, Some(outcome)) => LastWord::Ended(outcome),
            (Phase::Settled, None) => LastWord::Ended(Outcome::Unknown),
        }
    }

    /// `true` when the intent waits on someone: unfinished, ended `unknown`, or ended with its effect
    /// unknown.
    pub fn is_unresolved(&self) -> bool {
        crate::rules::in_doubt(self.last.phase, self.last.outcome, self.last.effect_applied)
    }

    /// The settlement a person gave on the intent's last attempt, if its last word is one.
    pub fn settlement(&self) -> Option<&Settlement> {
        self.last.settled.as_ref().filter(|_| self.last.phase == Phase::Settled)
    }
}

/// Fold one record into an index of intents: the shared rule of every store.
///
/// Records are folded in log order. The highest attempt number is kept, and the last record of the
/// highest attempt is the intent's last word: an end record for an older attempt (a late completion)
/// does not hide a newer start.
pub fn index_record(index: &mut HashMap<IntentKey, Recall>, record: &Record) {
    match index.entry(record.intent_key) {
        Entry::Occupied(entry) => entry.into_mut().update(record),
        Entry::Vacant(entry) => {
            entry.insert(Recall::from_record(record.clone()));
        }
    }
}

/// What a store keeps of approvals: each intent's last approval record.
#[derive(Debug, Default)]
pub(crate) struct Approvals(HashMap<IntentKey, Record>);

impl Approvals {
    /// The intent's last approval record.
    pub(crate) fn last(&self, key: &IntentKey) -> Option<&Record> {
        self.0.get(key)
    }

    /// Keep `record` if it is an approval record (as the intent's last).
    pub(crate) fn note(&mut self, record: &super::RecordRef<'_>) {
        if record.phase == Phase::Approval {
            self.0.insert(record.intent_key, record.to_record());
        }
    }

    /// Whether `record` may follow what is kept ([`may_follow`]).
    pub(crate) fn may_take(&self, record: &super::RecordRef<'_>) -> bool {
        may_follow(record, self.0.get(&record.intent_key))
    }
}

/// What a store keeps of MCP tasks: each intent's `mcp_task` records, in log order.
#[derive(Debug, Default)]
pub(crate) struct McpTaskRecords(HashMap<IntentKey, Vec<Record>>);

impl McpTaskRecords {
    /// The intent's `mcp_task` records, in log order.
    pub(crate) fn of(&self, key: &IntentKey) -> Vec<Record> {
        self.0.get(key).cloned().unwrap_or_default()
    }

    /// Keep `record` if it is an `mcp_task` record.
    pub(crate) fn note(&mut self, record: &super::RecordRef<'_>) {
        if record.phase == Phase::McpTask {
            self.keep(record.to_record());
        }
    }

    /// Keep `record`, an `mcp_task` record read back from the log.
    pub(crate) fn keep(&mut self, record: Record) {
        self.0.entry(record.intent_key).or_default().push(record);
    }
}

/// How approval records are written: a question and its answer at once, and synced.
pub(crate) const DURABILITY: Durability = Durability::Synced;
