//! A seeded simulation: random fault schedules across all five effect kinds, with the contract's
//! invariants checked on every run.
//!
//! Each seed draws a tool (effect kind, floor, receiver deduplication, settle window), a budget (now and
//! then none at all), a fault plan for the service, probe failures, and sometimes a crash: the first
//! run's future is dropped mid-way, as a killed process would stop, and a second run resumes from the
//! same attempt log. It also draws the situations that broke the contract before the store was
//! claim-based: several calls of one intent at once, no attempt log at all, task and actor fields
//! holding `|` beside an intent they would collide with if joined naively, a service that holds a
//! request past the probe, and a log that stalls or vanishes mid-run. After the service settles, the
//! invariants are checked:
//!
//! 1. at most one applied effect per intent for `send`, `money` and `destructive` (and for any `create`
//!    the receiver does not deduplicate);
//! 2. never `ok` without the effect at the service;
//! 3. never `effect_applied: no` when the effect landed;
//! 4. no attempt started with less budget left than the floor;
//! 5. the call returned within the budget plus one floor;
//! 6. every `unknown` was escalated;
//! 7. no attempt started on an empty budget;
//! 8. an intent whose fields hold `|` never shares a key with the intent they would spell if joined
//!    with `|`, and each is sent on its own;
//! 9. no call hangs on a log that does not answer.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::fake::{FakeService, Fault, batch_probe, batch_result, single_result};
use crate::budget::{RetryBudget, RetryBudgets};
use crate::classify::Body;
use crate::effect::EffectKind;
use crate::journal::{
    Answer, Claimed, Durability, Journal, JournalError, MemoryJournal, Owner, Recall, Record, RecordRef,
};
use crate::key::IntentKey;
use crate::probe::{NoProbe, Probe};
use crate::report::{Applied, Outcome, Report};
use crate::spec::{Dedupe, ToolSpec};
use crate::task::{EscalationQueue, Task};
use crate::testing::ApproveAll;

/// A small deterministic generator (SplitMix64): the same seed draws the same schedule everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// `true` with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A duration in `0..max`, in whole milliseconds.
    pub fn millis(&mut self, max: Duration) -> Duration {
        Duration::from_millis(self.below(u64::try_from(max.as_millis()).unwrap_or(u64::MAX).max(1)))
    }
}

/// One drawn schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The seed it was drawn from.
    pub seed: u64,
    /// The tool's kind.
    pub kind: EffectKind,
    /// The tool's floor.
    pub floor: Duration,
    /// A `create` whose receiver deduplicates by the key (and has no probe).
    pub receiver_dedupes: bool,
    /// The task's budget.
    pub budget: Duration,
    /// The service's faults, one per request.
    pub faults: Vec<Fault>,
    /// How many lookups fail.
    pub probe_failures: u32,
    /// When the first run is killed, if it is.
    pub crash_at: Option<Duration>,
    /// The items of a bulk call; empty for a single act.
    pub items: Vec<String>,
    /// The attempt log.
    pub log: LogMode,
    /// How many calls of the intent run at once (after any crash).
    pub callers: u32,
    /// The callers after the first are other processes sharing the log (each its own task, not a clone
    /// of the first): only the store's claim keeps them apart.
    pub openers: bool,
    /// The service's retry budget has no room at all: every retry is refused.
    pub no_retry_budget: bool,
    /// The task id and actor hold `|`, and a decoy intent spelling the same joined text follows.
    pub pipes: bool,
    /// The probe sees only what has landed, not what the service still holds; the tool's settle window
    /// covers the longest hold of the plan.
    pub held: bool,
}

/// The attempt log of a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogMode {
    /// An in-memory log.
    Memory,
    /// No log configured.
    None,
    /// A log whose appends stop answering after this many.
    Stalls(u32),
    /// A log that fails every request after this many appends.
    Vanishes(u32),
}

