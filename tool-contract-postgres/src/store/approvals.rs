//! The approval records of an intent: its last one, and a next one stored only if it may follow,
//! under the intent's approval lock; and its MCP task records.

use std::sync::Arc;

use tool_contract::IntentKey;
use tool_contract::journal::{Answer, Approvals, JournalError, McpTasks, Record, RecordRef};

use crate::fault::Fault;
use crate::row::{Fields, record_of};

use super::{Inner, PgJournal};

impl Inner {
    /// The last approval record of `key`.
    async fn last_approval(&self, key: [u8; 16]) -> Result<Option<Record>, JournalError> {
        self.run("cannot read an intent's approvals", |conn| {
            Box::pin(async move {
                let row = conn
                    .client
                    .query_opt(&crate::sql::TEXTS.last_approval, &[&key.as_slice()])
                    .await
                    .map_err(|e| Fault::statement(&e))?;
                row.map(|row| record_of(&row).map_err(Fault::corrupt)).transpose()
            })
        })
        .await
    }

    /// Store the approval record `fields` (`record`) if it may follow the intent's last one, under the
    /// intent's approval lock: whether it was stored. A retry after a lost answer finds its own record
    /// last, and says it was stored.
    async fn approval_step(&self, fields: Fields, record: Record) -> Result<bool, JournalError> {
        let (fields, record) = (Arc::new(fields), Arc::new(record));
        self.run("cannot store an approval record", |conn| {
            let (fields, record) = (Arc::clone(&fields), Arc::clone(&record));
            Box::pin(async move {
                let statement = |e: tokio_postgres::Error| Fault::statement(&e);
                let tx = conn.client.transaction().await.map_err(statement)?;
                tx.execute(crate::sql::LOCK_APPROVALS, &[&fields.intent.as_slice()])
                    .await
                    .map_err(statement)?;
                let last = tx
                    .query_opt(&crate::sql::TEXTS.last_approval, &[&fields.intent.as_slice()])
                    .await
                    .map_err(statement)?
                    .map(|row| record_of(&row).map_err(Fault::corrupt))
                    .transpose()?;
                if last.as_ref() == Some(&*record) {
                    return Ok(true);
                }
                if !tool_contract::rules::may_follow(&record.as_record_ref(), last.as_ref()) {
                    return Ok(false);
                }
                let mut params = fields.params().to_vec();
                let sync = true;
                params.push(&sync);
                tx.execute(&crate::sql::TEXTS.append, &params).await.map_err(statement)?;
                tx.commit().await.map_err(statement)?;
                Ok(true)
            })
        })
        .await
    }
}

impl Inner {
    /// The MCP task records of `key`, in the order stored.
    async fn mcp_task_records(&self, key: [u8; 16]) -> Result<Vec<Record>, JournalError> {
        self.run("cannot read an intent's MCP tasks", |conn| {
            Box::pin(async move {
                let rows = conn
                    .client
                    .query(&crate::sql::TEXTS.mcp_task_records, &[&key.as_slice()])
                    .await
                    .map_err(|e| Fault::statement(&e))?;
                rows.iter().map(|row| record_of(row).map_err(Fault::corrupt)).collect()
            })
        })
        .await
    }
}

impl McpTasks for PgJournal {
    fn mcp_task_records(&self, key: &IntentKey) -> Answer<'_, Result<Vec<Record>, JournalError>> {
        Answer::later(self.inner.mcp_task_records(*key.as_bytes()))
    }
}

impl Approvals for PgJournal {
    fn approval(&self, key: &IntentKey) -> Answer<'_, Result<Option<Record>, JournalError>> {
        Answer::later(self.inner.last_approval(*key.as_bytes()))
    }

    fn approval_step(&self, record: RecordRef<'_>) -> Answer<'_, Result<bool, JournalError>> {
        if record.phase != tool_contract::journal::Phase::Approval {
            return Answer::now(Ok(false));
        }
        let (fields, record) = (Fields::of(&record), record.to_record());
        Answer::later(self.inner.approval_step(fields, record))
    }
}
