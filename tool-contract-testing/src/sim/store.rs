//! The simulation on a store the caller gives, with the store's own faults drawn from the seed: a lost
//! connection (before or after the request was stored), a slow commit, a lease that ends early.
//!
//! A store across the network needs the real clock (on a paused one, tokio moves time on whenever the
//! runtime waits on a socket, and every request times out), so a store schedule is [`Schedule::draw`]'s
//! with its durations divided by [`SCALE`]: one takes well under a second, and schedules of different
//! seeds can run side by side (their task ids differ).

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::io::ErrorKind;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::{CALLER, Failure, Faulty, LogMode, Rng, Schedule, Seen, Setup, run};
use crate::Fault;
use tool_contract::journal::{
    Answer, Claimed, Durability, Journal, JournalError, LastWord, Owner, Phase, Recall, RecordRef,
};
use tool_contract::key::IntentKey;

/// What a store schedule's durations are divided by: a 3 to 60 s budget becomes 150 ms to 3 s.
pub const SCALE: u32 = 20;

/// The clock a schedule runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// tokio's paused clock: exact, one schedule at a time per runtime.
    Paused,
    /// The real clock, which a store across the network needs; schedules may run side by side.
    Real,
}

impl Clock {
    /// What the clock may add to a call's measured time: nothing on the paused clock; on the real one,
    /// the late wake-ups of a busy machine (a tenth of it between two readings a few instructions
    /// apart). Measured on 2 shared cores with 50 schedules at once on PostgreSQL: at most 29 ms. The
    /// paused clock checks the budget exactly.
    pub fn slack(self) -> Duration {
        match self {
            Clock::Paused => Duration::ZERO,
            Clock::Real => Duration::from_millis(100),
        }
    }

    /// How long past its budget a call may take before it counts as hung.
    pub(super) fn hang(self) -> Duration {
        match self {
            Clock::Paused => Duration::from_secs(3600),
            Clock::Real => Duration::from_secs(30),
        }
    }
}

/// The faults of the store a schedule runs on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreFaults {
    /// One fault per store request (a claim, a start, an append), in the order the requests come; the
    /// requests after the plan find the store well.
    pub plan: Vec<StoreFault>,
    /// Every claim's lease is cut to this, so another opener can take the intent over mid-call.
    pub lease: Option<Duration>,
}

/// One fault of one store request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreFault {
    /// The request is answered as the store answers it.
    None,
    /// The connection is lost before the request reaches the store: nothing is stored, and the caller
    /// gets an I/O error of this kind.
    LostBefore(ErrorKind),
    /// The request is stored, then the connection is lost before the answer comes back.
    LostAfter(ErrorKind),
    /// The request reaches the store after this long.
    SlowBefore(Duration),
    /// The request is stored, and the answer comes back this long after. With a cut lease, a start's
    /// answer is slowed before it is stored instead: a worker stalled between its fenced start and its
    /// request, past its lease, is the one case no fence covers (only a receiver that deduplicates).
    SlowAfter(Duration),
}

impl StoreFault {
    fn draw(rng: &mut Rng, budget: Duration) -> StoreFault {
        let kind =
            |rng: &mut Rng| if rng.chance(50) { ErrorKind::ConnectionReset } else { ErrorKind::TimedOut };
        match rng.below(20) {
            0..=5 => StoreFault::None,
            6..=9 => StoreFault::LostBefore(kind(rng)),
            10..=13 => StoreFault::LostAfter(kind(rng)),
            14..=16 => StoreFault::SlowBefore(rng.millis(budget)),
            _ => StoreFault::SlowAfter(rng.millis(budget)),
        }
    }
}

impl StoreFaults {
    /// The store faults of `seed` for `schedule`, from a stream of their own: the rest of the schedule
    /// is what [`Schedule::draw`] gives.
    pub fn draw(seed: u64, schedule: &Schedule) -> StoreFaults {
        let mut rng = Rng::new(seed ^ 0x5354_4f52_4546_4c54);
        let budget = schedule.budget;
        let plan = (0..rng.below(7)).map(|_| StoreFault::draw(&mut rng, budget)).collect();
        // A lease cut short lets another worker take over while the holder's request may still be on its
        // way. Only a probe that sees every request that has left its sender can tell the one taking
        // over: one that sees only what landed (`held`) relies on the lease covering the landing horizon,
        // and a request held in the network (`Delay`) is seen by no probe; with those, a lease that ends
        // early breaks the design's own premise, not the engine.
        let in_the_open = !schedule.held && !schedule.faults.iter().any(|f| matches!(f, Fault::Delay { .. }));
        let lease =
            (in_the_open && rng.chance(35)).then(|| Duration::from_millis(1) + rng.millis(budget / 2));
        StoreFaults { plan, lease }
    }
}

