//! [`PgJournal`]: the attempt log and its claims in PostgreSQL.

use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::Config;
use tokio_postgres::types::ToSql;
use tool_contract::IntentKey;
use tool_contract::journal::inspect::Stored;
use tool_contract::journal::{
    Answer, Approvals, BoxFuture, Claimed, Durability, Journal, JournalError, Owner, Recall, Record,
    RecordRef,
};

use crate::conninfo::{label, redact};
use crate::fault::{Fault, is_unique_violation, timed_out};
use crate::options::PgOptions;
use crate::pool::{Conn, Connector, Pool};
use crate::row::{Fields, record_of, stored_of};
use crate::schema::{self, MigrationError, SCHEMA_VERSION};

/// The longest lease a claim takes: a year, as the embedded stores cap it.
const LONGEST_LEASE: Duration = Duration::from_secs(86_400 * 365);

/// An attempt log in PostgreSQL, shared by every worker of a fleet.
///
/// Cloning it is cheap and shares its connections. See the [crate documentation](crate) for the schema
/// and how each rule of the store contract is kept.
#[derive(Clone)]
pub struct PgJournal {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pool: Pool,
    pub(crate) label: String,
    options: PgOptions,
    /// [`Durability::Lazy`] records not yet written (reads' start records): each is written before
    /// the next record of its intent, so a read's start never lands after its end.
    pending: std::sync::Mutex<Vec<Fields>>,
}

/// Why a database's schema is not one this build can use: no log, an older one a read-only store
/// does not migrate, a newer one, or a failed migration.
fn schema_refused(error: MigrationError, label: &str) -> JournalError {
    match error {
        MigrationError::Missing(found) => JournalError::NotALog {
            log: label.to_owned(),
            why: match found {
                0 => "the database holds no attempt log (no table tool_contract.schema_version)".to_owned(),
                older => format!(
                    "its schema is at version {older}, older than the {SCHEMA_VERSION} this build reads; a worker \
                     of this build migrates it when it connects"
                ),
            },
        },
        MigrationError::Newer(found) => JournalError::NotALog {
            log: label.to_owned(),
            why: format!(
                "its schema is at version {found}, newer than the {SCHEMA_VERSION} this build knows; upgrade this \
                 worker"
            ),
        },
        MigrationError::Db(e) => Fault::statement(&e).into_error(label, "cannot create the schema"),
    }
}

impl PgJournal {
    /// Connect with the default [`PgOptions`], creating or migrating the schema.
    ///
    /// `conninfo` is a URL (`postgres://user:password@host:5432/db`) or `key=value` pairs
    /// (`host=/run/postgresql dbname=agents`); a password in it never appears in an error or a log.
    pub async fn connect(conninfo: &str) -> Result<PgJournal, JournalError> {
        PgJournal::connect_with(conninfo, PgOptions::default()).await
    }

    /// Connect with these options, creating or migrating the schema (see [`SCHEMA_VERSION`]).
    ///
    /// Many workers may connect at once: the migration runs under an advisory lock, once. A database
    /// whose schema is newer than this build is refused ([`JournalError::NotALog`]) and left untouched.
    pub async fn connect_with(conninfo: &str, options: PgOptions) -> Result<PgJournal, JournalError> {
        PgJournal::connect_using(conninfo, options, Connector::Plain).await
    }

    /// [`PgJournal::connect_with`] over TLS (feature `tls`): every connection is encrypted with rustls
    /// on `tls`, the client configuration (its root certificates, and a client certificate if the
    /// server asks for one). The connection string's `sslmode` says whether TLS is required
    /// (`require`) or tried first (`prefer`, the default).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use tool_contract_postgres::{PgJournal, PgOptions, rustls};
    ///
    /// let mut roots = rustls::RootCertStore::empty();
    /// // roots.add(..) the certificate authority of the database's certificate
    /// let tls = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    /// let conninfo = "postgres://agent@db.internal/agents?sslmode=require";
    /// let journal = PgJournal::connect_tls(conninfo, PgOptions::default(), tls).await?;
    /// # let _ = journal; Ok(()) }
    /// ```
    #[cfg(feature = "tls")]
    pub async fn connect_tls(
        conninfo: &str,
        options: PgOptions,
        tls: rustls::ClientConfig,
    ) -> Result<PgJournal, JournalError> {
        let connector = Connector::Rustls(tokio_postgres_rustls::MakeRustlsConnect::new(tls));
        PgJournal::connect_using(conninfo, options, connector).await
    }

