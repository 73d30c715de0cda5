//! The embedded attempt log: one append-only JSON Lines file, no server.
//!
//! # Durability
//!
//! Each append encodes its record under the log's lock and queues the line for the log's writer thread,
//! so records keep the order of the calls to `append`; every `write(2)` and `fdatasync(2)` of the log
//! happens on that thread, and a stalled disk stalls it, never a task's executor thread. A
//! [`Durability::Buffered`] append (every end record) resolves once its line is queued: the writer
//! writes it at once and it rides the next sync (a killed process may lose the records of its last
//! moments; losing an end record is safe, the attempt then reads as unfinished and is probed). A
//! [`Durability::Synced`] append (the start record of a side-effecting attempt) resolves once a sync
//! that began after its line was written has returned. While one sync runs, the synced records appended
//! meanwhile wait for the next one together, so concurrent tasks share syncs (group commit) and
//! durability does not serialise them. The async runtime never waits on `fdatasync`.
//!
//! # Opening
//!
//! [`FileJournal::open`] opens, locks and indexes the file on the calling thread, and never waits on a
//! sync: a new log's header (and, for a file it created, its directory entry) is made durable by the
//! writer thread with the first synced record. [`FileJournal::open_async`] runs the whole open on a
//! thread of its own, for a caller on an async runtime with a large log or a slow disk.
//!
//! A write or sync that fails puts the log out of service: every waiting and later append fails with
//! [`JournalError::Failed`] (after a failed `fsync` nobody knows what reached the disk), and the engine
//! then refuses to start side-effecting attempts rather than run them unlogged.
//!
//! # Recovery
//!
//! [`FileJournal::open`] reads the file a chunk at a time and indexes it by intent key. A line that is
//! not a record (a write cut short by a crash, a hand edit) is skipped with a [`Warning`] naming its
//! line number, and the rest of the log is used; nothing is truncated or rewritten. When the file does
//! not end with a newline, the next append starts with one, so a new record is never glued onto torn
//! bytes.
//!
//! One process appends to a log at a time, and the log enforces it: [`FileJournal::open`] takes an
//! exclusive lock on the file (`flock(2)`; the operating system drops it when the process dies), so a
//! second opener, in another process or in this one, gets [`JournalError::InUse`] naming the path.
//! [`FileJournal::open_waiting`] waits for the lock within a bound instead (for processes that each
//! hold the log briefly, such as a server started per tool call), saying once that it waits.
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
use std::io::{self, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use std::time::Duration;

use super::leases::Leases;
use super::{Answer, Durability, Journal, JournalError, Owner, Phase, Recall, Record, RecordRef};
use crate::key::{IntentKey, KeyHashing};
use crate::probe::ProbeMark;
use crate::report::Outcome;
use crate::rules::{sort_queue, supersedes};

mod codec;
mod compact;
mod dir;
mod follow;
mod read;
mod recovery;
mod requests;
mod store;
mod writer;

pub use crate::journal::word::REQUEST_LIFETIME;
pub use follow::FileReader;
pub use read::{LogContents, Warning, parse_log, read_log};
pub use requests::{
    MAX_ANSWER_BYTES, MAX_REQUEST_BYTES, TAKEN_GRACE, request_approval, request_settlement, requests_dir,
};

use codec::*;
use recovery::*;
use writer::*;

pub use recovery::HEADER;

/// How much of a log `open` reads at a time (the docs quote it).
#[cfg(test)]
pub(crate) const CHUNK_BYTES: usize = CHUNK;

#[cfg(test)]
thread_local! {
    /// Test only: the logs this thread opens start with their writer stalled (a disk that hangs).
    static OPEN_STALLED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What a compaction did.
#[non_exhaustive]
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
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Records read when the log was opened.
    pub records_read: u64,
    /// Records appended since.
    pub appended: u64,
    /// `write(2)` calls, each carrying every record queued since the last one (a failed one included).
    pub writes: u64,
    /// `fdatasync(2)` calls: with group commit, fewer than synced appends.
    pub syncs: u64,
}

/// The attempt log as one append-only JSON Lines file: the embedded default store.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use tool_contract::effect::EffectKind;
/// use tool_contract::journal::Journal;
/// use tool_contract::spec::ToolSpec;
/// use tool_contract::{Class, FileJournal, Probe, Task, engine};
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
    /// Wakes the settlement watcher when the journal closes.
    to_watcher: Condvar,
}

