//! The in-memory attempt log, for tests and for processes that accept losing it.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex};

use std::time::Duration;

use super::leases::Leases;
use super::{
    Answer, Claimed, Durability, Journal, JournalError, Owner, Phase, Recall, Record, RecordRef,
    sort_unresolved, supersedes,
};
use crate::key::{IntentKey, KeyHashing};
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome};

/// An attempt log held in memory, for tests and for processes that accept losing it.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    records: Vec<Stored>,
    /// The last task, tool name and timestamp stored, shared by the records that repeat them (a task's
    /// calls in a row): most appends then allocate only the attempt id and the message.
    shared: [Option<Arc<str>>; 3],
    /// Per intent, its highest attempt and where its last word is in `records`: the fold of
    /// [`super::index_record`], kept without a second copy of each record.
    index: HashMap<IntentKey, Kept, KeyHashing>,
    /// Who holds which intent.
    leases: Leases,
}

/// A record as kept: the strings that repeat from record to record are shared, an attempt id of the
/// engine's form is rebuilt rather than kept, and an end record appended right after its start record
/// keeps both in one entry.
#[derive(Debug)]
struct Stored {
    phase: Phase,
    /// An end record that also stands for the start record appended just before it: same attempt,
    /// same stamp and budget, and nothing the start carried that the end does not.
    with_start: bool,
    task: Arc<str>,
    call: Arc<str>,
    intent_key: IntentKey,
    attempt: u32,
    /// `None` for the engine's form, `{task}-{first 8 hex of the key}-a{n}`.
    attempt_id: Option<Box<str>>,
    started: Arc<str>,
    budget_left_s: u64,
    outcome: Option<Outcome>,
    effect_applied: Option<Applied>,
    probe: Option<ProbeMark>,
    message: Option<Box<str>>,
    retry_at: Option<Box<str>>,
    value: Option<serde_json::Value>,
}

impl Stored {
    fn to_record(&self) -> Record {
        Record {
            phase: self.phase,
            task: self.task.to_string(),
            call: self.call.to_string(),
            intent_key: self.intent_key,
            attempt: self.attempt,
            attempt_id: match &self.attempt_id {
                Some(id) => id.to_string(),
                None => crate::call::attempt_id(&self.task, &self.intent_key, self.attempt),
            },
            started: self.started.to_string(),
            budget_left_s: self.budget_left_s,
            outcome: self.outcome,
            effect_applied: self.effect_applied,
            probe: self.probe,
            message: self.message.as_deref().map(str::to_owned),
            retry_at: self.retry_at.as_deref().map(str::to_owned),
            value: self.value.clone(),
        }
    }

    /// The records this entry stands for, in the order appended.
    fn push_records(&self, out: &mut Vec<Record>) {
        let end = self.to_record();
        if self.with_start {
            out.push(Record {
                phase: Phase::Start,
                outcome: None,
                effect_applied: None,
                probe: None,
                message: None,
                retry_at: None,
                value: None,
                ..end.clone()
            });
        }
        out.push(end);
    }

    /// Whether `end` completes this start record with nothing of the start lost.
    fn completed_by(&self, end: &RecordRef<'_>) -> bool {
        self.phase == Phase::Start
            && end.phase == Phase::End
            && self.intent_key == end.intent_key
            && self.attempt == end.attempt
            && self.budget_left_s == end.budget_left_s
            && *self.started == *end.started
            && *self.task == *end.task
            && *self.call == *end.call
            && self.attempt_id.as_deref()
                == own_attempt_id(end.attempt_id, end.task, &end.intent_key, end.attempt)
            && self.outcome.is_none()
            && self.effect_applied.is_none()
            && self.probe.is_none()
            && self.message.is_none()
            && self.retry_at.is_none()
            && self.value.is_none()
    }
}

/// `id` when it is not the engine's form for this attempt (`None` when it is: it is rebuilt on read).
fn own_attempt_id<'a>(id: &'a str, task: &str, key: &IntentKey, attempt: u32) -> Option<&'a str> {
    let engine_form = || -> Option<()> {
        let rest = id.strip_prefix(task)?.strip_prefix('-')?;
        let (hex, n) = (rest.get(..8)?, rest.get(8..)?.strip_prefix("-a")?);
        // The first 8 hex digits of the key, digit by digit.
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let key = key.as_bytes();
        let digit = |i: usize| {
            DIGITS[usize::from(if i.is_multiple_of(2) { key[i / 2] >> 4 } else { key[i / 2] & 0xf })]
        };
        let same_key = hex.bytes().enumerate().all(|(i, c)| c == digit(i));
        let canonical = n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
        (same_key && canonical && n.parse::<u32>().ok()? == attempt).then_some(())
    };
    match engine_form() {
        Some(()) => None,
        None => Some(id),
    }
}

