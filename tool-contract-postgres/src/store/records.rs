//! Unfenced records: written in order, and the [`Durability::Lazy`] ones held back until the next
//! record of their intent.

use std::sync::Arc;

use tool_contract::journal::{Answer, Durability, JournalError, RecordRef};

use crate::fault::Fault;
use crate::row::Fields;

use super::{Inner, PgJournal};

/// How many [`Durability::Lazy`] records are held at most; past it the oldest is dropped (a read's
/// start record, whose loss costs a read nothing).
const MOST_PENDING: usize = 1024;
impl Inner {
    /// Store `records` in order, unfenced.
    pub(crate) async fn append(&self, records: Vec<Fields>, sync: bool) -> Result<(), JournalError> {
        let records = Arc::new(records);
        // A record stored twice by a retry whose first answer was lost folds to the same last word.
        self.run("cannot store a record", |conn| {
            let records = Arc::clone(&records);
            Box::pin(async move {
                for fields in records.iter() {
                    let mut params = fields.params().to_vec();
                    params.push(&sync);
                    conn.client.execute(&conn.sql.append, &params).await.map_err(|e| Fault::statement(&e))?;
                }
                Ok(())
            })
        })
        .await
    }
}

impl PgJournal {
    /// The [`Durability::Lazy`] records held for `intent`, taken out, oldest first.
    pub(super) fn take_pending(&self, intent: &[u8; 16]) -> Vec<Fields> {
        let mut pending = self.inner.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.is_empty() {
            return Vec::new();
        }
        let (mine, others) = std::mem::take(&mut *pending).into_iter().partition(|f| f.intent == *intent);
        *pending = others;
        mine
    }

    /// Store `record`, after the lazy records held for its intent.
    pub(super) fn store(
        &self,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        let fields = Fields::of(&record);
        if durability == Durability::Lazy {
            let mut pending = self.inner.pending.lock().unwrap_or_else(|e| e.into_inner());
            if pending.len() >= MOST_PENDING {
                pending.remove(0);
            }
            pending.push(fields);
            return Answer::now(Ok(()));
        }
        let mut records = self.take_pending(&fields.intent);
        records.push(fields);
        Answer::later(self.inner.append(records, durability == Durability::Synced))
    }
}