/// A file's device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity(u64, u64);

struct State {
    index: HashMap<IntentKey, Entry, KeyHashing>,
    /// Who holds which intent.
    leases: Leases,
    /// Each intent's last approval record written since the log was opened: the questions this
    /// process asks wait here for their answers (a question left by an earlier process has nobody
    /// waiting for it).
    approvals: crate::journal::index::Approvals,
    /// Each intent's MCP task records, read at open and kept as they are written.
    tasks: crate::journal::index::McpTaskRecords,
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
    /// How long a sync has taken lately (a moving average; zero before the first).
    sync_time: std::time::Duration,
    failed: Option<String>,
    closing: bool,
    stats: JournalStats,
    /// The log's file was created by this journal: its directory is synced before the first sync, so
    /// its name survives a crash as well as its first synced record.
    sync_dir_first: bool,
    /// Test only: the writer thread waits while this is `true` (a stalled disk).
    #[cfg(test)]
    stalled: bool,
}

/// What the index keeps of one intent: its attempt count, and its last record as the line it is in the
/// log, decoded when asked for (a compact index opens a large log fast and holds little).
struct Entry {
    attempts: u32,
    phase: Phase,
    /// Its last word leaves the intent in doubt.
    open: bool,
    /// Reused as later records of the intent replace it, so an append rarely allocates here.
    line: Vec<u8>,
}

struct Waiter {
    seq: u64,
    done: oneshot::Sender<Result<(), String>>,
}

impl State {
    /// The writer's state for a log just opened: its index and what reading it found. A new log (`fresh`)
    /// has its header queued as the first line the writer writes, and a new file (`created`) has its
    /// directory synced with the first synced record, so its name survives a crash as well.
    fn opened(
        index: HashMap<IntentKey, Entry, KeyHashing>,
        tasks: crate::journal::index::McpTaskRecords,
        scan: &Scan,
        fresh: bool,
        created: bool,
    ) -> State {
        let mut pending = Vec::new();
        if fresh {
            pending.extend_from_slice(HEADER.as_bytes());
            pending.push(b'\n');
        }
        State {
            index,
            leases: Leases::default(),
            approvals: Default::default(),
            tasks,
            needs_newline: scan.torn_tail,
            sync_dir_first: created,
            wake: fresh,
            pending,
            queued: 0,
            written: 0,
            synced: 0,
            sync_waiters: VecDeque::new(),
            sync_time: std::time::Duration::ZERO,
            failed: None,
            closing: false,
            stats: JournalStats { records_read: scan.records, ..JournalStats::default() },
            #[cfg(test)]
            stalled: OPEN_STALLED.with(std::cell::Cell::get),
        }
    }
}

