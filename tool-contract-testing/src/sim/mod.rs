//! A seeded simulation: random fault schedules across all five effect kinds, with the contract's
//! invariants checked on every run.
//!
//! Each seed draws a tool (effect kind, floor, receiver deduplication, landing horizon), a budget (now and
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
//!
//! [`check_on`] runs the same schedules on a store the caller gives (PostgreSQL, say), on a real clock
//! if need be, with store faults drawn from the seed as well: a lost connection, a slow commit, a lease
//! that ends early. The same invariants hold there, and two more that the store itself keeps: a start
//! is never stored for an owner whose claim was taken over, and whoever takes over an unfinished
//! attempt probes it before starting another.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::fake::{FakeService, Fault};
use crate::ApproveAll;
use tool_contract::Report;
use tool_contract::budget::{RetryBudget, RetryBudgets};
use tool_contract::journal::{Journal, MemoryJournal};
use tool_contract::spec::{Dedupe, ToolSpec};
use tool_contract::task::{EscalationQueue, Task};

mod calls;
mod faulty;
mod invariants;
mod schedule;
mod store;

use calls::one_call;
use faulty::Faulty;
use invariants::Ending;
pub use schedule::{LogMode, Rng, Schedule};
pub use store::{Clock, SCALE, StoreFault, StoreFaults, check_on, store_replay_command};

/// A schedule whose run broke an invariant.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The schedule.
    pub schedule: Schedule,
    /// The final report, as JSON.
    pub report: String,
    /// The invariants that did not hold.
    pub violations: Vec<String>,
    /// The one command that replays the schedule.
    pub replay: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {} broke the contract:", self.schedule.seed)?;
        for v in &self.violations {
            writeln!(f, "  - {v}")?;
        }
        writeln!(f, "schedule: {:?}", self.schedule)?;
        writeln!(f, "report: {}", self.report)?;
        write!(f, "replay: {}", self.replay)
    }
}

/// The one command that replays a seed.
pub fn replay_command(seed: u64) -> String {
    format!("SIM_SEED={seed} cargo test -p tool-contract-tests --test simulation replay -- --nocapture")
}

/// Run the schedule of `seed` on the current (paused) runtime and check every invariant.
pub async fn check(seed: u64) -> Result<(), Failure> {
    let schedule = Schedule::draw(seed);
    let journal: Option<Arc<dyn Journal>> = match schedule.log {
        LogMode::None => None,
        LogMode::Memory => Some(Arc::new(MemoryJournal::new())),
        mode => Some(Arc::new(Faulty::new(mode, Arc::new(MemoryJournal::new())))),
    };
    let setup = Setup { clock: Clock::Paused, replay: replay_command(seed) };
    run(schedule, journal, setup, Seen::default).await
}

tokio::task_local! {
    /// Which of the calls of one intent at once is running: the store watches whose claim is whose.
    static CALLER: usize;
}

/// What the log itself saw of a run.
#[derive(Default)]
struct Seen {
    /// The invariants of the log that did not hold.
    violations: Vec<String>,
    /// The calls (by [`CALLER`]) whose claim another call took over while they ran.
    superseded: HashSet<usize>,
}

/// How a schedule is run, beyond what it draws.
struct Setup {
    /// The clock the runtime keeps.
    clock: Clock,
    /// The command that replays the schedule.
    replay: String,
}