    async fn connect_using(
        conninfo: &str,
        options: PgOptions,
        connector: Connector,
    ) -> Result<PgJournal, JournalError> {
        let config: Config = conninfo.parse().map_err(|e| JournalError::Io {
            context: format!("attempt log {}: not a PostgreSQL connection string", redact(conninfo)),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
        })?;
        let label = label(&config);
        let pool = Pool::new(config, connector, options.get_pool_size(), options.get_connect_timeout());
        let budget = options.get_op_timeout().max(options.get_connect_timeout());
        // A server still starting (or restarting) is waited for, as the options say.
        let waited = tokio::time::Instant::now() + options.get_wait_for_server();
        let mut client = loop {
            match pool.connect_raw().await {
                Ok(client) => break client,
                Err(fault) if fault.transient && tokio::time::Instant::now() < waited => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(fault) => return Err(fault.into_error(&label, "cannot connect")),
            }
        };
        let first = async {
            let checked = if options.is_read_only() {
                schema::check(&client).await
            } else {
                schema::migrate(&mut client).await
            };
            checked.map_err(|e| schema_refused(e, &label))?;
            let conn =
                pool.adopt(client).await.map_err(|f| f.into_error(&label, "cannot prepare statements"))?;
            pool.give(conn);
            Ok::<(), JournalError>(())
        };
        match tokio::time::timeout(budget, first).await {
            Ok(result) => result?,
            Err(_) => return Err(timed_out(&label, "cannot connect", budget)),
        }
        Ok(PgJournal { inner: Arc::new(Inner { pool, label, options, pending: Default::default() }) })
    }

    /// The store's name in messages: `postgres://user@host:port/db`, never with a password.
    pub fn label(&self) -> &str {
        &self.inner.label
    }

    /// The options it was connected with.
    pub fn options(&self) -> &PgOptions {
        &self.inner.options
    }

    /// What the log holds on one intent, or why it could not be read: [`Journal::recall`], without the
    /// trait in scope.
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
    /// read: [`Journal::unresolved`], without the trait in scope.
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

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Close every idle connection; the next operation connects again. What a worker does after it
    /// learnt that the server restarted, to skip the failed first try on each stale connection.
    pub fn reconnect(&self) {
        self.inner.pool.clear();
    }
}

impl Inner {
    /// Run `op` on a pooled connection, again on a new connection after a transient fault (a lost
    /// connection, a server restarting), within the options' retries and operation timeout.
    pub(crate) async fn run<T, F>(&self, doing: &str, mut op: F) -> Result<T, JournalError>
    where
        F: for<'c> FnMut(&'c mut Conn) -> BoxFuture<'c, Result<T, Fault>>,
    {
        let (retries, mut backoff) = self.options.get_retries();
        let limit = self.options.get_op_timeout();
        let tries = async {
            let mut tried = 0;
            let mut sent = false;
            loop {
                let fault = match self.pool.get().await {
                    Ok(mut conn) => {
                        let result = op(&mut conn).await;
                        match result {
                            Ok(value) => return Ok(value),
                            Err(fault) => {
                                if fault.transient {
                                    conn.discard();
                                    // A lost connection usually means a restarted or failed-over
                                    // server: the idle ones are as stale, so the retry connects anew.
                                    self.pool.clear();
                                }
                                fault
                            }
                        }
                    }
                    Err(fault) => fault,
                };
                sent |= fault.sent;
                if !fault.transient || tried >= retries {
                    return Err(Fault { sent, ..fault }.into_error(&self.label, doing));
                }
                tried += 1;
                tokio::time::sleep(backoff).await;
                backoff = backoff.saturating_mul(2);
            }
        };
        match tokio::time::timeout(limit, tries).await {
            Ok(result) => result,
            Err(_) => Err(timed_out(&self.label, doing, limit)),
        }
    }
}

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

