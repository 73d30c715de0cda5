//! [`Journal`] for [`PgJournal`]: each call of the store contract, on the claims, records and reads
//! of its sibling modules.

use std::sync::Arc;
use std::time::Duration;

use tool_contract::IntentKey;
use tool_contract::journal::{
    Answer, Approvals, Claimed, Durability, Journal, JournalError, Owner, Recall, RecordRef,
};

use crate::fault::Fault;
use crate::row::Fields;

use super::{LONGEST_LEASE, PgJournal};

impl Journal for PgJournal {
    fn approvals(&self) -> Option<&dyn Approvals> {
        Some(self)
    }

    fn mcp_tasks(&self) -> Option<&dyn tool_contract::journal::McpTasks> {
        Some(self)
    }

    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let lease = lease.min(LONGEST_LEASE).as_secs_f64();
        Answer::later(self.inner.claim(*key.as_bytes(), owner.as_str().to_owned(), lease, None))
    }

    /// The claim carries the caller's deadline to the server (on the server's clock, as read on the
    /// connection), where the claiming statement takes nothing once it has passed.
    fn claim_by(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
        deadline: tokio::time::Instant,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let lease = lease.min(LONGEST_LEASE).as_secs_f64();
        Answer::later(self.inner.claim(*key.as_bytes(), owner.as_str().to_owned(), lease, Some(deadline)))
    }

    /// Sends the release off on the current runtime and returns; with no runtime, or when the server
    /// cannot be reached, the lease runs out instead.
    fn release(&self, key: &IntentKey, owner: &Owner) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (inner, key, owner) = (Arc::clone(&self.inner), *key.as_bytes(), owner.as_str().to_owned());
        runtime.spawn(async move {
            let _ = inner
                .run("cannot release a claim", |conn| {
                    let owner = owner.clone();
                    Box::pin(async move {
                        conn.client
                            .execute(&conn.sql.release, &[&key.as_slice(), &owner])
                            .await
                            .map_err(|e| Fault::statement(&e))
                    })
                })
                .await;
        });
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        let fields = Fields::of(&record);
        let pending = self.take_pending(&fields.intent);
        let owner = owner.as_str().to_owned();
        let sync = durability == Durability::Synced;
        Answer::later(async move {
            if !pending.is_empty() {
                self.inner.append(pending, false).await?;
            }
            self.inner.start(Arc::new(fields), owner, sync).await
        })
    }

    fn append(&self, record: RecordRef<'_>, durability: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.store(record, durability)
    }

    fn end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.fenced_end(owner, record, durability, false)
    }

    /// The record and the release in one statement; when it cannot be stored, the release is sent off
    /// on its own.
    fn finish(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        let key = record.intent_key;
        let owner = owner.clone();
        let stored = self.fenced_end(&owner, record, durability, true);
        Answer::later(async move {
            let stored = stored.await;
            if stored.is_err() {
                self.release(&key, &owner);
            }
            stored
        })
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        let key = *key;
        Answer::later(async move { self.try_recall(&key).await })
    }

    fn attempts(&self, key: &IntentKey) -> Answer<'_, Result<Option<u32>, JournalError>> {
        let key = *key.as_bytes();
        Answer::later(self.inner.highest(key))
    }

    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        Answer::later(self.try_unresolved())
    }
}
