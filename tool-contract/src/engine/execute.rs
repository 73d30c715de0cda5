//! The one executor of the call machine's decisions. Between attempts, when a shape leaves something
//! undecided ([`Work::undecided`]), the machine names each action (probe, wait until the landing horizon
//! has passed, ask the approver or a person, attempt after a wait, stop) and this carries it out, the
//! same way for every shape of call, feeding back what it found. A shape says only what its probe asks
//! and how its report counts ([`Work::probe`], [`Work::close`]); it decides nothing.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::Duration;

use tokio::time::Instant;

use super::guard::{guarded, secs};
use super::log::end_record;
use super::machine::{Action, Event};
use super::state::Run;
use super::stop::Stop;
use super::work::Work;
use crate::classify::Class;
use crate::journal::{Record, Verdict};
use crate::policy::{Change, End};
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome, Reason, Report};
use crate::spec::Dedupe;

/// Carry out the machine's decision after an attempt that ended as `class` (or, with `made == 0`, after
/// an earlier run that left the intent in doubt): `Continue` with the wait before the next attempt, or
/// `Break` with the call's report. Every action is the machine's ([`Machine::next`]); each finding goes
/// back to it as an event ([`Machine::on`]).
///
/// [`Machine::next`]: super::machine::Machine::next
/// [`Machine::on`]: super::machine::Machine::on
pub(crate) async fn decide<W: Work>(
    work: &mut W,
    run: &mut Run<'_>,
    class: Class,
    made: u32,
) -> ControlFlow<Report<W::Value>, Duration> {
    // Who deduplicates is the machine's rule; the horizon that goes with them is the tool's (by
    // default none for a create the receiver deduplicates: a request it still holds is a repeat).
    let spec = run.spec();
    let dedupe = run.machine.dedupes(spec.get_dedupe(), run.now.key_sent(), spec.get_key_lifetime());
    let retry_budget = run.task().budgets().room(spec.get_service()).is_ok();
    let (ended, at) = ((class.outcome(), class.effect()), Instant::now());
    let dedupe = (dedupe, spec.dedupe(dedupe).get_horizon());
    run.machine.on(Event::Undecided { ended, made, dedupe, retry_budget, at });
    let mut call = Deciding { class, unsure: String::new(), denied: None };
    let mut settlement = None;
    loop {
        let pacing = run.pace().pacing(&call.class, run.now.number());
        // The decision opened above names an action until it is an attempt or a stop (with none open,
        // the call would end as its attempt did: nothing sent again).
        match run.machine.next(Instant::now(), pacing).unwrap_or(Action::Stop(End::AsIs)) {
            Action::Probe => call.probe(work, run).await,
            Action::Approve => call.approve(run).await,
            // Boxed: only a call resuming an intent in doubt asks.
            Action::AskPerson => settlement = Box::pin(call.ask_person(work, run)).await,
            // The service may still apply the request: look again once it cannot. Boxed: a wait most
            // calls never make.
            Action::WaitUntil(until) => Box::pin(call.wait_horizon(run, until)).await,
            Action::Attempt { after } => {
                return match take_retry(run, &call.class) {
                    Ok(()) => ControlFlow::Continue(after),
                    Err(stop) => ControlFlow::Break(work.stopped(run, stop)),
                };
            }
            Action::Stop(end) => return ControlFlow::Break(call.end(work, run, end, settlement, made)),
            // An open decision names neither a record nor a request (they follow the attempt it names):
            // were it to, the call would end as its attempt did, nothing sent again.
            Action::Record(_) | Action::Send { .. } => {
                return ControlFlow::Break(call.end(work, run, End::AsIs, settlement, made));
            }
        };
    }
}

/// A decision being carried out (the machine keeps the decision itself): the class the call would end
/// with (its message for the report), why the probe or the person could not tell, and an approver's no.
struct Deciding {
    class: Class,
    unsure: String,
    denied: Option<Stop>,
}

