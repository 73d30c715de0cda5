//! The one executor of the retry policy. After an attempt that did not end `ok`, [`policy::next`]
//! names each step (probe, wait for the landing horizon, ask the approver, retry, stop) and this carries
//! it out, the same way for every shape of call. A shape says only what its probe asks and how its
//! report counts ([`Work::probe`], [`Work::close`]); it decides nothing.

use std::future::Future;
use std::time::Duration;

use super::attempts::{Next, Work};
use super::guard::{guarded, secs};
use super::log::end_record;
use super::state::{Run, Stop};
use crate::classify::Class;
use crate::person::{Approval, ApprovalRequest};
use crate::policy::{self, End, Facts, Horizon, Room, Step};
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome, Reason};

/// How the policy ends a call, for its shape to report.
pub(crate) enum Close {
    /// The probe found the effect landed.
    Landed,
    /// The last attempt's own outcome stands.
    AsIs,
    /// The call stops for the reason the stop gives.
    Stop(Stop),
    /// A person settled the attempt as landed (this record, written under the call's claim).
    Settled(Box<crate::journal::Record>),
}

/// Carry out the policy after an attempt that ended as `class` (or, with `made == 0`, after an earlier
/// run that left the intent in doubt): the next attempt's wait, or the call's report.
pub(crate) async fn decide<W: Work>(
    work: &mut W,
    run: &mut Run<'_>,
    mut class: Class,
    made: u32,
) -> Next<W::Report> {
    let mut facts = facts(run, &class, work.has_probe(), made);
    let (mut unsure, mut denied) = (String::new(), None);
    // A person is asked at most once a call, and only by a call that resumed the intent in doubt.
    let mut may_ask = made == 0 && work.asks_person();
    loop {
        let (room, wait) = run.budget().room(&class, made);
        facts.room = room;
        let close = match policy::next(&facts) {
            Step::Probe => {
                // Boxed: a call that never probes does not carry room for it.
                match Box::pin(work.probe(run, &class)).await {
                    Ok(mark) => facts.probe = Some(mark),
                    Err(why) => (facts.probe, unsure) = (Some(ProbeMark::Failed), why),
                }
                if facts.probe == Some(ProbeMark::NotLanded) {
                    facts.horizon = work.horizon(run, &class);
                    if facts.horizon == Horizon::Passed {
                        run.now_mut().may_have_landed(false);
                        class = resolved_not_landed(class);
                        (facts.outcome, facts.effect) = (class.outcome(), class.effect());
                    }
                }
                continue;
            }
            Step::Approve => {
                // Boxed: only a `money` tool asks.
                match Box::pin(approve(run, &class)).await {
                    Ok(who) => {
                        facts.approved = Some(true);
                        run.now_mut().approved(who);
                    }
                    Err(stop) => (facts.approved, denied) = (Some(false), Some(stop)),
                }
                continue;
            }
            Step::WaitHorizon => {
                // The service may still apply the request: look again once it cannot.
                // Boxed: a wait most calls never make.
                Box::pin(tokio::time::sleep(run.horizon_left())).await;
                facts.probe = None;
                continue;
            }
            Step::Retry => match take_retry(run, &class) {
                Ok(()) => return Next::Attempt(wait),
                Err(stop) => Close::Stop(stop),
            },
            Step::Stop(End::ProbeFailed)
                if may_ask && run.now().after_failed_probe(&class).1 != Applied::No =>
            {
                may_ask = false;
                // Boxed: only a call resuming an intent in doubt asks.
                match Box::pin(ask_person(run, &class, &unsure, |value| work.misfit(value))).await {
                    Person::Landed(record) => Close::Settled(record),
                    Person::NotLanded(message) => {
                        class = Class::retryable(message);
                        run.now_mut().known_not_landed();
                        (facts.outcome, facts.effect) = (class.outcome(), class.effect());
                        facts.probe = Some(ProbeMark::NotLanded);
                        facts.horizon = run.horizon_now();
                        continue;
                    }
                    Person::CannotTell(why) => {
                        unsure = why;
                        continue;
                    }
                }
            }
            Step::Stop(End::Landed) => Close::Landed,
            Step::Stop(End::AsIs) => Close::AsIs,
            Step::Stop(end) => Close::Stop(stop_for(run, end, &class, made, wait, &unsure, denied.take())),
        };
        return Next::Done(work.close(run, &class, close));
    }
}

