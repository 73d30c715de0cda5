//! A single call over the attempt loop: one value, one probe verdict, the policy's full table.

use std::future::Future;
use std::marker::PhantomData;
use std::time::{Duration, SystemTime};

use super::attempts::{Next, Work};
use super::state::{EndRecord, Pending};
use super::{Run, Stop, retry_stamp};
use crate::call::Call;
use crate::classify::{Class, Classify};
use crate::journal::{LastWord, LogValue, Recall};
use crate::policy::{self, End, Settle, Step};
use crate::probe::{Probe, Prober};
use crate::report::{Applied, Outcome, Reason, Report};

/// One call of a tool returning one value.
pub(crate) struct One<T, A, P> {
    attempt: A,
    probe: P,
    /// How the last attempt (or the earlier run resumed from) ended, until the policy has decided on it.
    last: Option<Class>,
    value: PhantomData<fn() -> T>,
}

impl<T, A, P> One<T, A, P> {
    pub(crate) fn new(attempt: A, probe: P) -> Self {
        One { attempt, probe, last: None, value: PhantomData }
    }
}

impl<T, E, A, AF, P> Work for One<T, A, P>
where
    T: LogValue,
    E: Classify,
    A: FnMut(Call) -> AF,
    AF: Future<Output = Result<T, E>>,
    P: Prober<T>,
{
    type Report = Report<T>;
    type Answer = T;
    type Error = E;

    fn has_probe(&self) -> bool {
        self.probe.exists()
    }

    fn stopped(&mut self, run: &Run<'_>, stop: Stop) -> Report<T> {
        run.stopped(stop)
    }

    fn resume(&mut self, run: &mut Run<'_>, recall: Recall) -> Option<Report<T>> {
        let earlier = match recall.last_word() {
            LastWord::Ok(value) => match value.map(T::from_log) {
                Some(Ok(value)) => return Some(run.replayed(value)),
                _ => {
                    Some(format!("attempt {} is recorded ok but its value is not in the log", run.attempt_id))
                }
            },
            LastWord::Unfinished => Some(format!(
                "attempt {} started in an earlier call of this intent and never finished (the call \
                     was dropped or its process stopped)",
                run.attempt_id
            )),
            // An end that applied nothing for sure leaves nothing to resolve.
            LastWord::Ended(_) if recall.last.effect_applied == Some(Applied::No) => None,
            LastWord::Ended(outcome) => Some(format!(
                "attempt {} ended {outcome} in an earlier run with its effect {}",
                run.attempt_id,
                recall.last.effect_applied.unwrap_or(Applied::Unknown)
            )),
        };
        self.last = earlier.map(Class::unknown);
        run.maybe_applied = self.last.is_some();
        None
    }

    async fn next(&mut self, run: &mut Run<'_>, made: u32) -> Next<Report<T>> {
        let Some(mut class) = self.last.take() else { return Next::Attempt(Duration::ZERO) };
        // What to do next is the policy's call (`policy::next`); the engine only carries it out.
        let mut facts = run.facts(&class, self.probe.exists(), made);
        let (mut landed, mut unsure, mut denied) = (None, String::new(), None);
        loop {
            let (room, wait) = run.room(&class, made);
            facts.room = room;
            let end = match policy::next(&facts) {
                Step::Probe => {
                    // Boxed: a call that never probes does not carry room for it.
                    let verdict = Box::pin(run.probe(&mut self.probe, &class)).await;
                    facts.probe = Some(verdict.mark());
                    match verdict {
                        Probe::Landed(value) => landed = Some(value),
                        Probe::Failed(why) => unsure = why,
                        Probe::NotLanded => {
                            facts.settle = run.settle(&class);
                            if facts.settle == Settle::Settled {
                                run.maybe_applied = false;
                                class = resolved_not_landed(class);
                                (facts.outcome, facts.effect) = (class.outcome(), class.effect());
                            }
                        }
                    }
                    continue;
                }
                Step::Approve => {
                    // Boxed: only a `money` tool asks.
                    match Box::pin(run.approve(&class)).await {
                        Ok(()) => facts.approved = Some(true),
                        Err(stop) => (facts.approved, denied) = (Some(false), Some(stop)),
                    }
                    continue;
                }
                Step::Settle => {
                    // The service may still be holding the request: look again once it cannot.
                    tokio::time::sleep(run.unsettled_for()).await;
                    facts.probe = None;
                    continue;
                }
                Step::Retry => match run.take_retry(&class) {
                    Ok(()) => return Next::Attempt(wait),
                    Err(stop) => return Next::Done(run.stopped(stop)),
                },
                Step::Stop(end) => end,
            };
            return Next::Done(match end {
                End::Landed => match landed.take() {
                    Some(value) => run.landed(value, &class),
                    None => run.unresolved(class.message()),
                },
                End::AsIs => {
                    let wait = class.wait().filter(|_| class.outcome() != Outcome::Permanent);
                    run.report(
                        class.outcome(),
                        class.effect(),
                        class.message().to_owned(),
                        wait,
                        Reason::Answered,
                    )
                }
                End::NoProbe => run.without_probe(class),
                End::ProbeFailed => run.probe_failed(class, &unsure),
                End::Unsettled => run.unsettled(&class),
                End::Unresolved => run.unresolved(class.message()),
                End::NeverRetried => {
                    let message = format!(
                        "{}; {} calls are never retried automatically: check the state and call again",
                        class.message(),
                        run.spec.effect()
                    );
                    run.report(class.outcome(), class.effect(), message, class.wait(), Reason::NeverRetried)
                }
                End::GaveUp => {
                    let message =
                        format!("{}; gave up after {}", class.message(), super::attempts_text(made));
                    run.report(class.outcome(), class.effect(), message, class.wait(), Reason::GaveUp)
                }
                End::OutOfBudget(room) => run.stopped(run.out_of_budget(&class, room, wait)),
                End::NoApprover => run.stopped(run.no_approver(&class)),
                End::RetryBudgetSpent => {
                    let wait =
                        run.task.budgets().room(run.spec.service_name()).err().and_then(|spent| spent.wait);
                    run.stopped(run.retry_budget_spent(&class, wait))
                }
                End::Denied => match denied.take() {
                    Some(stop) => run.stopped(stop),
                    None => run.stopped(run.no_approver(&class)),
                },
            });
        }
    }

    fn attempt(&mut self, call: Call) -> impl Future<Output = Result<T, E>> {
        (self.attempt)(call)
    }

    fn after<'a>(
        &mut self,
        run: &mut Run<'a>,
        answer: Result<T, Class>,
        left: Duration,
        started: SystemTime,
        pending: &mut Option<Pending<'a>>,
    ) -> Option<Report<T>> {
        let class = match answer {
            Ok(value) => {
                let (report, written) = run.succeeded(value, left, started);
                *pending = written;
                return Some(report);
            }
            Err(class) => class,
        };
        if let Some(wait) = class.wait() {
            run.retry_at = Some(retry_stamp(wait));
        }
        // The log keeps the call's effect, not the attempt's: an attempt that applied nothing after one that
        // may have landed leaves the intent unresolved for the next run.
        let recorded = run.call_effect(class.effect());
        let end = EndRecord {
            left,
            started,
            outcome: class.outcome(),
            applied: recorded,
            probe: None,
            message: class.message(),
            value: None,
            last: false,
        };
        *pending = run.end_now(end);
        run.maybe_applied |= class.effect() != Applied::No;
        self.last = Some(class);
        None
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
