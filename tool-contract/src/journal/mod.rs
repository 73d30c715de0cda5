//! The write-ahead attempt log: the store trait, the embedded file store and an in-memory store.
//!
//! One record is written before each attempt (`phase: "start"`) and one after it (`phase: "end"`, the
//! same `attempt_id`); a probe's verdict is an end record of the attempt it resolves. The on-disk form
//! is JSON Lines, one [`Record`] per line, in the field order of [`Record`]:
//!
//! ```text
//! {"phase":"start","task":"ord-7741","call":"post_notice","intent_key":"dc01d768811bf9208c02586c4f3e82c2","attempt":1,"attempt_id":"ord-7741-dc01d768-a1","started":"2026-11-30T05:12:04Z","budget_left_s":42,"outcome":null,"effect_applied":null,"probe":null,"message":null}
//! {"phase":"end","task":"ord-7741","call":"post_notice","intent_key":"dc01d768811bf9208c02586c4f3e82c2","attempt":1,"attempt_id":"ord-7741-dc01d768-a1","started":"2026-11-30T05:12:04Z","budget_left_s":42,"outcome":"ok","effect_applied":"yes","probe":null,"message":"post_notice done on attempt 1","value":4411}
//! ```
//!
//! Every store folds records into an index by intent key with [`Recall::update`]; what a store knows of
//! one intent is a [`Recall`], and its [`LastWord`] decides what the engine does next: a recorded `ok`
//! is replayed, an unfinished or `unknown` attempt is probed before anything else.
//!
//! - [`FileJournal`]: the embedded default, one append-only file with group commit ([`mod@file`]).
//! - [`MemoryJournal`]: for tests.
//! - A shared, multi-machine backend implements [`Journal`] the same way.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::key::IntentKey;

mod answer;
pub mod file;
pub(crate) mod index;
pub mod inspect;
mod leases;
mod memory;
mod reader;
// The escaping every printer of the project's commands uses: theirs, not public API.
#[doc(hidden)]
pub mod terminal;
pub(crate) mod word;

pub use crate::records::{
    ApprovalNote, ApprovalStep, Asks, Durability, LastWord, MAX_BY_BYTES, MAX_EVIDENCE_BYTES, MAX_WHY_BYTES,
    Phase, Recall, Record, RecordRef, Settlement, Verdict, Via,
};
pub(crate) use crate::records::{parse_rfc3339, rfc3339, wall_clock, wall_clock_at, with_stamp};
pub use answer::Answer;
pub use file::{Compaction, FileJournal, HEADER, JournalStats, LogContents, Warning, parse_log, read_log};
pub use memory::{CompactMemoryJournal, MemoryJournal};
pub use reader::{Batch, LogReader};

/// An error of the attempt log's storage.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// Reading or writing the store failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the log (`cannot open /var/lib/agent/attempts.log`).
        context: String,
        /// The error of the operating system.
        #[source]
        source: std::io::Error,
    },
    /// The store holds something that is not an attempt log; it was left untouched.
    #[error("{log} is not an attempt log ({why}); it was left untouched")]
    NotALog {
        /// The log's name (a path for the file store).
        log: String,
        /// What was found instead.
        why: String,
    },
    /// Another process (or another `FileJournal` in this one) has the log open: one appender at a
    /// time, or two of them would each send what the other already sent. Nothing was read or changed.
    #[error(
        "{log} is open by another process (or by another FileJournal in this one){}; one process appends to a log at a time: stop the other or give this one its own log",
        waited_for(*.waited)
    )]
    InUse {
        /// The log's name (a path for the file store).
        log: String,
        /// How long this opener waited for the other to let go of the log before giving up: zero for
        /// [`FileJournal::open`](crate::FileJournal::open), the bound given to
        /// [`FileJournal::open_waiting`](crate::FileJournal::open_waiting).
        waited: Duration,
    },
    /// The store refuses records: an earlier write or sync failed, so what reached stable storage is
    /// no longer known.
    #[error("attempt log {log}: {why}; no record is accepted after a failed write or sync")]
    Failed {
        /// The log's name (a path for the file store).
        log: String,
        /// The failure.
        why: String,
    },
    /// A fenced start record was refused: its owner does not hold the intent's claim, or its attempt
    /// is not the next one. Nothing was written; the attempt must not start.
    #[error("attempt log {log}: start of {attempt_id} refused: {why}")]
    Conflict {
        /// The log's name.
        log: String,
        /// The attempt whose start was refused.
        attempt_id: String,
        /// What the store holds instead (`held by ...`, `attempt 3 is recorded; the next is 4`).
        why: String,
    },
}

