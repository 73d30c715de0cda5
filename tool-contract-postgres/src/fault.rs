//! What went wrong talking to the server, whether trying again on a new connection can help, and how
//! it reaches the engine as a [`JournalError`].

use std::io;

use tokio_postgres::error::SqlState;
use tool_contract::journal::JournalError;

/// A failed step of an operation.
#[derive(Debug)]
pub(crate) struct Fault {
    /// What the operating system or the server said.
    pub(crate) why: String,
    /// The connection is unusable, or the server asked to try again: a retry on a new connection may
    /// succeed.
    pub(crate) transient: bool,
    /// The statement may have reached the server (and may have committed).
    pub(crate) sent: bool,
}

impl Fault {
    /// A connection could not be had: nothing was sent.
    pub(crate) fn connect(e: &tokio_postgres::Error) -> Fault {
        // A refused password or an unknown database is not cured by trying again.
        Fault { why: describe(e), transient: is_transient(e), sent: false }
    }

    /// A statement failed.
    pub(crate) fn statement(e: &tokio_postgres::Error) -> Fault {
        Fault { why: describe(e), transient: is_transient(e), sent: true }
    }

    /// The store's own complaint about what it read.
    pub(crate) fn corrupt(why: String) -> Fault {
        Fault { why, transient: false, sent: true }
    }

    /// The error the engine sees, for a store named `label` doing `doing`.
    ///
    /// A statement that may have committed is reported as [`io::ErrorKind::TimedOut`]: the engine then
    /// treats the record as possibly stored, as after a timeout (a start that may have landed makes no
    /// attempt, and nothing is written under its number: the next call reads what landed).
    pub(crate) fn into_error(self, label: &str, doing: &str) -> JournalError {
        let kind = match (self.transient, self.sent) {
            (true, true) => io::ErrorKind::TimedOut,
            (true, false) => io::ErrorKind::ConnectionRefused,
            (false, _) => io::ErrorKind::Other,
        };
        JournalError::Io {
            context: format!("attempt log {label}: {doing}"),
            source: io::Error::new(kind, self.why),
        }
    }
}

/// A timed-out operation, as the engine sees it: it may have landed.
pub(crate) fn timed_out(label: &str, doing: &str, after: std::time::Duration) -> JournalError {
    JournalError::Io {
        context: format!("attempt log {label}: {doing}"),
        source: io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer from the server within {after:?}"),
        ),
    }
}

/// Whether `e` says the connection is gone or the server asks to try again.
fn is_transient(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(code) => {
            code.code().starts_with("08")
                || [
                    SqlState::ADMIN_SHUTDOWN,
                    SqlState::CRASH_SHUTDOWN,
                    SqlState::CANNOT_CONNECT_NOW,
                    SqlState::T_R_SERIALIZATION_FAILURE,
                    SqlState::T_R_DEADLOCK_DETECTED,
                    SqlState::TOO_MANY_CONNECTIONS,
                ]
                .contains(code)
        }
        // No server error: the socket failed.
        None => true,
    }
}

/// `e` in one line: the server's message and code, or the I/O error.
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

/// Whether `e` is the fence's unique index refusing a second start of one attempt.
pub(crate) fn is_unique_violation(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNIQUE_VIOLATION)
}