impl FileJournal {
    /// Open the log at `path`, creating it (mode `0600`) when it does not exist, and index it.
    ///
    /// Unreadable lines are skipped and kept as [`FileJournal::warnings`]. A file that holds something
    /// other than an attempt log is refused with [`JournalError::NotALog`] and left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<FileJournal, JournalError> {
        FileJournal::open_waiting(path, Duration::ZERO, || {})
    }

    /// [`FileJournal::open`], but when another process (or another `FileJournal` in this one) has the
    /// log open, wait up to `wait` for it to let go, trying the lock again every 50 ms; `waiting` is
    /// called once, when the first try finds the log taken, so the caller can say that it waits. Gives
    /// up with [`JournalError::InUse`] naming how long it waited. Blocks the calling thread while it
    /// waits (from an async runtime, call it on a blocking thread).
    ///
    /// This suits processes that each hold the log briefly, such as a server started for one tool call
    /// that exits after it: the next one opens the log when the last one exits. A process holds the log
    /// for as long as its `FileJournal` lives, so a long-lived holder makes every other opener wait out
    /// its bound and fail; several processes appending at once need a shared store instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_contract::journal::JournalError;
    /// use tool_contract::FileJournal;
    ///
    /// let path = std::env::temp_dir().join(format!("open-waiting-doc-{}.log", std::process::id()));
    /// let first = FileJournal::open(&path)?;
    /// let mut said = false;
    /// let second = FileJournal::open_waiting(&path, Duration::from_millis(120), || said = true);
    /// assert!(matches!(second, Err(JournalError::InUse { waited, .. }) if waited >= Duration::from_millis(120)));
    /// assert!(said);
    /// drop(first);
    /// let again = FileJournal::open_waiting(&path, Duration::from_secs(1), || unreachable!("the log is free"))?;
    /// # drop(again); std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_waiting(
        path: impl AsRef<Path>,
        wait: Duration,
        waiting: impl FnOnce(),
    ) -> Result<FileJournal, JournalError> {
        let path = path.as_ref().to_path_buf();
        let (mut file, created) = open_or_create(&path)?;
        lock_waiting(&file, &path, wait, waiting)?;
        let opened = file.metadata().ok().and_then(|metadata| identity(&metadata));
        let cannot_read = |e| io_error(format!("cannot read {}", path.display()), e);
        // The beginning says what the file is; the rest is streamed, a chunk at a time.
        let mut head = Vec::new();
        (&mut file).take(64 << 10).read_to_end(&mut head).map_err(cannot_read)?;
        let (index, tasks, scan, fresh) = match beginning(&head).map_err(|why| not_a_log(&path, why))? {
            Beginning::Empty => {
                let scan =
                    Scan { warnings: Vec::new(), torn_tail: false, records: 0, header: true, lines: 0 };
                (HashMap::default(), Default::default(), scan, true)
            }
            Beginning::Header(skip) => {
                file.seek(io::SeekFrom::Start(0)).map_err(cannot_read)?;
                let (index, tasks, scan) = index_file(&mut file, skip, CHUNK)
                    .map_err(cannot_read)?
                    .map_err(|why| not_a_log(&path, why))?;
                (index, tasks, scan, false)
            }
            Beginning::Headless => return Err(not_a_log(&path, headless(&head))),
        };
        let torn_header = fresh && !head.is_empty();
        drop(head);
        // A new log (or one whose header a crash cut short, which holds nothing else) gets its header
        // as the first line the writer thread writes: it is on disk with the first synced record, and
        // opening never waits on a sync (the module docs, "Opening").
        if torn_header {
            file.set_len(0)
                .map_err(|e| io_error(format!("cannot write the header of {}", path.display()), e))?;
        }
        let mut scan = scan;
        // The request directory, the holder's own (0700): one it may not use is said once, here, and
        // takes no requests.
        let dir = requests::requests_dir(&path);
        if let Some(why) = requests::unusable(&path) {
            scan.warnings.push(Warning {
                line: 0,
                message: format!(
                    "settlement and approval requests are not taken from {}: {why}",
                    dir.display()
                ),
            });
        }
        let state = State::opened(index, tasks, &scan, fresh, created);
        let shared = Arc::new(Shared {
            path,
            identity: opened,
            state: Mutex::new(state),
            to_syncer: Condvar::new(),
            to_watcher: Condvar::new(),
        });
        let mut journal = FileJournal { shared, warnings: scan.warnings, threads: Vec::with_capacity(2) };
        let shared = Arc::clone(&journal.shared);
        let syncer = std::thread::Builder::new()
            .name("attempt-log-writer".to_owned())
            .spawn(move || write_loop(&shared, file))
            .map_err(|e| io_error("cannot start the attempt log's writer thread".to_owned(), e))?;
        journal.threads.push(syncer);
        let shared = Arc::clone(&journal.shared);
        let watcher = std::thread::Builder::new()
            .name("attempt-log-settle".to_owned())
            .spawn(move || watch_requests(&shared))
            .map_err(|e| io_error("cannot start the attempt log's settlement watcher".to_owned(), e))?;
        journal.threads.push(watcher);
        Ok(journal)
    }

    /// [`FileJournal::open`] on a thread of its own, so reading a large log (or a slow disk) does not
    /// hold the caller's async runtime. To bound it, wrap it in a timeout: an open given up on still
    /// finishes on its thread, and the journal it makes is dropped there (its lock released).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use tool_contract::FileJournal;
    ///
    /// let path = std::env::temp_dir().join(format!("open-async-doc-{}.log", std::process::id()));
    /// let journal = FileJournal::open_async(&path).await?;
    /// assert!(journal.warnings().is_empty());
    /// # drop(journal); std::fs::remove_file(&path)?; Ok(()) }
    /// ```
    pub async fn open_async(path: impl AsRef<Path>) -> Result<FileJournal, JournalError> {
        let path = path.as_ref().to_path_buf();
        let log = path.display().to_string();
        let (done, answer) = oneshot::channel();
        std::thread::Builder::new()
            .name("attempt-log-open".to_owned())
            .spawn(move || {
                let _ = done.send(FileJournal::open(path));
            })
            .map_err(|e| io_error(format!("cannot start a thread to open {log}"), e))?;
        answer.await.unwrap_or_else(|_| {
            Err(JournalError::Failed { log, why: "the thread opening it stopped".to_owned() })
        })
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
        self.written(done.await)
    }

    /// What the log holds on one intent, at once: [`Journal::recall`] without the wait.
    pub fn recall_now(&self, key: &IntentKey) -> Option<Recall> {
        let state = self.shared.lock();
        state.index.get(key).map(|entry| entry.recall(*key))
    }

    /// Every unresolved intent, oldest first, at once: [`Journal::unresolved`] without the wait.
    pub fn unresolved_now(&self) -> Vec<Recall> {
        let state = self.shared.lock();
        sort_queue(state.index.iter().filter(|(_, e)| e.is_unresolved()).map(|(k, e)| e.recall(*k)).collect())
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
    /// Sync what is written, and stop the syncer and the watcher. A view (the watcher's own) stops
    /// nothing.
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        let _ = Journal::flush(self);
        self.shared.lock().closing = true;
        self.shared.to_syncer.notify_one();
        self.shared.to_watcher.notify_one();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl FileJournal {
    /// The journal seen from one of its own threads: the same log, and nothing stopped when dropped.
    fn view(shared: Arc<Shared>) -> FileJournal {
        FileJournal { shared, warnings: Vec::new(), threads: Vec::new() }
    }
}

/// The settlement watcher: answers the requests of settlers in other processes
/// ([`requests`]) until the journal closes.
fn watch_requests(shared: &Arc<Shared>) {
    let mut first = true;
    loop {
        requests::answer_requests(shared, first);
        first = false;
        let state = shared.lock();
        if state.closing {
            return;
        }
        let (state, _) =
            shared.to_watcher.wait_timeout(state, requests::LOOK_EVERY).unwrap_or_else(|e| e.into_inner());
        if state.closing {
            return;
        }
    }
}

/// What reading a log found, besides its records.
struct Scan {
    warnings: Vec<Warning>,
    torn_tail: bool,
    records: u64,
    /// The file begins with [`HEADER`] (or is empty).
    header: bool,
    /// Lines read, blank and unreadable ones included (a torn last line counts as one).
    lines: u64,
}

/// What one piece of a log held.
struct Piece<T> {
    found: T,
    warnings: Vec<Warning>,
    records: u64,
    /// Lines read, blank and unreadable ones included.
    lines: u64,
    looks_like_a_log: bool,
    first_error: Option<(u64, String)>,
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
mod tests;
