//! A log that stops answering, or fails, after some appends: a stalled disk, a store gone away.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::LogMode;
use tool_contract::journal::{Answer, Claimed, Durability, Journal, JournalError, Owner, Recall, RecordRef};
use tool_contract::key::IntentKey;

/// A log that stops answering, or fails, after some appends.
pub(super) struct Faulty {
    inner: Arc<dyn Journal>,
    mode: LogMode,
    appends: AtomicU32,
}

impl Faulty {
    /// `inner`, going bad as `mode` says.
    pub(super) fn new(mode: LogMode, inner: Arc<dyn Journal>) -> Faulty {
        Faulty { inner, mode, appends: AtomicU32::new(0) }
    }

    /// The answer of a request once the log has gone bad, or `None` while it still works.
    fn gone<T: Send + 'static>(&self, count: bool) -> Option<Answer<'_, Result<T, JournalError>>> {
        let n = if count {
            self.appends.fetch_add(1, Ordering::SeqCst)
        } else {
            self.appends.load(Ordering::SeqCst)
        };
        match self.mode {
            LogMode::Stalls(after) if n >= after => Some(Answer::later(std::future::pending())),
            LogMode::Vanishes(after) if n >= after => Some(Answer::now(Err(JournalError::Failed {
                log: "sim".to_owned(),
                why: "the store went away".to_owned(),
            }))),
            _ => None,
        }
    }
}

impl Journal for Faulty {
    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        self.gone(false).unwrap_or_else(|| self.inner.claim(key, owner, lease))
    }

    fn release(&self, key: &IntentKey, owner: &Owner) {
        self.inner.release(key, owner);
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.gone(true).unwrap_or_else(|| self.inner.start(owner, record, durability))
    }

    fn end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.gone(true).unwrap_or_else(|| self.inner.end(owner, record, durability))
    }

    fn append(&self, record: RecordRef<'_>, durability: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.gone(true).unwrap_or_else(|| self.inner.append(record, durability))
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        self.inner.recall(key)
    }

    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        self.inner.unresolved()
    }

    fn flush(&self) -> Result<(), JournalError> {
        self.inner.flush()
    }

    fn approvals(&self) -> Option<&dyn tool_contract::journal::Approvals> {
        self.inner.approvals()
    }
}
