//! Removing what nobody will ask about again: resolved intents past an age.

use std::time::Duration;

use tool_contract::journal::{JournalError, Owner};

use crate::fault::Fault;
use crate::store::PgJournal;

/// Intents removed per transaction.
const BATCH: i64 = 500;

/// How long retention holds the claims of the intents it removes: the one transaction that removes
/// them, which commits or rolls back long before.
const HOLD: f64 = 60.0;

/// Resolved intents whose records are all older than `$1` seconds, at most `$2` of them.
const CANDIDATES: &str = "
WITH last AS (
    SELECT DISTINCT ON (intent) intent, phase, outcome, effect_applied
    FROM tool_contract.attempts
    WHERE phase NOT IN ('approval', 'mcp_task')
    ORDER BY intent, attempt DESC, phase = 'settled' DESC, seq DESC
), old AS (
    SELECT intent FROM tool_contract.attempts
    GROUP BY intent
    HAVING max(written_at) < clock_timestamp() - make_interval(secs => $1)
)
SELECT last.intent FROM last JOIN old USING (intent)
WHERE last.phase = 'settled'
   OR last.phase = 'end' AND last.outcome IS NOT NULL AND last.outcome <> 'unknown'
      AND last.effect_applied IS DISTINCT FROM 'unknown'
LIMIT $2";

/// Claim the intents `$1` for retention's owner `$2`, like any worker: only those nobody holds.
const CLAIM_ALL: &str = "
INSERT INTO tool_contract.claims AS c (intent, owner, lease_until)
SELECT intent, $2, clock_timestamp() + make_interval(secs => $3) FROM unnest($1::bytea[]) AS intent
ON CONFLICT (intent) DO UPDATE
    SET owner = excluded.owner, lease_until = excluded.lease_until
    WHERE c.lease_until <= clock_timestamp()
RETURNING intent";

/// Remove the records of the intents `$1` whose last word is, looked at again now, still resolved.
const REMOVE: &str = "
WITH last AS (
    SELECT DISTINCT ON (intent) intent, phase, outcome, effect_applied
    FROM tool_contract.attempts
    WHERE intent = ANY($1) AND phase NOT IN ('approval', 'mcp_task')
    ORDER BY intent, attempt DESC, phase = 'settled' DESC, seq DESC
)
DELETE FROM tool_contract.attempts
WHERE intent IN (
    SELECT intent FROM last
    WHERE phase = 'settled'
       OR phase = 'end' AND outcome IS NOT NULL AND outcome <> 'unknown' AND effect_applied IS DISTINCT FROM 'unknown'
)
RETURNING intent";

/// Drop retention's own claims on `$1` (owner `$2`).
const RELEASE_ALL: &str = "DELETE FROM tool_contract.claims WHERE intent = ANY($1) AND owner = $2";

/// Claims whose lease ended more than `$1` seconds ago: the same as no claim to every rule.
const EXPIRED_CLAIMS: &str =
    "DELETE FROM tool_contract.claims WHERE lease_until < clock_timestamp() - make_interval(secs => $1)";

impl PgJournal {
    /// Remove every intent whose last word is resolved (an end record that is not `unknown`) and whose
    /// records are all older than `age`, on the server's clock; the number of intents removed.
    ///
    /// Safe while workers run: an intent whose last word is unfinished, `unknown` or with its effect unknown is never removed,
    /// nor one under a live claim. Retention claims each intent it removes, as a worker would, so no
    /// worker can start an attempt of it meanwhile, and it looks at the last word again under that
    /// claim before removing anything. Claims that expired longer than `age` ago go too.
    ///
    /// A call repeated after its intent was removed is a new intent to the log: it runs again. Choose
    /// `age` beyond any time a caller may still repeat a call (days, not minutes).
    pub async fn remove_resolved_older_than(&self, age: Duration) -> Result<u64, JournalError> {
        let age = age.as_secs_f64();
        let owner = format!("tool-contract-retention-{}", Owner::unique());
        let mut removed = 0u64;
        loop {
            let owner = owner.clone();
            let (batch, found) = self
                .inner()
                .run("cannot remove resolved intents", |conn| {
                    let owner = owner.clone();
                    Box::pin(async move {
                        let tx = conn.client.transaction().await.map_err(|e| Fault::statement(&e))?;
                        let rows =
                            tx.query(CANDIDATES, &[&age, &BATCH]).await.map_err(|e| Fault::statement(&e))?;
                        let found = rows.len();
                        let intents = column(&rows)?;
                        let rows = tx
                            .query(CLAIM_ALL, &[&intents, &owner, &HOLD])
                            .await
                            .map_err(|e| Fault::statement(&e))?;
                        let claimed = column(&rows)?;
                        let rows = tx.query(REMOVE, &[&claimed]).await.map_err(|e| Fault::statement(&e))?;
                        let mut gone = column(&rows)?;
                        gone.sort_unstable();
                        gone.dedup();
                        tx.execute(RELEASE_ALL, &[&claimed, &owner])
                            .await
                            .map_err(|e| Fault::statement(&e))?;
                        tx.commit().await.map_err(|e| Fault::statement(&e))?;
                        Ok((gone.len() as u64, found))
                    })
                })
                .await?;
            removed += batch;
            // A batch that removed nothing found only intents busy now: they wait for the next run.
            if found < BATCH as usize || batch == 0 {
                break;
            }
        }
        self.inner()
            .run("cannot remove expired claims", |conn| {
                Box::pin(async move {
                    conn.client.execute(EXPIRED_CLAIMS, &[&age]).await.map_err(|e| Fault::statement(&e))
                })
            })
            .await?;
        Ok(removed)
    }
}

/// The first column of `rows`, the intents.
fn column(rows: &[tokio_postgres::Row]) -> Result<Vec<Vec<u8>>, Fault> {
    rows.iter().map(|row| row.try_get(0).map_err(|e| Fault::statement(&e))).collect()
}