/// What the policy is told after an attempt that ended as `class`, before any probe or approval.
fn facts(run: &Run<'_>, class: &Class, has_probe: bool, made: u32) -> Facts {
    let (task, spec) = (run.task(), run.spec());
    Facts {
        kind: spec.effect(),
        dedupe: spec.get_dedupe(),
        has_probe,
        has_approver: task.approver_ref().is_some(),
        outcome: class.outcome(),
        effect: class.effect(),
        // A person's "not landed" is the verdict a probe would give, and counts no sooner.
        probe: run.now().is_known_not_landed().then_some(ProbeMark::NotLanded),
        approved: None,
        made,
        max_attempts: spec.get_max_attempts(),
        room: Room::Enough,
        horizon: if run.now().is_known_not_landed() { run.horizon_now() } else { Horizon::Passed },
        retry_budget: task.budgets().room(spec.get_service()).is_ok(),
    }
}

/// The stop the policy's `end` means after an attempt that ended as `class`.
fn stop_for(
    run: &Run<'_>,
    end: End,
    class: &Class,
    made: u32,
    wait: Duration,
    unsure: &str,
    denied: Option<Stop>,
) -> Stop {
    let name = run.spec().name();
    match end {
        End::NoProbe if class.effect() == Applied::No => {
            let why = format!("not retried: {name} has no probe to check first");
            Stop::after(class, &why, class.wait(), Reason::NoProbe)
        }
        End::NoProbe => {
            let why = format!("{name} has no probe to resolve it");
            Stop::said(Outcome::Unknown, Applied::Unknown, class, &why, None, Reason::NoProbe)
        }
        End::ProbeFailed => match run.now().after_failed_probe(class) {
            (outcome, Applied::No) => {
                let why = format!("not retried: the probe before a second attempt failed ({unsure})");
                Stop::said(outcome, Applied::No, class, &why, class.wait(), Reason::ProbeFailed)
            }
            _ => {
                let why = format!("the probe could not tell ({unsure})");
                Stop::said(Outcome::Unknown, Applied::Unknown, class, &why, None, Reason::ProbeFailed)
            }
        },
        End::BeforeHorizon => {
            let wait = run.horizon_left();
            let why = format!(
                "not landed so far, but {name} requests may stay in flight at the service (its landing \
                 horizon is {}): {} more, longer than the {} left",
                secs(run.spec().get_horizon()),
                secs(wait),
                secs(run.task().remaining())
            );
            Stop::said(Outcome::Unknown, Applied::Unknown, class, &why, Some(wait), Reason::BeforeHorizon)
        }
        End::Unresolved => Stop::said(Outcome::Unknown, Applied::Unknown, class, "", None, Reason::InDoubt),
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
        End::OutOfBudget(room) => run.budget().out_of_budget(class, room, wait),
        End::NoApprover => no_approver(run, class),
        End::RetryBudgetSpent => {
            let wait = run.task().budgets().room(run.spec().get_service()).err().and_then(|spent| spent.wait);
            retry_budget_spent(run, class, wait)
        }
        End::Denied => denied.unwrap_or_else(|| no_approver(run, class)),
        End::Landed | End::AsIs => Stop::after(class, "", class.wait(), Reason::Answered),
    }
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
    let escalated = run.reports().escalate(format!("{}; {why}", class.message()));
    let why = escalated.get(class.message().len() + 2..).unwrap_or(why);
    Stop::after(class, why, class.wait(), Reason::NoApprover)
}

