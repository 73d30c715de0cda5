//! How a store connects and how long it waits.

use std::time::Duration;

/// How a [`PgJournal`](crate::PgJournal) connects, and how long it waits on the server.
///
/// # The lease rule
///
/// The leases of the claims are not an option: each follows from the call that takes it. The engine
/// asks for the call's budget left, plus the tool's `settle` window (`ToolSpec::settle`), plus one
/// second for the end record; the claim carries the call's deadline too, and takes nothing once that
/// has passed. A worker that finishes gives its claim up at once; one that dies leaves it to expire,
/// and whoever takes the intent over after that probes first. A worker names itself with
/// `Task::worker` (the owner then shows the name). The options that bear on claims are
/// [`op_timeout`](PgOptions::op_timeout) (how long a claim's statement may take) and
/// [`wait_for_server`](PgOptions::wait_for_server). See the crate docs, "The five rules of a claim".
///
/// ```
/// use std::time::Duration;
/// use tool_contract_postgres::PgOptions;
///
/// let options = PgOptions::default().pool_size(32).op_timeout(Duration::from_secs(5));
/// assert_eq!(options.get_pool_size(), 32);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    pool_size: usize,
    connect_timeout: Duration,
    op_timeout: Duration,
    retries: u32,
    backoff: Duration,
    read_only: bool,
    wait_for_server: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            pool_size: 16,
            connect_timeout: Duration::from_secs(5),
            op_timeout: Duration::from_secs(10),
            retries: 3,
            backoff: Duration::from_millis(25),
            read_only: false,
            wait_for_server: Duration::ZERO,
        }
    }
}

impl PgOptions {
    /// At most this many connections to the server (default 16, at least 1). Callers beyond it wait
    /// for a connection, within their own deadline.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// How long one connection attempt may take (default 5 s), unless the connection string sets
    /// `connect_timeout`.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one operation may take, its retries included (default 10 s). The engine drops an
    /// operation at its call's deadline anyway; this bounds the ones nobody waits on with a deadline
    /// (an inspector's reads, a release).
    pub fn op_timeout(mut self, timeout: Duration) -> Self {
        self.op_timeout = timeout;
        self
    }

    /// How many times an operation that lost its connection is tried again on a new one (default 3),
    /// the first after `backoff`, each next one after twice the wait before (default 25 ms).
    pub fn retries(mut self, retries: u32, backoff: Duration) -> Self {
        self.retries = retries;
        self.backoff = backoff;
        self
    }

    /// Open the log to read it (an inspector): the schema is checked, never created or migrated, so
    /// pointing a reader at the wrong database changes nothing there (default `false`: a worker
    /// migrates on connect).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// How long [`PgJournal::connect`](crate::PgJournal::connect) keeps trying a server that cannot be
    /// reached yet or is restarting (the connection refused or lost, "the database system is starting
    /// up"), every 100 ms, the operation timeout then applying to the last try (default zero: it fails
    /// at once). A refused password or a missing database is never waited for. What a worker started
    /// beside its database (a container, a restart) wants.
    pub fn wait_for_server(mut self, wait: Duration) -> Self {
        self.wait_for_server = wait;
        self
    }

    /// How long `connect` waits for a server that is not there yet.
    pub fn get_wait_for_server(&self) -> Duration {
        self.wait_for_server
    }

    /// Whether the store was opened to read only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The pool's size.
    pub fn get_pool_size(&self) -> usize {
        self.pool_size
    }

    /// The timeout of one connection attempt.
    pub fn get_connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The timeout of one operation, retries included.
    pub fn get_op_timeout(&self) -> Duration {
        self.op_timeout
    }

    /// The number of retries after a lost connection, and the first wait.
    pub fn get_retries(&self) -> (u32, Duration) {
        (self.retries, self.backoff)
    }
}
