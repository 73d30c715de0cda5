//! The attempt log of [`tool_contract`] in PostgreSQL, shared by a fleet of workers: one intent is
//! attempted by one worker at a time, and a worker that dies mid-call is taken over by another that
//! probes first.
//!
//! # Features
//!
//! | feature | what it adds | default |
//! |---|---|---|
//! | `testing` | a throwaway PostgreSQL server started from the system's binaries, for tests | no |
//! | `tls` | connections over TLS with rustls: `PgJournal::connect_tls` | no |
//! | `cli` | the `tool-contract-postgres` command (`cargo install --path tool-contract-postgres --features cli` from a checkout) | no |
//!
//! [`PgJournal`] implements [`Journal`](tool_contract::journal::Journal); give it to a task and every call of
//! the task claims its intent and writes ahead to PostgreSQL:
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tool_contract::Task;
//! use tool_contract_postgres::PgJournal;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), tool_contract::journal::JournalError> {
//! // Creates the schema on first use; workers connecting at once migrate it once.
//! let journal = Arc::new(PgJournal::connect("postgres://agent:secret@db.internal/agents").await?);
//! let task = Task::new("ord-7741", "agent:billing", Duration::from_secs(30)).journal(journal.clone());
//! // ... call tools with `task` ...
//! # let _ = task;
//! // An operator's view: what waits on someone.
//! for open in journal.try_unresolved().await? {
//!     println!("{} {} attempt {}", open.last.task, open.last.call, open.attempts);
//! }
//! // Nightly: forget what was resolved a week ago.
//! journal.remove_resolved_older_than(Duration::from_secs(7 * 86_400)).await?;
//! # Ok(()) }
//! ```
//!
//! # The schema (version [`SCHEMA_VERSION`], in the PostgreSQL schema `tool_contract`)
//!
//! - `attempts`: append-only, one row per record, its fields in columns (`intent` as 16 bytes,
//!   `attempt`, `phase`, `task`, `tool`, `attempt_id`, `started`, `budget_left_s`, `outcome`,
//!   `effect_applied`, `probe`, `message`, `retry_at`, `sent_by`, `args`, and `value`, `settled` and `approval` as
//!   `jsonb`), plus `owner` on a fenced record and `written_at` on the server's clock. The columns
//!   that hold a record are listed once, in one table in the code, from which every statement that
//!   writes or reads a record is built (once, when a connection is prepared) and every row decoded. A unique index allows one fenced start per
//!   (intent, attempt).
//! - `claims`: `(intent PRIMARY KEY, owner, lease_until)`.
//! - `intent_has_records(key)`: a function the claim calls once its row is written, whether the
//!   intent has any record, on a snapshot of its own, so a new intent's claim takes one statement.
//! - `schema_version`: the migrations applied. Every [`PgJournal::connect`] migrates under an
//!   advisory lock, so a fleet starting at once migrates once.
//!
//! # The five rules of a claim, and how this store keeps them
//!
//! 1. **The fence is the start row.** A start is one statement: it locks the caller's claim row,
//!    checks that its lease runs and that the attempt is the highest + 1, and inserts the row; the
//!    unique index refuses a second start of one attempt even if two owners both believed they held
//!    the intent. Refused: [`JournalError::Conflict`](tool_contract::journal::JournalError::Conflict), nothing
//!    written.
//! 2. **Every holder's write is conditional on the claim**, checked by the server in the statement
//!    that writes. An end record (an attempt's end, a probe's verdict) is one statement too: it locks
//!    the writer's claim row, checks that its lease runs and that the writer started that attempt
//!    (its fenced start row carries the writer as owner) or, for a probe's verdict, that the attempt
//!    is the highest; else [`JournalError::Conflict`](tool_contract::journal::JournalError::Conflict), nothing
//!    written. A call's last record and the release of its claim are one statement too, whose delete
//!    of the claim row is the fence itself: it deletes the row only under the same conditions, and the
//!    record is written only when the row was deleted (a takeover waits for it, or it waits for the
//!    takeover and is judged on the row the takeover left). So a record held back by a partition and delivered after another worker took the
//!    intent over changes nothing; and a late end of an old attempt does not hide a newer start (the
//!    folding rule of [`Recall::update`](tool_contract::journal::Recall)).
//! 3. **A takeover probes first**: a claim answers with every record of the intent read after the
//!    claim was taken, so an unfinished start of the previous holder is seen and the engine probes.
//! 4. **The lease covers the deadline**: the engine asks for the call's budget left, plus the tool's
//!    `settle` window (a request the service still holds may land that much later), plus one second
//!    for the end record; the lease is stored as given, capped at a year. **And the claim dies with its caller**: it carries
//!    the caller's deadline, put on the server's clock as read once per connection (to within that
//!    reading's round trip), and the claiming statement takes nothing once it has passed, so a claim
//!    held by a frozen server or a partition and run after its caller gave up blocks nobody.
//! 5. **Lease times come from the server's clock**: `clock_timestamp()` in single autocommit
//!    statements; no worker's clock is ever sent or compared.
//!
//! # Durability
//!
//! A side effect's start record ([`Durability::Synced`](tool_contract::journal::Durability)) commits with
//! `synchronous_commit` on (or the server's stronger setting); other records commit asynchronously
//! (`synchronous_commit = off` for their transaction only). A read's start record
//! ([`Durability::Lazy`](tool_contract::journal::Durability)) is held in the process and written just before the
//! next record of its intent.
//!
//! # Faults
//!
//! Every operation runs on a pooled connection; a lost connection or a restarting server is tried
//! again on a new connection a few times with a short backoff ([`PgOptions::retries`]), all within
//! [`PgOptions::op_timeout`] and the caller's own deadline. What still fails is a
//! [`JournalError`](tool_contract::journal::JournalError), never a panic: a side effect whose start cannot be
//! stored is not attempted. A fenced start tried again after its answer was lost is recognised as the
//! caller's own and accepted once.
//!
//! # The command and the demonstration
//!
//! - `tool-contract-postgres log [CONNINFO] [--task T] [--unresolved] [--json]` prints the log as
//!   `tool-contract log` prints a file (which hands a `postgres://` log to it), read-only, the connection
//!   string from `TOOL_CONTRACT_PG` when not given, a password never printed;
//!   `tool-contract-postgres forget --older-than-days N` is [`PgJournal::remove_resolved_older_than`].
//! - `cargo run --release -p tool-contract-postgres --example fleet -- --workers 8 --intents 2000 --kill 2`
//!   runs worker processes on one log, kills some mid-call and checks one effect per intent.
//!
//! # Features
//!
//! - `testing`: `testing::PgServer`, a throwaway server started from the system's binaries, for tests.
//! - `tls`: `PgJournal::connect_tls`, connections encrypted with rustls (pure Rust, no OpenSSL).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod conninfo;
mod fault;
mod options;
mod pool;
mod reader;
mod retention;
mod row;
mod schema;
mod sql;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod transport;

pub use conninfo::redact;
pub use options::PgOptions;
pub use reader::PgReader;
/// The rustls this crate was built with (feature `tls`), for the configuration
/// `PgJournal::connect_tls` takes.
#[cfg(feature = "tls")]
pub use rustls;
pub use schema::SCHEMA_VERSION;
pub use store::PgJournal;
pub use transport::Transport;

// ---------------------------------------------------------------------------------------------------
// Doctest holders: the docs/ chapters whose examples need this crate, compiled as doctests.

/// The examples of docs/postgres.md, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/postgres.md")]
pub struct PostgresChapter;