/// What the records of one intent, in the order stored, fold into: [`Recall::update`], the rule every
/// store follows. A row without an intent holds none.
fn fold(rows: &[tokio_postgres::Row]) -> Result<Option<Recall>, Fault> {
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

/// How many [`Durability::Lazy`] records are held at most; past it the oldest is dropped (a read's
/// start record, whose loss costs a read nothing).
const MOST_PENDING: usize = 1024;

impl Inner {
    async fn claim(
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
                    // The intent's records are read in a statement of its own, pipelined behind the
                    // claim in the same round trip: its snapshot is taken once the claim has committed,
                    // so it holds every record a previous holder was allowed to write. (Read in the
                    // claim's own statement, the snapshot could predate the previous holder's last
                    // records when the claim waited on its row while that holder finished.)
                    let read_params: [&(dyn ToSql + Sync); 1] = [&key];
                    let claim = conn.client.query(&conn.sql.claim, &claim_params);
                    let read = conn.client.query(&conn.sql.records_of_intent, &read_params);
                    let (claimed, records) = tokio::join!(claim, read);
                    let claimed = claimed.map_err(|e| Fault::statement(&e))?;
                    if !claimed.is_empty() {
                        let records = records.map_err(|e| Fault::statement(&e))?;
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

    async fn start(&self, fields: Arc<Fields>, owner: String, sync: bool) -> Result<(), JournalError> {
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

    /// Store `owner`'s end record `fields`, fenced; with `release`, the claim goes in the same commit.
    async fn end(
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

    async fn highest(&self, key: [u8; 16]) -> Result<Option<u32>, JournalError> {
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

impl PgJournal {
    /// The [`Durability::Lazy`] records held for `intent`, taken out, oldest first.
    fn take_pending(&self, intent: &[u8; 16]) -> Vec<Fields> {
        let mut pending = self.inner.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.is_empty() {
            return Vec::new();
        }
        let (mine, others) = std::mem::take(&mut *pending).into_iter().partition(|f| f.intent == *intent);
        *pending = others;
        mine
    }

    /// Store `record`, after the lazy records held for its intent.
    fn store(&self, record: RecordRef<'_>, durability: Durability) -> Answer<'_, Result<(), JournalError>> {
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

impl PgJournal {
    /// [`Journal::end`], and with `release` the claim given up in the same commit. An end record is
    /// never held back ([`Durability::Lazy`] is taken as [`Durability::Buffered`]): its fence is
    /// checked when it is written.
    fn fenced_end(
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

impl Journal for PgJournal {
    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let lease = lease.min(LONGEST_LEASE).as_secs_f64();
        Answer::later(self.inner.claim(*key.as_bytes(), owner.as_str().to_owned(), lease, None))
    }

    /// The claim carries the caller's deadline to the server (on the server's clock, as read on the
    /// connection), where the claiming statement takes nothing once it has passed.
    fn claim_by(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
        deadline: tokio::time::Instant,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let lease = lease.min(LONGEST_LEASE).as_secs_f64();
        Answer::later(self.inner.claim(*key.as_bytes(), owner.as_str().to_owned(), lease, Some(deadline)))
    }

    /// Sends the release off on the current runtime and returns; with no runtime, or when the server
    /// cannot be reached, the lease runs out instead.
    fn release(&self, key: &IntentKey, owner: &Owner) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (inner, key, owner) = (Arc::clone(&self.inner), *key.as_bytes(), owner.as_str().to_owned());
        runtime.spawn(async move {
            let _ = inner
                .run("cannot release a claim", |conn| {
                    let owner = owner.clone();
                    Box::pin(async move {
                        conn.client
                            .execute(&conn.sql.release, &[&key.as_slice(), &owner])
                            .await
                            .map_err(|e| Fault::statement(&e))
                    })
                })
                .await;
        });
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        let fields = Fields::of(&record);
        let pending = self.take_pending(&fields.intent);
        let owner = owner.as_str().to_owned();
        let sync = durability == Durability::Synced;
        Answer::later(async move {
            if !pending.is_empty() {
                self.inner.append(pending, false).await?;
            }
            self.inner.start(Arc::new(fields), owner, sync).await
        })
    }

    fn append(&self, record: RecordRef<'_>, durability: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.store(record, durability)
    }

    fn end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.fenced_end(owner, record, durability, false)
    }

    /// The record and the release in one statement; when it cannot be stored, the release is sent off
    /// on its own.
    fn finish(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        let key = record.intent_key;
        let owner = owner.clone();
        let stored = self.fenced_end(&owner, record, durability, true);
        Answer::later(async move {
            let stored = stored.await;
            if stored.is_err() {
                self.release(&key, &owner);
            }
            stored
        })
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        let key = *key;
        Answer::later(async move { self.try_recall(&key).await })
    }

    fn attempts(&self, key: &IntentKey) -> Answer<'_, Result<Option<u32>, JournalError>> {
        let key = *key.as_bytes();
        Answer::later(self.inner.highest(key))
    }

    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        Answer::later(self.try_unresolved())
    }
}

impl Approvals for PgJournal {
    fn approval(&self, key: &IntentKey) -> Answer<'_, Result<Option<Record>, JournalError>> {
        Answer::later(self.inner.last_approval(*key.as_bytes()))
    }

    fn approval_step(&self, record: RecordRef<'_>) -> Answer<'_, Result<bool, JournalError>> {
        if tool_contract::rules::counts_as_attempt(record.phase) {
            return Answer::now(Ok(false));
        }
        let (fields, record) = (Fields::of(&record), record.to_record());
        Answer::later(self.inner.approval_step(fields, record))
    }
}

impl std::fmt::Debug for PgJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgJournal").field("store", &self.inner.label).finish_non_exhaustive()
    }
}
