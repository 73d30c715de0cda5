//! The writer thread and the path from an append to it: every `write(2)` and `fdatasync(2)` of the
//! log happens on that thread.

use std::pin::Pin;

use super::*;

#[cfg(unix)]
pub(super) fn identity(metadata: &fs::Metadata) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    Some(Identity(metadata.dev(), metadata.ino()))
}

#[cfg(not(unix))]
pub(super) fn identity(_: &fs::Metadata) -> Option<Identity> {
    None
}

/// How often [`lock_waiting`] tries the lock again while another holds it.
pub(super) const LOCK_POLL: Duration = Duration::from_millis(50);

/// Takes the log's exclusive lock, or says who has it.
pub(super) fn lock(file: &File, path: &Path) -> Result<(), JournalError> {
    lock_waiting(file, path, Duration::ZERO, || {})
}

/// Takes the log's exclusive lock, trying again every [`LOCK_POLL`] while another holds it, until `wait`
/// has passed; `waiting` is called once, when the first try finds the lock taken (never with a zero
/// `wait`). Gives up with [`JournalError::InUse`] naming how long it waited.
pub(super) fn lock_waiting(
    file: &File,
    path: &Path,
    wait: Duration,
    waiting: impl FnOnce(),
) -> Result<(), JournalError> {
    let began = std::time::Instant::now();
    let mut waiting = Some(waiting);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(fs::TryLockError::WouldBlock) => {
                let waited = began.elapsed();
                if waited >= wait {
                    let waited = if wait.is_zero() { Duration::ZERO } else { waited };
                    return Err(JournalError::InUse { log: path.display().to_string(), waited });
                }
                if let Some(say) = waiting.take() {
                    say();
                }
                std::thread::sleep(LOCK_POLL.min(wait - waited));
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(io_error(format!("cannot lock {}", path.display()), e));
            }
        }
    }
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn failed(&self, why: &str) -> JournalError {
        JournalError::Failed { log: self.path.display().to_string(), why: why.to_owned() }
    }

    /// Why the path no longer names the file this journal appends to, if it does not.
    pub(super) fn moved(&self) -> Option<String> {
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
    /// Whether the writer has something to do: records to write now, a task waiting for a sync (a
    /// `sync()` queues a waiter without records), or the log closing. The writer sleeps only when not.
    pub(super) fn has_work(&self) -> bool {
        self.wake || self.closing || !self.sync_waiters.is_empty()
    }

    /// Put the log out of service and tell every waiter.
    pub(super) fn fail(&mut self, why: String) {
        for waiter in self.sync_waiters.drain(..) {
            let _ = waiter.done.send(Err(why.clone()));
        }
        self.failed = Some(why);
    }

    /// Fold the record just queued (its line at `at` in `pending`) into the index.
    fn index_line(&mut self, record: &RecordRef<'_>, at: std::ops::Range<usize>) {
        let line = &self.pending[at];
        let (attempt, phase) = (record.attempt, record.phase);
        let open = crate::rules::in_doubt(phase, record.outcome, record.effect_applied);
        match self.index.entry(record.intent_key) {
            std::collections::hash_map::Entry::Occupied(kept) => {
                kept.into_mut().update(attempt, phase, record.probe, open, line);
            }
            std::collections::hash_map::Entry::Vacant(new) => {
                new.insert(Entry::new(attempt, phase, open, line));
            }
        }
    }

    /// Queue a wait for the sync that covers the record just queued.
    fn wait_for_sync(&mut self) -> SyncWait {
        // A lone waiter on a fast disk (a task sending in sequence) looks for its answer for about as
        // long as a sync takes before it parks: a thread parked while its runtime has nothing else to
        // do costs a wake-up of tens of microseconds, a fifth of a sync. With other waiters queued (a
        // batch) it parks at once; on a slow disk, too.
        let spin_until = (self.sync_waiters.is_empty() && self.sync_time <= MAX_SPUN_SYNC)
            .then(|| std::time::Instant::now() + 2 * self.sync_time);
        let (done, wait) = oneshot::channel();
        self.sync_waiters.push_back(Waiter { seq: self.queued, done });
        SyncWait { wait, spin_until }
    }

    pub(super) fn release(queue: &mut VecDeque<Waiter>, upto: u64) -> Vec<Waiter> {
        let mut done = Vec::new();
        while queue.front().is_some_and(|w| w.seq <= upto) {
            done.extend(queue.pop_front());
        }
        done
    }
}

