//! A small pool of connections, each with the store's statements prepared.
//!
//! Why not deadpool-postgres: the store needs a bounded set of connections, a connect timeout, and a
//! connection dropped as soon as it fails, with its statements prepared once per connection. That is
//! a semaphore and a `Vec` here; deadpool would add its runtime abstraction, a statement cache keyed by
//! SQL text and a configuration layer, none of which the store uses.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::{Client, Config, NoTls, Statement};

use crate::fault::Fault;
use crate::sql;

/// A connection with the store's statements prepared on it.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) sql: Statements,
    /// The server's clock read once on this connection: the process's instant of the reading (the
    /// middle of its round trip) and what the server's `clock_timestamp()` said, in seconds since
    /// 1970 on the server's clock.
    clock: (tokio::time::Instant, f64),
}

impl Conn {
    /// `at`, an instant of this process, on the server's clock (seconds since 1970), to within the
    /// round trip the clock was read in: how a caller's deadline is handed to the server, which then
    /// compares it with its own clock only.
    pub(crate) fn on_server_clock(&self, at: tokio::time::Instant) -> f64 {
        let (read_at, server) = self.clock;
        match at.checked_duration_since(read_at) {
            Some(after) => server + after.as_secs_f64(),
            None => server - read_at.saturating_duration_since(at).as_secs_f64(),
        }
    }
}

/// The statements of every operation, prepared once per connection.
pub(crate) struct Statements {
    pub(crate) claim: Statement,
    pub(crate) holder: Statement,
    pub(crate) start: Statement,
    pub(crate) why_refused: Statement,
    pub(crate) append: Statement,
    pub(crate) end: Statement,
    pub(crate) finish: Statement,
    pub(crate) records_of_intent: Statement,
    pub(crate) highest: Statement,
    pub(crate) unresolved: Statement,
    pub(crate) release: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        let texts = &*sql::TEXTS;
        Ok(Statements {
            claim: client.prepare(sql::CLAIM).await?,
            holder: client.prepare(sql::HOLDER).await?,
            start: client.prepare(&texts.start).await?,
            why_refused: client.prepare(sql::WHY_REFUSED).await?,
            append: client.prepare(&texts.append).await?,
            end: client.prepare(&texts.end).await?,
            finish: client.prepare(&texts.finish).await?,
            records_of_intent: client.prepare(&texts.records_of_intent).await?,
            highest: client.prepare(sql::HIGHEST).await?,
            unresolved: client.prepare(&texts.unresolved).await?,
            release: client.prepare(sql::RELEASE).await?,
        })
    }
}

/// How connections are made: in the clear, or with TLS (feature `tls`).
#[derive(Clone)]
pub(crate) enum Connector {
    /// No TLS: a Unix socket, or a network the operator trusts.
    Plain,
    /// TLS with rustls, on the client configuration given.
    #[cfg(feature = "tls")]
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

/// Connections to one server, at most `size` at once.
pub(crate) struct Pool {
    config: Config,
    connector: Connector,
    idle: Mutex<Vec<Conn>>,
    permits: Arc<Semaphore>,
}

/// A connection taken from the pool; back to it when dropped, unless it failed.
pub(crate) struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
    broken: bool,
    _permit: OwnedSemaphorePermit,
}

impl Pool {
    /// A pool of at most `size` connections made with `config` (its connect timeout set).
    pub(crate) fn new(
        mut config: Config,
        connector: Connector,
        size: usize,
        connect_timeout: Duration,
    ) -> Pool {
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(connect_timeout);
        }
        Pool {
            config,
            connector,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(size.max(1))),
        }
    }

    /// A new connection, not yet with statements: the first one migrates the schema before they can
    /// be prepared. Its I/O runs on a task of the current runtime.
    pub(crate) async fn connect_raw(&self) -> Result<Client, Fault> {
        // The connection ends when the client is dropped or the server goes away; the client then
        // reports itself closed, and the pool drops it.
        match &self.connector {
            Connector::Plain => {
                let (client, connection) =
                    self.config.connect(NoTls).await.map_err(|e| Fault::connect(&e))?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(client)
            }
            #[cfg(feature = "tls")]
            Connector::Rustls(tls) => {
                let (client, connection) =
                    self.config.connect(tls.clone()).await.map_err(|e| Fault::connect(&e))?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(client)
            }
        }
    }

    /// `client` with the statements prepared, as a pooled connection.
    pub(crate) async fn adopt(&self, client: Client) -> Result<Conn, Fault> {
        let sql = Statements::prepare(&client).await.map_err(|e| Fault::statement(&e))?;
        let asked = tokio::time::Instant::now();
        let row = client
            .query_one("SELECT extract(epoch FROM clock_timestamp())::float8", &[])
            .await
            .map_err(|e| Fault::statement(&e))?;
        let answered = tokio::time::Instant::now();
        let server: f64 = row.try_get(0).map_err(|e| Fault::statement(&e))?;
        let clock = (asked + answered.saturating_duration_since(asked) / 2, server);
        Ok(Conn { client, sql, clock })
    }

    /// Put a fresh connection into the idle set.
    pub(crate) fn give(&self, conn: Conn) {
        self.lock().push(conn);
    }

    /// A connection: an idle one that is still open, or a new one. Waits while all are in use.
    pub(crate) async fn get(&self) -> Result<Pooled<'_>, Fault> {
        let permit = Arc::clone(&self.permits).acquire_owned().await.map_err(|_| Fault {
            why: "the pool is closed".to_owned(),
            transient: false,
            sent: false,
        })?;
        loop {
            let Some(conn) = self.lock().pop() else { break };
            if !conn.client.is_closed() {
                return Ok(Pooled { pool: self, conn: Some(conn), broken: false, _permit: permit });
            }
        }
        let client = self.connect_raw().await?;
        let conn = self.adopt(client).await?;
        Ok(Pooled { pool: self, conn: Some(conn), broken: false, _permit: permit })
    }

    /// Drop every idle connection (they reconnect on next use).
    pub(crate) fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Conn>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Pooled<'_> {
    /// Do not return this connection to the pool: it failed, and its state is unknown.
    pub(crate) fn discard(&mut self) {
        self.broken = true;
    }
}

impl Deref for Pooled<'_> {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        // Taken only in `drop`.
        self.conn.as_ref().unwrap_or_else(|| unreachable!("a pooled connection is held until dropped"))
    }
}

impl DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().unwrap_or_else(|| unreachable!("a pooled connection is held until dropped"))
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && !self.broken
            && !conn.client.is_closed()
        {
            // A query whose future was dropped mid-flight leaves the connection usable: its reply is
            // read and discarded by the connection task before the next one.
            self.pool.give(conn);
        }
    }
}
