//! The attempt engine: budget check, attempt under the remaining budget, classification, probe, policy.
//!
//! [`run`] is what the `#[tool]` attribute calls; it is public so a tool can be written by hand.

use std::future::Future;
use std::time::SystemTime;

use crate::call::Call;
use crate::classify::{self, Class, Classify};
use crate::effect::EffectKind;
use crate::journal::{LastWord, LogValue};
use crate::key::IntentKey;
use crate::policy::{self, End, Settle, Step};
use crate::probe::{Probe, Prober};
use crate::report::{Applied, Outcome, Report};
use crate::spec::ToolSpec;
use crate::task::Task;

mod claim;
mod ending;
mod guard;
mod state;
mod wait;

pub(crate) use guard::{guarded, secs, within};
pub(crate) use state::{Run, Stop, ceil_secs, take_claim};
pub(crate) use wait::{ResumeWait, retry_stamp};

mod bulk;
mod pages;

pub use bulk::run_bulk;
pub use pages::run_pages;

/// Run one call of a tool to its report.
///
/// `attempt` is called once per attempt with that attempt's [`Call`]; `probe` is asked whether an earlier
/// attempt landed before any second attempt of a side-effecting tool. The order is always probe, decide,
/// act; the rules per effect kind are in [`EffectKind::policy`], and [`crate::policy::next`] carries them
/// out.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::{Class, EffectKind, NoProbe, Outcome, Task, ToolSpec, engine};
///
/// const PRICE: ToolSpec = ToolSpec::new("read_price", EffectKind::Read);
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let task = Task::new("ord-7741", "agent", Duration::from_secs(10));
/// let key = task.key(&PRICE, &"sku-1", None);
/// let report = engine::run(&task, &PRICE, key, |_call| async { Ok::<u32, Class>(1299) }, NoProbe).await;
/// assert_eq!(report.outcome, Outcome::Ok);
/// assert_eq!(report.value, Some(1299));
/// # }
/// ```
pub async fn run<T, E, A, AF, P>(
    task: &Task,
    spec: &ToolSpec,
    key: IntentKey,
    mut attempt: A,
    mut probe: P,
) -> Report<T>
where
    T: LogValue,
    E: Classify,
    A: FnMut(Call) -> AF,
    AF: Future<Output = Result<T, E>>,
    P: Prober<T>,
{
    let mut run = Run::new(task, spec, key);
    let side = spec.effect().has_side_effect();
    let mut last: Option<Class> = None;
    let mut resume_wait = None;
    // Two calls of one intent at once (a model that issues the same tool call twice in parallel): the
    // second waits for the first, then starts from what the first left, with or without a log.
    let (claim, recall) = if side {
        match take_claim(task, spec, key).await {
            Ok((claim, recall)) => (Some(claim), recall),
            Err(stop) => return run.stopped(stop),
        }
    } else {
        (None, None)
    };
    run.claim = claim.as_ref();

    // Only side effects are recognised from the log: a read is cheap to repeat and its value goes stale,
    // so of a read's history only the attempt count carries over.
    if !side {
        run.attempt = run.logged_attempts().await.unwrap_or(0);
    } else if let Some(recall) = recall {
        resume_wait = run.resume(&recall);
        let earlier = match recall.last_word() {
            LastWord::Ok(value) => match value.map(T::from_log) {
                Some(Ok(value)) => return run.replayed(value),
                _ => {
                    Some(format!("attempt {} is recorded ok but its value is not in the log", run.attempt_id))
                }
            },
            LastWord::Unfinished => {
                Some(format!("attempt {} started in an earlier run and never finished", run.attempt_id))
            }
            // An end that applied nothing for sure leaves nothing to resolve.
            LastWord::Ended(_) if recall.last.effect_applied == Some(Applied::No) => None,
            LastWord::Ended(outcome) => Some(format!(
                "attempt {} ended {outcome} in an earlier run with its effect {}",
                run.attempt_id,
                recall.last.effect_applied.unwrap_or(Applied::Unknown)
            )),
        };
        last = earlier.map(Class::unknown);
        run.maybe_applied = last.is_some();
    }

    let mut made = 0u32;
    loop {
        if let Some(mut class) = last.take() {
            // What to do next is the policy's call (`policy::next`); the engine only carries it out.
            let mut facts = run.facts(&class, probe.exists(), made);
            let (mut landed, mut unsure, mut denied) = (None, String::new(), None);
            let wait = loop {
                let (room, wait) = run.room(&class, made);
                facts.room = room;
                match policy::next(&facts) {
                    Step::Probe => {
                        let verdict = run.probe(&mut probe, &class).await;
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
                    }
                    Step::Approve => match run.approve(&class).await {
                        Ok(()) => facts.approved = Some(true),
                        Err(stop) => (facts.approved, denied) = (Some(false), Some(stop)),
                    },
                    Step::Settle => {
                        // The service may still be holding the request: look again once it cannot.
                        tokio::time::sleep(run.unsettled_for()).await;
                        facts.probe = None;
                    }
                    Step::Retry => break wait,
                    Step::Stop(end) => {
                        return match end {
                            End::Landed => match landed {
                                Some(value) => run.landed(value, &class),
                                None => run.unresolved(class.message()),
                            },
                            End::AsIs => {
                                let wait = class.wait().filter(|_| class.outcome() != Outcome::Permanent);
                                run.report(class.outcome(), class.effect(), class.message().to_owned(), wait)
                            }
                            End::NoProbe => run.without_probe(class),
                            End::ProbeFailed => run.probe_failed(class, &unsure),
                            End::Unsettled => run.unsettled(&class),
                            End::Unresolved => run.unresolved(class.message()),
                            End::NeverRetried => run.report(
                                class.outcome(),
                                class.effect(),
                                never_retried(spec, class.message()),
                                class.wait(),
                            ),
                            End::GaveUp => {
                                let msg = format!("{}; gave up after {made} attempts", class.message());
                                run.report(class.outcome(), class.effect(), msg, class.wait())
                            }
                            End::OutOfBudget(room) => run.stopped(run.out_of_budget(&class, room, wait)),
                            End::NoApprover => run.stopped(run.no_approver(&class)),
                            End::Denied => match denied {
                                Some(stop) => run.stopped(stop),
                                None => run.stopped(run.no_approver(&class)),
                            },
                        };
                    }
                }
            };
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }

        if let Some(wait) = resume_wait.take()
            && let Err(stop) = run.wait_as_asked_before(wait).await
        {
            return run.stopped(stop);
        }
        let left = task.remaining();
        if let Err(stop) = run.may_start(left) {
            return run.stopped(stop);
        }
        made += 1;
        run.next_attempt();
        let started = if run.keeps_records() { SystemTime::now() } else { SystemTime::UNIX_EPOCH };
        let left = match run.start_attempt(left, started, None).await {
            Ok(left) => left,
            Err(stop) => return run.stopped(stop),
        };
        let limit = run.limit(left, probe.exists());
        let call = run.call(limit);
        let deadline = call.deadline;
        let class = match within(deadline, guarded(|| attempt(call)), || run.flush()).await {
            Ok(Ok(Ok(value))) => return run.succeeded(value, left, started).await,
            Ok(Ok(Err(err))) => normalise(spec.effect(), err.classify()),
            Ok(Err(panic)) if side => {
                Class::unknown(format!("the tool panicked mid-call ({panic}); the effect may have landed"))
            }
            Ok(Err(panic)) => {
                Class::permanent(format!("the tool panicked ({panic}); this is a bug in the tool"))
            }
            Err(_) => classify::no_reply(spec.effect(), format_args!("timed out after {}", secs(limit))),
        };
        if let Some(wait) = class.wait() {
            run.retry_at = Some(retry_stamp(wait));
        }
        // The log keeps the call's effect, not the attempt's: an attempt that applied nothing after one that
        // may have landed leaves the intent unresolved for the next run.
        let recorded = run.call_effect(class.effect());
        run.log_end(left, started, class.outcome(), recorded, None, class.message(), None).await;
        run.maybe_applied |= class.effect() != Applied::No;
        last = Some(class);
    }
}

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

