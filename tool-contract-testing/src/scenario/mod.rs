//! The six classic failures and a held request as scenarios, and a conformance runner that drives a
//! user's tool through them.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use super::fake::{FakeService, Fault};
use tool_contract::classify::Body;
use tool_contract::effect::EffectKind;
use tool_contract::journal::{
    Answer, Claimed, Durability, Journal, JournalError, MemoryJournal, Owner, Recall, RecordRef,
};
use tool_contract::key::IntentKey;
use tool_contract::probe::ProbeMark;
use tool_contract::{Applied, Outcome, Report};
use tool_contract::{
    journal::BoxFuture,
    person::{Approval, ApprovalRequest, Approve},
    task::{EscalationQueue, Task},
};

mod expect;
mod held;
mod tap;

use expect::Expect;
use tap::NoJournal;
pub(crate) use tap::Tap;

/// One of the six classic failures, or the held request that tests a tool's landing horizon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scenario {
    /// The service applies, the reply is lost: `unknown`, then a probe, then `ok`; one effect.
    KillMidCall,
    /// The same intent twice: one effect, two `ok` reports (by the receiver's key, and by the attempt
    /// log when the receiver cannot deduplicate).
    DuplicateDelivery,
    /// `200` with an error body: classified by the body, never `ok` on the status alone.
    ErrorBody,
    /// The effect lands just before the budget ends: no second attempt beside the first; one effect.
    SlowSuccess,
    /// One item of a batch is invalid for good: per-item outcomes and a retry scoped to the rest.
    PartialBatch,
    /// `429`/`503` with `Retry-After`: no attempt before the header's time; a wait beyond the budget
    /// returns `retryable` with `retry_after_s` at once.
    RateLimit,
    /// The service holds the request out of sight and applies it [`Timing::hold`] after its caller let
    /// go (a reset, the attempt's time limit, a call killed and restarted on the same log): one effect,
    /// never a second attempt, which only a landing horizon at least as long as the hold keeps.
    HeldRequest,
}

impl Scenario {
    /// The six classic failures and the held request, in the order they are usually told.
    pub const ALL: [Scenario; 7] = [
        Scenario::KillMidCall,
        Scenario::DuplicateDelivery,
        Scenario::ErrorBody,
        Scenario::SlowSuccess,
        Scenario::PartialBatch,
        Scenario::RateLimit,
        Scenario::HeldRequest,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::KillMidCall => "kill-mid-call",
            Scenario::DuplicateDelivery => "duplicate-delivery",
            Scenario::ErrorBody => "200-error-body",
            Scenario::SlowSuccess => "slow-success",
            Scenario::PartialBatch => "partial-batch",
            Scenario::RateLimit => "rate-limit",
            Scenario::HeldRequest => "held-request",
        }
    }
}

/// The clock figures of the scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// The task's budget.
    pub budget: Duration,
    /// Slow success: when the effect lands.
    pub slow_apply: Duration,
    /// Slow success: when the reply leaves the service.
    pub slow_reply: Duration,
    /// Rate limit: the `Retry-After` the service sends, in seconds.
    pub retry_after_s: u64,
    /// Held request: how long after its caller let go the service applies it (within the default
    /// landing horizon of 5 s).
    pub hold: Duration,
}

impl Timing {
    /// The two waits within the budget: delta-seconds with a `429`, then an HTTP-date with a `503`.
    fn retry_afters(self) -> [RetryAfter; 2] {
        let t = self;
        let (sys0, inst0) = (tool_contract::unstable::wall_clock(), tokio::time::Instant::now());
        let at = sys0 + Duration::from_secs(t.retry_after_s + 1);
        // The header's own time, on tokio's clock: HTTP-dates have one-second resolution.
        let at_instant = inst0
            + httpdate::parse_http_date(&httpdate::fmt_http_date(at))
                .ok()
                .and_then(|d| d.duration_since(sys0).ok())
                .unwrap_or_default();
        [
            RetryAfter { run: 1, status: 429, header: t.retry_after_s.to_string(), not_before: None },
            RetryAfter {
                run: 2,
                status: 503,
                header: httpdate::fmt_http_date(at),
                not_before: Some(at_instant),
            },
        ]
    }

    /// The figures of the story, for tokio's paused clock: a 30 s budget, the effect landing at 29 s.
    pub const PAUSED: Timing = Timing {
        budget: Duration::from_secs(30),
        slow_apply: Duration::from_secs(29),
        slow_reply: Duration::from_millis(29_500),
        retry_after_s: 5,
        hold: Duration::from_secs(3),
    };

