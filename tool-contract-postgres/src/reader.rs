//! Following the store's log from outside the fleet: [`PgReader`].

use tool_contract::IntentKey;
use tool_contract::journal::inspect::Stored;
use tool_contract::journal::{Answer, Batch, JournalError, LogReader};

use crate::PgJournal;

/// How far back each look reads again: a row numbered before the last one read may commit after it
/// (numbers are taken in one order, commits land in another); reading it again is harmless, since a
/// record at or before a place already folded for its intent is one seen before ([`Batch::records`]).
const LAG: i64 = 2_000;

/// A [`LogReader`] of a PostgreSQL store ([`PgJournal::reader`]): a look reads the rows stored since
/// the highest one read, from a little way back ([`Batch::records`] may repeat a record), with its row
/// number as its place; the looks that follow a batch with [`Batch::more`] go on from its last row. An
/// intent's records come with their owner and when the server took them.
#[derive(Debug)]
pub struct PgReader {
    journal: PgJournal,
    /// The highest row number read so far, and where the next look starts when the last one said
    /// there is more.
    cursor: tokio::sync::Mutex<(i64, Option<i64>)>,
}

impl PgJournal {
    /// A reader of this store's whole log, which has read nothing yet: how the operator console
    /// follows a fleet's log.
    pub fn reader(&self) -> PgReader {
        PgReader { journal: self.clone(), cursor: tokio::sync::Mutex::new((0, None)) }
    }
}

impl PgReader {
    async fn read(&self, limit: usize) -> Result<Batch, JournalError> {
        let mut cursor = self.cursor.lock().await;
        let (highest, going_on) = *cursor;
        let mut after = going_on.unwrap_or_else(|| highest.saturating_sub(LAG).max(0));
        let rows = self.journal.records_after(after, limit.max(1)).await?;
        let more = rows.len() == limit.max(1);
        let mut batch = Batch { more, ..Batch::default() };
        batch.records.reserve(rows.len());
        for (seq, record) in rows {
            after = seq;
            cursor.0 = cursor.0.max(seq);
            batch.records.push((u64::try_from(seq).unwrap_or(0), record));
        }
        cursor.1 = more.then_some(after);
        Ok(batch)
    }
}

impl LogReader for PgReader {
    fn read_more(&self, limit: usize) -> Answer<'_, Result<Batch, JournalError>> {
        Answer::later(self.read(limit))
    }

    fn intent_records(&self, key: &IntentKey) -> Answer<'_, Result<Vec<Stored>, JournalError>> {
        let key = *key;
        Answer::later(async move { self.journal.intent_records(&key).await })
    }
}
