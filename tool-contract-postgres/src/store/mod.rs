//! [`PgJournal`]: the attempt log and its claims in PostgreSQL.

use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::Config;
use tool_contract::journal::{BoxFuture, JournalError};

use crate::conninfo::{label, redact};
use crate::fault::{Fault, timed_out};
use crate::options::PgOptions;
use crate::pool::{Conn, Connector, Pool};
use crate::row::Fields;
use crate::schema::{self, MigrationError, SCHEMA_VERSION};
use crate::transport::Transport;

mod approvals;
mod claims;
mod journal;
mod reads;
mod records;

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
    /// [`Durability::Lazy`](tool_contract::journal::Durability::Lazy) records not yet written (reads'
    /// start records): each is written before the next record of its intent, so a read's start never
    /// lands after its end.
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

    /// Connect as the [`Transport`] planned: over TLS checked against its certificates, or in clear
    /// text, as the project's commands connect (`--pg-ca-file`). Creates or migrates the schema unless
    /// the options say read-only, as [`PgJournal::connect_with`] does.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::path::Path;
    /// use tool_contract_postgres::{PgJournal, PgOptions, Transport};
    ///
    /// let transport = Transport::plan("postgres://ops@db.internal/agents", Some(Path::new("ca.pem")))?;
    /// if let Some(warning) = transport.warning() {
    ///     eprintln!("warning: {warning}");
    /// }
    /// let journal = PgJournal::connect_over(&transport, PgOptions::default()).await?;
    /// # let _ = journal; Ok(()) }
    /// ```
    ///
    /// A transport that needs TLS is refused by a build without the feature `tls`.
    pub async fn connect_over(transport: &Transport, options: PgOptions) -> Result<PgJournal, JournalError> {
        let connector = match transport.roots() {
            None => Connector::Plain,
            #[cfg(feature = "tls")]
            Some(roots) => {
                let tls = crate::transport::client_config(roots).map_err(|why| JournalError::Io {
                    context: format!("attempt log {}", transport.label()),
                    source: std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
                })?;
                Connector::Rustls(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
            }
            #[cfg(not(feature = "tls"))]
            Some(_) => {
                return Err(JournalError::Io {
                    context: format!("attempt log {}", transport.label()),
                    source: std::io::Error::new(
                        std::io::ErrorKind::Unsupported,
                        "TLS to PostgreSQL needs the feature `tls` of tool-contract-postgres",
                    ),
                });
            }
        };
        PgJournal::connect_config(transport.config.clone(), options, connector).await
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
        PgJournal::connect_config(config, options, connector).await
    }

    async fn connect_config(
        config: Config,
        options: PgOptions,
        connector: Connector,
    ) -> Result<PgJournal, JournalError> {
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

impl std::fmt::Debug for PgJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgJournal").field("store", &self.inner.label).finish_non_exhaustive()
    }
}
