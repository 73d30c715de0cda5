//! The embedded attempt log: one append-only JSON Lines file, no server.
//!
//! # Durability
//!
//! Each append writes its record itself: the line is encoded and handed to the operating system with
//! one `write(2)` under the log's lock, so records keep the order of the calls to `append` and a
//! [`Durability::Buffered`] append (a read's start, every end record) resolves at once, its record out
//! of the process (a killed process does not lose it) and riding the next sync. No thread hop is
//! involved: a write lands in the page cache in a microsecond or so. A [`Durability::Synced`] append
//! (the start record of a side-effecting attempt) then waits for the syncer thread, which makes what is
//! written durable with one `fdatasync(2)`; it resolves once a sync that began after its record was
//! written has returned. While one sync runs, the synced records appended meanwhile wait for the next
//! one together, so concurrent tasks share syncs (group commit) and durability does not serialise them.
//! The async runtime never waits on `fdatasync`.
//!
//! A write or sync that fails puts the log out of service: every waiting and later append fails with
//! [`JournalError::Failed`] (after a failed `fsync` nobody knows what reached the disk), and the engine
//! then refuses to start side-effecting attempts rather than run them unlogged.
//!
//! # Recovery
//!
//! [`FileJournal::open`] reads the whole file and indexes it by intent key. A line that is not a record
//! (a write cut short by a crash, a hand edit) is skipped with a [`Warning`] naming its line number,
//! and the rest of the log is used; nothing is truncated or rewritten. When the file does not end with
//! a newline, the next append starts with one, so a new record is never glued onto torn bytes.
//!
//! One process appends to a log at a time, and the log enforces it: [`FileJournal::open`] takes an
//! exclusive lock on the file (`flock(2)`; the operating system drops it when the process dies), so a
//! second opener, in another process or in this one, gets [`JournalError::InUse`] naming the path.
//! [`FileJournal::compact`] takes the same lock and is refused while an agent has the log open. The
//! inspector ([`read_log`]) reads without it.
//!
//! A log deleted or replaced under a running agent (`rm`, a restore, a rename over it) is noticed
//! before the next side effect: each synced append first checks that the path still names the file
//! this journal holds, and otherwise puts the journal out of service, so no side effect starts that
//! only an orphaned file would remember.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use std::time::Duration;

use super::leases::Leases;
use super::{
    Answer, Claimed, Durability, Journal, JournalError, Owner, Phase, Recall, Record, RecordRef,
    sort_unresolved, supersedes,
};
use crate::key::{IntentKey, KeyHashing};
use crate::report::Outcome;

/// A line of a log that is not a record: it was skipped, and the rest of the log is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The line's number, from 1.
    pub line: u64,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A log read whole, for inspection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogContents {
    /// Every readable record, in log order.
    pub records: Vec<Record>,
    /// The lines that were skipped.
    pub warnings: Vec<Warning>,
}

/// The first line of every attempt log this crate creates: what the file is, and the version of its
/// format. [`FileJournal::open`] appends only to a file that begins with it (or to an empty one, which
/// it gives one), so nothing else is ever taken for a log and written to.
pub const HEADER: &str = r#"{"tool_contract":"attempt-log","format":1}"#;

/// How a file begins.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Beginning {
    /// Nothing yet, or the header cut short by a crash at creation: a new log.
    Empty,
    /// The header, then the records from this byte on.
    Header(usize),
    /// No header: a log written before format 1, or not a log.
    Headless,
}

fn beginning(bytes: &[u8]) -> Result<Beginning, String> {
    let header = HEADER.as_bytes();
    if bytes.len() <= header.len() && header.starts_with(bytes) {
        return Ok(Beginning::Empty);
    }
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    if first == header {
        return Ok(Beginning::Header(header.len() + 1));
    }
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        tool_contract: &'a str,
        format: serde_json::Value,
    }
    match serde_json::from_slice::<Head<'_>>(first) {
        Ok(head) if head.tool_contract == "attempt-log" => Err(format!(
            "its header says format {}, and this version reads format 1",
            shorten(&head.format.to_string(), 20, 0)
        )),
        _ => Ok(Beginning::Headless),
    }
}

/// Read a log whole without opening it for appends (the file is neither created nor changed).
///
/// Fails on a missing or unreadable file, and with [`JournalError::NotALog`] on a file that holds
/// something else.
pub fn read_log(path: impl AsRef<Path>) -> Result<LogContents, JournalError> {
    let path = path.as_ref();
    let bytes = read_path(path)?;
    let (records, scan) = parse_all(&bytes).map_err(|why| not_a_log(path, why))?;
    Ok(LogContents { records, warnings: scan.warnings })
}

/// Parse a log's bytes as [`read_log`] parses a file's; `name` stands for the log in errors. For a log
/// shipped elsewhere (a backup, an upload) and for tests.
///
/// ```
/// use tool_contract::journal::parse_log;
///
/// let contents = parse_log("upload", b"").unwrap();
/// assert!(contents.records.is_empty());
/// assert!(parse_log("upload", b"\x7fELF\x02\x01").is_err());
/// ```
pub fn parse_log(name: &str, bytes: &[u8]) -> Result<LogContents, JournalError> {
    let (records, scan) =
        parse_all(bytes).map_err(|why| JournalError::NotALog { log: name.to_owned(), why })?;
    Ok(LogContents { records, warnings: scan.warnings })
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compaction {
    /// Records before.
    pub records_before: usize,
    /// Records kept: those of each intent's latest attempt.
    pub records_after: usize,
    /// Intents in the log.
    pub intents: usize,
    /// Size of the file before, in bytes.
    pub bytes_before: u64,
    /// Size of the file after, in bytes.
    pub bytes_after: u64,
    /// Unreadable lines of the old file, which the new one does not carry.
    pub dropped: Vec<Warning>,
}

/// Counters of a [`FileJournal`] since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Records read when the log was opened.
    pub records_read: u64,
    /// Records appended since.
    pub appended: u64,
    /// Records handed to the operating system, one `write(2)` each (a failed one included).
    pub writes: u64,
    /// `fdatasync(2)` calls: with group commit, fewer than synced appends.
    pub syncs: u64,
}

/// The attempt log as one append-only JSON Lines file: the embedded default store.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use tool_contract::{Class, EffectKind, FileJournal, Journal, Probe, Task, ToolSpec, engine};
///
/// const POST: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let dir = std::env::temp_dir().join(format!("tool-contract-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("attempts.log");
/// # let _ = std::fs::remove_file(&path);
/// let log = Arc::new(FileJournal::open(&path).unwrap());
/// let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
/// let key = task.key(&POST, &"thread-9", None);
/// let first = engine::run(&task, &POST, key, |_| async { Ok::<u64, Class>(4411) }, |_| async {
///     Probe::NotLanded
/// })
/// .await;
/// assert_eq!(first.value, Some(4411));
/// drop((task, log));
///
/// // A later process: the recorded `ok` is returned again, and the notice is not posted twice.
/// let log = Arc::new(FileJournal::open(&path).unwrap());
/// let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log);
/// let again = engine::run(&task, &POST, key, |_| async { Ok::<u64, Class>(9999) }, |_| async {
///     Probe::NotLanded
/// })
/// .await;
/// assert_eq!(again.value, Some(4411));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # }
/// ```
pub struct FileJournal {
    shared: Arc<Shared>,
    warnings: Vec<Warning>,
    threads: Vec<JoinHandle<()>>,
}

struct Shared {
    path: PathBuf,
    /// The file's identity when opened, to notice the path naming another file later.
    identity: Option<Identity>,
    state: Mutex<State>,
    to_syncer: Condvar,
}

/// A file's device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity(u64, u64);

#[cfg(unix)]
fn identity(metadata: &fs::Metadata) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    Some(Identity(metadata.dev(), metadata.ino()))
}

#[cfg(not(unix))]
fn identity(_: &fs::Metadata) -> Option<Identity> {
    None
}

/// Takes the log's exclusive lock, or says who has it.
fn lock(file: &File, path: &Path) -> Result<(), JournalError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(fs::TryLockError::WouldBlock) => Err(JournalError::InUse { log: path.display().to_string() }),
        Err(fs::TryLockError::Error(e)) => Err(io_error(format!("cannot lock {}", path.display()), e)),
    }
}

struct State {
    index: HashMap<IntentKey, Entry, KeyHashing>,
    /// Who holds which intent.
    leases: Leases,
    /// The file ends with a torn line: the next record starts with a newline.
    needs_newline: bool,
    /// Records queued for the writer thread, whole lines, in the order of the appends. Every `write(2)`
    /// happens on that thread, so a stalled disk never blocks a task's executor thread.
    pending: Vec<u8>,
    /// Sequence number of the last record queued, of the last one written, and of the last one on
    /// stable storage.
    queued: u64,
    written: u64,
    synced: u64,
    /// The pending records must be written now: a record other than a [`Durability::Lazy`] one is
    /// queued, or someone flushed.
    wake: bool,
    sync_waiters: VecDeque<Waiter>,
    failed: Option<String>,
    closing: bool,
    stats: JournalStats,
    /// Test only: the writer thread waits while this is `true` (a stalled disk).
    #[cfg(test)]
    stalled: bool,
}

/// What the index keeps of one intent: its attempt count, and its last record as the line it is in the
/// log, decoded when asked for (a compact index opens a large log fast and holds little).
struct Entry {
    attempts: u32,
    phase: Phase,
    outcome: Option<Outcome>,
    /// Reused as later records of the intent replace it, so an append rarely allocates here.
    line: Vec<u8>,
}

impl Entry {
    fn new(attempt: u32, phase: Phase, outcome: Option<Outcome>, line: &[u8]) -> Entry {
        Entry { attempts: attempt, phase, outcome, line: line.to_vec() }
    }

    /// Fold the intent's next record in, by the rule of [`super::index_record`].
    fn update(&mut self, attempt: u32, phase: Phase, outcome: Option<Outcome>, line: &[u8]) {
        if supersedes(attempt, self.attempts) {
            (self.phase, self.outcome) = (phase, outcome);
            self.line.clear();
            self.line.extend_from_slice(line);
        }
        self.attempts = self.attempts.max(attempt);
    }

    /// [`Recall::is_unresolved`], without decoding the record.
    fn is_unresolved(&self) -> bool {
        self.phase == Phase::Start || matches!(self.outcome, None | Some(Outcome::Unknown))
    }

    fn recall(&self, key: IntentKey) -> Recall {
        let last = serde_json::from_slice::<Record>(&self.line).unwrap_or_else(|err| {
            // Unreachable: the line was checked when read, or written from a record. Should it happen,
            // the intent reads as unfinished, so the engine probes before anything else.
            Record {
                phase: Phase::Start,
                task: String::new(),
                call: String::new(),
                intent_key: key,
                attempt: self.attempts,
                attempt_id: String::new(),
                started: String::new(),
                budget_left_s: 0,
                outcome: None,
                effect_applied: None,
                probe: None,
                message: Some(format!("the index could not decode this intent's last record: {err}")),
                retry_at: None,
                value: None,
            }
        });
        Recall { attempts: self.attempts, last }
    }
}