/// Ask the approver before a second attempt of a `money` call: who said yes, or the stop on no.
async fn approve(run: &Run<'_>, class: &Class) -> Result<String, Stop> {
    let task = run.task();
    let Some(approver) = task.approver_ref() else { return Err(no_approver(run, class)) };
    let request = ApprovalRequest {
        task: task.id().to_owned(),
        call: run.spec().name().to_owned(),
        key: run.key(),
        next_attempt: run.now().number() + 1,
        history: class.message().to_owned(),
        left: task.remaining(),
    };
    crate::observe::approval_asked(request.next_attempt);
    // A person's answer is waited for within the budget left: the call's claim runs out with it.
    let left = request.left;
    let answer = match tokio::time::timeout(left, approver.approve(&request)).await {
        Ok(answer) => answer,
        Err(_) => Approval::Denied(unanswered(&approver.who(), left)),
    };
    crate::observe::approval_answered(answer == Approval::Approved);
    match answer {
        Approval::Approved => Ok(approver.who_approved(&request)),
        Approval::Denied(why) => {
            // A no, or no answer: the approver's words say which.
            let why = format!("a second attempt was not approved: {why}");
            Err(Stop::said(Outcome::Permanent, Applied::No, class, &why, None, Reason::Denied))
        }
    }
}

/// Why a question the budget ran out on has no answer: `who` was asked and did not answer in time.
fn unanswered(who: &str, left: Duration) -> String {
    format!("{who} did not answer in time (within the {} the budget had left)", secs(left))
}

/// What the person asked about an intent in doubt found.
enum Person {
    /// It landed: the settlement written.
    Landed(Box<crate::journal::Record>),
    /// It did not: the settlement's message.
    NotLanded(String),
    /// Nobody could tell (or be asked, or the settlement was not written): why, with the probe's words.
    CannotTell(String),
}

/// Ask the task's approver whether the attempt in doubt landed, and record its answer as a settlement
/// under the call's claim.
async fn ask_person(
    run: &Run<'_>,
    class: &Class,
    unsure: &str,
    misfit: impl Fn(&serde_json::Value) -> Option<String>,
) -> Person {
    let task = run.task();
    let Some(approver) = task.approver_ref() else { return Person::CannotTell(unsure.to_owned()) };
    let question = crate::person::InDoubt {
        task: task.id().to_owned(),
        actor: task.actor().to_owned(),
        call: run.spec().name().to_owned(),
        key: run.key(),
        attempt_id: run.now().id().to_owned(),
        history: format!("{}; the probe could not tell ({unsure})", class.message()),
    };
    let left = task.remaining();
    let settle = match tokio::time::timeout(left, approver.settle(&question)).await {
        Err(_) => return Person::CannotTell(format!("{unsure}; {}", unanswered(&approver.who(), left))),
        Ok(None) => return Person::CannotTell(unsure.to_owned()),
        Ok(Some(Err(why))) => {
            return Person::CannotTell(format!("{unsure}; the person asked could not tell: {why}"));
        }
        Ok(Some(Ok(settle))) => settle,
    };
    // The tool is known here: a value that is not one of its values is not recorded.
    if let Some(why) = settle.value_given().and_then(&misfit) {
        let name = run.spec().name();
        return Person::CannotTell(format!(
            "{unsure}; the value the person gave is not a value of {name} ({why})"
        ));
    }
    match run.log().settled(&settle).await {
        Ok(record) if settle.verdict() == crate::journal::Verdict::Landed => Person::Landed(Box::new(record)),
        Ok(record) => Person::NotLanded(record.message.unwrap_or_default()),
        Err(why) => Person::CannotTell(format!("{unsure}; the person's settlement was not recorded: {why}")),
    }
}

/// What a probe's answer means, as the log records it.
pub(crate) struct Judged {
    pub(crate) mark: ProbeMark,
    pub(crate) outcome: Outcome,
    pub(crate) applied: Applied,
    pub(crate) message: String,
    pub(crate) value: Option<serde_json::Value>,
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
    /// Log what the probe's answer means against the attempt it resolves.
    pub(crate) async fn log(self, run: &Run<'_>, judged: Judged) {
        self.span.verdict(run.spec(), judged.mark);
        let end = end_record(
            self.left,
            self.started,
            (judged.outcome, judged.applied),
            Some(judged.mark),
            &judged.message,
            judged.value.as_ref(),
        );
        run.log().end(end).await;
    }
}