impl Schedule {
    /// The schedule of `seed` for a store: [`Schedule::draw`]'s with its durations divided by [`SCALE`]
    /// and the store's faults drawn too. `LogMode::None` becomes the store; with a cut lease, a second
    /// process opens the intent at once.
    pub fn draw_on_store(seed: u64) -> Schedule {
        let mut schedule = Schedule::draw(seed).scaled(SCALE);
        let faults = StoreFaults::draw(seed, &schedule);
        if schedule.log == LogMode::None {
            schedule.log = LogMode::Memory;
        }
        if faults.lease.is_some() {
            schedule.callers = schedule.callers.max(2);
            schedule.openers = true;
        }
        schedule.store = Some(faults);
        schedule
    }

    /// The schedule with its budget, floor, crash and service delays divided by `by`, in whole
    /// milliseconds (tokio's timers have no finer grain), rounded up so what was not zero stays so. A
    /// `Retry-After` header, in whole seconds, stays as it is.
    pub fn scaled(mut self, by: u32) -> Schedule {
        let by = by.max(1);
        self.floor = shrink(self.floor, by);
        self.budget = shrink(self.budget, by);
        self.crash_at = self.crash_at.map(|at| shrink(at, by));
        self.faults = self.faults.iter().map(|fault| scale_fault(fault, by)).collect();
        self.scale = self.scale.saturating_mul(by);
        self
    }
}

/// `d` divided by `by`, rounded up to whole milliseconds.
fn shrink(d: Duration, by: u32) -> Duration {
    Duration::from_millis(u64::try_from(d.as_micros().div_ceil(u128::from(by) * 1000)).unwrap_or(u64::MAX))
}

fn scale_fault(fault: &Fault, by: u32) -> Fault {
    match fault {
        Fault::Slow { apply_after, reply_after } => {
            Fault::Slow { apply_after: shrink(*apply_after, by), reply_after: shrink(*reply_after, by) }
        }
        Fault::Delay { after, then } => {
            Fault::Delay { after: shrink(*after, by), then: Box::new(scale_fault(then, by)) }
        }
        other => other.clone(),
    }
}

/// The one command that replays a store schedule on [`MemoryJournal`](tool_contract::journal::MemoryJournal).
pub fn store_replay_command(seed: u64) -> String {
    format!(
        "STORE_SIM_SEED={seed} cargo test -p tool-contract-tests --test simulation replay_on_store -- --nocapture"
    )
}

/// Run the store schedule of `seed` ([`Schedule::draw_on_store`]) with `store` as its log, behind the
/// drawn store faults, and check every invariant of [`check`](super::check), and two the store keeps: a
/// start is never stored for an owner whose claim another has taken since, and whoever claims an
/// unfinished attempt probes it before starting the next. Every schedule's intents are its own, so one
/// store serves many schedules, one after another or side by side on [`Clock::Real`].
pub async fn check_on(seed: u64, store: Arc<dyn Journal>, clock: Clock) -> Result<(), Failure> {
    let schedule = Schedule::draw_on_store(seed);
    let faults = schedule.store.clone().unwrap_or_default();
    let log: Arc<dyn Journal> = match schedule.log {
        mode @ (LogMode::Stalls(_) | LogMode::Vanishes(_)) => Arc::new(Faulty::new(mode, store)),
        LogMode::Memory | LogMode::None => store,
    };
    // A receiver that deduplicates is sent again instead of probed.
    let injector = Arc::new(Injector::new(log, faults, !schedule.receiver_dedupes));
    let setup = Setup { clock, replay: store_replay_command(seed) };
    let watched = Arc::clone(&injector);
    run(schedule, Some(injector), setup, move || watched.seen()).await
}

/// A store behind a plan of faults, watching what the store accepts.
struct Injector {
    inner: Arc<dyn Journal>,
    plan: Mutex<VecDeque<StoreFault>>,
    lease: Option<Duration>,
    probes: bool,
    watch: Mutex<Watch>,
}

/// What the store was seen to do, in the order its answers came.
#[derive(Default)]
struct Watch {
    /// The last owner the store gave each intent to.
    holder: HashMap<IntentKey, Owner>,
    /// The owners that claimed an intent whose last attempt was unfinished, and that attempt.
    took_over: HashMap<Owner, (IntentKey, u32)>,
    /// The attempts a probe's verdict was written for.
    probed: HashSet<(IntentKey, u32)>,
    /// The starts the store accepted.
    started: HashSet<(IntentKey, u32)>,
    /// Which call each owner is.
    callers: HashMap<Owner, usize>,
    /// The owners that gave their claim up: their calls have ended.
    released: HashSet<Owner>,
    /// The calls whose claim another took while they ran.
    superseded: HashSet<usize>,
    violations: Vec<String>,
}

impl Injector {
    fn new(inner: Arc<dyn Journal>, faults: StoreFaults, probes: bool) -> Injector {
        let plan = Mutex::new(faults.plan.into());
        Injector { inner, plan, lease: faults.lease, probes, watch: Mutex::default() }
    }

    fn next(&self) -> StoreFault {
        self.plan.lock().unwrap_or_else(|e| e.into_inner()).pop_front().unwrap_or(StoreFault::None)
    }

    fn watch(&self) -> MutexGuard<'_, Watch> {
        self.watch.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn seen(&self) -> Seen {
        let watch = self.watch();
        Seen { violations: watch.violations.clone(), superseded: watch.superseded.clone() }
    }