impl Schedule {
    /// Draw the schedule of `seed`.
    pub fn draw(seed: u64) -> Schedule {
        let mut rng = Rng::new(seed);
        let kind = EffectKind::ALL[rng.below(5) as usize];
        let mut floor = Duration::from_millis([0, 500, 1000, 2000][rng.below(4) as usize]);
        let receiver_dedupes = kind == EffectKind::Create && rng.chance(50);
        let mut budget = Duration::from_secs(3 + rng.below(58));
        if rng.chance(5) {
            // Nothing or next to nothing left, and no floor to refuse it.
            budget = Duration::from_millis([0, 1, 300][rng.below(3) as usize]);
            floor = Duration::ZERO;
        }
        let items: Vec<String> = if rng.chance(30) {
            (1..=2 + rng.below(5)).map(|i| format!("item-{i}")).collect()
        } else {
            Vec::new()
        };
        let faults = (0..rng.below(4)).map(|_| draw_fault(&mut rng, budget, &items)).collect();
        let probe_failures = if rng.chance(25) { 1 + rng.below(2) as u32 } else { 0 };
        let log = match rng.below(10) {
            0 => LogMode::None,
            1 => LogMode::Stalls(rng.below(6) as u32),
            2 => LogMode::Vanishes(rng.below(6) as u32),
            _ => LogMode::Memory,
        };
        // A process restarted without a log knows nothing of its first run: no crash then.
        let crash_at = (log != LogMode::None && rng.chance(30)).then(|| rng.millis(budget));
        let callers = if rng.chance(20) { 2 + rng.below(2) as u32 } else { 1 };
        let pipes = rng.chance(15);
        let held = kind.has_side_effect() && !receiver_dedupes && rng.chance(20);
        // Processes with no shared log have nothing to share: two of them may both act (documented).
        let openers = callers > 1 && log != LogMode::None && rng.chance(50);
        let no_retry_budget = rng.chance(10);
        Schedule {
            seed,
            kind,
            floor,
            receiver_dedupes,
            budget,
            faults,
            probe_failures,
            crash_at,
            items,
            log,
            callers,
            openers,
            no_retry_budget,
            pipes,
            held,
        }
    }
}

fn draw_fault(rng: &mut Rng, budget: Duration, items: &[String]) -> Fault {
    match rng.below(if items.is_empty() { 10 } else { 12 }) {
        0 => Fault::None,
        9 => Fault::Delay { after: rng.millis(budget), then: Box::new(draw_fault(rng, budget, &[])) },
        10 | 11 => {
            let mut pick = || items.iter().filter(|_| rng.chance(30)).cloned().collect::<Vec<_>>();
            let reject = pick();
            Fault::Batch { reject, defer: pick() }
        }
        1 | 2 => Fault::DropReplyAfterApplying,
        3 | 4 => {
            let apply_after = rng.millis(budget + Duration::from_secs(5));
            Fault::Slow { apply_after, reply_after: apply_after + rng.millis(Duration::from_secs(3)) }
        }
        5 => {
            let body = if rng.chance(50) {
                Body::RetryableError("upstream busy".to_owned())
            } else {
                Body::PermanentError("invalid recipient".to_owned())
            };
            Fault::ErrorBody { status: 200, body }
        }
        6 | 7 => {
            let header = match rng.below(10) {
                0 => "soon".to_owned(),
                1 => "99999999999999999999".to_owned(),
                _ => rng.below(90).to_string(),
            };
            Fault::RetryAfter { status: if rng.chance(50) { 429 } else { 503 }, header }
        }
        _ => Fault::RefuseBeforeApplying,
    }
}

/// A schedule whose run broke an invariant.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The schedule.
    pub schedule: Schedule,
    /// The final report, as JSON.
    pub report: String,
    /// The invariants that did not hold.
    pub violations: Vec<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {} broke the contract:", self.schedule.seed)?;
        for v in &self.violations {
            writeln!(f, "  - {v}")?;
        }
        writeln!(f, "schedule: {:?}", self.schedule)?;
        writeln!(f, "report: {}", self.report)?;
        write!(f, "replay: {}", replay_command(self.schedule.seed))
    }
}

/// The one command that replays a seed.
pub fn replay_command(seed: u64) -> String {
    format!("SIM_SEED={seed} cargo test -p tool-contract-tests --test simulation replay -- --nocapture")
}