/// This process's incarnation, 12 hex digits: the time it first asked, in nanoseconds, mixed with its
/// process id (a container restarts its worker as process 1 every time).
fn incarnation() -> &'static str {
    static INCARNATION: LazyLock<String> = LazyLock::new(|| {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let mixed = nanos ^ (u128::from(std::process::id()) << 24);
        format!("{:012x}", mixed & 0xffff_ffff_ffff)
    });
    &INCARNATION
}

/// How [`JournalError::InUse`] says how long its opener waited: nothing when it did not wait.
fn waited_for(waited: Duration) -> String {
    if waited.is_zero() { String::new() } else { format!(" (waited {:.1} s for it)", waited.as_secs_f64()) }
}

impl From<std::io::Error> for JournalError {
    fn from(source: std::io::Error) -> Self {
        JournalError::Io { context: "attempt log".to_owned(), source }
    }
}

/// A boxed future, for the object-safe traits of this crate.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A store for the attempt log.
///
/// The embedded default is one append-only file ([`FileJournal`]); [`MemoryJournal`] serves tests and
/// processes that accept losing it. A shared backend for several machines implements the same trait:
/// nothing here assumes a file or one process.
///
/// The contract, which every store keeps and the engine relies on:
///
/// - **Claims.** A side-effecting call first [claims](Journal::claim) its intent for one [`Owner`] and a
///   lease. The claim is atomic: it either takes (or renews) the intent for that owner and returns what
///   the store knows of it, or says who holds it and for how long.
/// - **Fencing.** A [start record](Journal::start) is accepted only from the owner holding an unexpired
///   claim, and only for attempt = the highest recorded + 1; anything else is
///   [`JournalError::Conflict`] and nothing is written. So two owners never both start one attempt,
///   and a late start of an old attempt changes nothing.
/// - **Records about an attempt are fenced too.** An [end record](Journal::end) of a side effect
///   (its end, or a probe's verdict) is accepted only from the holder of an unexpired claim, and only
///   for the attempt that holder started, or, when it is a probe's verdict, for the highest attempt
///   (a holder resolving what an earlier owner left). Anything else is [`JournalError::Conflict`]
///   with nothing written. So a record held back by a partition and delivered after the intent moved
///   on never becomes the last word of an attempt another owner made. A call whose start was never
///   stored has no attempt, and writes nothing under that attempt's number.
/// - **Order.** [`Journal::recall`] reflects every append made before it; records are folded with
///   [`Recall::update`].
/// - **Reads can fail.** [`Journal::recall`], [`Journal::attempts`] and [`Journal::unresolved`] say
///   when the store could not be asked; "nothing recorded" is an answer, never a stand-in for an error.
///
/// What a store must write, and what it may: [`claim`](Journal::claim), [`release`](Journal::release),
/// [`start`](Journal::start), [`end`](Journal::end), [`append`](Journal::append),
/// [`recall`](Journal::recall) and [`unresolved`](Journal::unresolved) are the store. The rest have
/// defaults built on those and are optional fast paths a store may take where it can do better:
/// [`claim_by`](Journal::claim_by) (a deadline carried to a store across the network),
/// [`finish`](Journal::finish) (the last record and the release in one round trip),
/// [`append_attempt`](Journal::append_attempt) (a read's two records as one entry),
/// [`attempts`](Journal::attempts) (a read's numbering without decoding a record) and
/// [`flush`](Journal::flush). Approvals are a capability of their own, [`Approvals`]: a store that
/// keeps them implements it, and whatever needs them ([`LogApprover`](crate::person::LogApprover),
/// [`answer_approval`](crate::person::answer_approval)) asks for it in its type, so a store or a
/// wrapper without them is refused by the compiler, never taken for one that found no answer. The
/// conformance suite (`tool_contract_testing::stores`) checks the
/// contract through the required methods and the defaults alike.
///
/// Every method reads its arguments before it returns, so a store that answers later copies what it
/// needs. The answer is an [`Answer`]: an embedded store answers at once (no allocation, no wait), a
/// store across the network answers with a future.
pub trait Journal: Send + Sync {
    /// Take or renew `key` for `owner` until `lease` from now (on the store's clock), and say what the
    /// store knows of it; or, when another owner holds an unexpired lease, who and for how long.
    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>>;