impl FileJournal {
    /// Test only: stall the writer thread (a disk whose writes and syncs do not complete), or let it go.
    #[cfg(test)]
    pub(super) fn stall(&self, stalled: bool) {
        self.shared.lock().stalled = stalled;
        self.shared.to_syncer.notify_one();
    }

    /// Queue one record for the writer thread, under the lock, in the order of the calls (a fenced
    /// record checked first): `Ok(None)` once it is queued (still in the process: the writer writes
    /// it at once, and it rides the next sync), `Ok(Some(wait))` for a synced record, which `wait`
    /// reports on stable storage.
    pub(super) fn write(
        &self,
        record: RecordRef<'_>,
        durability: Durability,
        fence: Option<&Owner>,
    ) -> Result<Option<SyncWait>, JournalError> {
        let mut state = self.shared.lock();
        if let Some(why) = &state.failed {
            return Err(self.shared.failed(why));
        }
        if let Some(owner) = fence {
            let highest = state.index.get(&record.intent_key).map_or(0, |entry| entry.attempts);
            if let Err(why) = state.leases.fence(owner, &record, highest) {
                let (log, attempt_id) =
                    (self.shared.path.display().to_string(), record.attempt_id.to_owned());
                return Err(JournalError::Conflict { log, attempt_id, why });
            }
        }
        if record.phase == Phase::Approval {
            if !state.approvals.may_take(&record) {
                let (log, attempt_id) =
                    (self.shared.path.display().to_string(), record.attempt_id.to_owned());
                return Err(JournalError::Conflict { log, attempt_id, why: APPROVAL_REFUSED.to_owned() });
            }
            state.approvals.note(&record);
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
        state.index_line(&record, from..to);
        state.tasks.note(&record);
        match durability {
            Durability::Buffered | Durability::Lazy => Ok(None),
            Durability::Synced => Ok(Some(state.wait_for_sync())),
        }
    }

    /// The future of one append.
    pub(super) fn append_now(
        &self,
        record: RecordRef<'_>,
        durability: Durability,
        fence: Option<&Owner>,
    ) -> Answer<'_, Result<(), JournalError>> {
        match self.write(record, durability, fence) {
            Ok(None) => Answer::now(Ok(())),
            Ok(Some(wait)) => Answer::later(async move { self.written(wait.await) }),
            Err(e) => Answer::now(Err(e)),
        }
    }

    /// The writer thread's answer about a record it was asked to write, as the log's result.
    pub(super) fn written(
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

/// The wait for a synced record: the writer's answer, looked for without parking until `spin_until`.
///
/// Looking means the task wakes itself and yields: the runtime runs every other ready task in between
/// and keeps polling its timers and sockets, so nothing waits on the spin; only a thread that had
/// nothing else to do spends it.
pub(super) struct SyncWait {
    wait: oneshot::Receiver<Result<(), String>>,
    spin_until: Option<std::time::Instant>,
}

impl Future for SyncWait {
    type Output = Result<Result<(), String>, oneshot::error::RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        let answer = Pin::new(&mut self.wait).poll(cx);
        if answer.is_pending()
            && let Some(until) = self.spin_until
        {
            if std::time::Instant::now() < until {
                cx.waker().wake_by_ref();
            } else {
                self.spin_until = None;
            }
        }
        answer
    }
}

/// The slowest recent sync after which a lone waiter still looks for its answer before parking.
/// Why [`FileJournal::write`] refused an approval record ([`Approvals::approval_step`](crate::journal::Approvals::approval_step)'s rule).
pub(super) const APPROVAL_REFUSED: &str = "an approval record that does not follow the intent's last one";

const MAX_SPUN_SYNC: std::time::Duration = std::time::Duration::from_millis(1);

/// The writer thread: every `write(2)` and `fdatasync(2)` of the log, so a stalled disk stalls this
/// thread and no task's executor; a task waits for its synced record within its budget.
///
/// A write takes every record queued so far; a sync covers every record written before it began, so the
/// synced records appended while one runs wait for the next one together (group commit).
pub(super) fn write_loop(shared: &Shared, mut file: File) {
    let mut batch = Vec::new();
    let mut state = shared.lock();
    // Until when to look for more work before sleeping: set when a sync released a task waiting on it,
    // which may soon be back with another record (often an end record, then the next start).
    let mut look_until: Option<std::time::Instant> = None;
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
            match write_pending(shared, &mut file, state, &mut batch) {
                Some(next) => state = next,
                None => break,
            }
            continue;
        }
        state.wake = false;
        let waited = state.sync_waiters.front().is_some_and(|w| w.seq <= state.written);
        let closing = state.closing && state.written > state.synced;
        if waited || closing {
            match sync_written(shared, &file, state, waited) {
                Some((next, released)) => {
                    state = next;
                    if released {
                        look_until = Some(std::time::Instant::now() + SPIN);
                    }
                }
                None => break,
            }
            continue;
        }
        if state.closing {
            break;
        }
        state = look_then_sleep(shared, state, &mut look_until);
    }
}

