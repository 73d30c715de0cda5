//! A single call over the attempt loop: one value, one probe verdict, the policy's full table.

use std::future::Future;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::time::{Duration, SystemTime};

use super::execute;
use super::log::{EndRecord, Pending};
use super::machine::Event;
use super::state::Run;
use super::stop::Stop;
use super::work::Work;
use crate::call::Call;
use crate::classify::{Class, Classify};
use crate::journal::{LastWord, LogValue, Recall, Record};
use crate::policy::{End, Horizon, Start};
use crate::probe::{Probe, ProbeMark, Prober};
use crate::report::{Applied, Outcome, Reason, Report};

/// One call of a tool returning one value.
pub(crate) struct One<T, A, P> {
    attempt: A,
    probe: P,
    /// How the last attempt (or the earlier run resumed from) ended, until the policy has decided on it.
    last: Option<Class>,
    /// The value the probe found landed, until the call reports it.
    landed: Option<T>,
    /// Checks a value against the tool's own type when `T` stands for it (a call by name, as JSON).
    check: Option<fn(&serde_json::Value) -> Option<String>>,
    /// What a question to a person binds of the call, until the call takes it.
    arguments: Option<Box<crate::call::Arguments>>,
    value: PhantomData<fn() -> T>,
}

impl<T, A, P> One<T, A, P> {
    pub(crate) fn new(attempt: A, probe: P) -> Self {
        One { attempt, probe, last: None, landed: None, check: None, arguments: None, value: PhantomData }
    }

    /// Bind a question to a person to `arguments` (a call by name's).
    pub(crate) fn arguments(mut self, arguments: crate::call::Arguments) -> Self {
        let bound = arguments.digest.is_some() || !arguments.shows.is_empty();
        self.arguments = bound.then(|| Box::new(arguments));
        self
    }

