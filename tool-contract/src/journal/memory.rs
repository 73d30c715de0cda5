//! The in-memory attempt log, for tests and for processes that accept losing it.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{Durability, Journal, JournalError, Recall, Record, index_record, unresolved_of};
use crate::key::IntentKey;
use crate::task::BoxFuture;

/// An attempt log held in memory, for tests and for processes that accept losing it.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    records: Vec<Record>,
    index: HashMap<IntentKey, Recall>,
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
            index_record(&mut state.index, &record);
            state.records.push(record);
        }
        MemoryJournal { state: Mutex::new(state) }
    }

    /// Every record, in the order appended.
    pub fn records(&self) -> Vec<Record> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).records.clone()
    }
}

impl Journal for MemoryJournal {
    fn append<'a>(
        &'a self,
        record: &'a Record,
        _durability: Durability,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        index_record(&mut state.index, record);
        state.records.push(record.clone());
        Box::pin(std::future::ready(Ok(())))
    }

    fn recall(&self, key: &IntentKey) -> Option<Recall> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).index.get(key).cloned()
    }

    fn unresolved(&self) -> Vec<Recall> {
        unresolved_of(&self.state.lock().unwrap_or_else(|e| e.into_inner()).index)
    }
}