/// Run the schedule of `seed` on the current (paused) runtime and check every invariant.
pub async fn check(seed: u64) -> Result<(), Failure> {
    let schedule = Schedule::draw(seed);
    let service = FakeService::new();
    service.dedupe_by_key(schedule.receiver_dedupes);
    service.plan(schedule.faults.iter().cloned());
    service.fail_probes(schedule.probe_failures);
    let mut spec = ToolSpec::new("act", schedule.kind).deadline_floor(schedule.floor);
    if schedule.receiver_dedupes {
        spec = spec.dedupe(Dedupe::Receiver);
    }
    if schedule.held {
        spec = spec.settle(longest_hold(&schedule.faults) + Duration::from_secs(1));
    }
    let escalations = EscalationQueue::new();
    let started_below_floor = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    // With `pipes`, the task and actor hold `|`; the decoy spells the same text joined with `|`.
    let (id, actor) =
        if schedule.pipes { (format!("sim|{seed}"), "sim|a") } else { (format!("sim-{seed}"), "sim") };
    let journal: Option<Arc<dyn Journal>> = match schedule.log {
        LogMode::None => None,
        LogMode::Memory => Some(Arc::new(MemoryJournal::new())),
        mode => Some(Arc::new(Faulty::new(mode))),
    };
    let budgets = if schedule.no_retry_budget {
        RetryBudgets::new(RetryBudget::new(Duration::from_secs(10), 0, 0))
    } else {
        RetryBudgets::default()
    };
    // A process of its own on the shared log: its own task family, the same deadline.
    let process = |budget: Duration| {
        let task = Task::new(id.clone(), actor, budget)
            .escalate_to(escalations.clone())
            .approver(ApproveAll)
            .retry_budgets(budgets.clone());
        match &journal {
            Some(journal) => task.journal(Arc::clone(journal)),
            None => task,
        }
    };
    let task = process(schedule.budget);

    // A call that waits on a log that never answers would hang here: it may take the budget, never more.
    let runs = async {
        let mut report = None;
        if let Some(crash_at) = schedule.crash_at {
            let first = one_call(&task, &spec, &service, &schedule, &started_below_floor);
            // A crash: the run stops wherever it is, its attempt dropped mid-flight.
            if let Ok(done) = tokio::time::timeout(crash_at, first).await {
                report = Some(done);
            }
        }
        match report {
            Some(report) => report,
            // A restarted process: same task, same deadline, same log; the intent called `callers` times
            // at once (a model repeating itself, a client re-sending a call).
            None => {
                let others: Vec<Task> = (1..schedule.callers)
                    .filter(|_| schedule.openers)
                    .map(|_| process(task.remaining()))
                    .collect();
                let tasks =
                    (0..schedule.callers as usize).map(|i| others.get(i.wrapping_sub(1)).unwrap_or(&task));
                let calls =
                    tasks.map(|task| one_call(task, &spec, &service, &schedule, &started_below_floor));
                // The last to finish has the last word on the intent.
                let mut reports = join_all(calls).await;
                reports.pop().unwrap_or_else(|| unreachable!("at least one caller"))
            }
        }
    };
    let Ok(report) = tokio::time::timeout(schedule.budget + Duration::from_secs(3600), runs).await else {
        let violations = vec!["the call hung: it never returned".to_owned()];
        return Err(Failure { schedule, report: String::new(), violations });
    };
    let elapsed = start.elapsed();
    let decoy = if schedule.pipes {
        let decoy = task.new_like(format!("sim|{seed}|sim"), "a", schedule.budget);
        let report = one_call(&decoy, &spec, &service, &schedule, &started_below_floor).await;
        Some(report)
    } else {
        None
    };
    service.settle().await;

    let mut violations = Vec::new();
    let side = schedule.kind.has_side_effect();
    let effects = service.effects(report.idempotency_key);
    let at_most_once =
        matches!(schedule.kind, EffectKind::Send | EffectKind::Money | EffectKind::Destructive)
            || (schedule.kind == EffectKind::Create && !schedule.receiver_dedupes);
    let single = schedule.items.is_empty();
    if single && at_most_once && effects > 1 {
        violations.push(format!("{effects} effects applied for one {} intent", schedule.kind));
    }
    if single && side && report.outcome == Outcome::Ok && effects == 0 {
        violations.push("ok without the effect at the service".to_owned());
    }
    if side && report.effect_applied == Applied::No && effects > 0 {
        violations.push(format!("effect_applied no, but {effects} effect(s) landed"));
    }
    for left in started_below_floor.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        violations
            .push(format!("an attempt started with {left:?} left, below the {:?} floor", schedule.floor));
    }
    if elapsed > schedule.budget + schedule.floor {
        violations.push(format!("returned after {elapsed:?}, past the {:?} budget", schedule.budget));
    }
    if report.outcome == Outcome::Unknown && escalations.is_empty() {
        violations.push("unknown and not escalated".to_owned());
    }
    if schedule.budget.is_zero() && service.requests() > 0 {
        violations.push(format!("{} request(s) sent on an empty budget", service.requests()));
    }
    if let Some(decoy) = &decoy {
        if decoy.idempotency_key == report.idempotency_key {
            violations.push("two intents, one key: fields holding `|` were joined as they are".to_owned());
        }
        if side && decoy.outcome == Outcome::Ok && service.effects(decoy.idempotency_key) == 0 {
            violations.push("the decoy intent was answered ok without being sent".to_owned());
        }
    }
    if !schedule.items.is_empty() {
        items_kept(&schedule, &report, &service, at_most_once, &mut violations);
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(Failure { schedule, report: serde_json::to_string(&report).unwrap_or_default(), violations })
    }
}