    /// [`Journal::claim`] for a caller that gives up at `deadline` (an instant of this process, on
    /// tokio's clock): a store across the network carries the deadline to the store, and a claim that
    /// reaches it after the deadline (held by a frozen server or a partition) takes nothing, so it
    /// cannot block the intent for a lease whose caller is gone. What the engine calls. The default,
    /// right for a store that answers in the process, is [`Journal::claim`].
    fn claim_by(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
        deadline: tokio::time::Instant,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let _ = deadline;
        self.claim(key, owner, lease)
    }

    /// Give up `owner`'s claim on `key`, if it still holds it. Must not block: a store that needs a
    /// round trip sends it off, or lets the lease run out.
    fn release(&self, key: &IntentKey, owner: &Owner);

    /// Append the start record of a side-effecting attempt, fenced: accepted only from the holder of an
    /// unexpired claim on the record's intent and only for attempt = highest + 1, else
    /// [`JournalError::Conflict`] with nothing written. Durability as in [`Journal::append`].
    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>>;

    /// Append an end record (an attempt's end, or a probe's verdict) of a side effect, fenced: accepted
    /// only from the holder of an unexpired claim on the record's intent, and only for the attempt that
    /// holder started or, for a probe's verdict (`probe` set), for the highest attempt recorded; else
    /// [`JournalError::Conflict`] with nothing written. Durability as in [`Journal::append`].
    fn end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>>;

    /// Append one record, unfenced: a read's records (reads never claim), or records brought from
    /// elsewhere. The engine writes a side effect's records through [`Journal::start`] and
    /// [`Journal::end`] only. The store reads the record before this returns (a store that writes
    /// records out encodes it without building a [`Record`]; one with a [`Record`] in hand passes
    /// [`Record::as_record_ref`]). With [`Durability::Synced`] the answer comes only once the record is
    /// on stable storage; with [`Durability::Buffered`] once the store has taken it to write.
    fn append(&self, record: RecordRef<'_>, durability: Durability) -> Answer<'_, Result<(), JournalError>>;

    /// Append the last record of `owner`'s claim (the end record after which its call stops) and give
    /// the claim up: [`Journal::end`], then [`Journal::release`] once the record is taken, which
    /// a store across the network may do in one round trip. Once the answer is given the claim is
    /// given up or left to run out, whatever the answer says; if the answer is dropped unawaited, the
    /// caller still holds the claim and releases it.
    fn finish(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        let key = record.intent_key;
        let answer = self.end(owner, record, durability);
        let owner = owner.clone();
        answer.then(move || self.release(&key, &owner))
    }

    /// Append a read's start record and its end record together: the engine holds a read's start
    /// record ([`Durability::Lazy`] in effect) while the read has not had to wait, and hands both over
    /// once it is answered. The default appends `start` lazily, then `end` with `durability`; a store
    /// may keep the pair as one entry.
    fn append_attempt(
        &self,
        start: RecordRef<'_>,
        end: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        let first = match self.append(start, Durability::Lazy).known() {
            Ok(Ok(())) => return self.append(end, durability),
            Ok(Err(err)) => return Answer::now(Err(err)),
            Err(first) => first,
        };
        let end = end.to_record();
        Answer::later(async move {
            first.await?;
            self.append(end.as_record_ref(), durability).await
        })
    }

    /// What the log holds on one intent: `Ok(None)` when it holds nothing, an error when the store
    /// could not be asked (a store across the network that is down), never "nothing" for "could not
    /// ask".
    fn recall(&self, key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>>;

    /// The highest attempt number recorded for one intent (`recall(key)` then `attempts`), without
    /// decoding its last record: how a read continues its attempt numbers. An error when the store
    /// could not be asked: the engine then starts nothing, rather than number from 1 again.
    fn attempts(&self, key: &IntentKey) -> Answer<'_, Result<Option<u32>, JournalError>> {
        let key = *key;
        Answer::later(
            async move { self.recall(&key).await.map(|recall| recall.map(|recall| recall.attempts)) },
        )
    }

    /// Every intent in doubt (its last attempt unfinished, ended `unknown`, or ended with its effect
    /// unknown): the escalation queue, oldest first. An
    /// error when the store could not be asked: an operator's queue never reads empty because the
    /// store is unreachable.
    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>>;

    /// Hand every [`Durability::Lazy`] record still held in the process to the store. A store that
    /// holds none does nothing (the default).
    fn flush(&self) -> Result<(), JournalError> {
        Ok(())
    }

    /// The store as one that keeps a person's questions and answers ([`Approvals`]), if it does. The
    /// engine records every question it asks a person, and every answer before it acts on it, through
    /// this: with a log whose store keeps none, nobody is asked (a person who cannot be recorded has not
    /// approved). The default keeps none; every store of this crate and of `tool-contract-postgres`
    /// does, and a wrapper of one forwards it.
    fn approvals(&self) -> Option<&dyn Approvals> {
        None
    }

    /// The store as one that keeps MCP tasks ([`McpTasks`]), if it does: an MCP server over a log
    /// whose store keeps none answers every call with its report, never with a task. The default
    /// keeps none; the memory, compact, file and PostgreSQL stores do, and a wrapper of one forwards
    /// it.
    fn mcp_tasks(&self) -> Option<&dyn McpTasks> {
        None
    }
}

/// A store that keeps MCP tasks: the `mcp_task` records an MCP server writes beside an intent's
/// attempts while a call of it is kept for a client to poll (the task's creation, a cancellation
/// asked for, its end), so any server on the store, or one restarted, serves the task from the log.
///
/// The records are written with [`Journal::append`], synced; the store keeps them in log order and
/// gives them back by intent. Their account is the record's `value`, which the MCP adapter writes and
/// reads: the store judges nothing of it.
pub trait McpTasks: Journal {
    /// The intent's `mcp_task` records, in log order; empty when none was written.
    fn mcp_task_records(&self, key: &IntentKey) -> Answer<'_, Result<Vec<Record>, JournalError>>;
}

/// A store that keeps approvals: the questions a [`LogApprover`](crate::person::LogApprover) asks before
/// a second `money` attempt, and their answers, as `approval` records beside the attempts.
///
/// A capability of its own rather than methods every store must stub: code that needs approvals asks
/// for `dyn Approvals` (or `A: Approvals`), so a store that keeps none, or a wrapper that forwards
/// [`Journal`] and not this, does not compile there. The memory, compact, file and PostgreSQL stores
/// keep them; a wrapper keeps them by implementing this trait too, forwarding both methods.
#[diagnostic::on_unimplemented(
    message = "`{Self}` keeps no approvals: it does not implement `Approvals`",
    label = "approvals are asked and answered through this store",
    note = "a wrapper of a store that keeps approvals implements `Approvals` too, forwarding `approval` and `approval_step`"
)]
pub trait Approvals: Journal {
    /// The intent's last `approval` record (a question, or its answer), for
    /// [`LogApprover`](crate::person::LogApprover) and [`answer_approval`](crate::person::answer_approval);
    /// `Ok(None)` when none was written.
    fn approval(&self, key: &IntentKey) -> Answer<'_, Result<Option<Record>, JournalError>>;