struct Waiter {
    seq: u64,
    done: oneshot::Sender<Result<(), String>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn failed(&self, why: &str) -> JournalError {
        JournalError::Failed { log: self.path.display().to_string(), why: why.to_owned() }
    }

    /// Why the path no longer names the file this journal appends to, if it does not.
    fn moved(&self) -> Option<String> {
        let opened = self.identity?;
        match fs::metadata(&self.path) {
            Ok(now) if identity(&now) == Some(opened) => None,
            Ok(_) => Some(
                "the path now names another file (replaced or restored under the running agent); side effects are refused until it is reopened"
                    .to_owned(),
            ),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Some(
                "the log was deleted under the running agent; side effects are refused until it is reopened"
                    .to_owned(),
            ),
            Err(e) => Some(format!("cannot check that the path still names the log: {e}")),
        }
    }
}

impl State {
    /// Put the log out of service and tell every waiter.
    fn fail(&mut self, why: String) {
        for waiter in self.sync_waiters.drain(..) {
            let _ = waiter.done.send(Err(why.clone()));
        }
        self.failed = Some(why);
    }

    fn release(queue: &mut VecDeque<Waiter>, upto: u64) -> Vec<Waiter> {
        let mut done = Vec::new();
        while queue.front().is_some_and(|w| w.seq <= upto) {
            done.extend(queue.pop_front());
        }
        done
    }
}

impl FileJournal {
    /// Open the log at `path`, creating it (mode `0600`) when it does not exist, and index it.
    ///
    /// Unreadable lines are skipped and kept as [`FileJournal::warnings`]. A file that holds something
    /// other than an attempt log is refused with [`JournalError::NotALog`] and left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<FileJournal, JournalError> {
        let path = path.as_ref().to_path_buf();
        let (mut file, created) = open_or_create(&path)?;
        lock(&file, &path)?;
        let opened = file.metadata().ok().and_then(|metadata| identity(&metadata));
        let bytes =
            read_whole(&mut file).map_err(|e| io_error(format!("cannot read {}", path.display()), e))?;
        let fresh = match beginning(&bytes).map_err(|why| not_a_log(&path, why))? {
            Beginning::Empty => true,
            Beginning::Header(_) => false,
            Beginning::Headless => return Err(not_a_log(&path, headless(&bytes))),
        };
        let (index, scan) = index_bytes(&bytes).map_err(|why| not_a_log(&path, why))?;
        drop(bytes);
        if fresh {
            // A new log (or one whose header a crash cut short, which holds nothing else) gets its
            // header, on disk before the first record.
            let written = file.set_len(0).and_then(|()| {
                let mut line = HEADER.as_bytes().to_vec();
                line.push(b'\n');
                file.write_all(&line)?;
                file.sync_data()
            });
            written.map_err(|e| io_error(format!("cannot write the header of {}", path.display()), e))?;
        }
        if created {
            // The new file's name must survive a crash as well as its first synced record.
            sync_dir(&path)?;
        }
        let state = State {
            index,
            leases: Leases::default(),
            needs_newline: scan.torn_tail,
            pending: Vec::new(),
            queued: 0,
            written: 0,
            synced: 0,
            wake: false,
            sync_waiters: VecDeque::new(),
            failed: None,
            closing: false,
            stats: JournalStats { records_read: scan.records, ..JournalStats::default() },
            #[cfg(test)]
            stalled: false,
        };
        let shared =
            Arc::new(Shared { path, identity: opened, state: Mutex::new(state), to_syncer: Condvar::new() });
        let mut journal = FileJournal { shared, warnings: scan.warnings, threads: Vec::with_capacity(1) };
        let shared = Arc::clone(&journal.shared);
        let syncer = std::thread::Builder::new()
            .name("attempt-log-writer".to_owned())
            .spawn(move || write_loop(&shared, file))
            .map_err(|e| io_error("cannot start the attempt log's writer thread".to_owned(), e))?;
        journal.threads.push(syncer);
        Ok(journal)
    }

    /// Test only: stall the writer thread (a disk whose writes and syncs do not complete), or let it go.
    #[cfg(test)]
    fn stall(&self, stalled: bool) {
        self.shared.lock().stalled = stalled;
        self.shared.to_syncer.notify_one();
    }

    /// The lines skipped when the log was opened (a torn last line after a crash, a hand edit).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Counters since the log was opened.
    pub fn stats(&self) -> JournalStats {
        self.shared.lock().stats
    }

    /// Put every record appended so far on stable storage (a clean shutdown does it too).
    pub async fn sync(&self) -> Result<(), JournalError> {
        Journal::flush(self)?;
        let done = {
            let mut state = self.shared.lock();
            if let Some(why) = &state.failed {
                return Err(self.shared.failed(why));
            }
            if state.synced >= state.queued {
                return Ok(());
            }
            let (done, wait) = oneshot::channel();
            let seq = state.queued;
            state.sync_waiters.push_back(Waiter { seq, done });
            wait
        };
        self.shared.to_syncer.notify_one();
        self.settle(done.await)
    }

    /// Rewrite the log at `path` keeping the latest state of each intent: the records of its latest
    /// attempt (and so its attempt count and its last word), in log order.
    ///
    /// The new log is written beside the old one (`<log>.compacting`), synced, renamed over it, and the
    /// directory synced: a crash at any point leaves either the old log or the new one, whole. A
    /// `.compacting` file left by a crash is never read as the log, and the next compaction replaces it.
    /// It takes the log's lock, so it is refused with [`JournalError::InUse`] while an agent has the log
    /// open.
    pub fn compact(path: impl AsRef<Path>) -> Result<Compaction, JournalError> {
        let path = path.as_ref();
        // Held until the new log is renamed over the old: no agent opens the old one meanwhile.
        let mut held =
            File::open(path).map_err(|e| io_error(format!("cannot open {}", path.display()), e))?;
        lock(&held, path)?;
        let bytes =
            read_whole(&mut held).map_err(|e| io_error(format!("cannot read {}", path.display()), e))?;
        let (records, scan) = parse_all(&bytes).map_err(|why| not_a_log(path, why))?;
        // A log without the header is rewritten with one only when every line is a record (a log of
        // an earlier version); anything else is left as it is.
        let garbled = scan.warnings.len() > usize::from(scan.torn_tail);
        if !scan.header && (garbled || records.is_empty()) {
            return Err(not_a_log(path, headless(&bytes)));
        }
        let mut latest: HashMap<IntentKey, u32> = HashMap::new();
        for record in &records {
            let attempt = latest.entry(record.intent_key).or_insert(record.attempt);
            *attempt = (*attempt).max(record.attempt);
        }
        let kept: Vec<&Record> =
            records.iter().filter(|r| latest.get(&r.intent_key) == Some(&r.attempt)).collect();

        let temp = compaction_path(path);
        let bytes_after = write_new_log(&temp, &kept)
            .map_err(|e| io_error(format!("cannot write {}", temp.display()), e))?;
        let unchanged = fs::metadata(path).map(|m| m.len() == bytes.len() as u64).unwrap_or(false);
        if !unchanged {
            let _ = fs::remove_file(&temp);
            return Err(JournalError::Failed {
                log: path.display().to_string(),
                why:
                    "the log changed during compaction (is a process appending to it?); it was left as it was"
                        .to_owned(),
            });
        }
        fs::rename(&temp, path)
            .map_err(|e| io_error(format!("cannot rename {} over {}", temp.display(), path.display()), e))?;
        sync_dir(path)?;
        drop(held);
        Ok(Compaction {
            records_before: records.len(),
            records_after: kept.len(),
            intents: latest.len(),
            bytes_before: bytes.len() as u64,
            bytes_after,
            dropped: scan.warnings,
        })
    }

    /// Write one record, under the lock, in the order of the calls: `Ok(None)` when it is done (written,
    /// so out of the process), `Ok(Some(wait))` for a synced record, which `wait` reports on stable
    /// storage.
    fn write(
        &self,
        record: RecordRef<'_>,
        durability: Durability,
        fence: Option<&Owner>,
    ) -> Result<Option<oneshot::Receiver<Result<(), String>>>, JournalError> {
        let mut state = self.shared.lock();
        if let Some(why) = &state.failed {
            return Err(self.shared.failed(why));
        }
        if let Some(owner) = fence {
            let highest = state.index.get(&record.intent_key).map_or(0, |entry| entry.attempts);
            if let Err(why) = state.leases.fence(&record.intent_key, owner, record.attempt, highest) {
                let (log, attempt_id) =
                    (self.shared.path.display().to_string(), record.attempt_id.to_owned());
                return Err(JournalError::Conflict { log, attempt_id, why });
            }
        }
        let state = &mut *state;
        let mark = state.pending.len();
        if state.needs_newline {
            state.pending.push(b'\n');
        }
        let from = state.pending.len();
        if let Err(e) = encode(&mut state.pending, record) {
            state.pending.truncate(mark);
            return Err(io_error(
                format!("cannot encode a record for {}", self.shared.path.display()),
                e.into(),
            ));
        }
        let to = state.pending.len();
        state.pending.push(b'\n');
        state.needs_newline = false;
        state.queued += 1;
        if durability != Durability::Lazy && !state.wake {
            state.wake = true;
            self.shared.to_syncer.notify_one();
        }
        state.stats.appended += 1;
        let line = &state.pending[from..to];
        let (attempt, phase, outcome) = (record.attempt, record.phase, record.outcome);
        match state.index.entry(record.intent_key) {
            std::collections::hash_map::Entry::Occupied(kept) => {
                kept.into_mut().update(attempt, phase, outcome, line);
            }
            std::collections::hash_map::Entry::Vacant(new) => {
                new.insert(Entry::new(attempt, phase, outcome, line));
            }
        }
        match durability {
            Durability::Buffered | Durability::Lazy => Ok(None),
            Durability::Synced => {
                let (done, wait) = oneshot::channel();
                state.sync_waiters.push_back(Waiter { seq: state.queued, done });
                Ok(Some(wait))
            }
        }
    }

    /// The future of one append.
    fn append_now(
        &self,
        record: RecordRef<'_>,
        durability: Durability,
        fence: Option<&Owner>,
    ) -> Answer<'_, Result<(), JournalError>> {
        match self.write(record, durability, fence) {
            Ok(None) => Answer::now(Ok(())),
            Ok(Some(wait)) => Answer::later(async move { self.settle(wait.await) }),
            Err(e) => Answer::now(Err(e)),
        }
    }

    /// What the log holds on one intent, at once: [`Journal::recall`] without the wait.
    pub fn recall(&self, key: &IntentKey) -> Option<Recall> {
        let state = self.shared.lock();
        state.index.get(key).map(|entry| entry.recall(*key))
    }

    /// Every unresolved intent, oldest first, at once: [`Journal::unresolved`] without the wait.
    pub fn unresolved(&self) -> Vec<Recall> {
        let state = self.shared.lock();
        sort_unresolved(
            state.index.iter().filter(|(_, e)| e.is_unresolved()).map(|(k, e)| e.recall(*k)).collect(),
        )
    }

    fn settle(
        &self,
        done: Result<Result<(), String>, oneshot::error::RecvError>,
    ) -> Result<(), JournalError> {
        match done {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err(self.shared.failed(&why)),
            Err(_) => Err(self.shared.failed("the writer thread stopped")),
        }
    }
}