    /// Shorter figures for a real clock (over real HTTP): a 6 s budget, the effect landing at 5 s.
    pub const REAL: Timing = Timing {
        budget: Duration::from_secs(6),
        slow_apply: Duration::from_secs(5),
        slow_reply: Duration::from_millis(5_500),
        retry_after_s: 1,
        hold: Duration::from_secs(1),
    };
}

/// What one scenario showed, against what it should show.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The scenario's name.
    pub scenario: &'static str,
    /// The final report's outcome.
    pub outcome: Outcome,
    /// The final report's effect.
    pub effect_applied: Applied,
    /// Requests the service received.
    pub attempts: u32,
    /// The last probe verdict logged, if a probe ran.
    pub probe: Option<ProbeMark>,
    /// Effects the service really applied for the scenario's intent (for a scenario run several ways,
    /// the most any one way applied).
    pub effects_at_service: usize,
    /// What was expected, in one line.
    pub expected: String,
    /// Whether every expectation held.
    pub pass: bool,
    /// What did not hold, or what was observed beyond the columns.
    pub detail: String,
}

/// A single-act tool wired to the fake: given a task and the service, make one call and report.
pub trait SingleTool {
    /// The tool's value.
    type Value;
    /// Call the tool once.
    fn call(&self, task: Task, service: FakeService) -> impl Future<Output = Report<Self::Value>>;
}

impl<F, Fut, T> SingleTool for F
where
    F: Fn(Task, FakeService) -> Fut,
    Fut: Future<Output = Report<T>>,
{
    type Value = T;
    fn call(&self, task: Task, service: FakeService) -> impl Future<Output = Report<T>> {
        self(task, service)
    }
}

/// A bulk tool wired to the fake: given a task, the service and the item ids, make one call.
pub trait BulkTool {
    /// Call the tool once on these items.
    fn call(&self, task: Task, service: FakeService, items: Vec<String>) -> impl Future<Output = Report<()>>;
}

impl<F, Fut> BulkTool for F
where
    F: Fn(Task, FakeService, Vec<String>) -> Fut,
    Fut: Future<Output = Report<()>>,
{
    fn call(&self, task: Task, service: FakeService, items: Vec<String>) -> impl Future<Output = Report<()>> {
        self(task, service, items)
    }
}

/// The bulk tool of a subject that has none: the partial-batch scenario is then reported as not run.
#[derive(Debug, Clone, Copy)]
pub struct NoBulk;

impl BulkTool for NoBulk {
    async fn call(&self, _task: Task, _service: FakeService, _items: Vec<String>) -> Report<()> {
        unreachable_report()
    }
}

fn unreachable_report() -> Report<()> {
    Report {
        outcome: Outcome::Permanent,
        effect_applied: Applied::No,
        attempt_id: String::new(),
        idempotency_key: IntentKey::derive("", "", "", &"", None),
        retry_after_s: None,
        deadline_left_s: 0,
        message: "no bulk tool".to_owned(),
        value: None,
        items: Vec::new(),
        reason: tool_contract::Reason::Unrecorded,
    }
}

/// An approver that says yes, so `money` tools can show their second attempt.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

impl Approve for ApproveAll {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(std::future::ready(Approval::Approved))
    }
}

/// Runs the six classic failures and the held request against a user's tool and says, per scenario,
/// what was expected and what happened.
///
/// The subject is the user's tool wired to a [`FakeService`]: a closure that takes the task and the
/// service, builds the tool's client on the service (in process, or over loopback HTTP) and calls the
/// tool once. Its probe must find effects at the same service (see [`FakeService::lookup_settled`]).
pub struct Conformance<S, B = NoBulk> {
    kind: EffectKind,
    receiver_dedupes: bool,
    timing: Timing,
    prefix: String,
    journal: Option<Arc<dyn Journal>>,
    single: S,
    bulk: Option<B>,
}

impl<S: SingleTool> Conformance<S, NoBulk> {
    /// A runner for a tool of `kind`.
    pub fn new(kind: EffectKind, single: S) -> Self {
        Conformance {
            kind,
            receiver_dedupes: false,
            timing: Timing::PAUSED,
            prefix: "conformance".to_owned(),
            journal: None,
            single,
            bulk: None,
        }
    }
}