impl Deciding {
    /// Run the probe; a verdict is judged by when the probe looked, not when it answered.
    async fn probe<W: Work>(&mut self, work: &mut W, run: &mut Run<'_>) {
        let looked = Instant::now();
        // Boxed: a call that never probes does not carry room for it.
        let mark = match Box::pin(work.probe(run, &self.class, looked)).await {
            Ok(mark) => mark,
            Err(why) => {
                self.unsure = why;
                ProbeMark::Failed
            }
        };
        // Where the attempt stood against its horizon when the probe looked: a "not landed" counts
        // only past it, and a person is asked only past it, so that theirs does.
        let horizon = work.horizon(run, &self.class, looked);
        if run.machine.on(Event::Probed { mark, horizon }) == Change::NotLanded {
            self.class = resolved_not_landed(std::mem::replace(&mut self.class, Class::retryable("")));
        }
    }

    /// Ask the approver before a second attempt of a `money` call.
    async fn approve(&mut self, run: &mut Run<'_>) {
        let class = &self.class;
        // Boxed: only a `money` tool asks.
        match Box::pin(super::ask::approve(run, class, || no_approver(run, class))).await {
            Ok(who) => {
                run.machine.on(Event::Approved { yes: true });
                run.now.approved(who);
            }
            Err(stop) => {
                run.machine.on(Event::Approved { yes: false });
                self.denied = Some(stop);
            }
        }
    }

    /// Ask a person whether the attempt in doubt landed: their `landed` is the settlement the call
    /// answers from.
    async fn ask_person<W: Work>(&mut self, work: &W, run: &mut Run<'_>) -> Option<Box<Record>> {
        let asked = super::ask::ask_person(run, &self.class, &self.unsure, |value| work.misfit(value)).await;
        let at = Instant::now();
        let (said, seen, settlement) = match asked {
            // Boxed: the call's future keeps room for a settlement only a few calls read.
            Ok((Verdict::Landed, record, seen)) => (Some(Verdict::Landed), seen, Some(Box::new(record))),
            Ok((Verdict::NotLanded, record, seen)) => {
                // Their word stands for the probe's "not landed": nothing was applied.
                self.class = Class::retryable(record.message.unwrap_or_default());
                (Some(Verdict::NotLanded), seen, None)
            }
            Err(why) => {
                self.unsure = why;
                (None, at, None)
            }
        };
        run.machine.on(Event::PersonSaid { said, seen, at });
        settlement
    }

    /// Wait `until` the attempt can no longer land; a "not landed" seen before says nothing of what
    /// landed since.
    async fn wait_horizon(&mut self, run: &mut Run<'_>, until: Instant) {
        tokio::time::sleep_until(until).await;
        if run.machine.on(Event::Waited) == Change::InDoubt {
            self.class = Class::unknown(format!(
                "{}; seen before attempt {} could no longer land",
                self.class.message(),
                run.now.id()
            ));
        }
    }

    /// The report of a call the policy stopped at `end`.
    fn end<W: Work>(
        mut self,
        work: &mut W,
        run: &Run<'_>,
        end: End,
        settlement: Option<Box<Record>>,
        made: u32,
    ) -> Report<W::Value> {
        debug_assert_eq!(
            Some((self.class.outcome(), self.class.effect())),
            run.machine.facts().map(|facts| (facts.outcome, facts.effect)),
            "the call's class and its decision agree"
        );
        match (end, settlement) {
            (End::Landed | End::AsIs, _) => work.close(run, &self.class, end),
            (End::Settled, Some(record)) => work.settled(run, &self.class, &record),
            (end, _) => {
                let stop = stop_for(run, end, &self.class, made, &self.unsure, self.denied.take());
                work.stopped(run, stop)
            }
        }
    }
}