/// Write every record queued so far, the lock released while the disk works: the state locked again,
/// or `None` when the write failed (the log is failed for good).
fn write_pending<'s>(
    shared: &'s Shared,
    file: &mut File,
    mut state: MutexGuard<'s, State>,
    batch: &mut Vec<u8>,
) -> Option<MutexGuard<'s, State>> {
    std::mem::swap(batch, &mut state.pending);
    let upto = state.queued;
    state.wake = false;
    state.stats.writes += 1;
    drop(state);
    let result = file.write_all(batch);
    batch.clear();
    let mut state = shared.lock();
    match result {
        Ok(()) => {
            state.written = upto;
            Some(state)
        }
        Err(e) => {
            state.fail(format!("a write failed: {e}"));
            None
        }
    }
}

/// Sync every record written so far (and, with a new log, its directory), the lock released while the
/// disk works, then answer the tasks waiting on it: the state locked again and whether any task was
/// answered, or `None` when the sync failed (the log is failed for good).
fn sync_written<'s>(
    shared: &'s Shared,
    file: &File,
    mut state: MutexGuard<'s, State>,
    waited: bool,
) -> Option<(MutexGuard<'s, State>, bool)> {
    let target = state.written;
    let new_dir = std::mem::take(&mut state.sync_dir_first);
    drop(state);
    // A synced record vouches for a file the path still names: a log deleted or replaced under the
    // agent is noticed before the side effect it guards.
    let began = std::time::Instant::now();
    let result = match shared.moved() {
        Some(why) if waited => Err(why),
        _ => file.sync_data().map_err(|e| format!("a sync failed: {e}")).and_then(|()| {
            if new_dir { super::compact::sync_dir(&shared.path).map_err(|e| e.to_string()) } else { Ok(()) }
        }),
    };
    let took = began.elapsed();
    let mut state = shared.lock();
    state.stats.syncs += 1;
    // A moving average over the last few syncs, which a lone waiter's spin follows.
    state.sync_time = (state.sync_time * 3 + took) / 4;
    let released = match result {
        Ok(()) => {
            state.synced = target;
            State::release(&mut state.sync_waiters, target)
        }
        Err(why) => {
            state.fail(why);
            return None;
        }
    };
    drop(state);
    let answered = !released.is_empty();
    for waiter in released {
        let _ = waiter.done.send(Ok(()));
    }
    Some((shared.lock(), answered))
}

/// Nothing to write or sync: look for more work a moment (after a sync answered a task), then sleep
/// until some comes.
fn look_then_sleep<'s>(
    shared: &'s Shared,
    mut state: MutexGuard<'s, State>,
    look_until: &mut Option<std::time::Instant>,
) -> MutexGuard<'s, State> {
    // A task whose synced record was just released, sending in sequence, is back within tens of
    // microseconds with its next one: look for it that long before sleeping, which spares it the
    // wait for this thread to be woken. Buffered records wait for no one: no look for them.
    // The look lasts across the writes it finds: a task's end record, then its next start.
    if let Some(until) = *look_until {
        while !state.has_work() && std::time::Instant::now() < until {
            drop(state);
            std::thread::yield_now();
            state = shared.lock();
        }
        if !state.has_work() {
            *look_until = None;
        }
    }
    // Checked under the lock the wait releases: work that came while it looked is not missed.
    if !state.has_work() {
        state = shared.to_syncer.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    state
}

/// How long the writer looks for more work before it sleeps.
const SPIN: std::time::Duration = std::time::Duration::from_micros(100);