impl<S: SingleTool, B: BulkTool> Conformance<S, B> {
    /// The bulk tool for the partial-batch scenario.
    pub fn bulk<B2: BulkTool>(self, bulk: B2) -> Conformance<S, B2> {
        Conformance {
            kind: self.kind,
            receiver_dedupes: self.receiver_dedupes,
            timing: self.timing,
            prefix: self.prefix,
            journal: self.journal,
            single: self.single,
            bulk: Some(bulk),
        }
    }

    /// The tool is a `create` declared `dedupe = "receiver"`: the fake then honours the key.
    pub fn receiver_dedupes(mut self) -> Self {
        self.receiver_dedupes = true;
        self
    }

    /// The clock figures (default [`Timing::PAUSED`]).
    pub fn timing(mut self, timing: Timing) -> Self {
        self.timing = timing;
        self
    }

    /// Write every scenario's attempts into this log (default: a fresh in-memory log per scenario).
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Task ids are `{prefix}-{scenario}-{run}`, `run` counting the sub-runs of a scenario from 1.
    pub fn task_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Run the six classic failures and the held request, in [`Scenario::ALL`]'s order.
    pub async fn run(&self) -> Vec<Verdict> {
        let mut verdicts = Vec::with_capacity(Scenario::ALL.len());
        for scenario in Scenario::ALL {
            verdicts.push(self.run_one(scenario).await);
        }
        verdicts
    }

    fn service(&self) -> FakeService {
        let service = FakeService::new();
        service.dedupe_by_key(self.receiver_dedupes);
        service
    }

    fn task(&self, scenario: Scenario, run: u32, tap: &Tap) -> Task {
        Task::new(format!("{}-{}-{run}", self.prefix, scenario.name()), "conformance", self.timing.budget)
            .journal(Arc::new(tap.clone()))
            .escalate_to(EscalationQueue::new())
            .approver(ApproveAll)
    }

    fn tap(&self) -> Tap {
        Tap::new(self.journal.clone().unwrap_or_else(|| Arc::new(MemoryJournal::new())))
    }

    /// Run one scenario.
    pub async fn run_one(&self, scenario: Scenario) -> Verdict {
        let destructive = self.kind == EffectKind::Destructive;
        match scenario {
            Scenario::KillMidCall => self.kill_mid_call(scenario).await,
            Scenario::DuplicateDelivery => self.duplicate(scenario).await,
            Scenario::ErrorBody => self.error_body(scenario).await,
            Scenario::SlowSuccess => self.slow_success(scenario).await,
            Scenario::PartialBatch => self.partial_batch(scenario, destructive).await,
            Scenario::RateLimit => self.rate_limit(scenario, destructive).await,
            Scenario::HeldRequest => self.held_request(scenario).await,
        }
    }

    /// One call of the single tool on `service`, as sub-run `run` of `scenario`, on a fresh tap: its
    /// report, and the tap that saw its records.
    async fn call_single(
        &self,
        scenario: Scenario,
        run: u32,
        service: &FakeService,
    ) -> (Report<S::Value>, Tap) {
        let tap = self.tap();
        let report = self.single.call(self.task(scenario, run, &tap), service.clone()).await;
        (report, tap)
    }

    /// The reply is lost after the effect lands: `unknown`, then a probe finds it landed, then `ok`.
    async fn kill_mid_call(&self, scenario: Scenario) -> Verdict {
        let service = self.service();
        service.plan([Fault::DropReplyAfterApplying]);
        let (report, tap) = self.call_single(scenario, 1, &service).await;
        let mut expect = Expect::ok(1);
        if self.receiver_dedupes {
            expect.attempts = Some(2);
        } else if self.kind.has_side_effect() {
            expect.probe = Some(ProbeMark::Landed);
        } else {
            expect.attempts = Some(2);
            expect.effects = None;
        }
        expect.judge(scenario, self.kind, &report, &service, &tap, "unknown, probe finds it landed, ok")
    }

    /// A `200` whose body refuses for good: `permanent` by the body, nothing applied.
    async fn error_body(&self, scenario: Scenario) -> Verdict {
        let service = self.service();
        let body = Body::PermanentError("recipient is not allowed".to_owned());
        service.plan([Fault::ErrorBody { status: 200, body }]);
        let (report, tap) = self.call_single(scenario, 1, &service).await;
        let expect = Expect::refused(Outcome::Permanent);
        expect.judge(scenario, self.kind, &report, &service, &tap, "permanent by the body, nothing applied")
    }