    fn held(&self, key: IntentKey, owner: &Owner, recall: Option<&Recall>) {
        let mut watch = self.watch();
        if let Some(before) = watch.holder.insert(key, owner.clone())
            && before != *owner
            && !watch.released.contains(&before)
            && let Some(&caller) = watch.callers.get(&before)
        {
            watch.superseded.insert(caller);
        }
        if let Some(recall) = recall
            && recall.last_word() == LastWord::Unfinished
        {
            watch.took_over.insert(owner.clone(), (key, recall.attempts));
        }
    }

    /// A start the engine asks for: one that follows a takeover must follow its probe.
    fn asked_to_start(&self, owner: &Owner, key: IntentKey, attempt: u32) {
        let mut watch = self.watch();
        if let Some(&(of, unfinished)) = watch.took_over.get(owner)
            && self.probes
            && of == key
            && !watch.probed.contains(&(key, unfinished))
        {
            watch.violations.push(format!(
                "{owner} claimed the intent with attempt {unfinished} unfinished and started attempt \
                 {attempt} without probing it"
            ));
        }
    }

    /// A start the store accepted; `holder` held the intent's claim when the start was sent.
    fn started(&self, owner: &Owner, key: IntentKey, attempt: u32, holder: Option<Owner>) {
        let mut watch = self.watch();
        if let Some(holder) = holder.filter(|holder| holder != owner) {
            watch.violations.push(format!(
                "the start of attempt {attempt} by {owner} was stored after {holder} took the intent over"
            ));
        }
        if !watch.started.insert((key, attempt)) {
            watch.violations.push(format!("the store accepted two starts of attempt {attempt}"));
        }
    }

    fn saw(&self, record: &RecordRef<'_>) {
        if record.phase == Phase::End && record.probe.is_some() {
            self.watch().probed.insert((record.intent_key, record.attempt));
        }
    }
}

fn lost(kind: ErrorKind, when: &str) -> JournalError {
    JournalError::Io {
        context: format!("simulated store: the connection was lost {when}"),
        source: kind.into(),
    }
}

/// `op` (not yet begun) performed as `fault` says.
async fn faulted<T>(
    fault: StoreFault,
    op: impl Future<Output = Result<T, JournalError>>,
) -> Result<T, JournalError> {
    match fault {
        StoreFault::None => op.await,
        StoreFault::LostBefore(kind) => Err(lost(kind, "before the request was stored")),
        StoreFault::LostAfter(kind) => {
            let _ = op.await;
            Err(lost(kind, "after the request was stored"))
        }
        StoreFault::SlowBefore(delay) => {
            tokio::time::sleep(delay).await;
            op.await
        }
        StoreFault::SlowAfter(delay) => {
            let answer = op.await;
            tokio::time::sleep(delay).await;
            answer
        }
    }
}

impl Journal for Injector {
    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let lease = self.lease.map_or(lease, |cut| cut.min(lease));
        if let Ok(caller) = CALLER.try_with(|caller| *caller) {
            self.watch().callers.insert(owner.clone(), caller);
        }
        let (key, owner, fault) = (*key, owner.clone(), self.next());
        Answer::later(faulted(fault, async move {
            let claimed = self.inner.claim(&key, &owner, lease).await;
            if let Ok(Claimed::Held(recall)) = &claimed {
                self.held(key, &owner, recall.as_ref());
            }
            claimed
        }))
    }

    fn release(&self, key: &IntentKey, owner: &Owner) {
        self.watch().released.insert(owner.clone());
        self.inner.release(key, owner);
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        let fault = match (self.next(), self.lease) {
            (StoreFault::SlowAfter(delay), Some(_)) => StoreFault::SlowBefore(delay),
            (fault, _) => fault,
        };
        let (key, attempt) = (record.intent_key, record.attempt);
        self.asked_to_start(owner, key, attempt);
        let (owner, record) = (owner.clone(), record.to_record());
        Answer::later(faulted(fault, async move {
            let holder = self.watch().holder.get(&key).cloned();
            let stored = self.inner.start(&owner, record.as_record_ref(), durability).await;
            if stored.is_ok() {
                self.started(&owner, key, attempt, holder);
            }
            stored
        }))
    }

    fn end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.saw(&record);
        let (fault, owner, record) = (self.next(), owner.clone(), record.to_record());
        Answer::later(faulted(fault, async move {
            self.inner.end(&owner, record.as_record_ref(), durability).await
        }))
    }

    fn append(&self, record: RecordRef<'_>, durability: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.saw(&record);
        let (fault, record) = (self.next(), record.to_record());
        Answer::later(faulted(
            fault,
            async move { self.inner.append(record.as_record_ref(), durability).await },
        ))
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        self.inner.recall(key)
    }

    fn attempts(&self, key: &IntentKey) -> Answer<'_, Result<Option<u32>, JournalError>> {
        self.inner.attempts(key)
    }

    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        self.inner.unresolved()
    }

    fn flush(&self) -> Result<(), JournalError> {
        self.inner.flush()
    }

    fn approvals(&self) -> Option<&dyn tool_contract::journal::Approvals> {
        self.inner.approvals()
    }
}
