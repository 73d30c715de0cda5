//! The one attempt loop every call runs, whatever its shape.
//!
//! A call takes its intent's claim, continues from what is known of the intent, then makes attempt
//! after attempt: the wait and the budget check, the start record, the call under its time limit, its
//! classification (an error, a panic, a timeout), the end record; between attempts, what is left to
//! decide goes to the call's machine, whose actions the executor carries out. What differs between a
//! single call and a call in parts (bulk items, the pages of a read) is only what an attempt carries and
//! what it leaves undecided; each shape is a [`Work`], and [`drive`] is the loop they share.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::{Duration, SystemTime};

use super::machine::Time;
use super::work::Work;
use super::{Run, Stop, guarded, normalise, secs, take_claim, within};
use crate::classify::{self, Class, Classify};
use crate::journal::Recall;
use crate::key::IntentKey;
use crate::observe::{self, CallObserver};
use crate::report::{Outcome, Report};
use crate::spec::ToolSpec;
use crate::task::Task;

/// Run a call of any shape to its report: the one attempt loop, seen by the operator as one span.
///
/// A function returning a block rather than an `async fn`: an `async fn` keeps each argument twice (as
/// given, and as the local it is moved into), and `work` holds the tool's closures; the block keeps it
/// once, and the loop borrows it.
#[allow(clippy::manual_async_fn, reason = "an async fn would keep `work` twice")]
pub(crate) fn drive<W: Work>(
    task: &Task,
    spec: &ToolSpec,
    key: IntentKey,
    mut work: W,
) -> impl Future<Output = Report<W::Value>> {
    async move {
        crate::call::began(key);
        let observer = CallObserver::new(spec, &key, task.call_id());
        let announced = std::sync::Mutex::new(None);
        let attempts = attempt_loop(task, spec, key, &mut work, &announced);
        let (mut report, made) = observer.within(attempts).await;
        if let Some(escalation) = self::announced(announced) {
            // Boxed, as every rarely taken path with a large future: the call's future stays small.
            Box::pin(hand_over(task, *escalation, &mut report)).await;
        }
        observed(spec, &observer, &report, made);
        report
    }
}

/// [`drive`] with the attempt loop in an allocation of its own: for a future that is boxed anyway (a
/// call by name), two allocations under a kilobyte each are served from the allocator's per-thread
/// cache, where one of over a kilobyte is not.
#[allow(clippy::manual_async_fn, reason = "an async fn would keep `work` twice")]
pub(crate) fn drive_in_parts<W: Work>(
    task: &Task,
    spec: &ToolSpec,
    key: IntentKey,
    mut work: W,
) -> impl Future<Output = Report<W::Value>> {
    async move {
        crate::call::began(key);
        let observer = CallObserver::new(spec, &key, task.call_id());
        let announced = std::sync::Mutex::new(None);
        let attempts = Box::pin(attempt_loop(task, spec, key, &mut work, &announced));
        let (mut report, made) = observer.within(attempts).await;
        if let Some(escalation) = self::announced(announced) {
            Box::pin(hand_over(task, *escalation, &mut report)).await;
        }
        observed(spec, &observer, &report, made);
        report
    }
}