    /// The effect lands just before the budget ends: one attempt, and `ok`.
    async fn slow_success(&self, scenario: Scenario) -> Verdict {
        let service = self.service();
        let t = self.timing;
        service.plan([Fault::Slow { apply_after: t.slow_apply, reply_after: t.slow_reply }]);
        let (report, tap) = self.call_single(scenario, 1, &service).await;
        service.settle().await;
        let mut expect = Expect::ok(1);
        if !self.kind.has_side_effect() {
            expect.effects = None;
        }
        // The reply may come inside the attempt's time (no probe) or after it (a probe that
        // finds the effect): both are right, as long as only one attempt ever ran.
        expect.judge(
            scenario,
            self.kind,
            &report,
            &service,
            &tap,
            "one attempt, ok (directly, or after a probe finds it landed)",
        )
    }

    async fn duplicate(&self, scenario: Scenario) -> Verdict {
        let side = self.kind.has_side_effect();
        let mut lines = Vec::new();
        let mut pass = true;
        let mut last = None;
        let mut total = (0, 0);
        // By the receiver's key, then by the attempt log when the receiver cannot deduplicate.
        for (run, by_receiver) in [(1, true), (2, false)] {
            let service = FakeService::new();
            service.dedupe_by_key(by_receiver);
            let tap = if by_receiver { Tap::new(Arc::new(NoJournal)) } else { self.tap() };
            let task = self.task(scenario, run, &tap);
            let first = self.single.call(task.clone(), service.clone()).await;
            let second = self.single.call(task, service.clone()).await;
            let effects = service.effects(first.idempotency_key);
            let ok = first.outcome == Outcome::Ok && second.outcome == Outcome::Ok && (!side || effects == 1);
            pass &= ok;
            lines.push(format!(
                "{}: {} then {}, {} effect(s)",
                if by_receiver { "by receiver key" } else { "by attempt log" },
                first.outcome,
                second.outcome,
                effects
            ));
            total = (total.0 + service.requests(), total.1.max(effects));
            last = Some((second, tap));
        }
        let (report, tap) = last.unwrap_or_else(|| unreachable!("the loop runs twice"));
        Verdict {
            scenario: scenario.name(),
            outcome: report.outcome,
            effect_applied: report.effect_applied,
            attempts: total.0,
            probe: tap.last_probe(report.idempotency_key),
            effects_at_service: total.1,
            expected: "two ok reports, one effect, both ways".to_owned(),
            pass,
            detail: lines.join("; "),
        }
    }

    async fn partial_batch(&self, scenario: Scenario, destructive: bool) -> Verdict {
        let Some(bulk) = &self.bulk else {
            return Verdict {
                scenario: scenario.name(),
                outcome: Outcome::Permanent,
                effect_applied: Applied::No,
                attempts: 0,
                probe: None,
                effects_at_service: 0,
                expected: "a bulk tool".to_owned(),
                pass: false,
                detail: "not run: the subject has no bulk tool (Conformance::bulk)".to_owned(),
            };
        };
        let service = self.service();
        let items: Vec<String> = (1..=5).map(|i| format!("row-{i}")).collect();
        service.plan([Fault::Batch { reject: vec!["row-3".to_owned()], defer: vec!["row-5".to_owned()] }]);
        let tap = self.tap();
        let report = bulk.call(self.task(scenario, 1, &tap), service.clone(), items).await;
        let (outcome, effects, attempts, done) = if destructive {
            (Outcome::Retryable, 3, 1, "3 of 5")
        } else {
            (Outcome::Permanent, 4, 2, "4 of 5")
        };
        let expect = Expect {
            outcome,
            applied: Applied::Partial,
            effects: Some(effects),
            attempts: Some(attempts),
            probe: None,
            retry_after_s: None,
        };
        let mut verdict = expect.judge(scenario, self.kind, &report, &service, &tap, "");
        let scoped = service.item_effects(report.idempotency_key, "row-3") == 0
            && (1..=5).all(|i| service.item_effects(report.idempotency_key, &format!("row-{i}")) <= 1);
        let counted = report.message.contains(done) && report.items.len() == 5;
        verdict.pass &= scoped && counted;
        verdict.expected = format!("{outcome}, partial, {done} done, row-3 refused, no item applied twice");
        if !counted {
            verdict.detail.push_str(&format!(" message `{}` or items do not count 5 rows", report.message));
        }
        verdict
    }

