//! The store contract ([`Journal`]) as the file log keeps it: appends through the writer thread,
//! reads from the index in memory.

use std::time::Duration;

use super::{FileJournal, writer};
use crate::journal::{
    Answer, Approvals, Claimed, Durability, Journal, JournalError, McpTasks, Owner, Recall, Record, RecordRef,
};
use crate::key::IntentKey;

impl Journal for FileJournal {
    fn approvals(&self) -> Option<&dyn Approvals> {
        Some(self)
    }

    fn mcp_tasks(&self) -> Option<&dyn McpTasks> {
        Some(self)
    }

    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let mut state = self.shared.lock();
        let state = &mut *state;
        let index = &state.index;
        Answer::now(Ok(state.leases.claim(*key, owner, lease, || index.get(key).map(|e| e.recall(*key)))))
    }

    fn release(&self, key: &IntentKey, owner: &Owner) {
        self.shared.lock().leases.release(key, owner);
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.append_now(record, durability, Some(owner))
    }

    fn end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.append_now(record, durability, Some(owner))
    }

    fn append(&self, record: RecordRef<'_>, durability: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.append_now(record, durability, None)
    }

    fn attempts(&self, key: &IntentKey) -> Answer<'_, Result<Option<u32>, JournalError>> {
        Answer::now(Ok(self.shared.lock().index.get(key).map(|entry| entry.attempts)))
    }

    fn flush(&self) -> Result<(), JournalError> {
        let mut state = self.shared.lock();
        if let Some(why) = &state.failed {
            return Err(self.shared.failed(why));
        }
        if !state.pending.is_empty() && !state.wake {
            state.wake = true;
            self.shared.to_syncer.notify_one();
        }
        Ok(())
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        Answer::now(Ok(FileJournal::recall_now(self, key)))
    }

    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        Answer::now(Ok(FileJournal::unresolved_now(self)))
    }
}

impl McpTasks for FileJournal {
    fn mcp_task_records(&self, key: &IntentKey) -> Answer<'_, Result<Vec<Record>, JournalError>> {
        Answer::now(Ok(self.shared.lock().tasks.of(key)))
    }
}

impl Approvals for FileJournal {
    fn approval(&self, key: &IntentKey) -> Answer<'_, Result<Option<Record>, JournalError>> {
        Answer::now(Ok(self.shared.lock().approvals.last(key).cloned()))
    }

    fn approval_step(&self, record: RecordRef<'_>) -> Answer<'_, Result<bool, JournalError>> {
        if record.phase != crate::journal::Phase::Approval {
            return Answer::now(Ok(false));
        }
        match self.write(record, crate::journal::index::DURABILITY, None) {
            Err(JournalError::Conflict { why, .. }) if why == writer::APPROVAL_REFUSED => {
                Answer::now(Ok(false))
            }
            Err(e) => Answer::now(Err(e)),
            Ok(None) => Answer::now(Ok(true)),
            Ok(Some(wait)) => Answer::later(async move { self.written(wait.await).map(|()| true) }),
        }
    }
}
