use std::sync::Arc;
use std::time::Duration;

use tool_contract::IntentKey;
use tool_contract::MemoryJournal;
use tool_contract::journal::{Answer, Claimed, Durability, Journal, JournalError, Owner, Recall, RecordRef};
use tool_contract::person::LogApprover;

// A wrapper that forwards the store but not its approvals: it keeps none, and says so through its
// type. A `LogApprover` on it would ask questions nobody can answer, so it does not compile.
struct Counting(MemoryJournal);

impl Journal for Counting {
    fn claim(&self, key: &IntentKey, owner: &Owner, lease: Duration) -> Answer<'_, Result<Claimed, JournalError>> {
        self.0.claim(key, owner, lease)
    }
    fn release(&self, key: &IntentKey, owner: &Owner) {
        self.0.release(key, owner)
    }
    fn start(&self, owner: &Owner, record: RecordRef<'_>, d: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.0.start(owner, record, d)
    }
    fn end(&self, owner: &Owner, record: RecordRef<'_>, d: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.0.end(owner, record, d)
    }
    fn append(&self, record: RecordRef<'_>, d: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.0.append(record, d)
    }
    fn recall(&self, key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        Journal::recall(&self.0, key)
    }
    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        Journal::unresolved(&self.0)
    }
}

fn main() {
    let log = Arc::new(Counting(MemoryJournal::new()));
    let _approver = LogApprover::new(log);
}