/// `text` as a shared string, reusing `slot`'s when it holds the same text.
fn share(slot: &mut Option<Arc<str>>, text: &str) -> Arc<str> {
    match slot {
        Some(kept) if **kept == *text => Arc::clone(kept),
        _ => Arc::clone(slot.insert(Arc::from(text))),
    }
}

#[derive(Debug, Clone, Copy)]
struct Kept {
    attempts: u32,
    last: usize,
}

impl MemoryState {
    fn store(&mut self, record: RecordRef<'_>) {
        // A start record followed by its own end, as most attempts are: one entry for both.
        if let Some(start) = self.records.last_mut()
            && start.completed_by(&record)
        {
            start.phase = Phase::End;
            start.with_start = true;
            start.outcome = record.outcome;
            start.effect_applied = record.effect_applied;
            start.probe = record.probe;
            start.message = record.message.map(Box::from);
            start.retry_at = record.retry_at.map(Box::from);
            start.value = record.value.cloned();
            let at = self.records.len() - 1;
            self.index(at, record.intent_key, record.attempt);
            return;
        }
        let [task, call, started] = &mut self.shared;
        let stored = Stored {
            phase: record.phase,
            with_start: false,
            task: share(task, record.task),
            call: share(call, record.call),
            intent_key: record.intent_key,
            attempt: record.attempt,
            attempt_id: own_attempt_id(record.attempt_id, record.task, &record.intent_key, record.attempt)
                .map(Box::from),
            started: share(started, record.started),
            budget_left_s: record.budget_left_s,
            outcome: record.outcome,
            effect_applied: record.effect_applied,
            probe: record.probe,
            message: record.message.map(Box::from),
            retry_at: record.retry_at.map(Box::from),
            value: record.value.cloned(),
        };
        let at = self.records.len();
        self.records.push(stored);
        self.index(at, record.intent_key, record.attempt);
    }

    /// Fold the record at `at` into the intent's index entry, by the rule of [`super::index_record`].
    fn index(&mut self, at: usize, key: IntentKey, attempt: u32) {
        match self.index.entry(key) {
            Entry::Occupied(kept) => {
                let kept = kept.into_mut();
                if supersedes(attempt, kept.attempts) {
                    kept.last = at;
                }
                kept.attempts = kept.attempts.max(attempt);
            }
            Entry::Vacant(new) => {
                new.insert(Kept { attempts: attempt, last: at });
            }
        }
    }

    fn recall(&self, kept: Kept) -> Recall {
        Recall { attempts: kept.attempts, last: self.records[kept.last].to_record() }
    }
}

impl MemoryJournal {
    /// An empty log.
    pub fn new() -> MemoryJournal {
        MemoryJournal::default()
    }

    /// A log holding these records, as if appended in this order (a log read back from elsewhere).
    pub fn from_records(records: impl IntoIterator<Item = Record>) -> MemoryJournal {
        let mut state = MemoryState::default();
        for record in records {
            state.store(record.as_record_ref());
        }
        MemoryJournal { state: Mutex::new(state) }
    }

    /// Every record, in the order appended.
    pub fn records(&self) -> Vec<Record> {
        let state = self.lock();
        let mut records = Vec::with_capacity(state.records.len() * 2);
        for stored in &state.records {
            stored.push_records(&mut records);
        }
        records
    }

    /// What the log holds on one intent, at once: [`Journal::recall`] without the wait.
    pub fn recall(&self, key: &IntentKey) -> Option<Recall> {
        let state = self.lock();
        state.index.get(key).map(|&kept| state.recall(kept))
    }

