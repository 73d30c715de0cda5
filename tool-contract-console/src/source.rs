//! Where the console reads and where a person's word goes: a [`LogReader`] it follows into its index,
//! and a [`Word`] that writes settlements and answers (through the agent holding a file log, or into
//! a store the console may write to itself).

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

use tool_contract::IntentKey;
use tool_contract::journal::file::FileReader;
use tool_contract::journal::inspect::Stored;
use tool_contract::journal::{Answer, Approvals, Batch, BoxFuture, JournalError, LogReader, Recall, Record};
use tool_contract::person::ApprovalError;
use tool_contract::person::{Decision, Settle, SettleError};

use crate::index::Index;
use crate::pages::{MAX_ROWS, Overview};

/// How long a settlement waits for the agent holding a file log to take it.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// What a console shows and settles.
pub(crate) struct Source {
    reader: Arc<dyn LogReader>,
    word: Arc<dyn Word>,
    /// The index of the reader's log, brought up to date before each page.
    index: tokio::sync::Mutex<Index>,
}

/// Where a person's word is written: a settlement, or the answer to a question.
pub(crate) trait Word: Send + Sync {
    /// Answer the question about attempt `attempt` of `key` (the attempt that would start).
    fn answer(
        &self,
        key: IntentKey,
        attempt: u32,
        decision: Decision,
    ) -> BoxFuture<'_, Result<Record, ApprovalError>>;

    /// Settle attempt `attempt` of `key`.
    fn settle(
        &self,
        key: IntentKey,
        attempt: u32,
        settle: Settle,
    ) -> BoxFuture<'_, Result<Record, SettleError>>;
}

/// A file log held by an agent: the word is a request the holder takes (the one waiting for it).
struct ThroughHolder(PathBuf);

impl Word for ThroughHolder {
    fn answer(
        &self,
        key: IntentKey,
        attempt: u32,
        decision: Decision,
    ) -> BoxFuture<'_, Result<Record, ApprovalError>> {
        let log = self.0.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                tool_contract::journal::file::request_approval(&log, &key, attempt, &decision, SETTLE_WAIT)
            })
            .await
            .unwrap_or_else(|e| Err(ApprovalError::Invalid(format!("the answer stopped: {e}"))))
        })
    }

    fn settle(
        &self,
        key: IntentKey,
        attempt: u32,
        settle: Settle,
    ) -> BoxFuture<'_, Result<Record, SettleError>> {
        let log = self.0.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                tool_contract::journal::file::request_settlement(&log, &key, attempt, &settle, SETTLE_WAIT)
            })
            .await
            .unwrap_or_else(|e| Err(SettleError::Invalid(format!("the settlement stopped: {e}"))))
        })
    }
}

/// A file log read on the blocking pool: a file reader reads the disk where it is called, and a page
/// must not stall the runtime's threads (two, by default) while it does.
struct Offloaded(Arc<FileReader>);

impl LogReader for Offloaded {
    fn read_more(&self, limit: usize) -> Answer<'_, Result<Batch, JournalError>> {
        let reader = Arc::clone(&self.0);
        Answer::later(async move {
            tokio::task::spawn_blocking(move || at_once(reader.read_more(limit)))
                .await
                .unwrap_or_else(|e| Err(stopped(e)))
        })
    }

    fn intent_records(&self, key: &IntentKey) -> Answer<'_, Result<Vec<Stored>, JournalError>> {
        let (reader, key) = (Arc::clone(&self.0), *key);
        Answer::later(async move {
            tokio::task::spawn_blocking(move || at_once(reader.intent_records(&key)))
                .await
                .unwrap_or_else(|e| Err(stopped(e)))
        })
    }
}

/// The value of an answer a file reader gives at once.
fn at_once<T>(answer: Answer<'_, Result<T, JournalError>>) -> Result<T, JournalError> {
    let mut answer = std::pin::pin!(answer);
    match answer.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => value,
        Poll::Pending => Err(JournalError::Io {
            context: "the file log's reader did not answer at once".into(),
            source: std::io::ErrorKind::WouldBlock.into(),
        }),
    }
}

fn stopped(e: tokio::task::JoinError) -> JournalError {
    JournalError::Io {
        context: format!("reading the log stopped: {e}"),
        source: std::io::ErrorKind::Other.into(),
    }
}