/// The stop the policy's `end` means after an attempt that ended as `class`: its outcome and effect
/// are the machine's ([`Machine::ending`](super::machine::Machine::ending)), its words and reason are
/// said here.
fn stop_for(run: &Run<'_>, end: End, class: &Class, made: u32, unsure: &str, denied: Option<Stop>) -> Stop {
    let name = run.spec().name();
    let (outcome, applied) = run.machine.ending(end, (class.outcome(), class.effect()));
    let said = |why: &str, wait, reason| Stop::said(outcome, applied, class, why, wait, reason);
    match end {
        End::NoProbe if applied == Applied::No => {
            let why = format!("not retried: {name} has no probe to check first");
            said(&why, class.wait(), Reason::NoProbe)
        }
        End::NoProbe if run.spec().get_dedupe() == Dedupe::Receiver => {
            said(&not_resent(run.spec()), None, Reason::NoProbe)
        }
        End::NoProbe => said(&format!("{name} has no probe to resolve it"), None, Reason::NoProbe),
        End::ProbeFailed if applied == Applied::No => {
            let why = format!("not retried: the probe before a second attempt failed ({unsure})");
            said(&why, class.wait(), Reason::ProbeFailed)
        }
        End::ProbeFailed => said(&format!("the probe could not tell ({unsure})"), None, Reason::ProbeFailed),
        End::BeforeHorizon => {
            let wait = run.machine.wait_left(Instant::now());
            said(&before_horizon(run, wait), Some(wait), Reason::BeforeHorizon)
        }
        End::Unresolved => said("", None, Reason::InDoubt),
        End::NeverRetried => {
            let why = format!(
                "{} calls are never retried automatically: check the state and call again",
                run.spec().effect()
            );
            Stop::after(class, &why, class.wait(), Reason::NeverRetried)
        }
        End::GaveUp => {
            let why = format!("gave up after {}", super::attempts_text(made));
            Stop::after(class, &why, class.wait(), Reason::GaveUp)
        }
        // The wait that did not fit: the service's, when it asked for one too long.
        End::OutOfBudget(room) => {
            let asked = class.wait().unwrap_or_default();
            run.pace().out_of_budget(class, room, asked, run.task().remaining())
        }
        End::NoApprover => no_approver(run, class),
        End::RetryBudgetSpent => {
            let wait = run.task().budgets().room(run.spec().get_service()).err().and_then(|spent| spent.wait);
            retry_budget_spent(run, class, wait)
        }
        End::Denied => denied.unwrap_or_else(|| no_approver(run, class)),
        // A settlement not at hand leaves the intent in doubt.
        End::Settled => Stop::said(Outcome::Unknown, Applied::Unknown, class, "", None, Reason::InDoubt),
        End::Landed | End::AsIs => Stop::after(class, "", class.wait(), Reason::Answered),
        // A call's start, which no decision names: the attempt loop and its claim stop it so.
        End::NotStarted | End::Unstarted { .. } | End::Busy => {
            Stop::said(outcome, applied, class, "not started", None, not_started(end))
        }
    }
}

/// Why a call that stopped at its start (`end`) sent nothing: its budget, its store, or another owner.
fn not_started(end: End) -> Reason {
    match end {
        End::NotStarted => Reason::BudgetSpent,
        End::Unstarted { fenced: false } => Reason::StoreFailed,
        _ => Reason::Busy,
    }
}

/// Why a `create` the receiver deduplicates is not resent on its word, with no probe to ask instead.
fn not_resent(spec: &crate::spec::ToolSpec) -> String {
    format!(
        "not resent: the receiver keeps a key for {} from the intent's first attempt, and a resend could \
         reach it later (this call may send until its deadline, or the first attempt is older than this \
         process can tell); {} has no probe to resolve it, and a resend could be a second create",
        lifetime(spec.get_key_lifetime()),
        spec.name()
    )
}

/// Why a call whose "not landed" came before its attempt could no longer land stops: the budget cannot
/// hold the `wait` left of the horizon.
fn before_horizon(run: &Run<'_>, wait: Duration) -> String {
    format!(
        "not landed so far, but {} requests may stay in flight at the service (its landing horizon is {}): \
         {} more, longer than the {} left",
        run.spec().name(),
        secs(run.spec().get_horizon()),
        secs(wait),
        secs(run.task().remaining())
    )
}

