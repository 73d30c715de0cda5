//! What the store reads: an intent's records folded into its last word, the unresolved intents, the
//! records an inspector or a console lists, and an intent's highest attempt.

use tool_contract::IntentKey;
use tool_contract::journal::inspect::Stored;
use tool_contract::journal::{JournalError, Recall};

use crate::fault::Fault;
use crate::row::{record_of, stored_of};

use super::{Inner, PgJournal};

impl PgJournal {
    /// What the log holds on one intent, or why it could not be read:
    /// [`Journal::recall`](tool_contract::journal::Journal::recall), without the trait in scope.
    pub async fn try_recall(&self, key: &IntentKey) -> Result<Option<Recall>, JournalError> {
        let key = *key.as_bytes();
        self.inner
            .run("cannot read an intent's records", |conn| {
                Box::pin(async move {
                    let rows = conn
                        .client
                        .query(&conn.sql.records_of_intent, &[&key.as_slice()])
                        .await
                        .map_err(|e| Fault::statement(&e))?;
                    fold(&rows)
                })
            })
            .await
    }

    /// Every intent whose last word is unfinished, `unknown` or with its effect unknown, oldest first, or why they could not be
    /// read: [`Journal::unresolved`](tool_contract::journal::Journal::unresolved), without the trait in
    /// scope.
    pub async fn try_unresolved(&self) -> Result<Vec<Recall>, JournalError> {
        self.inner
            .run("cannot read the unresolved intents", |conn| {
                Box::pin(async move {
                    let rows = conn
                        .client
                        .query(&conn.sql.unresolved, &[])
                        .await
                        .map_err(|e| Fault::statement(&e))?;
                    let mut open = Vec::with_capacity(rows.len());
                    for row in &rows {
                        let last = record_of(row).map_err(Fault::corrupt)?;
                        open.push(Recall { attempts: last.attempt, last });
                    }
                    Ok(tool_contract::rules::sort_queue(open))
                })
            })
            .await
    }

    /// Every record in the order stored, or those of one task: what an inspector lists.
    pub async fn records(&self, task: Option<&str>) -> Result<Vec<Stored>, JournalError> {
        let task = task.map(str::to_owned);
        self.inner
            .run("cannot read the records", |conn| {
                let task = task.clone();
                Box::pin(async move {
                    let rows = match &task {
                        Some(task) => conn.client.query(&crate::sql::TEXTS.records_of_task, &[task]).await,
                        None => conn.client.query(&crate::sql::TEXTS.records, &[]).await,
                    }
                    .map_err(|e| Fault::statement(&e))?;
                    rows.iter().map(|row| stored_of(row).map_err(Fault::corrupt)).collect()
                })
            })
            .await
    }

    /// Every record of one intent, in the order stored, each with its owner and when the server took
    /// it: an intent's timeline.
    pub async fn intent_records(&self, key: &IntentKey) -> Result<Vec<Stored>, JournalError> {
        let key = key.as_bytes().to_vec();
        self.inner
            .run("cannot read the intent's records", |conn| {
                let key = key.clone();
                Box::pin(async move {
                    let rows = conn
                        .client
                        .query(&crate::sql::TEXTS.records_of_intent_stored, &[&key])
                        .await
                        .map_err(|e| Fault::statement(&e))?;
                    rows.iter().map(|row| stored_of(row).map_err(Fault::corrupt)).collect()
                })
            })
            .await
    }

    /// At most `limit` records stored after the one numbered `after` (0: from the first), in the order
    /// stored, each with its number: how a reader follows the log (the operator console keeps its
    /// index of last words this way, reading only what is new).
    pub async fn records_after(
        &self,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, tool_contract::journal::Record)>, JournalError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.inner
            .run("cannot read the records", |conn| {
                Box::pin(async move {
                    let rows = conn
                        .client
                        .query(&crate::sql::TEXTS.records_after, &[&after, &limit])
                        .await
                        .map_err(|e| Fault::statement(&e))?;
                    rows.iter()
                        .map(|row| {
                            let seq: i64 = row
                                .try_get(crate::row::AFTER_COLUMNS)
                                .map_err(|e| Fault::corrupt(format!("seq: {e}")))?;
                            crate::row::record_of(row).map(|record| (seq, record)).map_err(Fault::corrupt)
                        })
                        .collect()
                })
            })
            .await
    }
}

/// What the records of one intent, in the order stored, fold into: [`Recall::update`], the rule every
/// store follows. A row without an intent holds none.
pub(super) fn fold(rows: &[tokio_postgres::Row]) -> Result<Option<Recall>, Fault> {
    let mut recall: Option<Recall> = None;
    for row in rows {
        if matches!(row.try_get::<_, Option<&[u8]>>(crate::row::INTENT_AT), Ok(None)) {
            continue;
        }
        let record = record_of(row).map_err(Fault::corrupt)?;
        match &mut recall {
            Some(recall) => recall.update(&record),
            None => recall = Some(Recall::from_record(record)),
        }
    }
    Ok(recall)
}

impl Inner {
    pub(super) async fn highest(&self, key: [u8; 16]) -> Result<Option<u32>, JournalError> {
        self.run("cannot read an intent's attempts", |conn| {
            Box::pin(async move {
                let row = conn
                    .client
                    .query_one(&conn.sql.highest, &[&key.as_slice()])
                    .await
                    .map_err(|e| Fault::statement(&e))?;
                let highest: Option<i64> = row.try_get(0).map_err(|e| Fault::statement(&e))?;
                Ok(highest.map(|n| u32::try_from(n).unwrap_or(u32::MAX)))
            })
        })
        .await
    }
}