/// Run `schedule` with `journal` as its log and check every invariant; `more` says what the log itself
/// saw, once the service has settled.
async fn run(
    schedule: Schedule,
    journal: Option<Arc<dyn Journal>>,
    setup: Setup,
    more: impl FnOnce() -> Seen,
) -> Result<(), Failure> {
    let slack = setup.clock.slack();
    let rig = Rig::new(&schedule, journal);
    let start = Instant::now();
    let task = rig.process(schedule.budget);
    // A call that waits on a log that never answers would hang here: it may take the budget, never more.
    let Ok((reports, finished)) =
        tokio::time::timeout(schedule.budget + setup.clock.hang(), rig.calls(&task)).await
    else {
        let violations = vec!["the call hung: it never returned".to_owned()];
        return Err(Failure { schedule, report: String::new(), violations, replay: setup.replay });
    };
    let elapsed = start.elapsed();
    let decoy = rig.decoy(&task).await;
    rig.service.settle().await;
    let seen = more();
    let (report, others) = last_word(&schedule, reports, &finished, &seen.superseded);
    let ending =
        Ending { rig: &rig, report: &report, others: &others, decoy: decoy.as_ref(), elapsed, slack };
    let violations = ending.violations(seen.violations);
    if violations.is_empty() {
        Ok(())
    } else {
        let report = serde_json::to_string(&report).unwrap_or_default();
        Err(Failure { schedule, report, violations, replay: setup.replay })
    }
}

/// What the calls of a run share: the schedule, the service and the tool they call, the processes
/// that call it, and the budget each attempt started with.
struct Rig<'a> {
    /// The schedule run.
    schedule: &'a Schedule,
    /// The service the tool acts on.
    service: FakeService,
    /// The tool.
    spec: ToolSpec,
    /// Where every process escalates.
    escalations: EscalationQueue,
    /// The budget left as each attempt started.
    started_with: Arc<Mutex<Vec<Duration>>>,
    /// The task id of every process.
    id: String,
    /// The actor of every process.
    actor: &'static str,
    /// The retry budgets every process is given.
    budgets: RetryBudgets,
    /// The attempt log the processes share, if there is one.
    journal: Option<Arc<dyn Journal>>,
}