/// The longest a planned fault holds a request at the service before it lands.
fn longest_hold(faults: &[Fault]) -> Duration {
    faults
        .iter()
        .map(|fault| match fault {
            Fault::Slow { apply_after, .. } => *apply_after,
            Fault::Delay { after, then } => *after + longest_hold(std::slice::from_ref(then)),
            _ => Duration::ZERO,
        })
        .max()
        .unwrap_or_default()
}

/// Every future polled on this task, in order: the calls of one intent at once.
async fn join_all<F: std::future::Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, future) in done.iter_mut().zip(&mut futures) {
            if slot.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(out) => *slot = Some(out),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending { std::task::Poll::Pending } else { std::task::Poll::Ready(()) }
    })
    .await;
    done.into_iter().flatten().collect()
}

/// A log that stops answering, or fails, after some appends: a stalled disk, a store gone away.
struct Faulty {
    inner: MemoryJournal,
    mode: LogMode,
    appends: std::sync::atomic::AtomicU32,
}

impl Faulty {
    fn new(mode: LogMode) -> Faulty {
        Faulty { inner: MemoryJournal::new(), mode, appends: std::sync::atomic::AtomicU32::new(0) }
    }

    /// The answer of a request once the log has gone bad, or `None` while it still works.
    fn gone<T: Send + 'static>(&self, count: bool) -> Option<Answer<'_, Result<T, JournalError>>> {
        let n = if count {
            self.appends.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        } else {
            self.appends.load(std::sync::atomic::Ordering::SeqCst)
        };
        match self.mode {
            LogMode::Stalls(after) if n >= after => Some(Answer::later(std::future::pending())),
            LogMode::Vanishes(after) if n >= after => Some(Answer::now(Err(JournalError::Failed {
                log: "sim".to_owned(),
                why: "the store went away".to_owned(),
            }))),
            _ => None,
        }
    }
}

impl Journal for Faulty {
    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        self.gone(false).unwrap_or_else(|| self.inner.claim(key, owner, lease))
    }

    fn release(&self, key: &IntentKey, owner: &Owner) {
        self.inner.release(key, owner);
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.gone(true).unwrap_or_else(|| self.inner.start(owner, record, durability))
    }

    fn append<'a>(
        &'a self,
        record: &'a Record,
        durability: Durability,
    ) -> Answer<'a, Result<(), JournalError>> {
        self.gone(true).unwrap_or_else(|| self.inner.append(record, durability))
    }

    fn append_ref(
        &self,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.gone(true).unwrap_or_else(|| self.inner.append_ref(record, durability))
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Option<Recall>> {
        Journal::recall(&self.inner, key)
    }

    fn unresolved(&self) -> Answer<'_, Vec<Recall>> {
        Journal::unresolved(&self.inner)
    }
}