/// A store the console writes to itself (a fleet's PostgreSQL): an answer where the worker waiting
/// looks for it, a settlement under a claim, as a worker's.
struct InStore(Arc<dyn Approvals>);

impl Word for InStore {
    fn answer(
        &self,
        key: IntentKey,
        attempt: u32,
        decision: Decision,
    ) -> BoxFuture<'_, Result<Record, ApprovalError>> {
        Box::pin(
            async move { tool_contract::person::answer_approval(&*self.0, &key, attempt, &decision).await },
        )
    }

    fn settle(
        &self,
        key: IntentKey,
        attempt: u32,
        settle: Settle,
    ) -> BoxFuture<'_, Result<Record, SettleError>> {
        Box::pin(async move { tool_contract::person::settle(&*self.0, &key, attempt, &settle).await })
    }
}

impl Source {
    /// A file log at `log`, indexed at once (an error when it cannot be read); settled through the
    /// agent that holds it.
    pub(crate) fn file(log: PathBuf) -> Result<Source, String> {
        let reader = Arc::new(FileReader::new(&log));
        let mut index = Index::new();
        // A file reader answers at once, so its first look is made here, without a runtime; were it
        // not done, the first page would make it. Every later look is made on the blocking pool.
        {
            let first = std::pin::pin!(index.catch_up(&*reader));
            if let Poll::Ready(read) = first.poll(&mut Context::from_waker(Waker::noop())) {
                read.map_err(|e| format!("cannot read {}: {e}", log.display()))?;
            }
        }
        let source = Source::of(Arc::new(Offloaded(reader)), Arc::new(ThroughHolder(log)));
        Ok(Source { index: tokio::sync::Mutex::new(index), ..source })
    }

    /// A store read through `reader` and written to directly: its index is built on the first page.
    pub(crate) fn store(reader: Arc<dyn LogReader>, store: Arc<dyn Approvals>) -> Source {
        Source::of(reader, Arc::new(InStore(store)))
    }

    fn of(reader: Arc<dyn LogReader>, word: Arc<dyn Word>) -> Source {
        Source { reader, word, index: tokio::sync::Mutex::new(Index::new()) }
    }

    /// The index, brought up to date with what was stored since the last look.
    async fn index(&self) -> Result<tokio::sync::MutexGuard<'_, Index>, String> {
        let mut index = self.index.lock().await;
        index.catch_up(&*self.reader).await.map_err(|e| format!("the log cannot be read: {e}"))?;
        Ok(index)
    }

    pub(crate) async fn overview(&self, now: SystemTime) -> Result<Overview, String> {
        Ok(overview_of(&*self.index().await?, now))
    }

    /// The intents of task `q`, or else those whose key starts with `q`.
    pub(crate) async fn search(&self, q: &str) -> Result<Vec<Recall>, String> {
        let by_task = self.task(q).await?;
        let hex = q.len() >= 4 && q.bytes().all(|b| b.is_ascii_hexdigit());
        if !by_task.is_empty() || !hex {
            return Ok(by_task);
        }
        let prefix = q.to_ascii_lowercase();
        Ok(self.index().await?.by_prefix(&prefix, MAX_ROWS).into_iter().cloned().collect())
    }

    /// A task's intents, in the order first recorded.
    pub(crate) async fn task(&self, task: &str) -> Result<Vec<Recall>, String> {
        Ok(self.index().await?.task(task).into_iter().cloned().collect())
    }

    /// One intent's last word and every record of it, in order, with who wrote it and when where the
    /// store says.
    pub(crate) async fn intent(&self, key: &IntentKey) -> Result<Option<(Recall, Vec<Stored>)>, String> {
        let Some(recall) = self.index().await?.intent(key).cloned() else { return Ok(None) };
        let records =
            self.reader.intent_records(key).await.map_err(|e| format!("the log cannot be read: {e}"))?;
        Ok(Some((recall, records)))
    }

    /// Answer the question about attempt `attempt` of `key`.
    pub(crate) async fn answer(
        &self,
        key: IntentKey,
        attempt: u32,
        decision: Decision,
    ) -> Result<Record, ApprovalError> {
        self.word.answer(key, attempt, decision).await
    }

    /// Settle attempt `attempt` of `key`.
    pub(crate) async fn settle(
        &self,
        key: IntentKey,
        attempt: u32,
        settle: Settle,
    ) -> Result<Record, SettleError> {
        self.word.settle(key, attempt, settle).await
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
