//! Claiming an intent, and the records only a claim's holder may write: a start and an end, fenced
//! by the claim, with why the store refused one when it did.

use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::types::ToSql;
use tool_contract::journal::{Answer, Claimed, Durability, JournalError, Owner, RecordRef};

use crate::fault::{Fault, is_unique_violation};
use crate::pool::Conn;
use crate::row::Fields;

use super::reads::fold;
use super::{Inner, LONGEST_LEASE, PgJournal};

/// Why a fenced record was refused, as the store sees it after the fact.
enum Refusal {
    /// The writer holds no unexpired claim: why.
    Claim(String),
    /// It holds the claim: the highest attempt recorded, and whether the writer's own fenced start of
    /// the record's attempt is stored.
    Fenced { highest: i64, ours: bool },
}

async fn why_refused(conn: &mut Conn, fields: &Fields, owner: &str) -> Result<Refusal, Fault> {
    let row = conn
        .client
        .query_one(&conn.sql.why_refused, &[&fields.intent.as_slice(), &fields.attempt, &owner])
        .await
        .map_err(|e| Fault::statement(&e))?;
    let holder: Option<String> = row.try_get(0).map_err(|e| Fault::statement(&e))?;
    let live: Option<bool> = row.try_get(1).map_err(|e| Fault::statement(&e))?;
    let highest: i64 = row.try_get(2).map_err(|e| Fault::statement(&e))?;
    let ours: bool = row.try_get(3).map_err(|e| Fault::statement(&e))?;
    Ok(match (holder, live) {
        (None, _) => Refusal::Claim(format!("{owner} holds no claim on the intent")),
        (Some(holder), _) if holder != owner => {
            Refusal::Claim(format!("the intent is claimed by {holder}, not {owner}"))
        }
        (_, Some(false)) => Refusal::Claim(format!("the claim of {owner} has expired")),
        _ => Refusal::Fenced { highest, ours },
    })
}