/// The per-item invariants of a bulk call.
fn items_kept(
    schedule: &Schedule,
    report: &Report<()>,
    service: &FakeService,
    at_most_once: bool,
    violations: &mut Vec<String>,
) {
    let key = report.idempotency_key;
    if report.items.len() != schedule.items.len() {
        violations.push(format!("{} items reported of {}", report.items.len(), schedule.items.len()));
    }
    let side = schedule.kind.has_side_effect();
    for item in &report.items {
        let n = service.item_effects(key, &item.id);
        if at_most_once && n > 1 {
            violations.push(format!("{} applied {n} times", item.id));
        }
        if side && item.outcome == Outcome::Ok && n == 0 {
            violations.push(format!("{} ok without its effect", item.id));
        }
        if side && item.applied == Applied::No && n > 0 {
            violations.push(format!("{} reported not applied, but it landed", item.id));
        }
    }
    let landed = schedule.items.iter().filter(|i| service.item_effects(key, i) > 0).count();
    if side && report.effect_applied == Applied::Yes && landed < schedule.items.len() {
        violations
            .push(format!("effect_applied yes, but only {landed} of {} items landed", schedule.items.len()));
    }
}

async fn one_call(
    task: &Task,
    spec: &ToolSpec,
    service: &FakeService,
    schedule: &Schedule,
    below_floor: &Arc<Mutex<Vec<Duration>>>,
) -> Report<()> {
    if schedule.items.is_empty() {
        single_call(task, spec, service, schedule, below_floor).await.map(|_| ())
    } else {
        bulk_call(task, spec, service, schedule, below_floor).await
    }
}

async fn bulk_call(
    task: &Task,
    spec: &ToolSpec,
    service: &FakeService,
    schedule: &Schedule,
    below_floor: &Arc<Mutex<Vec<Duration>>>,
) -> Report<()> {
    let kind = schedule.kind;
    let key = task.key(spec, &"list", None);
    let attempt = |call: crate::Call, items: Vec<String>| {
        let left = task.remaining();
        if left < schedule.floor || left.is_zero() {
            below_floor.lock().unwrap_or_else(|e| e.into_inner()).push(left);
        }
        let service = service.clone();
        async move { batch_result(kind, service.submit_batch(call.key(), &items).await) }
    };
    if schedule.receiver_dedupes || kind == EffectKind::Read {
        return crate::engine::run_bulk(task, spec, key, schedule.items.clone(), attempt, NoProbe).await;
    }
    let held = schedule.held;
    let probe = |key, items: Vec<String>| {
        let service = service.clone();
        async move {
            // A held request is invisible to a probe that only sees what landed.
            let found = if held {
                service.lookup_items_landed(key, &items)
            } else {
                service.lookup_items_settled(key, &items).await
            };
            batch_probe(found, &items)
        }
    };
    crate::engine::run_bulk(task, spec, key, schedule.items.clone(), attempt, probe).await
}

async fn single_call(
    task: &Task,
    spec: &ToolSpec,
    service: &FakeService,
    schedule: &Schedule,
    below_floor: &Arc<Mutex<Vec<Duration>>>,
) -> Report<u64> {
    let kind = schedule.kind;
    let key = task.key(spec, &"target", None);
    let attempt = |call: crate::Call| {
        let left = task.remaining();
        if left < schedule.floor || left.is_zero() {
            below_floor.lock().unwrap_or_else(|e| e.into_inner()).push(left);
        }
        let service = service.clone();
        async move { single_result(kind, service.submit(call.key()).await) }
    };
    if schedule.receiver_dedupes || kind == EffectKind::Read {
        return crate::engine::run(task, spec, key, attempt, NoProbe).await;
    }
    let held = schedule.held;
    let probe = |key| {
        let service = service.clone();
        async move {
            let found = if held { service.lookup_landed(key) } else { service.lookup_settled(key).await };
            match found {
                Ok(found) => found.into_probe(),
                Err(why) => Probe::Failed(why),
            }
        }
    };
    crate::engine::run(task, spec, key, attempt, probe).await
}