/// A probe found that an attempt which may have landed did not: it applied nothing, and may be retried.
fn resolved_not_landed(class: Class) -> Class {
    if class.outcome() == Outcome::Unknown {
        let mut resolved = Class::retryable(format!("{}; the probe found it did not land", class.message()));
        if let Some(wait) = class.wait() {
            resolved = resolved.retry_after(wait);
        }
        resolved
    } else {
        class.with_effect(Applied::No)
    }
}

/// Take a retry from the service's retry budget, or say why the call stops without it.
fn take_retry(run: &Run<'_>, class: &Class) -> Result<(), Stop> {
    match run.task().budgets().retry(run.spec().get_service()) {
        Ok(()) => Ok(()),
        Err(spent) => Err(retry_budget_spent(run, class, spent.wait)),
    }
}

/// The stop of a call whose retry the service's retry budget refuses.
fn retry_budget_spent(run: &Run<'_>, class: &Class, wait: Option<Duration>) -> Stop {
    crate::observe::retry_budget_spent(run.spec());
    let why = format!(
        "not retried: retry budget spent for {} (too many retries of it across tasks lately)",
        run.spec().get_service()
    );
    Stop::after(class, &why, wait, Reason::RetryBudgetSpent)
}

/// The stop of a second attempt of a `money` call with no approver to ask.
fn no_approver(run: &Run<'_>, class: &Class) -> Stop {
    let why = "a second attempt of a money call needs an approver and none is configured";
    let escalated = run.escalate(format!("{}; {why}", class.message()));
    let why = escalated.get(class.message().len() + 2..).unwrap_or(why);
    Stop::after(class, why, class.wait(), Reason::NoApprover)
}

/// A probe that was asked: when, with how much budget, in which span; its verdict is logged through
/// [`Asked::log`].
pub(crate) struct Asked {
    left: Duration,
    started: std::time::SystemTime,
    span: crate::observe::Span,
}

/// The one probe runner: `ask` under the budget left, in the probe's span, a panic or a timeout taken
/// as the probe's failure (`Err` with why).
pub(crate) async fn ask<F: Future>(
    run: &Run<'_>,
    ask: impl FnOnce() -> F,
) -> (Result<F::Output, String>, Asked) {
    let left = run.task().remaining();
    let started = crate::journal::wall_clock();
    let span = crate::observe::probe_span(run.spec());
    let answer = if left.is_zero() {
        Err("no budget left to run it".to_owned())
    } else {
        let probed = tokio::time::timeout(left, guarded(ask));
        match crate::observe::within_span(&span, probed).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(panic)) => Err(format!("the probe panicked: {panic}")),
            Err(_) => Err(format!("the probe timed out after {}", secs(left))),
        }
    };
    (answer, Asked { left, started, span })
}

impl Asked {
    /// Log what the probe's answer means against the attempt it resolves: its verdict `mark`, and the
    /// outcome, effect, message and value the log records with it.
    pub(crate) async fn log(
        self,
        run: &Run<'_>,
        mark: ProbeMark,
        said: (Outcome, Applied),
        message: &str,
        value: Option<&serde_json::Value>,
    ) {
        self.span.verdict(run.spec(), mark);
        // A verdict is a record about the attempt: it carries the attempt's own stamp and budget (and
        // when its call ended), not the probe's, so a later reader's bounds never drift later.
        let (started, left) = run.now.stamp().unwrap_or((self.started, self.left));
        run.log().end(end_record(left, started, said, Some(mark), message, value)).await;
    }
}

/// A key lifetime as people write it: `30m`, `24h`, `90s`.
fn lifetime(d: Duration) -> String {
    match d.as_secs() {
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        _ => secs(d),
    }
}