impl Journal for FileJournal {
    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let mut state = self.shared.lock();
        let state = &mut *state;
        let index = &state.index;
        Answer::now(Ok(state.leases.claim(*key, owner, lease, || index.get(key).map(|e| e.recall(*key)))))
    }

    fn release(&self, key: &IntentKey, owner: &Owner) {
        self.shared.lock().leases.release(key, owner);
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.append_now(record, durability, Some(owner))
    }

    fn append<'a>(
        &'a self,
        record: &'a Record,
        durability: Durability,
    ) -> Answer<'a, Result<(), JournalError>> {
        // Written now, so records keep the order of the calls to `append`.
        self.append_now(record.as_record_ref(), durability, None)
    }

    fn append_ref(
        &self,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.append_now(record, durability, None)
    }

    fn attempts(&self, key: &IntentKey) -> Answer<'_, Option<u32>> {
        Answer::now(self.shared.lock().index.get(key).map(|entry| entry.attempts))
    }

    fn flush(&self) -> Result<(), JournalError> {
        let mut state = self.shared.lock();
        if let Some(why) = &state.failed {
            return Err(self.shared.failed(why));
        }
        if !state.pending.is_empty() && !state.wake {
            state.wake = true;
            self.shared.to_syncer.notify_one();
        }
        Ok(())
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Option<Recall>> {
        Answer::now(FileJournal::recall(self, key))
    }

    fn unresolved(&self) -> Answer<'_, Vec<Recall>> {
        Answer::now(FileJournal::unresolved(self))
    }
}

impl fmt::Debug for FileJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("FileJournal")
            .field("path", &self.shared.path)
            .field("intents", &state.index.len())
            .field("warnings", &self.warnings.len())
            .field("failed", &state.failed)
            .finish()
    }
}