    /// Check a value a person names against the tool's own type with `check`.
    pub(crate) fn checking(mut self, check: Option<fn(&serde_json::Value) -> Option<String>>) -> Self {
        self.check = check;
        self
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
    type Value = T;
    type Answer = T;
    type Error = E;

    fn has_probe(&self) -> bool {
        self.probe.exists()
    }

    fn stopped(&mut self, run: &Run<'_>, stop: Stop) -> Report<T> {
        run.report_stop(stop)
    }

    fn resume(&mut self, run: &mut Run<'_>, recall: Recall, start: Start) -> Option<Report<T>> {
        let id = run.now.id();
        let earlier = match start {
            Start::Fresh => return None,
            Start::Settled => {
                let mut report = run.report_settled(&recall.last);
                report.message.push_str(&run.arguments().differ_from(&recall.last).unwrap_or_default());
                return Some(report);
            }
            Start::Replay => match recall.last.value.as_ref().map(T::from_log) {
                Some(Ok(value)) => {
                    let mut report = run.report_replayed(value);
                    report.message.push_str(&run.arguments().differ_from(&recall.last).unwrap_or_default());
                    return Some(report);
                }
                _ => format!("attempt {id} is recorded ok but its value is not in the log"),
            },
            // What the log says stands for the probe's "not landed": the next attempt is a second one.
            Start::SecondAttempt => {
                let why = match (recall.settlement(), recall.last.outcome) {
                    // A person found it did not land: the next attempt, as after a probe's "not landed".
                    (Some(_), _) => recall.last.message.unwrap_or_default(),
                    (None, outcome) => format!(
                        "attempt {id} ended {} with its effect no in an earlier call",
                        outcome.unwrap_or(crate::report::Outcome::Unknown)
                    ),
                };
                self.last = Some(Class::retryable(why));
                return None;
            }
            Start::Probe => match recall.last_word() {
                LastWord::Ended(outcome) => format!(
                    "attempt {id} ended {outcome} in an earlier run with its effect {}",
                    recall.last.effect_applied.unwrap_or(Applied::Unknown)
                ),
                _ => format!(
                    "attempt {id} started in an earlier call of this intent and never finished (the call was \
                     dropped or its process stopped)"
                ),
            },
        };
        self.last = Some(Class::unknown(earlier));
        None
    }

    fn undecided(&mut self, _run: &Run<'_>, _made: u32) -> ControlFlow<Report<T>, Option<Class>> {
        // A failed attempt (or an earlier run that left the intent in doubt) is decided on; with none,
        // the next attempt goes at once.
        ControlFlow::Continue(self.last.take())
    }

    async fn probe(
        &mut self,
        run: &Run<'_>,
        of: &Class,
        looked: tokio::time::Instant,
    ) -> Result<ProbeMark, String> {
        let (key, probe) = (run.key(), &mut self.probe);
        let (answer, asked) = execute::ask(run, || probe.probe(key)).await;
        let verdict = answer.unwrap_or_else(Probe::Failed);
        let (mark, said, message, value) = judge(run, of, &verdict, looked);
        asked.log(run, mark, said, &message, value.as_ref()).await;
        match verdict {
            Probe::Landed(value) => {
                self.landed = Some(value);
                Ok(ProbeMark::Landed)
            }
            Probe::NotLanded => Ok(ProbeMark::NotLanded),
            Probe::Failed(why) => Err(why),
        }
    }

    fn close(&mut self, run: &Run<'_>, class: &Class, end: End) -> Report<T> {
        match (end, self.landed.take()) {
            (End::Landed, Some(value)) => run.report_landed(value, class),
            (End::Landed, None) => run.report_stop(Stop::said(
                Outcome::Unknown,
                Applied::Unknown,
                class,
                "",
                None,
                Reason::InDoubt,
            )),
            _ => {
                let wait = class.wait().filter(|_| class.outcome() != Outcome::Permanent);
                let message = class.message().to_owned();
                run.report(class.outcome(), class.effect(), message, wait, Reason::Answered)
            }
        }
    }

    fn settled(&mut self, run: &Run<'_>, _class: &Class, record: &Record) -> Report<T> {
        run.report_settled(record)
    }

    fn asks_person(&self) -> bool {
        true
    }

    fn misfit(&self, value: &serde_json::Value) -> Option<String> {
        match self.check {
            Some(check) => check(value),
            None => T::from_log(value).err().map(|e| e.to_string()),
        }
    }

    fn attempt(&mut self, call: Call) -> impl Future<Output = Result<T, E>> {
        (self.attempt)(call)
    }

    fn arguments(&mut self) -> Option<Box<crate::call::Arguments>> {
        self.arguments.take()
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
                let (report, written) = super::ending::succeeded(run, value, left, started);
                *pending = written;
                return Some(report);
            }
            Err(class) => class,
        };
        if let Some(wait) = class.wait() {
            run.now.asked_to_wait(wait);
        }
        // The log keeps the call's effect, not the attempt's: an attempt that applied nothing after one that
        // may have landed leaves the intent unresolved for the next run.
        let recorded = run.machine.call_effect(class.effect());
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
        *pending = run.log().end_now(end);
        run.machine.on(Event::Ended { effect: class.effect() });
        self.last = Some(class);
        None
    }
}

/// What a single call's probe verdict on the attempt that ended as `of` means, as the log records it:
/// the verdict, the outcome and effect, the message and the value found.
/// A "not landed" about an attempt that may have landed is logged as such only once its landing
/// horizon has passed: before that, the service may still apply the request, and the log says so.
fn judge<T: LogValue>(
    run: &Run<'_>,
    of: &Class,
    verdict: &Probe<T>,
    looked: tokio::time::Instant,
) -> (ProbeMark, (Outcome, Applied), String, Option<serde_json::Value>) {
    let (mark, message, value) = match verdict {
        Probe::Landed(v) => (ProbeMark::Landed, "probe: landed".to_owned(), v.to_log().ok()),
        Probe::NotLanded => (ProbeMark::NotLanded, String::new(), None),
        Probe::Failed(why) => (ProbeMark::Failed, format!("probe failed: {why}"), None),
    };
    let now = tokio::time::Instant::now();
    let (horizon, (outcome, applied)) = run.machine.verdict(mark, (of.outcome(), of.effect()), looked, now);
    let message = match (mark, horizon) {
        (ProbeMark::NotLanded, Horizon::Passed) => "probe: not landed".to_owned(),
        (ProbeMark::NotLanded, _) => {
            format!(
                "probe: not landed yet; the service may hold it {} more",
                super::secs(run.machine.wait_left(tokio::time::Instant::now()))
            )
        }
        _ => message,
    };
    (mark, (outcome, applied), message, value)
}