    /// Append an `approval` record, synced, by one rule applied atomically: a question always; an
    /// answer only when the intent's last approval record is the question about the same attempt (so
    /// one answer counts, and none to a question asked again since). `Ok(false)` when refused by that
    /// rule, with nothing written.
    fn approval_step(&self, record: RecordRef<'_>) -> Answer<'_, Result<bool, JournalError>>;
}

/// Who runs an intent while it is claimed: one call in one process. Unique across the processes that
/// share a store, so a fleet's workers never mistake each other's claims.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner(Arc<str>);

impl Owner {
    /// An owner with this id (a worker's name and a serial, for instance).
    pub fn new(id: impl Into<Arc<str>>) -> Owner {
        Owner(id.into())
    }

    /// A fresh owner for one call of this process: `{process id}-{incarnation}.{serial}`.
    pub fn unique() -> Owner {
        static PROCESS: LazyLock<String> =
            LazyLock::new(|| format!("{}-{}", std::process::id(), incarnation()));
        Owner::numbered(&PROCESS)
    }

    /// A fresh owner for one call of the worker `worker` ([`crate::Task::worker`]):
    /// `{worker}.{incarnation}.{serial}`. The name is for people to read; the incarnation differs in
    /// every process started, so a worker restarted under its name (a pod, a systemd unit) never
    /// claims under an id its dead predecessor held: it takes that claim over, and probes what it left.
    pub fn of_worker(worker: &str) -> Owner {
        Owner::numbered(&format!("{worker}.{}", incarnation()))
    }

    /// `{prefix}.{serial}`, the serial unique in this process.
    fn numbered(prefix: &str) -> Owner {
        static SERIAL: AtomicU64 = AtomicU64::new(1);
        let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
        Owner(format!("{prefix}.{serial}").into())
    }

