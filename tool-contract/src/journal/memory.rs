//! The in-memory attempt log, for tests and for processes that accept losing it.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Mutex;

use super::{Durability, Journal, JournalError, Recall, Record, RecordRef, sort_unresolved, supersedes};
use crate::key::{IntentKey, KeyHashing};
use crate::task::BoxFuture;

/// An attempt log held in memory, for tests and for processes that accept losing it.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    records: Vec<Record>,
    /// Per intent, its highest attempt and where its last word is in `records`: the fold of
    /// [`super::index_record`], kept without a second copy of each record.
    index: HashMap<IntentKey, Kept, KeyHashing>,
}

#[derive(Debug, Clone, Copy)]
struct Kept {
    attempts: u32,
    last: usize,
}

impl MemoryState {
    fn push(&mut self, record: Record) {
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
        Recall { attempts: kept.attempts, last: self.records[kept.last].clone() }
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
            state.push(record);
        }
        MemoryJournal { state: Mutex::new(state) }
    }

    /// Every record, in the order appended.
    pub fn records(&self) -> Vec<Record> {
        self.lock().records.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Journal for MemoryJournal {
    fn append<'a>(
        &'a self,
        record: &'a Record,
        durability: Durability,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let _ = durability;
        self.lock().push(record.clone());
        Box::pin(super::Appended)
    }

    fn append_ref(
        &self,
        record: RecordRef<'_>,
        _durability: Durability,
    ) -> BoxFuture<'_, Result<(), JournalError>> {
        self.lock().push(record.to_record());
        Box::pin(super::Appended)
    }

    fn recall(&self, key: &IntentKey) -> Option<Recall> {
        let state = self.lock();
        state.index.get(key).map(|&kept| state.recall(kept))
    }

    fn attempts(&self, key: &IntentKey) -> Option<u32> {
        self.lock().index.get(key).map(|kept| kept.attempts)
    }

    fn unresolved(&self) -> Vec<Recall> {
        let state = self.lock();
        let open = state.index.values().filter(|kept| {
            let last = &state.records[kept.last];
            super::is_open(last.phase, last.outcome)
        });
        sort_unresolved(open.map(|&kept| state.recall(kept)).collect())
    }
}