/// The escalation a call's report announced, if any, to hand over once the call is over.
fn announced(
    announced: std::sync::Mutex<Option<Box<crate::task::Escalation>>>,
) -> Option<Box<crate::task::Escalation>> {
    announced.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// The operator told of the call's end.
fn observed<T>(spec: &ToolSpec, observer: &CallObserver, report: &Report<T>, made: u32) {
    observer.finish(spec, report.outcome, report.effect_applied, made, report.deadline_left_s);
}

/// Give the escalation the report announced to the task's sink, waiting for it at most
/// [`crate::task::ESCALATION_WAIT`]; a sink that takes longer is dropped, and the report says so.
async fn hand_over<T>(task: &Task, escalation: crate::task::Escalation, report: &mut Report<T>) {
    let Some(sink) = task.escalation() else { return };
    let handed = guarded(|| sink.escalate(escalation));
    match tokio::time::timeout(crate::task::ESCALATION_WAIT, handed).await {
        Ok(Ok(())) => {}
        Ok(Err(panic)) => {
            report.message.push_str(&format!("; the escalation sink panicked ({panic}): not escalated"));
        }
        Err(_) => report.message.push_str(&format!(
            "; the escalation sink did not take it within {}: not escalated",
            secs(crate::task::ESCALATION_WAIT)
        )),
    }
}

/// Continue a side effect from what the log knows of its intent: the wait the service asked an earlier
/// run for, or the report when that already answers the call.
fn resume_from<W: Work>(
    run: &mut Run<'_>,
    work: &mut W,
    recall: Option<Recall>,
) -> Result<Option<Box<super::ResumeWait>>, Report<W::Value>> {
    let Some(recall) = recall else {
        // A claim on an intent the log knows nothing of: a fresh start.
        let (shape, stamps) = (crate::policy::Shape::One, crate::rules::Stamps::new(None, None, None, None));
        let at = tokio::time::Instant::now();
        run.machine.on(super::machine::Event::Claimed { recall: None, shape, stamps, at });
        return Ok(None);
    };
    let (wait, start) = run.resume(&recall, work.shape(&recall));
    match work.resume(run, recall, start) {
        Some(report) => Err(report),
        None => Ok(wait),
    }
}

/// Number a read's attempts after those its log holds (a read waits for nothing an earlier run asked):
/// `Err` with the report when the log cannot say.
async fn number_read<W: Work>(
    run: &mut Run<'_>,
    work: &mut W,
) -> Result<Option<Box<super::ResumeWait>>, Report<W::Value>> {
    let task = run.task();
    let attempts = match run.log().attempts_now() {
        Ok(attempts) => attempts,
        Err(answer) => {
            super::guard::ready_or_within(answer, || task.remaining()).await.unwrap_or_else(|| {
                Err(crate::journal::JournalError::Io {
                    context: "attempt log: the attempt count was not read within the budget".to_owned(),
                    source: std::io::ErrorKind::TimedOut.into(),
                })
            })
        }
    };
    match attempts {
        Ok(attempts) => {
            run.now.number_after(attempts.unwrap_or(0));
            Ok(None)
        }
        Err(error) => {
            let stop = super::log::unreadable(&error);
            observe::refused(run.spec(), &stop.message);
            Err(work.stopped(run, stop))
        }
    }
}

/// The loop itself: the report, and how many attempts this call made; an escalation the report
/// announces waits in `announced`.
async fn attempt_loop<W: Work>(
    task: &Task,
    spec: &ToolSpec,
    key: IntentKey,
    work: &mut W,
    announced: &std::sync::Mutex<Option<Box<crate::task::Escalation>>>,
) -> (Report<W::Value>, u32) {
    let mut run = Run::new(task, spec, key, announced, (work.has_probe(), work.asks_person()));
    if let Some(stop) = work.invalid(spec) {
        observe::refused(spec, &stop.message);
        return (work.refused(&run, stop), 0);
    }
    run.bind(work.arguments());
    // Two calls of one intent at once (a model that issues the same tool call twice in parallel): the
    // second waits for the first, then starts from what the first left, with or without a log.
    let claim;
    // Only side effects are recognised from the log: a read is cheap to repeat and its value goes stale,
    // so of a read's history only the attempt count carries over. What the claim found is used up in
    // this block, so the call's future keeps no room for it past its start.
    let mut resume_wait = {
        let begun = if spec.effect().has_side_effect() {
            // Boxed: a read's future does not carry room for a claim it never takes.
            let (taken, recall) = match Box::pin(take_claim(task, spec, key, &mut run.machine)).await {
                Ok(claimed) => claimed,
                Err(stop) => return (work.refused(&run, stop), 0),
            };
            claim = Some(taken);
            run.claim = claim.as_ref();
            resume_from(&mut run, work, recall)
        } else {
            number_read(&mut run, work).await
        };
        match begun {
            Ok(wait) => wait,
            Err(report) => return (report, 0),
        }
    };
    let mut made = 0u32;
    loop {
        let wait = match between(&mut run, work, made).await {
            ControlFlow::Continue(wait) => wait,
            ControlFlow::Break(report) => return (report, made),
        };
        if !wait.is_zero() {
            observe::waiting(wait, run.now.retry_at().is_some());
            tokio::time::sleep(wait).await;
        }
        let (now, left) = match before_attempt(&mut run, resume_wait.take(), made).await {
            Ok(start) => start,
            Err(stop) => return (work.stopped(&run, stop), made),
        };
        made += 1;
        if let Some(report) = attempt_once(&mut run, work, now, left).await {
            return (report, made);
        }
    }
}

/// Between attempts (and before the first, after `made`): what the shape leaves undecided goes to the
/// call's machine, whose actions are carried out ([`super::execute::decide`]) until it names the next
/// attempt, `Continue` with the wait before it, or a stop, `Break` with the report.
async fn between<W: Work>(
    run: &mut Run<'_>,
    work: &mut W,
    made: u32,
) -> ControlFlow<Report<W::Value>, Duration> {
    let wait = match work.undecided(run, made) {
        ControlFlow::Continue(None) => Duration::ZERO,
        // Boxed: only a call whose attempt failed (or that resumed an intent in doubt) decides, and the
        // call's future would otherwise keep room for the decision through every attempt.
        ControlFlow::Continue(Some(class)) => {
            match Box::pin(super::execute::decide(work, run, class, made)).await {
                ControlFlow::Continue(wait) => wait,
                ControlFlow::Break(report) => return ControlFlow::Break(report),
            }
        }
        ControlFlow::Break(report) => return ControlFlow::Break(report),
    };
    work.attempting();
    ControlFlow::Continue(wait)
}

/// Before the next attempt (after `made`): honour, in a restarted process, the wait the service asked
/// of an earlier one (`asked`), then see whether the attempt may start ([`may_start`]).
async fn before_attempt(
    run: &mut Run<'_>,
    asked: Option<Box<super::ResumeWait>>,
    made: u32,
) -> Result<(tokio::time::Instant, Duration), Stop> {
    if let Some(wait) = asked {
        let wait = run.pace().asked_before(&run.machine, &wait)?;
        tokio::time::sleep(wait).await;
    }
    may_start(run, made)
}

/// Whether the next attempt (after `made`) may start now, as the call's machine says (its start record
/// named, [`Pace::start`](super::wait::Pace::start)): the instant and the budget left it starts with,
/// numbered; or why not. A first attempt makes room for retries in the service's budget; a retry
/// took its own.
#[inline]
fn may_start(run: &mut Run<'_>, made: u32) -> Result<(tokio::time::Instant, Duration), Stop> {
    let (task, spec) = (run.task(), run.spec());
    let allowed = run.pace().start(&mut run.machine);
    let (now, left) = allowed.inspect_err(|stop| observe::refused(spec, &stop.message))?;
    if made == 0 {
        task.budgets().first_attempt_at(spec.get_service(), now);
    }
    run.next_attempt();
    run.now.key_leaves(now);
    Ok((now, left))
}

/// One attempt, numbered and allowed to start with `left` of the budget at `now`: its start record,
/// its request under the last instant the machine lets it leave, its classification (an error, a
/// panic, a timeout), its end record. `Some` when the call is over.
async fn attempt_once<W: Work>(
    run: &mut Run<'_>,
    work: &mut W,
    now: tokio::time::Instant,
    left: Duration,
) -> Option<Report<W::Value>> {
    let (task, spec) = (run.task(), run.spec());
    let started =
        if run.log().keeps_records() { crate::journal::wall_clock_at(now) } else { SystemTime::UNIX_EPOCH };
    // Every record of the attempt pairs the start's stamp with the budget left at that same instant:
    // together they bound the attempt's last possible send, from which a later call's landing horizon
    // runs. The budget left once a slow start write is done would end it early.
    let mut recorded = left;
    run.now.started(started, recorded);
    // The start record the machine named, then its request, named with the last instant it may leave.
    // What the start record carries is used up in this block: the attempt's future keeps no room for it.
    let (now, left, not_after) = {
        let before = work.before();
        let read = if before.is_none() { run.start_read(now, left, started) } else { None };
        match read {
            Some(sent) => sent,
            // Boxed: only a side effect writes its start record before the call, and a read's future
            // (boxed whole for every call by name) then keeps no room for the write.
            None => match Box::pin(super::log::start_attempt(run, (now, left), started, before)).await {
                Ok(sent) => sent,
                Err(stop) => {
                    observe::refused(spec, &stop.message);
                    return Some(work.stopped(run, stop));
                }
            },
        }
    };
    // The machine's rule (`Budget::recorded`): the budget at the start, whatever the write took.
    // (One variable for both: the attempt's future keeps room for one.)
    recorded = run.machine.budget().recorded(recorded, left);
    run.now.started(started, recorded);
    let call = run.call(now, not_after);
    let deadline = call.deadline;
    let span = observe::attempt_span(run.now.number(), run.now.id());
    let strict = spec.effect().has_side_effect().then_some(&run.machine);
    let attempt = within(deadline, guarded(|| work.attempt(call)), strict, || run.log().flush_held_start());
    let answer = classified(spec, now, observe::within_span(&span, attempt).await);
    run.attempt_over();
    match &answer {
        Ok(_) => span.classified(Outcome::Ok, super::ending::applied_on_ok(spec.effect()), "answered"),
        Err(class) => span.classified(class.outcome(), class.effect(), class.message()),
    }
    let mut pending = None;
    let report = work.after(run, answer, recorded, started, &mut pending);
    if let Some(pending) = pending {
        pending.wait(task).await;
    }
    report
}

/// An attempt's answer, classified: the tool's error by the tool, a panic as a bug (or, for a side
/// effect, an effect that may have landed), the time limit (from `sent` to the deadline the attempt
/// was given up at) as no reply.
#[inline]
fn classified<T, E: Classify>(
    spec: &ToolSpec,
    sent: tokio::time::Instant,
    answer: Result<Result<Result<T, E>, String>, tokio::time::Instant>,
) -> Result<T, Class> {
    match answer {
        Ok(Ok(Ok(answer))) => Ok(answer),
        Ok(Ok(Err(err))) => Err(normalise(spec.effect(), err.classify())),
        Ok(Err(panic)) if spec.effect().has_side_effect() => {
            Err(Class::unknown(format!("the tool panicked mid-call ({panic}); the effect may have landed")))
        }
        Ok(Err(panic)) => {
            Err(Class::permanent(format!("the tool panicked ({panic}); this is a bug in the tool")))
        }
        Err(not_after) => {
            let limit = sent.until(not_after);
            Err(classify::no_reply(spec.effect(), format_args!("timed out after {}", secs(limit))))
        }
    }
}