impl<'a> Rig<'a> {
    /// The rig of `schedule`, its processes sharing `journal`.
    fn new(schedule: &'a Schedule, journal: Option<Arc<dyn Journal>>) -> Rig<'a> {
        let seed = schedule.seed;
        // With `pipes`, the task and actor hold `|`; the decoy spells the same text joined with `|`.
        let (id, actor) =
            if schedule.pipes { (format!("sim|{seed}"), "sim|a") } else { (format!("sim-{seed}"), "sim") };
        Rig {
            schedule,
            service: service_of(schedule),
            spec: tool_of(schedule),
            escalations: EscalationQueue::new(),
            started_with: Arc::new(Mutex::new(Vec::new())),
            id,
            actor,
            budgets: retry_budgets_of(schedule),
            journal,
        }
    }

    /// A process of its own on the shared log: its own task family, the same deadline.
    fn process(&self, budget: Duration) -> Task {
        let task = Task::new(self.id.clone(), self.actor, budget)
            .escalate_to(self.escalations.clone())
            .approver(ApproveAll)
            .retry_budgets(self.budgets.clone());
        match &self.journal {
            Some(journal) => task.journal(Arc::clone(journal)),
            None => task,
        }
    }

    /// One call of the tool on `task`'s behalf: one act, or a batch of the schedule's items.
    async fn call(&self, task: &Task) -> Report<()> {
        one_call(task, &self.spec, &self.service, self.schedule, &self.started_with).await
    }

    /// Every call of the intent: their reports, and the order they finished in. A first run that
    /// finished before its crash is the only one; otherwise the calls of a restarted process follow.
    async fn calls(&self, task: &Task) -> (Vec<Report<()>>, Vec<usize>) {
        match self.crashed(task).await {
            Some(report) => (vec![report], vec![0]),
            None => self.at_once(task).await,
        }
    }

    /// The first run of a schedule that crashes: its report, if it finished before the crash.
    async fn crashed(&self, task: &Task) -> Option<Report<()>> {
        let crash_at = self.schedule.crash_at?;
        // A crash: the run stops wherever it is, its attempt dropped mid-flight.
        tokio::time::timeout(crash_at, self.call(task)).await.ok()
    }

    /// A restarted process: same task, same deadline, same log; the intent called `callers` times at
    /// once (a model repeating itself, a client re-sending a call). With `openers`, the callers after the
    /// first are processes of their own.
    async fn at_once(&self, task: &Task) -> (Vec<Report<()>>, Vec<usize>) {
        let schedule = self.schedule;
        let others: Vec<Task> = (1..schedule.callers)
            .filter(|_| schedule.openers)
            .map(|_| self.process(task.remaining()))
            .collect();
        let tasks = (0..schedule.callers as usize).map(|i| others.get(i.wrapping_sub(1)).unwrap_or(task));
        let calls = tasks.enumerate().map(|(i, task)| CALLER.scope(i, self.call(task)));
        join_all(calls).await
    }

    /// With `pipes`, the decoy intent's report: its task id and actor, joined with `|`, spell the same
    /// text as the intent's.
    async fn decoy(&self, task: &Task) -> Option<Report<()>> {
        if !self.schedule.pipes {
            return None;
        }
        let (seed, budget) = (self.schedule.seed, self.schedule.budget);
        let decoy = task.new_like(format!("sim|{seed}|sim"), "a", budget);
        Some(self.call(&decoy).await)
    }
}

/// The fake service of `schedule`: its faults planned, its lookups failing as drawn.
fn service_of(schedule: &Schedule) -> FakeService {
    let service = FakeService::new();
    service.dedupe_by_key(schedule.receiver_dedupes);
    service.plan(schedule.faults.iter().cloned());
    service.fail_probes(schedule.probe_failures);
    service
}

/// The tool of `schedule`: its kind and floor, deduplicated by the receiver and settling as drawn.
fn tool_of(schedule: &Schedule) -> ToolSpec {
    let mut spec = ToolSpec::new("act", schedule.kind).deadline_floor(schedule.floor);
    if schedule.receiver_dedupes {
        spec = spec.dedupe(Dedupe::Receiver);
    }
    if schedule.held {
        // The margin is not scaled: the log keeps an attempt's start in whole seconds.
        spec = spec.horizon(longest_hold(&schedule.faults) + Duration::from_secs(1));
    }
    spec
}

/// The retry budgets of `schedule`: the default, or with `no_retry_budget` none with room for a retry.
fn retry_budgets_of(schedule: &Schedule) -> RetryBudgets {
    if schedule.no_retry_budget {
        RetryBudgets::new(RetryBudget::new(Duration::from_secs(10), 0, 0))
    } else {
        RetryBudgets::default()
    }
}

/// The report with the last word on the intent, taken out of `reports`, and the other calls' reports.
fn last_word(
    schedule: &Schedule,
    mut reports: Vec<Report<()>>,
    finished: &[usize],
    superseded: &HashSet<usize>,
) -> (Report<()>, Vec<Report<()>>) {
    let report = match schedule.store {
        // The last to finish has the last word on the intent.
        None => reports.pop().unwrap_or_else(|| unreachable!("at least one caller")),
        // On a store whose leases are cut short, calls overlap, and one taken over mid-call reports only
        // on what it did itself: the last to finish of the others has the last word.
        Some(_) => {
            let mut order = finished.iter().rev();
            let last = order.find(|i| !superseded.contains(i)).or(finished.last());
            reports.swap_remove(last.copied().unwrap_or_default())
        }
    };
    (report, reports)
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

/// Every future polled on this task, in order: the calls of one intent at once. Their outputs in
/// order, and the order they finished in.
async fn join_all<F: std::future::Future>(
    futures: impl IntoIterator<Item = F>,
) -> (Vec<F::Output>, Vec<usize>) {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    let mut finished = Vec::new();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (at, (slot, future)) in done.iter_mut().zip(&mut futures).enumerate() {
            if slot.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(out) => {
                        *slot = Some(out);
                        finished.push(at);
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending { std::task::Poll::Pending } else { std::task::Poll::Ready(()) }
    })
    .await;
    (done.into_iter().flatten().collect(), finished)
}