    /// The owner's id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What [`Journal::claim`] found.
// Made once per call and taken apart at once: boxing the recall would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Claimed {
    /// The caller holds the intent until its lease ends; this is what the store knows of it.
    Held(Option<Recall>),
    /// Another owner holds the intent; its lease ends in `left` unless it is released first.
    Busy {
        /// The owner holding the claim.
        holder: Owner,
        /// How long its lease still runs, on the store's clock.
        left: Duration,
    },
}

/// A tool's value as the attempt log records it, to answer a call repeated after its effect landed
/// with the recorded value instead of running it again. Implemented for every
/// `Serialize + DeserializeOwned` type; a value the log cannot hold is reported on the tool's value type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is a tool's value, and a tool's value must be `Serialize` and `Deserialize`",
    label = "the attempt log records this value, to answer a repeated call without running it again",
    note = "derive both for `{Self}`: `#[derive(serde::Serialize, serde::Deserialize)]`"
)]
pub trait LogValue: Sized {
    /// The value as JSON.
    fn to_log(&self) -> Result<serde_json::Value, serde_json::Error>;
    /// The value back from its JSON.
    fn from_log(value: &serde_json::Value) -> Result<Self, serde_json::Error>;
}

impl<T: Serialize + serde::de::DeserializeOwned> LogValue for T {
    fn to_log(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    fn from_log(value: &serde_json::Value) -> Result<T, serde_json::Error> {
        T::deserialize(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Intent;
    use crate::report::Outcome;

    fn record(phase: Phase, attempt: u32, outcome: Option<Outcome>) -> Record {
        Record {
            phase,
            task: "t".into(),
            call: "post".into(),
            intent_key: Intent::new("t", "a", "post", "x").key(),
            attempt,
            attempt_id: format!("t-a{attempt}"),
            started: "2026-11-30T05:12:04Z".into(),
            budget_left_s: 30,
            outcome,
            effect_applied: None,
            probe: None,
            message: None,
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: None,
        }
    }

    /// A worker that keeps its name across restarts (a pod, a systemd unit) claims under owner ids
    /// its earlier incarnation never used: on a store whose claims outlive a process, its first call
    /// takes its dead predecessor's claim over (and probes) instead of renewing it as its own.
    #[test]
    fn a_named_worker_restarted_claims_under_owner_ids_of_its_own() {
        const CHILD: &str = "TOOL_CONTRACT_TEST_PRINT_OWNER";
        if std::env::var_os(CHILD).is_some() {
            println!("owner={}", Owner::of_worker("billing-w4"));
            return;
        }
        let name = "journal::tests::a_named_worker_restarted_claims_under_owner_ids_of_its_own";
        let incarnation = || {
            let exe = std::env::current_exe().expect("the test binary");
            let out = std::process::Command::new(exe)
                .args(["--exact", name, "--nocapture", "--test-threads=1"])
                .env(CHILD, "1")
                .output()
                .expect("the test binary runs");
            let out = String::from_utf8_lossy(&out.stdout).into_owned();
            out.lines().find_map(|line| Some(line.split_once("owner=")?.1.trim().to_owned())).expect(&out)
        };
        let (first, restarted) = (incarnation(), incarnation());
        assert!(first.starts_with("billing-w4."), "the worker's name is kept for people: {first}");
        assert_ne!(first, restarted, "the same owner id in two incarnations of one worker");
    }

    #[tokio::test]
    async fn memory_journal_tracks_the_last_word() {
        let log = MemoryJournal::new();
        let key = Intent::new("t", "a", "post", "x").key();
        assert!(log.recall_now(&key).is_none());
        log.append(record(Phase::Start, 1, None).as_record_ref(), Durability::Synced).await.unwrap();
        assert_eq!(log.recall_now(&key).unwrap().last_word(), LastWord::Unfinished);
        assert_eq!(log.unresolved_now().len(), 1);
        log.append(record(Phase::End, 1, Some(Outcome::Retryable)).as_record_ref(), Durability::Buffered)
            .await
            .unwrap();
        assert_eq!(log.recall_now(&key).unwrap().last_word(), LastWord::Ended(Outcome::Retryable));
        assert!(log.unresolved_now().is_empty());
        log.append(record(Phase::Start, 2, None).as_record_ref(), Durability::Synced).await.unwrap();
        // A late end record of attempt 1 must not hide the unfinished attempt 2.
        log.append(record(Phase::End, 1, Some(Outcome::Ok)).as_record_ref(), Durability::Buffered)
            .await
            .unwrap();
        let recall = log.recall_now(&key).unwrap();
        assert_eq!((recall.attempts, recall.last_word()), (2, LastWord::Unfinished));
    }
}