    /// Every unresolved intent, oldest first, at once: [`Journal::unresolved`] without the wait.
    pub fn unresolved(&self) -> Vec<Recall> {
        let state = self.lock();
        let open = state.index.values().filter(|kept| {
            let last = &state.records[kept.last];
            super::is_open(last.phase, last.outcome)
        });
        sort_unresolved(open.map(|&kept| state.recall(kept)).collect())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Journal for MemoryJournal {
    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let mut state = self.lock();
        let state = &mut *state;
        let (index, records) = (&state.index, &state.records);
        let claimed = state.leases.claim(*key, owner, lease, || {
            index
                .get(key)
                .map(|&kept| Recall { attempts: kept.attempts, last: records[kept.last].to_record() })
        });
        Answer::now(Ok(claimed))
    }

    fn release(&self, key: &IntentKey, owner: &Owner) {
        self.lock().leases.release(key, owner);
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        _durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        let mut state = self.lock();
        let highest = state.index.get(&record.intent_key).map_or(0, |kept| kept.attempts);
        if let Err(why) = state.leases.fence(&record.intent_key, owner, record.attempt, highest) {
            let attempt_id = record.attempt_id.to_owned();
            return Answer::now(Err(JournalError::Conflict { log: "memory".to_owned(), attempt_id, why }));
        }
        state.store(record);
        Answer::now(Ok(()))
    }

    fn append<'a>(
        &'a self,
        record: &'a Record,
        _durability: Durability,
    ) -> Answer<'a, Result<(), JournalError>> {
        self.lock().store(record.as_record_ref());
        Answer::now(Ok(()))
    }

    fn append_ref(
        &self,
        record: RecordRef<'_>,
        _durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.lock().store(record);
        Answer::now(Ok(()))
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Option<Recall>> {
        Answer::now(MemoryJournal::recall(self, key))
    }

    fn attempts(&self, key: &IntentKey) -> Answer<'_, Option<u32>> {
        Answer::now(self.lock().index.get(key).map(|kept| kept.attempts))
    }

    fn unresolved(&self) -> Answer<'_, Vec<Recall>> {
        Answer::now(MemoryJournal::unresolved(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(target: &str) -> IntentKey {
        IntentKey::derive("t-1", "agent", "post_notice", &target, None)
    }

    fn start(target: &str, attempt: u32) -> Record {
        let key = key(target);
        Record {
            phase: Phase::Start,
            task: "t-1".to_owned(),
            call: "post_notice".to_owned(),
            intent_key: key,
            attempt,
            attempt_id: crate::call::attempt_id("t-1", &key, attempt),
            started: "2026-12-01T03:00:00Z".to_owned(),
            budget_left_s: 30,
            outcome: None,
            effect_applied: None,
            probe: None,
            message: None,
            retry_at: None,
            value: None,
        }
    }

    fn end(target: &str, attempt: u32) -> Record {
        Record {
            phase: Phase::End,
            outcome: Some(Outcome::Retryable),
            effect_applied: Some(Applied::No),
            message: Some("503".to_owned()),
            retry_at: Some("2026-12-01T03:00:09Z".to_owned()),
            ..start(target, attempt)
        }
    }

    #[test]
    fn the_records_read_back_are_the_records_appended_whatever_is_folded() {
        let custom = |mut r: Record, id: &str| {
            r.attempt_id = id.to_owned();
            r
        };
        let cases: Vec<(&str, Vec<Record>)> = vec![
            ("a start and its end", vec![start("a", 1), end("a", 1)]),
            ("two intents interleaved", vec![start("a", 1), start("b", 1), end("a", 1), end("b", 1)]),
            ("an end of another attempt", vec![start("a", 2), end("a", 1)]),
            ("an end alone, then a start alone", vec![end("a", 1), start("a", 2)]),
            (
                "a start carrying items",
                vec![Record { value: Some(serde_json::json!([1])), ..start("a", 1) }, end("a", 1)],
            ),
            ("a start with another budget", vec![start("a", 1), Record { budget_left_s: 29, ..end("a", 1) }]),
            (
                "another stamp",
                vec![start("a", 1), Record { started: "2026-12-01T03:00:01Z".to_owned(), ..end("a", 1) }],
            ),
            ("ids of another form", vec![custom(start("a", 1), "mine-1"), custom(end("a", 1), "mine-1")]),
            ("an id changed", vec![start("a", 1), custom(end("a", 1), "mine-1")]),
            ("empty ids", vec![custom(start("a", 1), ""), custom(end("a", 1), "")]),
            (
                "an id with a leading zero",
                vec![custom(start("a", 1), &start("a", 1).attempt_id.replace("-a1", "-a01"))],
            ),
            ("two ends", vec![start("a", 1), end("a", 1), end("a", 1)]),
        ];
        for (name, records) in cases {
            let log = MemoryJournal::new();
            for record in &records {
                let _ = Journal::append(&log, record, Durability::Buffered).ready();
            }
            assert_eq!(log.records(), records, "{name}");
            let last = records
                .iter()
                .rev()
                .find(|r| r.attempt == records.iter().map(|r| r.attempt).max().unwrap_or(0));
            let recalled = log.recall(&records[0].intent_key).map(|r| r.last);
            if records.iter().all(|r| r.intent_key == records[0].intent_key) {
                assert_eq!(recalled.as_ref(), last, "{name}: the last word");
            }
        }
        // Folded: one entry per attempt of a start and its end.
        let log = MemoryJournal::new();
        for record in [start("a", 1), end("a", 1), start("a", 2), end("a", 2)] {
            let _ = Journal::append(&log, &record, Durability::Buffered).ready();
        }
        assert_eq!(log.lock().records.len(), 2);
        assert_eq!(log.records().len(), 4);
        assert_eq!(log.recall(&key("a")).map(|r| (r.attempts, r.last)), Some((2, end("a", 2))));
    }
}
