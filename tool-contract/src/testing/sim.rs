//! A seeded simulation: random fault schedules across all five effect kinds, with the contract's
//! invariants checked on every run.
//!
//! Each seed draws a tool (effect kind, floor, receiver deduplication), a budget, a fault plan for the
//! service, probe failures, and sometimes a crash: the first run's future is dropped mid-way, as a
//! killed process would stop, and a second run resumes from the same attempt log. After the service
//! settles, the invariants are checked:
//!
//! 1. at most one applied effect per intent for `send`, `money` and `destructive` (and for any `create`
//!    the receiver does not deduplicate);
//! 2. never `ok` without the effect at the service;
//! 3. never `effect_applied: no` when the effect landed;
//! 4. no attempt started with less budget left than the floor;
//! 5. the call returned within the budget plus one floor;
//! 6. every `unknown` was escalated.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::fake::{FakeService, Fault, batch_probe, batch_result, single_result};
use crate::classify::Body;
use crate::effect::EffectKind;
use crate::journal::MemoryJournal;
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
}

impl Schedule {
    /// Draw the schedule of `seed`.
    pub fn draw(seed: u64) -> Schedule {
        let mut rng = Rng::new(seed);
        let kind = EffectKind::ALL[rng.below(5) as usize];
        let floor = Duration::from_millis([0, 500, 1000, 2000][rng.below(4) as usize]);
        let receiver_dedupes = kind == EffectKind::Create && rng.chance(50);
        let budget = Duration::from_secs(3 + rng.below(58));
        let items: Vec<String> = if rng.chance(30) {
            (1..=2 + rng.below(5)).map(|i| format!("item-{i}")).collect()
        } else {
            Vec::new()
        };
        let faults = (0..rng.below(4)).map(|_| draw_fault(&mut rng, budget, &items)).collect();
        let probe_failures = if rng.chance(25) { 1 + rng.below(2) as u32 } else { 0 };
        let crash_at = rng.chance(30).then(|| rng.millis(budget));
        Schedule { seed, kind, floor, receiver_dedupes, budget, faults, probe_failures, crash_at, items }
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
    let journal = Arc::new(MemoryJournal::new());
    let escalations = EscalationQueue::new();
    let started_below_floor = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let task = Task::new(format!("sim-{seed}"), "sim", schedule.budget)
        .journal(journal)
        .escalate_to(escalations.clone())
        .approver(ApproveAll);

    let mut report = None;
    if let Some(crash_at) = schedule.crash_at {
        let first = one_call(&task, &spec, &service, &schedule, &started_below_floor);
        // A crash: the run stops wherever it is, its attempt dropped mid-flight.
        if let Ok(done) = tokio::time::timeout(crash_at, first).await {
            report = Some(done);
        }
    }
    let report = match report {
        Some(report) => report,
        // A restarted process: same task, same deadline, same log.
        None => one_call(&task, &spec, &service, &schedule, &started_below_floor).await,
    };
    let elapsed = start.elapsed();
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
    if !schedule.items.is_empty() {
        items_kept(&schedule, &report, &service, at_most_once, &mut violations);
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(Failure { schedule, report: serde_json::to_string(&report).unwrap_or_default(), violations })
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
        if left < schedule.floor {
            below_floor.lock().unwrap_or_else(|e| e.into_inner()).push(left);
        }
        let service = service.clone();
        async move { batch_result(kind, service.submit_batch(call.key(), &items).await) }
    };
    if schedule.receiver_dedupes || kind == EffectKind::Read {
        return crate::engine::run_bulk(task, spec, key, schedule.items.clone(), attempt, NoProbe).await;
    }
    let probe = |key, items: Vec<String>| {
        let service = service.clone();
        async move { batch_probe(service.lookup_items_settled(key, &items).await, &items) }
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
        if left < schedule.floor {
            below_floor.lock().unwrap_or_else(|e| e.into_inner()).push(left);
        }
        let service = service.clone();
        async move { single_result(kind, service.submit(call.key()).await) }
    };
    if schedule.receiver_dedupes || kind == EffectKind::Read {
        return crate::engine::run(task, spec, key, attempt, NoProbe).await;
    }
    let probe = |key| {
        let service = service.clone();
        async move {
            match service.lookup_settled(key).await {
                Ok(found) => found.into_probe(),
                Err(why) => Probe::Failed(why),
            }
        }
    };
    crate::engine::run(task, spec, key, attempt, probe).await
}