    /// `429`/`503` with `Retry-After`: two waits the budget can hold, then one it cannot.
    async fn rate_limit(&self, scenario: Scenario, destructive: bool) -> Verdict {
        let t = self.timing;
        let mut verdicts = Vec::new();
        // Delta-seconds, then an HTTP-date, each within the budget; then a wait the budget cannot hold.
        for retry_after in self.timing.retry_afters() {
            verdicts.push(self.retry_after_within_budget(scenario, destructive, retry_after).await);
        }
        verdicts.push(self.retry_after_beyond_budget(scenario).await);
        let mut first = all_of(verdicts);
        first.expected = if destructive {
            format!("retryable with retry_after_s {}, never retried", t.retry_after_s)
        } else {
            format!(
                "second attempt no sooner than {} s; a 3600 s wait returns retryable at once",
                t.retry_after_s
            )
        };
        first
    }

    /// A `Retry-After` the budget can hold: a destructive call is refused `retryable`; any other waits
    /// for the header's time, no less, and tries once more.
    async fn retry_after_within_budget(
        &self,
        scenario: Scenario,
        destructive: bool,
        retry_after: RetryAfter,
    ) -> Verdict {
        let RetryAfter { run, status, header, not_before } = retry_after;
        let service = self.service();
        service.plan([Fault::RetryAfter { status, header }]);
        let (report, tap) = self.call_single(scenario, run, &service).await;
        // A destructive call is never retried; any other waits and tries once more.
        let mut expect = if destructive {
            Expect::refused(Outcome::Retryable)
        } else {
            Expect { attempts: Some(2), ..Expect::ok(1) }
        };
        if !self.kind.has_side_effect() {
            expect.effects = None;
        }
        let mut verdict = expect.judge(scenario, self.kind, &report, &service, &tap, "");
        if let [first, second, ..] = service.arrivals()[..] {
            // Delta-seconds count from the reply; an HTTP-date names its instant (50 ms of slack for
            // the wall clock read on either side).
            let earliest = not_before.map_or(first + Duration::from_secs(self.timing.retry_after_s), |at| {
                at - Duration::from_millis(50)
            });
            if second < earliest {
                verdict.pass = false;
                verdict.detail.push_str(&format!(
                    " second attempt {:?} before the Retry-After time",
                    earliest - second
                ));
            }
        }
        verdict
    }

    /// A `Retry-After` of an hour, beyond the budget: `retryable` with `retry_after_s` at once.
    async fn retry_after_beyond_budget(&self, scenario: Scenario) -> Verdict {
        let service = self.service();
        service.plan([Fault::RetryAfter { status: 429, header: "3600".to_owned() }]);
        let tap = self.tap();
        let start = tokio::time::Instant::now();
        let report = self.single.call(self.task(scenario, 3, &tap), service.clone()).await;
        let expect = Expect { retry_after_s: Some(3600), ..Expect::refused(Outcome::Retryable) };
        let mut beyond = expect.judge(scenario, self.kind, &report, &service, &tap, "");
        // Only a probe may run before giving up; no sleeping on a wait the budget cannot hold.
        if start.elapsed() >= self.timing.budget / 2 {
            beyond.pass = false;
            beyond.detail.push_str(&format!(" waited {:?} before giving up", start.elapsed()));
        }
        beyond
    }
}

/// One rate-limited sub-run: the `Retry-After` the service sends, and the instant it names if it is an
/// HTTP-date.
struct RetryAfter {
    /// The sub-run, counted from 1.
    run: u32,
    /// `429` or `503`.
    status: u16,
    /// The header as sent.
    header: String,
    /// The earliest a second attempt may come, for an HTTP-date; a delta counts from the reply.
    not_before: Option<tokio::time::Instant>,
}

/// The sub-runs of a scenario as one verdict: the first's columns, passing only if every one passed,
/// with every sub-run's detail.
fn all_of(mut verdicts: Vec<Verdict>) -> Verdict {
    let pass = verdicts.iter().all(|v| v.pass);
    let detail: Vec<String> =
        verdicts.iter().filter(|v| !v.detail.is_empty()).map(|v| v.detail.clone()).collect();
    let mut first = verdicts.swap_remove(0);
    first.pass = pass;
    first.detail = detail.join(";");
    first
}
