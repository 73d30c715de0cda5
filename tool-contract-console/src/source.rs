//! Where the console reads and settles: a file log (through its index, settling through the agent that
//! holds it) or, with the feature `postgres`, a fleet's PostgreSQL store.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tool_contract::IntentKey;
use tool_contract::journal::inspect::Stored;
use tool_contract::journal::{Recall, Record};
use tool_contract::person::ApprovalError;
use tool_contract::person::{Decision, Settle, SettleError};

use crate::index::Index;
use crate::pages::{MAX_ROWS, Overview};

/// How long a settlement waits for the agent holding a file log to take it.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// The store a console shows.
pub(crate) enum Source {
    /// A file log, indexed; `log` is its path.
    File { log: PathBuf, index: Mutex<Index> },
    /// A PostgreSQL store, and an index of its intents' last words kept by reading the rows stored
    /// since the last look (and the `seq` read up to).
    #[cfg(feature = "postgres")]
    Postgres { journal: tool_contract_postgres::PgJournal, index: tokio::sync::Mutex<(Index, i64)> },
}

/// Rows read from PostgreSQL at a time, while the index catches up.
#[cfg(feature = "postgres")]
const BATCH: usize = 50_000;

/// How far back each look reads again: a row numbered before the last one read may commit after it
/// (numbers are taken in one order, commits land in another); reading it again is harmless.
#[cfg(feature = "postgres")]
const LAG: i64 = 2_000;