impl Inner {
    pub(super) async fn claim(
        &self,
        key: [u8; 16],
        owner: String,
        lease: f64,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Claimed, JournalError> {
        self.run("cannot claim an intent", |conn| {
            let owner = owner.clone();
            Box::pin(async move {
                let deadline_on_server = deadline.map(|at| conn.on_server_clock(at));
                // A holder that lets go between the claim and the look at who holds it: claim again.
                for _ in 0..3 {
                    let key = key.as_slice();
                    let claim_params: [&(dyn ToSql + Sync); 4] = [&key, &owner, &lease, &deadline_on_server];
                    // The claim says whether the intent has any record, asked on a snapshot taken
                    // once its row is written (`tool_contract.intent_has_records`): a new intent's
                    // claim is answered in one statement. Otherwise the records are read in a
                    // statement of their own, whose snapshot is later still. Either way the answer
                    // holds every record a previous holder was allowed to write. (A subquery of the
                    // claim, on the snapshot the statement began with, could miss the previous
                    // holder's last records when the claim waited on its row while it finished.)
                    let claimed = conn
                        .client
                        .query(&conn.sql.claim, &claim_params)
                        .await
                        .map_err(|e| Fault::statement(&e))?;
                    if let Some(row) = claimed.first() {
                        let fresh: bool = row.try_get(1).map_err(|e| Fault::statement(&e))?;
                        if fresh {
                            return Ok(Claimed::Held(None));
                        }
                        let records = conn
                            .client
                            .query(&conn.sql.records_of_intent, &[&key])
                            .await
                            .map_err(|e| Fault::statement(&e))?;
                        return Ok(Claimed::Held(fold(&records)?));
                    }
                    if deadline.is_some_and(|at| tokio::time::Instant::now() >= at) {
                        return Err(Fault {
                            why: "the claim reached the server after its caller's deadline, and took nothing"
                                .to_owned(),
                            transient: false,
                            sent: true,
                        });
                    }
                    let holder = conn
                        .client
                        .query_opt(&conn.sql.holder, &[&key])
                        .await
                        .map_err(|e| Fault::statement(&e))?;
                    if let Some(row) = holder {
                        let holder: String = row.try_get(0).map_err(|e| Fault::statement(&e))?;
                        let left: f64 = row.try_get(1).map_err(|e| Fault::statement(&e))?;
                        let left = Duration::try_from_secs_f64(left.max(0.0)).unwrap_or(LONGEST_LEASE);
                        return Ok(Claimed::Busy { holder: Owner::new(holder), left });
                    }
                }
                Err(Fault::corrupt(
                    "the intent's claim changed hands three times while it was read".to_owned(),
                ))
            })
        })
        .await
    }

    pub(super) async fn start(
        &self,
        fields: Arc<Fields>,
        owner: String,
        sync: bool,
    ) -> Result<(), JournalError> {
        let verdict = self
            .run("cannot store a start record", |conn| {
                let (fields, owner) = (Arc::clone(&fields), owner.clone());
                Box::pin(async move {
                    let mut params = fields.params().to_vec();
                    params.push(&owner);
                    params.push(&sync);
                    let refused = match conn.client.query_opt(&conn.sql.start, &params).await {
                        Ok(Some(_)) => return Ok(Ok(())),
                        Ok(None) => None,
                        Err(e) if is_unique_violation(&e) => Some("another owner started it first"),
                        Err(e) => return Err(Fault::statement(&e)),
                    };
                    Ok(Err(match why_refused(conn, &fields, &owner).await? {
                        // An earlier try of this very start committed; its answer was lost.
                        Refusal::Fenced { ours: true, .. } => return Ok(Ok(())),
                        Refusal::Claim(why) => why,
                        Refusal::Fenced { highest, .. } if fields.attempt != highest + 1 => format!(
                            "attempt {highest} is the highest recorded, so the next is {}",
                            highest + 1
                        ),
                        Refusal::Fenced { .. } => match refused {
                            Some(why) => format!("attempt {} is already started: {why}", fields.attempt),
                            None => format!("the claim of {owner} changed while the start was written"),
                        },
                    }))
                })
            })
            .await?;
        verdict.map_err(|why| JournalError::Conflict {
            log: self.label.clone(),
            attempt_id: fields.attempt_id.clone(),
            why,
        })
    }

    /// Store `owner`'s end record `fields`, fenced; with `release`, the claim goes in the same commit.
    pub(super) async fn end(
        &self,
        fields: Fields,
        owner: String,
        sync: bool,
        release: bool,
    ) -> Result<(), JournalError> {
        let fields = Arc::new(fields);
        // An end record lost here leaves the attempt unfinished, to be probed: tried again on a new
        // connection first.
        let verdict = self
            .run("cannot store an end record", |conn| {
                let (fields, owner) = (Arc::clone(&fields), owner.clone());
                Box::pin(async move {
                    let mut params = fields.params().to_vec();
                    params.push(&owner);
                    params.push(&sync);
                    let statement = if release { &conn.sql.finish } else { &conn.sql.end };
                    if conn
                        .client
                        .query_opt(statement, &params)
                        .await
                        .map_err(|e| Fault::statement(&e))?
                        .is_some()
                    {
                        return Ok(Ok(()));
                    }
                    let why = why_refused(conn, &fields, &owner).await?;
                    Ok(Err(match why {
                        Refusal::Claim(why) => why,
                        Refusal::Fenced { highest, ours } => format!(
                            "{owner} {} attempt {}: only its starter writes its end, and the intent's \
                             holder only a probe's verdict on the highest attempt ({highest})",
                            if ours { "started" } else { "did not start" },
                            fields.attempt
                        ),
                    }))
                })
            })
            .await?;
        verdict.map_err(|why| JournalError::Conflict {
            log: self.label.clone(),
            attempt_id: fields.attempt_id.clone(),
            why,
        })
    }
}

impl PgJournal {
    /// [`Journal::end`](tool_contract::journal::Journal::end), and with `release` the claim given up in
    /// the same commit. An end record is never held back ([`Durability::Lazy`] is taken as
    /// [`Durability::Buffered`]): its fence is checked when it is written.
    pub(super) fn fenced_end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
        release: bool,
    ) -> Answer<'_, Result<(), JournalError>> {
        let fields = Fields::of(&record);
        let pending = self.take_pending(&fields.intent);
        let (owner, sync) = (owner.as_str().to_owned(), durability == Durability::Synced);
        // As a start: the lazy records of the intent first, unfenced, then the fenced one.
        Answer::later(async move {
            if !pending.is_empty() {
                self.inner.append(pending, false).await?;
            }
            self.inner.end(fields, owner, sync, release).await
        })
    }
}
