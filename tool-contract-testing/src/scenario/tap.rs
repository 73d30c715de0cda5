//! The journals the conformance runner puts between the engine and the log.

use super::*;

/// A journal that forwards to another and remembers the probe verdicts it saw, per intent.
#[derive(Clone)]
pub(crate) struct Tap {
    inner: Arc<dyn Journal>,
    probes: Arc<Mutex<HashMap<IntentKey, ProbeMark>>>,
}

impl Tap {
    pub(crate) fn new(inner: Arc<dyn Journal>) -> Tap {
        Tap { inner, probes: Arc::default() }
    }

    fn seen(&self, record: &RecordRef<'_>) {
        if let Some(mark) = record.probe {
            self.probes.lock().unwrap_or_else(|e| e.into_inner()).insert(record.intent_key, mark);
        }
    }

    pub(crate) fn last_probe(&self, key: IntentKey) -> Option<ProbeMark> {
        self.probes.lock().unwrap_or_else(|e| e.into_inner()).get(&key).copied()
    }
}

impl Journal for Tap {
    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        self.inner.claim(key, owner, lease)
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
        self.inner.start(owner, record, durability)
    }

    fn end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.seen(&record);
        self.inner.end(owner, record, durability)
    }

    fn append(&self, record: RecordRef<'_>, durability: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.seen(&record);
        self.inner.append(record, durability)
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

/// A journal that keeps nothing: a process with no attempt log, to let the receiver's key do the work.
pub(super) struct NoJournal;

impl Journal for NoJournal {
    fn claim(
        &self,
        _key: &IntentKey,
        _owner: &Owner,
        _lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        Answer::now(Ok(Claimed::Held(None)))
    }

    fn release(&self, _key: &IntentKey, _owner: &Owner) {}

    fn start(
        &self,
        _owner: &Owner,
        _record: RecordRef<'_>,
        _durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        Answer::now(Ok(()))
    }

    fn end(
        &self,
        _owner: &Owner,
        _record: RecordRef<'_>,
        _durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        Answer::now(Ok(()))
    }

    fn append(
        &self,
        _record: RecordRef<'_>,
        _durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        Answer::now(Ok(()))
    }

    fn recall(&self, _key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        Answer::now(Ok(None))
    }

    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        Answer::now(Ok(Vec::new()))
    }
}
