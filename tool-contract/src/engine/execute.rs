//! The one executor of the retry policy. After an attempt that did not end `ok`, [`policy::next`]
//! names each step (probe, wait for the landing horizon, ask the approver, retry, stop) and this carries
//! it out, the same way for every shape of call. A shape says only what its probe asks and how its
//! report counts ([`Work::probe`], [`Work::close`]); it decides nothing.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::Duration;

use super::attempts::Work;
use super::guard::{guarded, secs};
use super::log::end_record;
use super::state::Run;
use super::stop::Stop;
use crate::classify::Class;
use crate::journal::Verdict;
use crate::policy::{self, End, Facts, Horizon, PersonFact, Room, Step};
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome, Reason, Report};

/// Carry out the policy after an attempt that ended as `class` (or, with `made == 0`, after an earlier
/// run that left the intent in doubt): `Continue` with the wait before the next attempt, or `Break`
/// with the call's report.
pub(crate) async fn decide<W: Work>(
    work: &mut W,
    run: &mut Run<'_>,
    mut class: Class,
    made: u32,
) -> ControlFlow<Report<W::Value>, Duration> {
    let mut facts = facts(run, &class, work.has_probe(), made);
    // A person may settle the intent only in a call that resumed it in doubt, and only a call whose
    // report can answer from one settlement.
    if made == 0 && work.asks_person() && run.task().approver_ref().is_some() {
        facts.person = PersonFact::CanAsk;
    }
    let (mut unsure, mut denied, mut settlement) = (String::new(), None, None);
    loop {
        let (room, wait) = run.room(&class, made);
        facts.room = room;
        let end = match policy::next(&facts) {
            Step::Probe => {
                // A verdict is judged by when the probe looked, not when it answered.
                let looked = tokio::time::Instant::now();
                // Boxed: a call that never probes does not carry room for it.
                match Box::pin(work.probe(run, &class, looked)).await {
                    Ok(mark) => facts.probe = Some(mark),
                    Err(why) => (facts.probe, unsure) = (Some(ProbeMark::Failed), why),
                }
                // Where the attempt stands against its horizon: a "not landed" counts only past it, and
                // a person is asked only past it, so that theirs does.
                if matches!(facts.probe, Some(ProbeMark::NotLanded | ProbeMark::Failed)) {
                    facts.horizon = work.horizon(run, &class, looked);
                    if facts.probe == Some(ProbeMark::NotLanded) && facts.horizon == Horizon::Passed {
                        run.now_mut().may_have_landed(false);
                        class = resolved_not_landed(class);
                        (facts.outcome, facts.effect) = (class.outcome(), class.effect());
                    }
                }
                continue;
            }
            Step::Approve => {
                // Boxed: only a `money` tool asks.
                match Box::pin(super::ask::approve(run, &class, || no_approver(run, &class))).await {
                    Ok(who) => {
                        facts.approved = Some(true);
                        run.now_mut().approved(who);
                    }
                    Err(stop) => (facts.approved, denied) = (Some(false), Some(stop)),
                }
                continue;
            }
            Step::AskPerson => {
                // Boxed: only a call resuming an intent in doubt asks.
                let asked =
                    Box::pin(super::ask::ask_person(run, &class, &unsure, |value| work.misfit(value))).await;
                facts.person = match asked {
                    Ok((Verdict::Landed, record, _)) => {
                        // Boxed: the call's future keeps room for a settlement only a few calls read.
                        settlement = Some(Box::new(record));
                        PersonFact::Said(Verdict::Landed)
                    }
                    Ok((Verdict::NotLanded, record, seen)) => {
                        // Their word stands for the probe's "not landed": nothing was applied.
                        class = Class::retryable(record.message.unwrap_or_default());
                        run.now_mut().known_not_landed();
                        run.now_mut().seen_at(seen);
                        (facts.outcome, facts.effect) = (class.outcome(), class.effect());
                        // It counts, as a probe's would, once the attempt can no longer land.
                        facts.horizon = run.horizon_now();
                        PersonFact::Said(Verdict::NotLanded)
                    }
                    Err(why) => {
                        unsure = why;
                        PersonFact::NoAnswer
                    }
                };
                continue;
            }
            Step::WaitHorizon => {
                // The service may still apply the request: look again once it cannot.
                // Boxed: a wait most calls never make.
                Box::pin(tokio::time::sleep(run.horizon_left())).await;
                // Waited out: the probe looks again. A "not landed" seen before the horizon (a probe's,
                // or a person's settlement) says nothing of what landed since.
                (facts.probe, facts.horizon) = (None, Horizon::Passed);
                if facts.effect == Applied::No {
                    // Only a person's word seen too early said `no`: until the probe looks, the effect
                    // is unknown.
                    class = Class::unknown(format!(
                        "{}; seen before attempt {} could no longer land",
                        class.message(),
                        run.now().id()
                    ));
                    run.now_mut().may_have_landed(true);
                    (facts.outcome, facts.effect) = (class.outcome(), class.effect());
                }
                // A person asked in this call whose word came too early is not asked again, and their
                // word is not taken for a probe that cannot tell: one question per attempt per call.
                if facts.person == PersonFact::Said(Verdict::NotLanded) {
                    facts.person = PersonFact::NoAnswer;
                }
                continue;
            }
            Step::Retry => match take_retry(run, &class) {
                Ok(()) => return ControlFlow::Continue(wait),
                Err(stop) => return ControlFlow::Break(work.stopped(run, stop)),
            },
            Step::Stop(end) => end,
        };
        return ControlFlow::Break(match (end, settlement.take()) {
            (End::Landed | End::AsIs, _) => work.close(run, &class, end),
            (End::Settled, Some(record)) => work.settled(run, &class, &record),
            (end, _) => {
                let stop = stop_for(run, end, &class, made, wait, &unsure, denied.take());
                work.stopped(run, stop)
            }
        });
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
        // A person's "not landed" is the verdict a probe would give, and counts only if seen once the
        // attempt could no longer land (`horizon`).
        probe: run.now().is_known_not_landed().then_some(ProbeMark::NotLanded),
        approved: None,
        made,
        max_attempts: spec.get_max_attempts(),
        room: Room::Enough,
        horizon: if run.now().is_known_not_landed() { run.horizon_now() } else { Horizon::Passed },
        retry_budget: task.budgets().room(spec.get_service()).is_ok(),
        person: PersonFact::Nobody,
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
        End::OutOfBudget(room) => run.out_of_budget(class, room, wait),
        End::NoApprover => no_approver(run, class),
        End::RetryBudgetSpent => {
            let wait = run.task().budgets().room(run.spec().get_service()).err().and_then(|spent| spent.wait);
            retry_budget_spent(run, class, wait)
        }
        End::Denied => denied.unwrap_or_else(|| no_approver(run, class)),
        // A settlement not at hand leaves the intent in doubt.
        End::Settled => Stop::said(Outcome::Unknown, Applied::Unknown, class, "", None, Reason::InDoubt),
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
        let (started, left) = run.now().stamp().unwrap_or((self.started, self.left));
        run.log_end(end_record(left, started, said, Some(mark), message, value)).await;
    }
}
