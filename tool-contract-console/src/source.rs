//! Where the console reads and settles: a file log (through its index, settling through the agent that
//! holds it) or, with the feature `postgres`, a fleet's PostgreSQL store.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tool_contract::journal::{Recall, Record};
use tool_contract::{IntentKey, Settle, SettleError};

use crate::index::{Index, recent_of};
use crate::pages::{MAX_ROWS, Overview};

/// How long a settlement waits for the agent holding a file log to take it.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// The store a console shows.
pub(crate) enum Source {
    /// A file log, indexed; `log` is its path.
    File { log: PathBuf, index: Mutex<Index> },
    /// A PostgreSQL store, queried per page.
    #[cfg(feature = "postgres")]
    Postgres(tool_contract_postgres::PgJournal),
}

impl Source {
    /// The file log's index, brought up to date.
    fn index(index: &Mutex<Index>) -> Result<std::sync::MutexGuard<'_, Index>, String> {
        let mut index = index.lock().unwrap_or_else(|e| e.into_inner());
        index.refresh().map_err(|e| format!("the log cannot be read: {e}"))?;
        Ok(index)
    }

    pub(crate) async fn overview(&self, now: SystemTime) -> Result<Overview, String> {
        match self {
            Source::File { index, .. } => {
                let index = Source::index(index)?;
                let doubt = index.in_doubt();
                let mut totals = format!("{} intents, {} records", index.intents(), index.records);
                if index.unreadable > 0 {
                    totals.push_str(&format!(", {} unreadable lines skipped", index.unreadable));
                }
                Ok(Overview {
                    doubt_total: doubt.len(),
                    doubt: doubt.into_iter().take(MAX_ROWS).cloned().collect(),
                    recent: index.recent(now),
                    totals: totals + ".",
                })
            }
            #[cfg(feature = "postgres")]
            Source::Postgres(journal) => {
                use tool_contract::Journal;
                let doubt = journal.unresolved().await.map_err(|e| e.to_string())?;
                let recent =
                    journal.recent(Duration::from_secs(24 * 3600)).await.map_err(|e| e.to_string())?;
                let totals = format!("{} intents written to in the last day.", recent.len());
                Ok(Overview {
                    doubt_total: doubt.len(),
                    doubt: doubt.into_iter().take(MAX_ROWS).collect(),
                    recent: recent_of(recent.iter(), now),
                    totals,
                })
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
            Source::Postgres(journal) => {
                journal.by_prefix(&prefix, MAX_ROWS).await.map_err(|e| e.to_string())
            }
        }
    }

    /// A task's intents, in the order first recorded.
    pub(crate) async fn task(&self, task: &str) -> Result<Vec<Recall>, String> {
        match self {
            Source::File { index, .. } => Ok(Source::index(index)?.task(task).into_iter().cloned().collect()),
            #[cfg(feature = "postgres")]
            Source::Postgres(journal) => {
                let stored = journal.records(Some(task)).await.map_err(|e| e.to_string())?;
                let mut order: Vec<IntentKey> = Vec::new();
                let mut recalls: std::collections::HashMap<IntentKey, Recall> =
                    std::collections::HashMap::new();
                for entry in stored {
                    let record = entry.record;
                    match recalls.get_mut(&record.intent_key) {
                        Some(recall) => recall.update(&record),
                        None => {
                            order.push(record.intent_key);
                            recalls.insert(record.intent_key, Recall::from_record(record));
                        }
                    }
                }
                Ok(order.iter().filter_map(|key| recalls.remove(key)).collect())
            }
        }
    }

    /// One intent's last word and every record of it, in order.
    pub(crate) async fn intent(&self, key: &IntentKey) -> Result<Option<(Recall, Vec<Record>)>, String> {
        match self {
            Source::File { index, .. } => {
                let index = Source::index(index)?;
                let Some(recall) = index.intent(key).cloned() else { return Ok(None) };
                let records = index.records(key).map_err(|e| format!("the log cannot be read: {e}"))?;
                Ok(Some((recall, records)))
            }
            #[cfg(feature = "postgres")]
            Source::Postgres(journal) => {
                use tool_contract::Journal;
                let Some(recall) = journal.recall(key).await.map_err(|e| e.to_string())? else {
                    return Ok(None);
                };
                let stored = journal.intent_records(key).await.map_err(|e| e.to_string())?;
                Ok(Some((recall, stored.into_iter().map(|s| s.record).collect())))
            }
        }
    }

    /// Settle `key`: through the agent holding a file log, or under a claim in PostgreSQL.
    pub(crate) async fn settle(&self, key: IntentKey, settle: Settle) -> Result<Record, SettleError> {
        match self {
            Source::File { log, .. } => {
                let log = log.clone();
                tokio::task::spawn_blocking(move || {
                    tool_contract::journal::file::request_settlement(&log, &key, &settle, SETTLE_WAIT)
                })
                .await
                .unwrap_or_else(|e| Err(SettleError::Invalid(format!("the settlement stopped: {e}"))))
            }
            #[cfg(feature = "postgres")]
            Source::Postgres(journal) => tool_contract::settle(journal, &key, &settle).await,
        }
    }
}