impl Drop for FileJournal {
    /// Sync what is written, and stop the syncer.
    fn drop(&mut self) {
        let _ = Journal::flush(self);
        self.shared.lock().closing = true;
        self.shared.to_syncer.notify_one();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The writer thread: every `write(2)` and `fdatasync(2)` of the log, so a stalled disk stalls this
/// thread and no task's executor; a task waits for its synced record within its budget.
///
/// A write takes every record queued so far; a sync covers every record written before it began, so the
/// synced records appended while one runs wait for the next one together (group commit).
fn write_loop(shared: &Shared, mut file: File) {
    let mut batch = Vec::new();
    let mut state = shared.lock();
    loop {
        if state.failed.is_some() {
            break;
        }
        #[cfg(test)]
        if state.stalled {
            state = shared.to_syncer.wait(state).unwrap_or_else(|e| e.into_inner());
            continue;
        }
        let must_write = state.wake || state.closing || !state.sync_waiters.is_empty();
        if must_write && !state.pending.is_empty() {
            std::mem::swap(&mut batch, &mut state.pending);
            let upto = state.queued;
            state.wake = false;
            state.stats.writes += 1;
            drop(state);
            let result = file.write_all(&batch);
            batch.clear();
            state = shared.lock();
            match result {
                Ok(()) => state.written = upto,
                Err(e) => {
                    state.fail(format!("a write failed: {e}"));
                    break;
                }
            }
            continue;
        }
        state.wake = false;
        let waited = state.sync_waiters.front().is_some_and(|w| w.seq <= state.written);
        let closing = state.closing && state.written > state.synced;
        if waited || closing {
            let target = state.written;
            drop(state);
            // A synced record vouches for a file the path still names: a log deleted or replaced under
            // the agent is noticed before the side effect it guards.
            let result = match shared.moved() {
                Some(why) if waited => Err(why),
                _ => file.sync_data().map_err(|e| format!("a sync failed: {e}")),
            };
            state = shared.lock();
            state.stats.syncs += 1;
            let released = match result {
                Ok(()) => {
                    state.synced = target;
                    State::release(&mut state.sync_waiters, target)
                }
                Err(why) => {
                    state.fail(why);
                    break;
                }
            };
            drop(state);
            for waiter in released {
                let _ = waiter.done.send(Ok(()));
            }
            state = shared.lock();
            continue;
        }
        if state.closing {
            break;
        }
        state = shared.to_syncer.wait(state).unwrap_or_else(|e| e.into_inner());
    }
}

/// Append `record` as one JSON line without its newline: the bytes `serde_json::to_writer` writes, made
/// without serde's machinery for the fixed fields (the value still goes through serde_json).
fn encode(out: &mut Vec<u8>, record: RecordRef<'_>) -> serde_json::Result<()> {
    fn text(out: &mut Vec<u8>, s: &str) -> serde_json::Result<()> {
        if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
            return serde_json::to_writer(&mut *out, s);
        }
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        Ok(())
    }
    fn number(out: &mut Vec<u8>, n: u64) {
        out.extend_from_slice(crate::engine::decimal(n, &mut [0u8; 20]));
    }
    fn word(out: &mut Vec<u8>, name: Option<&str>) {
        match name {
            Some(name) => {
                out.push(b'"');
                out.extend_from_slice(name.as_bytes());
                out.push(b'"');
            }
            None => out.extend_from_slice(b"null"),
        }
    }
    out.extend_from_slice(match record.phase {
        Phase::Start => br#"{"phase":"start","task":"#,
        Phase::End => br#"{"phase":"end","task":"#,
    });
    text(out, record.task)?;
    out.extend_from_slice(br#","call":"#);
    text(out, record.call)?;
    out.extend_from_slice(br#","intent_key":""#);
    out.extend_from_slice(&record.intent_key.hex());
    out.extend_from_slice(br#"","attempt":"#);
    number(out, u64::from(record.attempt));
    out.extend_from_slice(br#","attempt_id":"#);
    text(out, record.attempt_id)?;
    out.extend_from_slice(br#","started":"#);
    text(out, record.started)?;
    out.extend_from_slice(br#","budget_left_s":"#);
    number(out, record.budget_left_s);
    out.extend_from_slice(br#","outcome":"#);
    word(out, record.outcome.map(Outcome::as_str));
    out.extend_from_slice(br#","effect_applied":"#);
    word(out, record.effect_applied.map(crate::report::Applied::as_str));
    out.extend_from_slice(br#","probe":"#);
    word(
        out,
        record.probe.map(|mark| match mark {
            crate::probe::ProbeMark::Landed => "landed",
            crate::probe::ProbeMark::NotLanded => "not_landed",
            crate::probe::ProbeMark::Failed => "failed",
        }),
    );
    out.extend_from_slice(br#","message":"#);
    match record.message {
        Some(message) => text(out, message)?,
        None => out.extend_from_slice(b"null"),
    }
    if let Some(at) = record.retry_at {
        out.extend_from_slice(br#","retry_at":"#);
        text(out, at)?;
    }
    if let Some(value) = record.value {
        out.extend_from_slice(br#","value":"#);
        serde_json::to_writer(&mut *out, value)?;
    }
    out.push(b'}');
    Ok(())
}

/// What reading a log found, besides its records.
struct Scan {
    warnings: Vec<Warning>,
    torn_tail: bool,
    records: u64,
    /// The file begins with [`HEADER`] (or is empty).
    header: bool,
}

/// Every record of a log serialises to a line starting with this.
const RECORD_HEAD: &[u8] = br#"{"phase":"#;

/// Below this size a log is read by one thread.
const PARALLEL_FROM: usize = 4 << 20;

/// What one piece of a log held.
struct Piece<T> {
    found: T,
    warnings: Vec<Warning>,
    records: u64,
    looks_like_a_log: bool,
    first_error: Option<(u64, String)>,
}

/// Read a log's bytes: every non-blank line goes to `record`, which parses it as a record and keeps
/// what it needs in its piece's `T`, or says why it is not one. Large logs are cut at line boundaries
/// into one piece per core, read at once; the pieces come back in log order. `Err` says why the bytes
/// are not a log: they have content, and no line is a record or looks like the start of one.
fn scan<'a, T: Send>(
    bytes: &'a [u8],
    start: impl Fn() -> T + Sync,
    record: impl Fn(&mut T, &'a [u8]) -> Result<(), serde_json::Error> + Sync,
) -> Result<(Vec<T>, Scan), String> {
    let (bytes, first_line, header) = match beginning(bytes)? {
        Beginning::Empty => (&bytes[..0], 1, true),
        Beginning::Header(skip) => (&bytes[skip..], 2, true),
        Beginning::Headless => (bytes, 1, false),
    };
    let torn_tail = !bytes.is_empty() && !bytes.ends_with(b"\n");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let pieces = if bytes.len() < PARALLEL_FROM { 1 } else { cores };
    // Cut right after a newline, so each piece holds whole lines; number each piece's first line.
    let mut cuts = vec![(0usize, first_line)];
    for i in 1..pieces {
        let (from, line) = cuts[cuts.len() - 1];
        let aim = (bytes.len() / pieces * i).max(from);
        if let Some(nl) = bytes[aim..].iter().position(|&b| b == b'\n') {
            let at = aim + nl + 1;
            if at < bytes.len() {
                cuts.push((at, line + bytes[from..at].iter().filter(|&&b| b == b'\n').count() as u64));
            }
        }
    }
    let ends: Vec<usize> = cuts.iter().skip(1).map(|c| c.0).chain([bytes.len()]).collect();
    let read = |(&(from, line), &to): (&(usize, u64), &usize)| {
        let last = to == bytes.len();
        scan_piece(&bytes[from..to], line, last && torn_tail, start(), &record)
    };
    let pieces: Vec<Piece<T>> = if cuts.len() == 1 {
        cuts.iter().zip(&ends).map(read).collect()
    } else {
        std::thread::scope(|s| {
            let running: Vec<_> = cuts.iter().zip(&ends).map(|cut| s.spawn(move || read(cut))).collect();
            running
                .into_iter()
                .map(|r| r.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        })
    };
    let mut scan = Scan { warnings: Vec::new(), torn_tail, records: 0, header };
    let (mut looks_like_a_log, mut first_error) = (false, None);
    let mut found = Vec::with_capacity(pieces.len());
    for piece in pieces {
        scan.warnings.extend(piece.warnings);
        scan.records += piece.records;
        looks_like_a_log |= piece.looks_like_a_log;
        first_error = first_error.or(piece.first_error);
        found.push(piece.found);
    }
    match first_error {
        Some((line, err)) if scan.records == 0 && !looks_like_a_log => {
            Err(format!("line {line} is not an attempt record: {err}"))
        }
        _ => Ok((found, scan)),
    }
}

fn scan_piece<'a, T>(
    piece: &'a [u8],
    first_line: u64,
    torn_tail: bool,
    mut found: T,
    record: &impl Fn(&mut T, &'a [u8]) -> Result<(), serde_json::Error>,
) -> Piece<T> {
    let mut warnings = Vec::new();
    let (mut records, mut looks_like_a_log, mut first_error) = (0, false, None);
    let body = piece.strip_suffix(b"\n").unwrap_or(piece);
    let mut lines = body.split(|&b| b == b'\n').peekable();
    let mut number = first_line - 1;
    while let Some(line) = lines.next().filter(|_| !piece.is_empty()) {
        number += 1;
        let last = lines.peek().is_none();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.first().is_none_or(u8::is_ascii_whitespace) && line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match record(&mut found, line) {
            Ok(()) => records += 1,
            Err(err) => {
                let torn = last && torn_tail;
                // A torn line may be cut inside the head itself.
                let head = if torn { &RECORD_HEAD[..line.len().min(RECORD_HEAD.len())] } else { RECORD_HEAD };
                looks_like_a_log |= line.starts_with(head);
                let message = if torn {
                    format!(
                        "torn last line ({} bytes, no newline at the end: a write cut short), skipped",
                        line.len()
                    )
                } else {
                    format!("not a record ({}), skipped", describe(&err))
                };
                first_error.get_or_insert_with(|| (number, describe(&err)));
                warnings.push(Warning { line: number, message });
            }
        }
    }
    Piece { found, warnings, records, looks_like_a_log, first_error }
}

/// Every record of a log, in order.
fn parse_all(bytes: &[u8]) -> Result<(Vec<Record>, Scan), String> {
    let (pieces, scan) = scan(bytes, Vec::new, |records, line| {
        records.push(serde_json::from_slice::<Record>(line)?);
        Ok(())
    })?;
    Ok((pieces.into_iter().flatten().collect(), scan))
}

/// Index a log by intent key as [`super::index_record`] folding every record in order would.
///
/// Every line is checked without allocating ([`RecordCheck`]); each piece of the log keeps, per
/// intent, its highest attempt and the last line of it, and the pieces are folded in log order.
fn index_bytes(bytes: &[u8]) -> Result<(HashMap<IntentKey, Entry, KeyHashing>, Scan), String> {
    type Kept<'a> = (u32, Phase, Option<Outcome>, &'a [u8]);
    fn keep<'a>(last: &mut HashMap<IntentKey, Kept<'a>, KeyHashing>, key: IntentKey, kept: Kept<'a>) {
        last.entry(key)
            .and_modify(|was| {
                if supersedes(kept.0, was.0) {
                    *was = kept;
                }
            })
            .or_insert(kept);
    }
    let (pieces, scan) = scan(bytes, HashMap::default, |last, line| {
        let (key, attempt, phase, outcome) = match quick_check(line) {
            Some(checked) => checked,
            None => {
                let check = serde_json::from_slice::<RecordCheck<'_>>(line)?;
                (check.intent_key, check.attempt, check.phase, check.outcome)
            }
        };
        keep(last, key, (attempt, phase, outcome, line));
        Ok(())
    })?;
    let mut pieces = pieces.into_iter();
    let mut last = pieces.next().unwrap_or_default();
    for piece in pieces {
        for (key, kept) in piece {
            keep(&mut last, key, kept);
        }
    }
    let index = last
        .into_iter()
        .map(|(key, (attempts, phase, outcome, line))| (key, Entry::new(attempts, phase, outcome, line)))
        .collect();
    Ok((index, scan))
}

/// What indexing needs of a line: its intent key, attempt, phase and outcome.
type Checked = (IntentKey, u32, Phase, Option<Outcome>);

/// The fast path of recovery: a line in the form this crate writes (the fields of [`Record`] in order, no
/// whitespace, no `\u` escape), checked and read in one pass without serde. `None` when the line is in
/// any other form, and [`RecordCheck`] decides: whatever this accepts, `RecordCheck` accepts with the same
/// reading; it only declines lines it cannot tell apart quickly.
fn quick_check(line: &[u8]) -> Option<Checked> {
    // Strings are checked byte by byte below; outside them every byte is ASCII.
    std::str::from_utf8(line).ok()?;
    let mut at = Cursor { line, at: 0 };
    at.expect(br#"{"phase":""#)?;
    let phase = if at.expect(br#"start""#).is_some() {
        Phase::Start
    } else {
        at.expect(br#"end""#)?;
        Phase::End
    };
    at.expect(br#","task":"#)?;
    at.string()?;
    at.expect(br#","call":"#)?;
    at.string()?;
    at.expect(br#","intent_key":""#)?;
    let hex = line.get(at.at..at.at + 32)?;
    let key = IntentKey::parse(std::str::from_utf8(hex).ok()?).ok()?;
    at.at += 32;
    at.expect(br#"","attempt":"#)?;
    let attempt = u32::try_from(at.integer()?).ok()?;
    at.expect(br#","attempt_id":"#)?;
    at.string()?;
    at.expect(br#","started":"#)?;
    at.string()?;
    at.expect(br#","budget_left_s":"#)?;
    at.integer()?;
    at.expect(br#","outcome":"#)?;
    let outcome = match at.word(&["null", "ok", "retryable", "permanent", "unknown"])? {
        0 => None,
        1 => Some(Outcome::Ok),
        2 => Some(Outcome::Retryable),
        3 => Some(Outcome::Permanent),
        _ => Some(Outcome::Unknown),
    };
    at.expect(br#","effect_applied":"#)?;
    at.word(&["null", "yes", "no", "unknown", "partial"])?;
    at.expect(br#","probe":"#)?;
    at.word(&["null", "landed", "not_landed", "failed"])?;
    at.expect(br#","message":"#)?;
    if at.expect(b"null").is_none() {
        at.string()?;
    }
    if at.expect(br#","retry_at":"#).is_some() {
        at.string()?;
    }
    if at.expect(br#","value":"#).is_some() {
        at.value(0)?;
    }
    at.expect(b"}")?;
    (at.at == line.len()).then_some((key, attempt, phase, outcome))
}

/// A position in a line, for [`quick_check`]: each step consumes what it accepts or says `None`.
struct Cursor<'a> {
    line: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.line.get(self.at).copied()
    }

    fn expect(&mut self, text: &[u8]) -> Option<()> {
        if self.line[self.at..].starts_with(text) {
            self.at += text.len();
            Some(())
        } else {
            None
        }
    }

    /// A JSON string without control characters or `\u` escapes (valid UTF-8: the line was checked).
    fn string(&mut self) -> Option<()> {
        self.expect(b"\"")?;
        loop {
            let rest = &self.line[self.at..];
            let stop = rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
            self.at += stop;
            match rest[stop] {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => match self.line.get(self.at + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 2,
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// An unsigned JSON integer with no leading zero, that fits in a `u64`.
    fn integer(&mut self) -> Option<u64> {
        let digits = self.line[self.at..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 1 && self.line[self.at] == b'0' {
            return None;
        }
        let text = std::str::from_utf8(&self.line[self.at..self.at + digits]).ok()?;
        let n = text.parse().ok()?;
        self.at += digits;
        // What follows a number in a record is never part of one.
        matches!(self.peek(), Some(b',' | b'}')).then_some(n)
    }

    /// `null` or one of the quoted `names`: its index in `["null", names..]`.
    fn word(&mut self, words: &[&str]) -> Option<usize> {
        if self.expect(b"null").is_some() {
            return Some(0);
        }
        self.expect(b"\"")?;
        let i = words.iter().skip(1).position(|w| self.line[self.at..].starts_with(w.as_bytes()))? + 1;
        self.at += words[i].len();
        self.expect(b"\"")?;
        Some(i)
    }

    /// Any JSON value in the compact form, nested at most 32 deep.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(),
            b'n' => self.expect(b"null"),
            b't' => self.expect(b"true"),
            b'f' => self.expect(b"false"),
            b'-' | b'0'..=b'9' => self.number(),
            open @ (b'[' | b'{') if depth < 32 => {
                let close = if open == b'[' { b']' } else { b'}' };
                self.at += 1;
                if self.expect(&[close]).is_some() {
                    return Some(());
                }
                loop {
                    if open == b'{' {
                        self.string()?;
                        self.expect(b":")?;
                    }
                    self.value(depth + 1)?;
                    if self.expect(&[close]).is_some() {
                        return Some(());
                    }
                    self.expect(b",")?;
                }
            }
            _ => None,
        }
    }

    /// A JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        let digits = |c: &mut Self| {
            let n = c.line[c.at..].iter().take_while(|b| b.is_ascii_digit()).count();
            c.at += n;
            n
        };
        let _ = self.expect(b"-");
        let first = self.peek()?;
        let n = digits(self);
        if n == 0 || n > 1 && first == b'0' {
            return None;
        }
        if self.expect(b".").is_some() && digits(self) == 0 {
            return None;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return None;
            }
        }
        Some(())
    }
}

/// A line checked as a [`Record`] without allocating: it accepts exactly the lines `Record` accepts.
#[derive(serde::Deserialize)]
#[allow(dead_code)] // Each field is read to be checked; only the key and the attempt are kept.
struct RecordCheck<'a> {
    phase: Phase,
    #[serde(borrow)]
    task: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    call: std::borrow::Cow<'a, str>,
    intent_key: IntentKey,
    attempt: u32,
    #[serde(borrow)]
    attempt_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    started: std::borrow::Cow<'a, str>,
    budget_left_s: u64,
    outcome: Option<Outcome>,
    effect_applied: Option<crate::report::Applied>,
    probe: Option<crate::probe::ProbeMark>,
    #[serde(borrow)]
    message: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    value: Option<serde::de::IgnoredAny>,
}

/// A parse error of one line, placed by column (serde's "line 1" would mislead: it counts in the line).
/// serde quotes the offending value whole, so the text is shortened in the middle: a 10 MB line in a
/// log says what is wrong in one line, not by echoing itself.
fn describe(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let place = format!(" at line {} column {}", err.line(), err.column());
    let (what, column) = match text.strip_suffix(&place) {
        Some(what) if err.column() > 0 => (what, Some(err.column())),
        Some(what) => (what, None),
        None => (text.as_str(), None),
    };
    let what = shorten(what, 120, 80);
    match column {
        Some(column) => format!("{what} at column {column}"),
        None => what,
    }
}

/// `text` itself when short; else its first `head` and last `tail` bytes (on character boundaries)
/// around the number of bytes left out.
fn shorten(text: &str, head: usize, tail: usize) -> String {
    if text.len() <= head + tail + 32 {
        return text.to_owned();
    }
    let mut start = head;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = text.len() - tail;
    while !text.is_char_boundary(end) {
        end += 1;
    }
    format!("{}…({} bytes)…{}", &text[..start], end - start, &text[end..])
}

/// The whole file, read into a buffer of its size.
fn read_whole(file: &mut File) -> io::Result<Vec<u8>> {
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn open_or_create(path: &Path) -> Result<(File, bool), JournalError> {
    let mut options = OpenOptions::new();
    options.read(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.clone().create_new(true).open(path) {
        Ok(file) => Ok((file, true)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => options
            .open(path)
            .map(|file| (file, false))
            .map_err(|e| io_error(format!("cannot open {}", path.display()), e)),
        Err(e) => Err(io_error(format!("cannot create {}", path.display()), e)),
    }
}

/// Sync the directory holding `path`, so a created or renamed entry survives a crash.
fn sync_dir(path: &Path) -> Result<(), JournalError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(format!("cannot sync the directory {}", dir.display()), e))
}

fn compaction_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".compacting");
    path.with_file_name(name)
}

/// Write `records` as a new log at `path` (mode `0600`) and sync it; the new file's size.
fn write_new_log(path: &Path, records: &[&Record]) -> io::Result<u64> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut out = BufWriter::with_capacity(1 << 16, options.open(path)?);
    out.write_all(HEADER.as_bytes())?;
    out.write_all(b"\n")?;
    for record in records {
        serde_json::to_writer(&mut out, record)?;
        out.write_all(b"\n")?;
    }
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    Ok(file.metadata()?.len())
}

fn read_path(path: &Path) -> Result<Vec<u8>, JournalError> {
    File::open(path)
        .and_then(|mut file| read_whole(&mut file))
        .map_err(|e| io_error(format!("cannot read {}", path.display()), e))
}

fn io_error(context: String, source: io::Error) -> JournalError {
    JournalError::Io { context, source }
}

/// Why a file without the header is not appended to.
fn headless(bytes: &[u8]) -> String {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    if serde_json::from_slice::<Record>(first).is_ok() {
        "it does not begin with the attempt-log header; a log written before format 1 has none: \
         `tool-contract compact PATH` rewrites it with one"
            .to_owned()
    } else {
        "it does not begin with the attempt-log header".to_owned()
    }
}

fn not_a_log(path: &Path, why: String) -> JournalError {
    JournalError::NotALog { log: path.display().to_string(), why }
}

#[cfg(test)]
mod tests {

    #[tokio::test]
    async fn a_second_opener_is_refused_naming_the_path_and_loses_nothing() {
        let dir = Scratch::new("second-opener");
        let first = FileJournal::open(dir.log()).unwrap();
        first.append(&record("a", Phase::Start, 1, None), Durability::Synced).await.unwrap();
        let Err(second) = FileJournal::open(dir.log()) else { panic!("a second opener got the log") };
        assert!(matches!(second, JournalError::InUse { .. }), "{second:?}");
        assert!(second.to_string().contains(&dir.log().display().to_string()), "{second}");
        // The first keeps appending; the inspector still reads without the lock.
        first.append(&record("a", Phase::End, 1, Some(Outcome::Ok)), Durability::Buffered).await.unwrap();
        assert_eq!(read_log(dir.log()).unwrap().records.len(), 2);
        drop(first);
        let reopened = FileJournal::open(dir.log()).expect("free once the first is dropped");
        assert_eq!(reopened.stats().records_read, 2);
    }

    #[tokio::test]
    async fn compaction_is_refused_while_an_agent_has_the_log_open() {
        let dir = Scratch::new("compact-in-use");
        let agent = FileJournal::open(dir.log()).unwrap();
        agent.append(&record("a", Phase::Start, 1, None), Durability::Synced).await.unwrap();
        let before = fs::read(dir.log()).unwrap();
        let Err(refused) = FileJournal::compact(dir.log()) else { panic!("compacted a log in use") };
        assert!(matches!(refused, JournalError::InUse { .. }), "{refused:?}");
        assert_eq!(fs::read(dir.log()).unwrap(), before, "left untouched");
        // The agent's log is still the file at the path, and takes side effects.
        agent.append(&record("b", Phase::Start, 1, None), Durability::Synced).await.unwrap();
        drop(agent);
        assert_eq!(FileJournal::compact(dir.log()).unwrap().records_after, 2);
    }

    #[tokio::test]
    async fn a_log_deleted_under_the_agent_refuses_the_next_side_effect() {
        let dir = Scratch::new("deleted");
        let agent = FileJournal::open(dir.log()).unwrap();
        agent.append(&record("a", Phase::Start, 1, None), Durability::Synced).await.unwrap();
        fs::remove_file(dir.log()).unwrap();
        let refused = agent.append(&record("b", Phase::Start, 1, None), Durability::Synced).await;
        let Err(error) = refused else { panic!("a side effect was logged in a deleted file") };
        assert!(error.to_string().contains("deleted"), "{error}");
        // Out of service from then on, for every record.
        assert!(agent.append(&record("c", Phase::End, 1, None), Durability::Buffered).await.is_err());
    }

    #[tokio::test]
    async fn a_log_replaced_under_the_agent_refuses_the_next_side_effect() {
        let dir = Scratch::new("replaced");
        let agent = FileJournal::open(dir.log()).unwrap();
        agent.append(&record("a", Phase::Start, 1, None), Durability::Synced).await.unwrap();
        // A restore from a backup: another file renamed over the path.
        let other = dir.0.join("restored.log");
        fs::write(&other, b"").unwrap();
        fs::rename(&other, dir.log()).unwrap();
        let Err(error) = agent.append(&record("b", Phase::Start, 1, None), Durability::Synced).await else {
            panic!("a side effect was logged in a file the path no longer names")
        };
        assert!(error.to_string().contains("another file"), "{error}");
        assert_eq!(fs::read(dir.log()).unwrap(), b"", "the new file was not written to");
    }

    #[test]
    fn a_huge_bad_line_is_described_in_a_few_hundred_bytes() {
        // serde quotes an unknown variant whole.
        let line = format!("{{\"phase\":\"{}é\"}}\n", "x".repeat(1 << 20));
        let error = match parse_all(line.as_bytes()) {
            Err(error) => error,
            Ok((_, scan)) => scan.warnings[0].message.clone(),
        };
        assert!(error.len() < 400, "{} bytes: {}", error.len(), &error[..400.min(error.len())]);
        assert!(error.contains("bytes)"), "{error}");
        assert_eq!(shorten("short", 120, 80), "short");
        let mixed = "é".repeat(300);
        let cut = shorten(&mixed, 121, 81);
        assert!(cut.starts_with('é') && cut.ends_with('é'), "{cut}");
    }

    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::journal::{LastWord, Phase};
    use crate::probe::ProbeMark;
    use crate::report::{Applied, Outcome};
    use crate::{Class, EffectKind, Intent, Probe, Task, ToolSpec, engine};

    /// A directory of its own for one test, removed at the end.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("tc-journal-{}-{n}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn log(&self) -> PathBuf {
            self.0.join("attempts.log")
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn key(target: &str) -> IntentKey {
        Intent::new("ord-7741", "agent", "post_notice", target).key()
    }

    fn record(target: &str, phase: Phase, attempt: u32, outcome: Option<Outcome>) -> Record {
        Record {
            phase,
            task: "ord-7741".into(),
            call: "post_notice".into(),
            intent_key: key(target),
            attempt,
            attempt_id: format!("ord-7741-a{attempt}"),
            started: "2026-11-30T05:12:04Z".into(),
            budget_left_s: 42,
            outcome,
            effect_applied: outcome.map(|o| if o == Outcome::Ok { Applied::Yes } else { Applied::Unknown }),
            probe: None,
            message: outcome.map(|o| format!("ended {o}")),
            retry_at: None,
            value: (outcome == Some(Outcome::Ok)).then(|| serde_json::json!(4411)),
        }
    }

    /// A log file's text: the header, then `records`.
    fn logged(records: impl AsRef<str>) -> String {
        format!("{HEADER}\n{}", records.as_ref())
    }

    fn line(record: &Record) -> String {
        serde_json::to_string(record).unwrap() + "\n"
    }

    /// The log's text once the writer thread has written `expected` (or after five seconds, whatever it
    /// holds then): the writer is another thread, so the test waits for it, not for a time.
    fn written(path: &Path, expected: impl Fn(&str) -> bool) -> String {
        let give_up = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let text = fs::read_to_string(path).unwrap();
            if expected(&text) || std::time::Instant::now() > give_up {
                return text;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[tokio::test]
    async fn a_lazy_record_rides_the_next_write_or_a_flush() {
        let dir = Scratch::new("lazy");
        let log = FileJournal::open(dir.log()).unwrap();
        let start = record("a", Phase::Start, 1, None);
        let end = record("a", Phase::End, 1, Some(Outcome::Ok));
        log.append(&start, Durability::Lazy).await.unwrap();
        assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(""), "held in the process");
        assert_eq!(log.attempts(&key("a")).ready(), Some(Some(1)), "but already indexed");
        log.append(&end, Durability::Buffered).await.unwrap();
        let both = logged(line(&start) + &line(&end));
        assert_eq!(written(&dir.log(), |text| text == both), both);
        assert_eq!(log.stats().writes, 1, "one write carried both");

        let again = record("b", Phase::Start, 1, None);
        log.append(&again, Durability::Lazy).await.unwrap();
        Journal::flush(&log).unwrap();
        assert!(written(&dir.log(), |text| text.ends_with(&line(&again))).ends_with(&line(&again)));
        let last = record("c", Phase::Start, 1, None);
        log.append(&last, Durability::Lazy).await.unwrap();
        drop(log);
        assert!(fs::read_to_string(dir.log()).unwrap().ends_with(&line(&last)), "a clean close writes it");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_disk_refuses_the_side_effect_within_its_budget_and_stalls_no_other_task() {
        use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
        let dir = Scratch::new("stalled");
        let log = Arc::new(FileJournal::open(dir.log()).unwrap());
        log.stall(true);
        let task = Task::new("stalled-disk", "agent", Duration::from_secs(2)).journal(log.clone());
        const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
        let (sent, ticks) = (AtomicU32::new(0), AtomicU32::new(0));
        let began = tokio::time::Instant::now();
        let call = engine::run(
            &task,
            &SEND,
            task.key(&SEND, &"thread-9", None),
            |_| async {
                sent.fetch_add(1, SeqCst);
                Ok::<u64, Class>(4411)
            },
            |_| async { crate::Probe::NotLanded },
        );
        // Another task of the same executor thread keeps running while the log's disk is stuck.
        let ticker = async {
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                ticks.fetch_add(1, SeqCst);
            }
        };
        let (report, ()) = tokio::join!(call, ticker);
        assert_eq!(sent.load(SeqCst), 0, "nothing sent without a durable start record");
        assert_eq!((report.outcome, report.effect_applied), (Outcome::Retryable, Applied::No));
        assert!(report.message.contains("not stored within the budget"), "{}", report.message);
        assert_eq!(began.elapsed(), Duration::from_secs(2), "bounded by the budget, not by the disk");
        assert_eq!(ticks.load(SeqCst), 10);
        // The disk comes back: the log says what the report said, start and end.
        log.stall(false);
        drop(task);
        drop(log);
        let records = read_log(dir.log()).unwrap().records;
        let said: Vec<_> =
            records.iter().map(|r| (r.phase, r.attempt, r.outcome, r.effect_applied)).collect();
        assert_eq!(
            said,
            [(Phase::Start, 1, None, None), (Phase::End, 1, Some(Outcome::Retryable), Some(Applied::No))]
        );
        assert!(records[1].message.as_deref().unwrap_or_default().contains("not started"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_that_waits_has_its_start_record_written() {
        let dir = Scratch::new("lazy-read");
        let log = Arc::new(FileJournal::open(dir.log()).unwrap());
        let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
        const READ: ToolSpec = ToolSpec::new("read_price", EffectKind::Read);
        let path = dir.log();
        let report = engine::run(
            &task,
            &READ,
            task.key(&READ, &"sku", None),
            |_| {
                let path = path.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    // The read waited once: its start record reaches the file while it runs.
                    let seen = written(&path, |text| text.lines().count() > 1);
                    Ok::<usize, Class>(seen.lines().count())
                }
            },
            crate::NoProbe,
        )
        .await;
        assert_eq!(report.value, Some(2), "the header and the start record");
    }

    async fn append_all(log: &FileJournal, records: &[Record]) {
        for r in records {
            let durability = if r.phase == Phase::Start { Durability::Synced } else { Durability::Buffered };
            log.append(r, durability).await.unwrap();
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_new_log_has_mode_0600_and_its_index_survives_a_reopen() {
        use std::os::unix::fs::PermissionsExt;
        let dir = Scratch::new("mode");
        let log = FileJournal::open(dir.log()).unwrap();
        let mode = fs::metadata(dir.log()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        append_all(
            &log,
            &[
                record("a", Phase::Start, 1, None),
                record("a", Phase::End, 1, Some(Outcome::Ok)),
                record("b", Phase::Start, 1, None),
            ],
        )
        .await;
        drop(log);
        let log = FileJournal::open(dir.log()).unwrap();
        assert!(log.warnings().is_empty());
        assert_eq!(log.stats().records_read, 3);
        let a = log.recall(&key("a")).unwrap();
        assert_eq!(a.last_word(), LastWord::Ok(Some(&serde_json::json!(4411))));
        assert_eq!(log.recall(&key("b")).unwrap().last_word(), LastWord::Unfinished);
        let open: Vec<IntentKey> = log.unresolved().iter().map(|r| r.last.intent_key).collect();
        assert_eq!(open, [key("b")]);
    }

    #[tokio::test]
    async fn each_append_is_in_the_file_when_it_resolves() {
        let dir = Scratch::new("written");
        let log = FileJournal::open(dir.log()).unwrap();
        let start = record("a", Phase::Start, 1, None);
        log.append(&start, Durability::Synced).await.unwrap();
        assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(line(&start)));
        let stats = log.stats();
        assert_eq!((stats.appended, stats.writes, stats.syncs), (1, 1, 1));
        // A buffered record is handed to the writer thread, which writes it at once, but not synced.
        let end = record("a", Phase::End, 1, Some(Outcome::Ok));
        log.append(&end, Durability::Buffered).await.unwrap();
        let both = logged(line(&start) + &line(&end));
        assert_eq!(written(&dir.log(), |text| text == both), both);
        assert_eq!(log.stats().syncs, 1);
        // It rides the next sync.
        log.sync().await.unwrap();
        assert_eq!(log.stats().syncs, 2);
        log.sync().await.unwrap();
        assert_eq!(log.stats().syncs, 2, "nothing new to sync");
    }

    #[tokio::test]
    async fn concurrent_synced_appends_share_syncs() {
        let dir = Scratch::new("group");
        let log = FileJournal::open(dir.log()).unwrap();
        let records: Vec<Record> =
            (0..500).map(|i| record(&format!("t{i}"), Phase::Start, 1, None)).collect();
        // Every append is queued when called, so all 500 wait together.
        let waits: Vec<_> = records.iter().map(|r| log.append(r, Durability::Synced)).collect();
        for wait in waits {
            wait.await.unwrap();
        }
        let stats = log.stats();
        assert_eq!(stats.appended, 500);
        // How many appends share a sync depends on the disk's speed against the test's, so only the
        // bounds are asserted here; the sharing itself is measured by BENCHMARKS row 3.
        assert!(stats.syncs >= 1 && stats.syncs <= stats.appended, "{stats:?}");
        drop(log);
        let read = read_log(dir.log()).unwrap();
        assert_eq!(read.records, records);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tasks_appending_at_once_leave_whole_lines_in_order_per_task() {
        let dir = Scratch::new("tasks");
        let log = Arc::new(FileJournal::open(dir.log()).unwrap());
        let mut tasks = Vec::new();
        for t in 0..8 {
            let log = Arc::clone(&log);
            tasks.push(tokio::spawn(async move {
                for attempt in 1..=50 {
                    let target = format!("t{t}");
                    log.append(&record(&target, Phase::Start, attempt, None), Durability::Synced)
                        .await
                        .unwrap();
                    let end = record(&target, Phase::End, attempt, Some(Outcome::Retryable));
                    log.append(&end, Durability::Buffered).await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        drop(log);
        let read = read_log(dir.log()).unwrap();
        assert!(read.warnings.is_empty());
        assert_eq!(read.records.len(), 800);
        for t in 0..8 {
            let target = key(&format!("t{t}"));
            let attempts: Vec<(u32, Phase)> = read
                .records
                .iter()
                .filter(|r| r.intent_key == target)
                .map(|r| (r.attempt, r.phase))
                .collect();
            let expected: Vec<(u32, Phase)> =
                (1..=50).flat_map(|a| [(a, Phase::Start), (a, Phase::End)]).collect();
            assert_eq!(attempts, expected);
        }
    }

    #[tokio::test]
    async fn a_torn_last_line_is_skipped_by_number_and_the_next_record_starts_a_new_line() {
        let dir = Scratch::new("torn");
        let first = record("a", Phase::Start, 1, None);
        let torn = line(&record("b", Phase::Start, 1, None));
        let torn = &torn[..torn.len() / 2];
        fs::write(dir.log(), logged(line(&first) + torn)).unwrap();

        let log = FileJournal::open(dir.log()).unwrap();
        assert_eq!(log.warnings().len(), 1);
        assert_eq!(log.warnings()[0].line, 3);
        assert!(log.warnings()[0].message.starts_with("torn last line"), "{}", log.warnings()[0]);
        assert_eq!(log.recall(&key("a")).unwrap().last_word(), LastWord::Unfinished);
        assert!(log.recall(&key("b")).is_none());
        // Opening changed nothing.
        assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(line(&first) + torn));

        let next = record("c", Phase::Start, 1, None);
        log.append(&next, Durability::Synced).await.unwrap();
        drop(log);
        // The torn bytes stay where they were, ended by a newline; the new record is a line of its own.
        assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(line(&first) + torn + "\n" + &line(&next)));
        let read = read_log(dir.log()).unwrap();
        assert_eq!(read.records, [first, next]);
        assert_eq!(read.warnings.len(), 1);
        assert_eq!(read.warnings[0].line, 3);
        assert!(read.warnings[0].message.starts_with("not a record"), "{}", read.warnings[0]);
    }

    #[test]
    fn a_garbled_line_is_skipped_by_number_and_the_rest_is_used() {
        let dir = Scratch::new("garbled");
        let (a1, a1_end, b1) = (
            record("a", Phase::Start, 1, None),
            record("a", Phase::End, 1, Some(Outcome::Ok)),
            record("b", Phase::Start, 1, None),
        );
        let hand_edit = line(&record("x", Phase::Start, 1, None)).replace("\"attempt\":1", "\"attempt\":one");
        let text = line(&a1) + "\n" + &hand_edit + "not json at all\n" + &line(&a1_end) + &line(&b1);
        fs::write(dir.log(), logged(&text)).unwrap();
        let read = read_log(dir.log()).unwrap();
        assert_eq!(read.records, [a1, a1_end, b1]);
        let lines: Vec<u64> = read.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, [4, 5], "the blank line 3 is not a warning: {:?}", read.warnings);
        let log = FileJournal::open(dir.log()).unwrap();
        assert_eq!(log.warnings(), read.warnings);
        assert!(matches!(log.recall(&key("a")).unwrap().last_word(), LastWord::Ok(_)));
        drop(log);
        assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(&text), "nothing is rewritten");
    }

    #[test]
    fn a_file_that_is_not_a_log_is_refused_and_left_untouched() {
        let dir = Scratch::new("notalog");
        let cases: [&[u8]; 5] = [
            b"hello world\n",
            b"{\n  \"name\": \"config\"\n}\n",
            b"{\"name\":\"a\"}\n{\"name\":\"b\"}\n",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
            b"task,call\nord-1,post\n",
        ];
        for bytes in cases {
            fs::write(dir.log(), bytes).unwrap();
            let err = FileJournal::open(dir.log()).unwrap_err();
            assert!(matches!(err, JournalError::NotALog { .. }), "{err}");
            assert!(err.to_string().contains("is not an attempt log"), "{err}");
            assert!(!err.to_string().contains('\n'), "one line: {err}");
            assert!(matches!(read_log(dir.log()), Err(JournalError::NotALog { .. })));
            assert!(matches!(FileJournal::compact(dir.log()), Err(JournalError::NotALog { .. })));
            assert_eq!(fs::read(dir.log()).unwrap(), bytes);
        }
    }

    #[test]
    fn an_empty_file_a_torn_header_and_a_torn_first_record_are_logs() {
        let dir = Scratch::new("empty");
        // Empty, or a header a crash cut short at creation: a new log, given its header.
        for fresh in ["", "{", &HEADER[..HEADER.len() / 2], HEADER] {
            fs::write(dir.log(), fresh).unwrap();
            assert!(FileJournal::open(dir.log()).unwrap().warnings().is_empty(), "{fresh}");
            assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(""), "{fresh}");
        }
        for torn in ["{", "{\"pha", "{\"phase\":\"start\",\"task\":\"ord-"] {
            fs::write(dir.log(), logged(torn)).unwrap();
            let log = FileJournal::open(dir.log()).unwrap();
            assert_eq!(log.warnings().len(), 1, "{torn}");
            assert_eq!(log.warnings()[0].line, 2);
        }
    }

    #[test]
    fn a_file_that_merely_looks_like_a_log_is_refused_untouched() {
        let dir = Scratch::new("looks-like");
        // A binary file with one line that parses as a record: no header, so not a log.
        let mut bytes = b"\x7fELF\x02\x01\x01\0\0\0\n".to_vec();
        bytes.extend(line(&record("a", Phase::Start, 1, None)).as_bytes());
        bytes.extend(b"\0\0\xff\xfe garbage\n");
        fs::write(dir.log(), &bytes).unwrap();
        let err = FileJournal::open(dir.log()).unwrap_err();
        assert!(matches!(err, JournalError::NotALog { .. }), "{err}");
        assert!(err.to_string().contains("does not begin with the attempt-log header"), "{err}");
        assert!(FileJournal::compact(dir.log()).is_err(), "nor rewritten by a compaction");
        assert_eq!(fs::read(dir.log()).unwrap(), bytes, "left untouched");
        // A header of a later format is refused too.
        let newer = r#"{"tool_contract":"attempt-log","format":2}"#.to_owned() + "\n";
        fs::write(dir.log(), &newer).unwrap();
        let err = FileJournal::open(dir.log()).unwrap_err();
        assert!(err.to_string().contains("format 2, and this version reads format 1"), "{err}");
        assert_eq!(fs::read_to_string(dir.log()).unwrap(), newer);
    }

    #[test]
    fn a_log_of_an_earlier_version_is_migrated_by_a_compaction() {
        let dir = Scratch::new("migrate");
        let text: String = mixed_log().iter().map(line).collect();
        fs::write(dir.log(), &text).unwrap();
        let err = FileJournal::open(dir.log()).unwrap_err();
        assert!(err.to_string().contains("`tool-contract compact PATH` rewrites it with one"), "{err}");
        assert_eq!(read_log(dir.log()).unwrap().records, mixed_log(), "still readable as it is");
        FileJournal::compact(dir.log()).unwrap();
        assert!(fs::read_to_string(dir.log()).unwrap().starts_with(&logged("")));
        let log = FileJournal::open(dir.log()).unwrap();
        assert_eq!(log.recall(&key("d")).unwrap().attempts, 3);
    }

    #[test]
    fn missing_and_unreadable_paths_are_errors_and_reading_creates_nothing() {
        let dir = Scratch::new("missing");
        let err = read_log(dir.log()).unwrap_err();
        assert!(matches!(err, JournalError::Io { .. }), "{err}");
        assert!(err.to_string().starts_with("cannot read "), "{err}");
        assert!(!dir.log().exists());
        assert!(FileJournal::compact(dir.log()).is_err());
        assert!(!dir.log().exists());
        let err = FileJournal::open(&dir.0).unwrap_err();
        assert!(matches!(err, JournalError::Io { .. }), "{err}");
        let err = FileJournal::open(dir.0.join("no-such-dir/attempts.log")).unwrap_err();
        assert!(err.to_string().starts_with("cannot create "), "{err}");
    }

    /// A log as an earlier process left it: attempts 1 and 2 of one intent, fields in another order,
    /// no `value` key, an unknown extra field.
    fn older_log(outcome: &str) -> String {
        let key = key("thread-9");
        format!(
            "{{\"task\":\"ord-7741\",\"phase\":\"start\",\"call\":\"post_notice\",\"intent_key\":\"{key}\",\"attempt\":1,\"attempt_id\":\"ord-7741-a1\",\"started\":\"2026-11-30T05:12:04Z\",\"budget_left_s\":42,\"outcome\":null,\"effect_applied\":null,\"probe\":null,\"message\":null}}\n\
             {{\"phase\":\"end\",\"task\":\"ord-7741\",\"call\":\"post_notice\",\"intent_key\":\"{key}\",\"attempt\":1,\"attempt_id\":\"ord-7741-a1\",\"started\":\"2026-11-30T05:12:04Z\",\"budget_left_s\":42,\"outcome\":\"retryable\",\"effect_applied\":\"no\",\"probe\":null,\"message\":\"503\",\"host\":\"old\"}}\n\
             {{\"phase\":\"start\",\"task\":\"ord-7741\",\"call\":\"post_notice\",\"intent_key\":\"{key}\",\"attempt\":2,\"attempt_id\":\"ord-7741-a2\",\"started\":\"2026-11-30T05:12:09Z\",\"budget_left_s\":37,\"outcome\":null,\"effect_applied\":null,\"probe\":null,\"message\":null}}\n\
             {{\"phase\":\"end\",\"task\":\"ord-7741\",\"call\":\"post_notice\",\"intent_key\":\"{key}\",\"attempt\":2,\"attempt_id\":\"ord-7741-a2\",\"started\":\"2026-11-30T05:12:09Z\",\"budget_left_s\":37,\"outcome\":\"{outcome}\",\"effect_applied\":\"unknown\",\"probe\":null,\"message\":\"timed out\"}}\n"
        )
    }

    #[tokio::test]
    async fn attempt_numbers_continue_after_an_older_process() {
        const READ: ToolSpec = ToolSpec::new("post_notice", EffectKind::Read);
        let dir = Scratch::new("older");
        fs::write(dir.log(), logged(older_log("retryable"))).unwrap();
        let log = Arc::new(FileJournal::open(dir.log()).unwrap());
        assert!(log.warnings().is_empty());
        let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
        let k = task.key(&READ, &"thread-9", None);
        assert_eq!(k, key("thread-9"));
        let report = engine::run(
            &task,
            &READ,
            k,
            |call: crate::Call| async move { Ok::<u32, Class>(call.attempt()) },
            crate::NoProbe,
        )
        .await;
        assert_eq!(report.value, Some(3));
        assert!(report.attempt_id.ends_with("-a3"), "{}", report.attempt_id);
        assert_eq!(log.recall(&k).unwrap().attempts, 3);
    }

    #[tokio::test]
    async fn an_unknown_left_by_an_older_process_is_probed_before_attempt_3() {
        const POST: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
        let dir = Scratch::new("older-unknown");
        fs::write(dir.log(), logged(older_log("unknown"))).unwrap();
        let log = Arc::new(FileJournal::open(dir.log()).unwrap());
        assert_eq!(log.unresolved().len(), 1);
        let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
        let k = task.key(&POST, &"thread-9", None);
        let probes = AtomicU32::new(0);
        let report = engine::run(
            &task,
            &POST,
            k,
            |call: crate::Call| {
                assert_eq!(probes.load(Ordering::SeqCst), 1, "probed first");
                async move { Ok::<u32, Class>(call.attempt()) }
            },
            |_| {
                probes.fetch_add(1, Ordering::SeqCst);
                async { Probe::NotLanded }
            },
        )
        .await;
        assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(3)));
        drop(task);
        drop(log);
        let read = read_log(dir.log()).unwrap();
        let tail: Vec<(Phase, u32, Option<ProbeMark>, Option<Outcome>)> =
            read.records[4..].iter().map(|r| (r.phase, r.attempt, r.probe, r.outcome)).collect();
        assert_eq!(
            tail,
            [
                (Phase::End, 2, Some(ProbeMark::NotLanded), Some(Outcome::Retryable)),
                (Phase::Start, 3, None, None),
                (Phase::End, 3, None, Some(Outcome::Ok)),
            ]
        );
    }

    #[tokio::test]
    async fn a_side_effect_starts_only_once_its_start_record_is_synced() {
        const POST: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
        let dir = Scratch::new("ahead");
        let log = Arc::new(FileJournal::open(dir.log()).unwrap());
        let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
        let k = task.key(&POST, &"thread-9", None);
        let (path, seen) = (dir.log(), log.clone());
        let report = engine::run(
            &task,
            &POST,
            k,
            move |call: crate::Call| {
                let read = read_log(&path).unwrap();
                assert_eq!(read.records.len(), 1);
                assert_eq!((read.records[0].phase, read.records[0].attempt), (Phase::Start, call.attempt()));
                assert_eq!(seen.stats().syncs, 1, "synced before the call");
                async { Ok::<u32, Class>(7) }
            },
            |_| async { Probe::NotLanded },
        )
        .await;
        assert_eq!(report.outcome, Outcome::Ok);
    }

    #[tokio::test]
    async fn after_a_failed_write_or_sync_no_record_is_accepted_and_no_side_effect_starts() {
        const POST: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
        let dir = Scratch::new("failed");
        let log = Arc::new(FileJournal::open(dir.log()).unwrap());
        // What the writer or the syncer does when the operating system reports an error.
        log.shared.lock().fail("a sync failed: Input/output error (os error 5)".to_owned());
        let err = log.append(&record("a", Phase::Start, 1, None), Durability::Synced).await.unwrap_err();
        assert!(matches!(err, JournalError::Failed { .. }), "{err}");
        assert!(err.to_string().contains("no record is accepted after a failed write or sync"), "{err}");
        assert!(log.sync().await.is_err());

        let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
        let k = task.key(&POST, &"thread-9", None);
        let report = engine::run(
            &task,
            &POST,
            k,
            |_: crate::Call| async { panic!("a side effect must not start unlogged") as Result<u32, Class> },
            |_| async { Probe::<u32>::NotLanded },
        )
        .await;
        assert_eq!((report.outcome, report.effect_applied), (Outcome::Retryable, Applied::No));
        drop(task);
        drop(log);
        assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(""), "the header alone");
    }

    /// A small deterministic generator (xorshift), so the property tests need no crate.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn random_record(rng: &mut Rng, keys: u64) -> Record {
        let outcomes = [None, Some(Outcome::Ok), Some(Outcome::Retryable), Some(Outcome::Unknown)];
        let phase = if rng.below(2) == 0 { Phase::Start } else { Phase::End };
        let mut r = record(&format!("k{}", rng.below(keys)), phase, 1 + rng.below(4) as u32, None);
        if phase == Phase::End {
            r.outcome = outcomes[rng.below(4) as usize];
            r.message = Some(format!("m{} \"quoted\" é", rng.below(1000)));
        }
        r.started = format!("2026-11-30T05:12:{:02}Z", rng.below(60));
        r
    }

    /// The file's index (two passes, maybe in pieces) says what folding every record in order says.
    fn assert_same_index(log: &FileJournal, fold: &crate::MemoryJournal, keys: u64) {
        for k in 0..keys {
            let key = key(&format!("k{k}"));
            assert_eq!(log.recall(&key), fold.recall(&key), "k{k}");
        }
        assert_eq!(log.unresolved(), fold.unresolved());
    }

    #[tokio::test]
    async fn the_file_index_matches_the_fold_of_every_record() {
        let dir = Scratch::new("fold");
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200 {
            let records: Vec<Record> = (0..rng.below(30)).map(|_| random_record(&mut rng, 3)).collect();
            fs::write(dir.log(), logged(records.iter().map(line).collect::<String>())).unwrap();
            let log = FileJournal::open(dir.log()).unwrap();
            let fold = crate::MemoryJournal::from_records(records);
            assert_same_index(&log, &fold, 3);
            // Appends after opening follow the same rule.
            for _ in 0..rng.below(10) {
                let next = random_record(&mut rng, 3);
                log.append(&next, Durability::Buffered).await.unwrap();
                fold.append(&next, Durability::Buffered).await.unwrap();
            }
            assert_same_index(&log, &fold, 3);
        }
    }

    #[test]
    fn a_large_log_read_in_pieces_indexes_and_numbers_lines_as_one() {
        let dir = Scratch::new("pieces");
        let mut rng = Rng(7);
        let mut text = String::new();
        let mut records = Vec::new();
        let mut garbled = Vec::new();
        let mut number = 1u64; // the header
        while text.len() < 3 * PARALLEL_FROM {
            number += 1;
            if rng.below(997) == 0 {
                text.push_str("{\"phase\":\"start\",\"task\": garbled\n");
                garbled.push(number);
            } else {
                let r = random_record(&mut rng, 5_000);
                text.push_str(&line(&r));
                records.push(r);
            }
        }
        fs::write(dir.log(), logged(&text)).unwrap();
        let log = FileJournal::open(dir.log()).unwrap();
        let lines: Vec<u64> = log.warnings().iter().map(|w| w.line).collect();
        assert!(garbled.len() > 3);
        assert_eq!(lines, garbled);
        assert_eq!(log.stats().records_read, records.len() as u64);
        let read = read_log(dir.log()).unwrap();
        assert_eq!(read.warnings, log.warnings());
        assert_eq!(read.records, records);
        let fold = crate::MemoryJournal::from_records(records);
        assert_same_index(&log, &fold, 5_000);
    }

    #[test]
    fn the_check_accepts_exactly_the_lines_a_record_accepts() {
        let good = line(&record("a", Phase::End, 2, Some(Outcome::Ok)));
        let good = good.trim_end();
        let variants = [
            good.to_owned(),
            good.replace("\"value\":4411", "\"value\":{\"id\":[1,2,{\"x\":null}]}"),
            good.replace(",\"value\":4411", ""),
            good.replace("\"value\":4411", "\"value\":null"),
            good.replace("ended ok", "ended \\\"ok\\\" \\u00e9 ✓"),
            good.replace("\"probe\":null,", ""),
            good.replace("\"probe\":null", "\"probe\":\"not_landed\""),
            good.replace("\"probe\":null", "\"probe\":\"maybe\""),
            good.replace("\"outcome\":\"ok\"", "\"outcome\":\"fine\""),
            good.replace("\"attempt\":2", "\"attempt\":-2"),
            good.replace("\"attempt\":2", "\"attempt\":4294967296"),
            good.replace("\"budget_left_s\":42", "\"budget_left_s\":4.2"),
            good.replace("\"task\":\"ord-7741\",", ""),
            good.replace("\"task\":\"ord-7741\"", "\"task\":7741"),
            good.replace("\"phase\":\"end\"", "\"phase\":\"End\""),
            good.replace("\"call\"", "\"extra\":[true],\"call\""),
            good.replace("\"call\":\"post_notice\"", "\"call\":\"post_notice\",\"call\":\"x\""),
            good.replace(&key("a").to_string(), "not-a-key"),
            good.replace(&key("a").to_string(), &key("a").to_string().to_uppercase()),
            format!("{good} trailing"),
            format!("  {good}  "),
            good[..good.len() - 1].to_owned(),
            "[]".to_owned(),
            "null".to_owned(),
        ];
        let mut accepted = 0;
        for v in &variants {
            let record = serde_json::from_slice::<Record>(v.as_bytes()).is_ok();
            let check = serde_json::from_slice::<RecordCheck<'_>>(v.as_bytes()).is_ok();
            assert_eq!(record, check, "{v}");
            accepted += usize::from(record);
        }
        assert_eq!(
            accepted, 9,
            "the good line, its value, escapes, optional and extra fields, blanks around"
        );
    }

    /// Records whose strings and values need every kind of care in JSON.
    fn awkward_records(rng: &mut Rng) -> Vec<Record> {
        let texts = [
            "plain",
            "",
            "quote \" and backslash \\ and slash /",
            "tab\tnewline\ncarriage\rbell\u{7}nul\u{0}del\u{7f}",
            "é ✓ 𝄞 ünïcödé",
            "\u{1f}\u{20}",
        ];
        let values = [
            None,
            Some(serde_json::json!(null)),
            Some(serde_json::json!(4411)),
            Some(serde_json::json!(-0.5e-7)),
            Some(serde_json::json!(u64::MAX)),
            Some(serde_json::json!("a \"quoted\" ✓ value\n")),
            Some(serde_json::json!({"id": [1, 2, {"x": null, "y": true, "z": [false, [], {}]}], "": "é"})),
        ];
        let mut records = Vec::new();
        for i in 0..400 {
            let mut r = random_record(rng, 7);
            let pick = |rng: &mut Rng| texts[rng.below(texts.len() as u64) as usize].to_owned();
            r.task = pick(rng);
            r.call = pick(rng);
            r.attempt_id = pick(rng);
            r.message = (rng.below(3) > 0).then(|| pick(rng));
            r.retry_at = (rng.below(3) == 0).then(|| pick(rng));
            r.value = values[i % values.len()].clone();
            r.attempt = [0, 1, 9, 10, u32::MAX][rng.below(5) as usize];
            r.budget_left_s = [0, 42, u64::MAX][rng.below(3) as usize];
            r.effect_applied = [None, Some(Applied::Yes), Some(Applied::Partial)][rng.below(3) as usize];
            r.probe = [None, Some(ProbeMark::Landed), Some(ProbeMark::NotLanded), Some(ProbeMark::Failed)]
                [rng.below(4) as usize];
            records.push(r);
        }
        records
    }

    #[test]
    fn the_encoder_writes_the_bytes_serde_writes() {
        for record in awkward_records(&mut Rng(11)) {
            let mut ours = Vec::new();
            encode(&mut ours, record.as_record_ref()).unwrap();
            assert_eq!(String::from_utf8_lossy(&ours), serde_json::to_string(&record).unwrap(), "{record:?}");
        }
    }

    /// The quick check reads every line it accepts as the full check does, and accepts what this crate
    /// writes (bar `\u` escapes, which it leaves to the full check).
    #[test]
    fn the_quick_check_agrees_with_the_full_check() {
        let full = |line: &[u8]| {
            serde_json::from_slice::<RecordCheck<'_>>(line)
                .ok()
                .map(|c| (c.intent_key, c.attempt, c.phase, c.outcome))
        };
        let mut quick_accepted = 0;
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for record in awkward_records(&mut Rng(5)) {
            let line = serde_json::to_vec(&record).unwrap();
            let expected = Some((record.intent_key, record.attempt, record.phase, record.outcome));
            assert_eq!(full(&line), expected);
            if !line.windows(2).any(|w| w == b"\\u") {
                assert_eq!(quick_check(&line), expected, "{}", String::from_utf8_lossy(&line));
            }
            lines.push(line);
        }
        // Every cut and every one-byte change of some of them: whatever the quick check accepts, the full
        // check accepts and reads the same.
        let mut variants = Vec::new();
        for line in lines.iter().step_by(23) {
            for cut in 0..line.len() {
                variants.push(line[..cut].to_vec());
                for byte in [b' ', b'"', b'\\', b',', b'}', b'0', b'9', b'-', b'a', b'e', b'.', 0x1f, 0xc3] {
                    let mut changed = line.clone();
                    changed[cut] = byte;
                    variants.push(changed);
                    let mut grown = line.clone();
                    grown.insert(cut, byte);
                    variants.push(grown);
                }
            }
        }
        for variant in &variants {
            if let Some(quick) = quick_check(variant) {
                quick_accepted += 1;
                assert_eq!(Some(quick), full(variant), "{}", String::from_utf8_lossy(variant));
            }
        }
        assert!(quick_accepted > 100, "{quick_accepted}");
    }

    fn mixed_log() -> Vec<Record> {
        let mut probe_end = record("c", Phase::End, 1, Some(Outcome::Unknown));
        probe_end.probe = Some(ProbeMark::Failed);
        vec![
            record("a", Phase::Start, 1, None),
            record("a", Phase::End, 1, Some(Outcome::Retryable)),
            record("b", Phase::Start, 1, None),
            record("a", Phase::Start, 2, None),
            record("c", Phase::Start, 1, None),
            record("c", Phase::End, 1, Some(Outcome::Unknown)),
            record("a", Phase::End, 2, Some(Outcome::Ok)),
            probe_end,
            record("d", Phase::Start, 1, None),
            record("d", Phase::End, 1, Some(Outcome::Retryable)),
            record("d", Phase::Start, 2, None),
            record("d", Phase::End, 2, Some(Outcome::Retryable)),
            record("d", Phase::Start, 3, None),
        ]
    }

    fn index_of(path: &Path) -> Vec<(IntentKey, u32, Record)> {
        let log = FileJournal::open(path).unwrap();
        let state = log.shared.lock();
        let mut all: Vec<_> = state.index.iter().map(|(k, e)| (*k, e.recall(*k))).collect();
        all.sort_by_key(|(k, _)| *k);
        all.into_iter().map(|(k, r)| (k, r.attempts, r.last)).collect()
    }

    #[cfg(unix)]
    #[test]
    fn compaction_keeps_each_intents_latest_attempt_and_the_same_index() {
        use std::os::unix::fs::PermissionsExt;
        let dir = Scratch::new("compact");
        let records = mixed_log();
        let text: String = records.iter().map(line).collect();
        fs::write(dir.log(), logged(text + "torn{\"phase\"")).unwrap();
        let before = index_of(&dir.log());
        let unresolved_before = FileJournal::open(dir.log()).unwrap().unresolved();

        let done = FileJournal::compact(dir.log()).unwrap();
        assert_eq!((done.records_before, done.records_after, done.intents), (13, 7, 4));
        assert_eq!(done.dropped.len(), 1);
        assert_eq!(done.dropped[0].line, 15, "the header is line 1");
        assert!(done.bytes_after < done.bytes_before);
        assert_eq!(fs::metadata(dir.log()).unwrap().len(), done.bytes_after);
        assert_eq!(fs::metadata(dir.log()).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(!compaction_path(&dir.log()).exists());

        let read = read_log(dir.log()).unwrap();
        assert!(read.warnings.is_empty());
        let kept: Vec<(IntentKey, u32, Phase)> =
            read.records.iter().map(|r| (r.intent_key, r.attempt, r.phase)).collect();
        assert_eq!(
            kept,
            [
                (key("b"), 1, Phase::Start),
                (key("a"), 2, Phase::Start),
                (key("c"), 1, Phase::Start),
                (key("c"), 1, Phase::End),
                (key("a"), 2, Phase::End),
                (key("c"), 1, Phase::End),
                (key("d"), 3, Phase::Start),
            ]
        );
        assert_eq!(index_of(&dir.log()), before);
        assert_eq!(FileJournal::open(dir.log()).unwrap().unresolved(), unresolved_before);
        // Compacting again changes nothing.
        let again = FileJournal::compact(dir.log()).unwrap();
        assert_eq!((again.records_before, again.records_after), (7, 7));
    }

    #[test]
    fn a_compaction_cut_short_leaves_the_log_whole_and_its_leftover_unread() {
        let dir = Scratch::new("compact-crash");
        let text = logged(mixed_log().iter().map(line).collect::<String>());
        fs::write(dir.log(), &text).unwrap();
        // What a crash in the middle of a compaction leaves: the new file half written, not renamed.
        let leftover = compaction_path(&dir.log());
        let new: String = mixed_log()[6..].iter().map(line).collect();
        fs::write(&leftover, &new[..new.len() / 2]).unwrap();

        let log = FileJournal::open(dir.log()).unwrap();
        assert!(log.warnings().is_empty());
        assert_eq!(log.stats().records_read, 13);
        assert_eq!(log.recall(&key("d")).unwrap().attempts, 3);
        drop(log);
        assert_eq!(fs::read_to_string(dir.log()).unwrap(), text);

        // The next compaction replaces the leftover and completes.
        let done = FileJournal::compact(dir.log()).unwrap();
        assert_eq!(done.records_after, 7);
        assert!(!leftover.exists());
        assert_eq!(read_log(dir.log()).unwrap().records.len(), 7);
    }
}
