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

/// A record as kept: the strings that repeat from record to record are shared.
#[derive(Debug)]
struct Stored {
    phase: Phase,
    task: Arc<str>,
    call: Arc<str>,
    intent_key: IntentKey,
    attempt: u32,
    attempt_id: Box<str>,
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
            attempt_id: self.attempt_id.to_string(),
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
        let [task, call, started] = &mut self.shared;
        let stored = Stored {
            phase: record.phase,
            task: share(task, record.task),
            call: share(call, record.call),
            intent_key: record.intent_key,
            attempt: record.attempt,
            attempt_id: record.attempt_id.into(),
            started: share(started, record.started),
            budget_left_s: record.budget_left_s,
            outcome: record.outcome,
            effect_applied: record.effect_applied,
            probe: record.probe,
            message: record.message.map(Box::from),
            retry_at: record.retry_at.map(Box::from),
            value: record.value.cloned(),
        };
        self.push(stored);
    }

    fn push(&mut self, record: Stored) {
        let at = self.records.len();
        match self.index.entry(record.intent_key) {
            Entry::Occupied(kept) => {
                let kept = kept.into_mut();
                if supersedes(record.attempt, kept.attempts) {
                    kept.last = at;
                }
                kept.attempts = kept.attempts.max(record.attempt);
            }
            Entry::Vacant(new) => {
                new.insert(Kept { attempts: record.attempt, last: at });
            }
        }
        self.records.push(record);
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
        self.lock().records.iter().map(Stored::to_record).collect()
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