impl Source {
    /// A source over a PostgreSQL store: its index is built on the first page.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres(journal: tool_contract_postgres::PgJournal) -> Source {
        Source::Postgres { journal, index: tokio::sync::Mutex::new((Index::of_store(), 0)) }
    }

    /// The PostgreSQL store's index, brought up to date with the rows stored since the last look.
    #[cfg(feature = "postgres")]
    async fn pg_index<'a>(
        journal: &tool_contract_postgres::PgJournal,
        index: &'a tokio::sync::Mutex<(Index, i64)>,
    ) -> Result<tokio::sync::MutexGuard<'a, (Index, i64)>, String> {
        let mut held = index.lock().await;
        let mut after = held.1.saturating_sub(LAG).max(0);
        loop {
            let rows = journal.records_after(after, BATCH).await.map_err(|e| e.to_string())?;
            let more = rows.len() == BATCH;
            for (seq, record) in rows {
                after = seq;
                held.1 = held.1.max(seq);
                held.0.fold(record, Some((u64::try_from(seq).unwrap_or(0), 0)));
            }
            if !more {
                return Ok(held);
            }
        }
    }

    /// The file log's index, brought up to date.
    fn index(index: &Mutex<Index>) -> Result<std::sync::MutexGuard<'_, Index>, String> {
        let mut index = index.lock().unwrap_or_else(|e| e.into_inner());
        index.refresh().map_err(|e| format!("the log cannot be read: {e}"))?;
        Ok(index)
    }

    pub(crate) async fn overview(&self, now: SystemTime) -> Result<Overview, String> {
        match self {
            Source::File { index, .. } => Ok(overview_of(&*Source::index(index)?, now)),
            #[cfg(feature = "postgres")]
            Source::Postgres { journal, index } => {
                Ok(overview_of(&Source::pg_index(journal, index).await?.0, now))
            }
        }
    }

    /// The intents of task `q`, or else those whose key starts with `q`.
    pub(crate) async fn search(&self, q: &str) -> Result<Vec<Recall>, String> {
        let by_task = self.task(q).await?;
        let hex = q.len() >= 4 && q.bytes().all(|b| b.is_ascii_hexdigit());
        if !by_task.is_empty() || !hex {
            return Ok(by_task);
        }
        let prefix = q.to_ascii_lowercase();
        match self {
            Source::File { index, .. } => {
                Ok(Source::index(index)?.by_prefix(&prefix, MAX_ROWS).into_iter().cloned().collect())
            }
            #[cfg(feature = "postgres")]
            Source::Postgres { journal, index } => {
                let held = Source::pg_index(journal, index).await?;
                Ok(held.0.by_prefix(&prefix, MAX_ROWS).into_iter().cloned().collect())
            }
        }
    }

    /// A task's intents, in the order first recorded.
    pub(crate) async fn task(&self, task: &str) -> Result<Vec<Recall>, String> {
        match self {
            Source::File { index, .. } => Ok(Source::index(index)?.task(task).into_iter().cloned().collect()),
            #[cfg(feature = "postgres")]
            Source::Postgres { journal, index } => {
                Ok(Source::pg_index(journal, index).await?.0.task(task).into_iter().cloned().collect())
            }
        }
    }

    /// One intent's last word and every record of it, in order, with who wrote it and when where the
    /// store says.
    pub(crate) async fn intent(&self, key: &IntentKey) -> Result<Option<(Recall, Vec<Stored>)>, String> {
        match self {
            Source::File { index, .. } => {
                let index = Source::index(index)?;
                let Some(recall) = index.intent(key).cloned() else { return Ok(None) };
                let records = index.records(key).map_err(|e| format!("the log cannot be read: {e}"))?;
                let stored =
                    records.into_iter().map(|record| Stored { record, owner: None, written_at: None });
                Ok(Some((recall, stored.collect())))
            }
            #[cfg(feature = "postgres")]
            Source::Postgres { journal, .. } => {
                use tool_contract::journal::Journal;
                let Some(recall) = journal.recall(key).await.map_err(|e| e.to_string())? else {
                    return Ok(None);
                };
                let stored = journal.intent_records(key).await.map_err(|e| e.to_string())?;
                Ok(Some((recall, stored)))
            }
        }
    }

    /// Answer the question about attempt `attempt` of `key`: through the agent holding a file log
    /// (the one waiting for it), or in PostgreSQL, where the worker waiting looks for it.
    pub(crate) async fn answer(
        &self,
        key: IntentKey,
        attempt: u32,
        decision: Decision,
    ) -> Result<Record, ApprovalError> {
        match self {
            Source::File { log, .. } => {
                let log = log.clone();
                tokio::task::spawn_blocking(move || {
                    tool_contract::journal::file::request_approval(
                        &log,
                        &key,
                        attempt,
                        &decision,
                        SETTLE_WAIT,
                    )
                })
                .await
                .unwrap_or_else(|e| Err(ApprovalError::Invalid(format!("the answer stopped: {e}"))))
            }
            #[cfg(feature = "postgres")]
            Source::Postgres { journal, .. } => {
                tool_contract::person::answer_approval(journal, &key, attempt, &decision).await
            }
        }
    }

    /// Settle attempt `attempt` of `key`: through the agent holding a file log, or under a claim in
    /// PostgreSQL.
    pub(crate) async fn settle(
        &self,
        key: IntentKey,
        attempt: u32,
        settle: Settle,
    ) -> Result<Record, SettleError> {
        match self {
            Source::File { log, .. } => {
                let log = log.clone();
                tokio::task::spawn_blocking(move || {
                    tool_contract::journal::file::request_settlement(
                        &log,
                        &key,
                        attempt,
                        &settle,
                        SETTLE_WAIT,
                    )
                })
                .await
                .unwrap_or_else(|e| Err(SettleError::Invalid(format!("the settlement stopped: {e}"))))
            }
            #[cfg(feature = "postgres")]
            Source::Postgres { journal, .. } => {
                tool_contract::person::settle(journal, &key, attempt, &settle).await
            }
        }
    }
}

/// The overview of an index: the oldest intents in doubt, what ended lately, the totals.
fn overview_of(index: &Index, now: SystemTime) -> Overview {
    let doubt = index.in_doubt();
    let mut totals = format!("{} intents, {} records", index.intents(), index.records);
    if index.unreadable > 0 {
        totals.push_str(&format!(", {} unreadable lines skipped", index.unreadable));
    }
    Overview {
        pending: index.pending(now).into_iter().take(MAX_ROWS).cloned().collect(),
        doubt_total: doubt.len(),
        doubt: doubt.into_iter().take(MAX_ROWS).cloned().collect(),
        recent: index.recent(now),
        totals: totals + ".",
    }
}
