//! Reading a whole log as it grows: [`LogReader`], what the operator console and other readers of a
//! store (not writers of it) follow a log by.

use super::inspect::Stored;
use super::{Answer, JournalError, Record};
use crate::key::IntentKey;

/// One look at a log: the records stored since the reader's last look.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// The records, in the store's order, each with its place: a number that grows with every record
    /// stored (a line's offset in a file, a row's number in PostgreSQL). A record may come again in a
    /// later batch (a store whose rows commit out of order is read again a little way back); a record
    /// of an intent at or before a place already folded for that intent is one seen before.
    pub records: Vec<(u64, Record)>,
    /// The log was replaced since the last look (a compaction's rename, a restore): what was read of it
    /// before is gone, and `records` begin at the new log's start.
    pub restarted: bool,
    /// Stored items skipped because they are not records (a file's unreadable or torn lines); a store
    /// that keeps only records says 0.
    pub unreadable: u64,
    /// More records are stored than this batch held: look again at once.
    pub more: bool,
}

/// A reader of a whole log: what was stored after a point, and every record of one intent. The
/// reader keeps its own point (where its last look ended), so a reader that follows a log reads each
/// record about once however long the log grows.
///
/// The file log ([`FileReader`](crate::journal::file::FileReader), which reads a file an agent holds
/// without its lock) and PostgreSQL (`tool_contract_postgres::PgReader`) implement it; a store
/// appends through [`Journal`](crate::journal::Journal), a reader reads through this.
pub trait LogReader: Send + Sync {
    /// At most `limit` records stored since this reader's last look (from the log's beginning on the
    /// first), in the store's order, fewer when the store reads less at a time (a file reader reads at
    /// most 1 MiB at a look); an error when the store could not be read.
    fn read_more(&self, limit: usize) -> Answer<'_, Result<Batch, JournalError>>;

    /// Every record of the intent `key`, in the store's order, with who wrote it and when where the
    /// store keeps that; empty when the log holds nothing of it (or, for a reader that finds records
    /// by what it has read, nothing read so far).
    fn intent_records(&self, key: &IntentKey) -> Answer<'_, Result<Vec<Stored>, JournalError>>;
}