fn never_retried(spec: &ToolSpec, why: &str) -> String {
    format!("{why}; {} calls are never retried automatically: check the state and call again", spec.effect())
}

/// A read has no effect: whatever its error says, nothing was applied and a retry is harmless.
pub(crate) fn normalise(kind: EffectKind, class: Class) -> Class {
    if kind.has_side_effect() || class.effect() == Applied::No && class.outcome() != Outcome::Unknown {
        return class;
    }
    let mut read = if class.outcome() == Outcome::Permanent {
        Class::permanent(class.message())
    } else {
        Class::retryable(class.message())
    };
    if let Some(wait) = class.wait() {
        read = read.retry_after(wait);
    }
    read
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    use std::time::Duration;

    use crate::{Class, EffectKind, Outcome, Probe, Task, ToolSpec};

    #[tokio::test(start_paused = true)]
    async fn a_side_effect_without_a_floor_keeps_part_of_the_budget_for_its_probe() {
        const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
        let task = Task::new("reserve-quarter", "agent", Duration::from_secs(4));
        let probes = AtomicU32::new(0);
        let began = tokio::time::Instant::now();
        let report = super::run(
            &task,
            &SEND,
            task.key(&SEND, &"thread-9", None),
            // The reply never comes; the notice was posted.
            |_| std::future::pending::<Result<u64, Class>>(),
            |_| async {
                probes.fetch_add(1, SeqCst);
                Probe::Landed(4411u64)
            },
        )
        .await;
        assert_eq!(probes.load(SeqCst), 1, "{}", report.message);
        assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(4411)));
        assert!(report.message.contains("timed out after 3.0s"), "{}", report.message);
        assert_eq!(began.elapsed(), Duration::from_secs(3), "a quarter of the budget kept for the probe");
    }

    /// A service that holds a request for 8 s before applying it (a queue behind the gateway); the
    /// connection drops at 3 s and a probe then finds nothing.
    async fn held_for_8s(task: &str, spec: &ToolSpec, budget_s: u64) -> (crate::Report<u64>, u32, u32) {
        // Each test its own task: calls of one intent take turns across the whole process.
        let task = Task::new(task, "agent", Duration::from_secs(budget_s));
        let began = tokio::time::Instant::now();
        let (sent, probes) = (AtomicU32::new(0), AtomicU32::new(0));
        let landed = |sent: &AtomicU32| {
            // Each request sent lands 8 s after it was sent.
            let n = sent.load(SeqCst);
            let first_lands = began + Duration::from_secs(8);
            if n > 0 && tokio::time::Instant::now() >= first_lands { Some(4411u64) } else { None }
        };
        let report = super::run(
            &task,
            spec,
            task.key(spec, &"thread-9", None),
            |_| {
                sent.fetch_add(1, SeqCst);
                async move {
                    // The connection drops after 3 s, the request still queued at the service.
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    Err::<u64, Class>(Class::unknown("connection reset after the request was sent"))
                }
            },
            |_| async {
                probes.fetch_add(1, SeqCst);
                match landed(&sent) {
                    Some(id) => Probe::Landed(id),
                    None => Probe::NotLanded,
                }
            },
        )
        .await;
        (report, sent.load(SeqCst), probes.load(SeqCst))
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_the_service_still_holds_is_waited_for_not_sent_again() {
        const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send)
            .deadline_floor(Duration::from_secs(3))
            .probe_reserve(Duration::from_secs(1))
            .settle(Duration::from_secs(10));
        let (report, sent, probes) = held_for_8s("settle-waited", &SEND, 30).await;
        assert_eq!(sent, 1, "{}", report.message);
        assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(4411)), "{}", report.message);
        assert_eq!(probes, 2, "a probe at the timeout found nothing; one after the settle window found it");
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_settle_window_the_held_request_is_sent_twice() {
        // The limit the settle window exists for, shown: the probe's "not landed" is trusted at once.
        const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send)
            .deadline_floor(Duration::from_secs(3))
            .probe_reserve(Duration::from_secs(1));
        let (_, sent, _) = held_for_8s("settle-none", &SEND, 30).await;
        assert!(sent >= 2, "each probe before 8 s found nothing, so the notice went out {sent} times");
    }

    #[tokio::test(start_paused = true)]
    async fn a_settle_window_longer_than_the_budget_ends_unknown() {
        const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send)
            .deadline_floor(Duration::from_secs(3))
            .probe_reserve(Duration::from_secs(1))
            .settle(Duration::from_secs(60));
        let (report, sent, probes) = held_for_8s("settle-too-long", &SEND, 5).await;
        assert_eq!((sent, probes), (1, 1));
        assert_eq!(report.outcome, Outcome::Unknown, "{}", report.message);
        assert!(report.message.contains("may stay in flight"), "{}", report.message);
        // Reported at 3 s: the rest of the window that began when the attempt was sent, at 0 s.
        assert_eq!(report.retry_after_s, Some(57));
    }
}
