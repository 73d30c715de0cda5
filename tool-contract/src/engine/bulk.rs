//! Bulk work: per-item outcomes, an honest aggregate, and retries scoped to what did not land.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::{Duration, SystemTime};

use super::attempts::drive;
use super::execute;
use super::items::{ITEMS, Tally, Words, fold_answer, fold_verdict, honest, is_open, summarise, tally};
use super::log::{Pending, end_record};
use super::work::Work;
use super::{Run, Stop, ceil_secs};
use crate::bulk::{BulkProber, ItemId};
use crate::classify::{Class, Classify};
use crate::journal::{LastWord, Recall};
use crate::key::IntentKey;
use crate::policy::{self, Between, End, Horizon, ItemStart, Shape, Start};
use crate::probe::ProbeMark;
use crate::report::{Applied, Item, Outcome, Reason, Report};
use crate::spec::ToolSpec;
use crate::task::Task;

/// Run one bulk call: each attempt gets the items still to do, and reports per item.
///
/// Items that landed or were refused for good are never sent again. Between attempts the batch follows
/// the policy of its effect kind as a single call does (the same executor decides for both): before a
/// second attempt of a side effect the probe is asked about the items whose fate is unknown (when none
/// is, about every item still to do). The report counts every item and never presents a partial list
/// as complete.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::effect::EffectKind;
/// use tool_contract::probe::NoProbe;
/// use tool_contract::spec::ToolSpec;
/// use tool_contract::{Applied, Class, Item, Outcome, Task, engine};
///
/// const WRITE_ROWS: ToolSpec = ToolSpec::new("write_rows", EffectKind::Create)
///     .dedupe(tool_contract::spec::Dedupe::Receiver);
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let task = Task::new("sheet-import", "agent", Duration::from_secs(30));
/// let key = task.key(&WRITE_ROWS, &"sheet-1", None);
/// let rows = vec![1u32, 2, 3];
/// let report = engine::run_bulk(&task, &WRITE_ROWS, key, rows, |_call, rows: Vec<u32>| async move {
///     Ok::<_, Class>(rows.iter().map(|r| match r {
///         2 => Item::permanent(r.to_string(), "row 2 has no email"),
///         _ => Item::ok(r.to_string()),
///     }).collect())
/// }, NoProbe).await;
/// assert_eq!(report.outcome, Outcome::Permanent);
/// assert_eq!(report.effect_applied, Applied::Partial);
/// assert_eq!(report.message, "write_rows: 2 of 3 items done; 1 refused");
/// # }
/// ```
pub async fn run_bulk<I, E, A, AF, P>(
    task: &Task,
    spec: &ToolSpec,
    key: IntentKey,
    items: Vec<I>,
    attempt: A,
    probe: P,
) -> Report<()>
where
    I: Clone + ItemId,
    E: Classify,
    A: FnMut(crate::call::Call, Vec<I>) -> AF,
    AF: Future<Output = Result<Vec<Item>, E>>,
    P: BulkProber<I>,
{
    run_parts(task, spec, key, items, attempt, probe, ITEMS).await
}

/// The loop of a call in parts (bulk items, or the pages of a read): the attempt loop over the parts
/// still to do.
pub(crate) async fn run_parts<I, E, A, AF, P>(
    task: &Task,
    spec: &ToolSpec,
    key: IntentKey,
    items: Vec<I>,
    attempt: A,
    probe: P,
    words: Words,
) -> Report<()>
where
    I: Clone + ItemId,
    E: Classify,
    A: FnMut(crate::call::Call, Vec<I>) -> AF,
    AF: Future<Output = Result<Vec<Item>, E>>,
    P: BulkProber<I>,
{
    let ids: Vec<String> = items.iter().map(ItemId::item_id).collect();
    let results: Vec<Item> = ids.iter().map(|id| Item::retryable(id.clone(), "not attempted")).collect();
    let maybe = vec![false; results.len()];
    let parts = Parts {
        items,
        ids,
        results,
        maybe,
        to_probe: Vec::new(),
        before_horizon: false,
        pending: Vec::new(),
        last: None,
        recorded: None,
        progress: None,
        attempt,
        probe,
        words,
    };
    drive(task, spec, key, parts).await
}

/// A call in parts over the attempt loop: each attempt carries the parts still to do.
struct Parts<I, A, P> {
    items: Vec<I>,
    ids: Vec<String>,
    results: Vec<Item>,
    /// Items an earlier attempt may have applied, not since cleared by a probe.
    maybe: Vec<bool>,
    /// Items whose fate is unknown, to probe before the next attempt.
    to_probe: Vec<usize>,
    /// Some item the probe found not landed while the service may still hold it.
    before_horizon: bool,
    /// The items the next (or current) attempt carries.
    pending: Vec<usize>,
    /// How the last attempt failed as a whole, if it did.
    last: Option<Class>,
    /// The items the intent's last record lists, read at the call's start for the machine to decide
    /// from, then carried into `results`.
    recorded: Option<Vec<Item>>,
    /// What the current attempt reported item by item ([`crate::Call::report_item`]).
    progress: Option<crate::call::Progress>,
    attempt: A,
    probe: P,
    words: Words,
}

impl<I, A, P> Parts<I, A, P> {
    /// The report as the items stand.
    fn summary(&self, run: &Run<'_>) -> Report<()> {
        summarise(run, honest(&self.results, &self.maybe), self.words, "", None)
    }

    /// A batch a person settled: landed, every item (or the items the settlement names) is done and
    /// nothing is sent again; not landed, every item is open again.
    fn resume_settled(
        &mut self,
        run: &mut Run<'_>,
        recall: &Recall,
        start: Start,
        recorded: Option<Vec<Item>>,
    ) -> Option<Report<()>> {
        if start != Start::Settled {
            let why = recall.last.message.clone().unwrap_or_default();
            self.second_attempt(why);
            return None;
        }
        crate::observe::replayed(run.spec());
        let items = recorded.unwrap_or_else(|| self.ids.iter().map(Item::ok).collect());
        let said = recall.last.message.as_deref().unwrap_or("settled landed");
        let why = format!("attempt {} {said}; not repeated", recall.last.attempt_id);
        Some(summarise(run, items, self.words, &why, Some(Reason::Settled)))
    }

    /// Carry the items an earlier attempt recorded into this call, each as the policy says it starts
    /// ([`policy::item`]): one that may have landed is in doubt, and probed first, until the probe
    /// answers for it.
    fn carry(&mut self, recorded: Vec<Item>, unfinished: bool) {
        for item in recorded {
            let Some(i) = self.ids.iter().position(|id| *id == item.id) else { continue };
            self.results[i] = match policy::item(unfinished, &item) {
                ItemStart::Probe => {
                    self.to_probe.push(i);
                    self.maybe[i] = true;
                    let why = match item.reason {
                        Some(reason) if !unfinished => reason,
                        // Carried by the attempt that never finished: it may have landed.
                        _ => "sent by an attempt that never finished".to_owned(),
                    };
                    Item::unknown(item.id, why)
                }
                ItemStart::Done | ItemStart::Open => item,
            };
        }
    }

    /// Every item in doubt, to probe: an earlier attempt that lists none may have applied any.
    fn all_in_doubt(&mut self) {
        for item in self.results.iter_mut() {
            *item = Item::unknown(item.id.clone(), "left unresolved by an earlier run");
        }
        self.to_probe = (0..self.results.len()).collect();
        self.maybe = vec![true; self.results.len()];
    }

    /// A batch resumed after an attempt that applied nothing (by its own word, or a person's
    /// settlement): what the log says stands for the probe's "not landed", and the policy decides the
    /// next attempt as after a probe, for every kind, as for a single call: after the approver's yes
    /// for `money` ([`policy::asks_approval`]), and, for a person's word,
    /// only if they looked once the attempt could no longer land (given sooner, the call waits out the
    /// horizon and probes).
    fn second_attempt(&mut self, why: String) {
        self.last = Some(Class::retryable(why));
    }

    /// What the policy is told of the items still open: in doubt while any may have landed, else they
    /// applied nothing (the tool said so per item, or the probe did).
    fn open_class(&mut self) -> Class {
        let open = self.results.iter().filter(|item| is_open(item)).count();
        let class = self.last.take().unwrap_or_else(|| Class::retryable(format!("{open} items left")));
        let in_doubt = self.results.iter().any(|item| item.outcome == Outcome::Unknown);
        let told = policy::batch_ended((class.outcome(), class.effect()), in_doubt);
        reclassed(class, told)
    }

    /// Fold the probe's answer on the items in `to_probe` in; the items it left in doubt stay to
    /// probe. Its verdict as the log records it (with the tally and the items after it), and in the
    /// policy's words.
    fn fold_probe(
        &mut self,
        run: &Run<'_>,
        of: &Class,
        answer: Result<Vec<Item>, String>,
        looked: tokio::time::Instant,
    ) -> ((ProbeMark, Tally, Option<serde_json::Value>), Result<ProbeMark, String>) {
        let past = run.machine.judge(of.effect(), looked, tokio::time::Instant::now()) == Horizon::Passed;
        let (results, to_probe) = (&mut self.results, &self.to_probe);
        let mut unsure = None;
        match answer {
            Err(why) => {
                for &i in to_probe {
                    results[i].reason = Some(why.clone());
                }
                unsure = Some(why);
            }
            Ok(verdicts) => {
                for verdict in verdicts {
                    let Some(&i) = to_probe.iter().find(|&&i| results[i].id == verdict.id) else { continue };
                    let item = &mut results[i];
                    fold_verdict(item, verdict, past, &mut self.before_horizon, &mut unsure);
                }
            }
        }
        for &i in to_probe {
            self.maybe[i] = results[i].applied == Applied::Unknown;
            // An item the probe did not answer for stays in doubt.
            if results[i].outcome == Outcome::Unknown && !self.before_horizon && unsure.is_none() {
                unsure = Some("the probe did not answer for it".to_owned());
            }
        }
        let landed = self.to_probe.iter().any(|&i| self.results[i].applied == Applied::Yes);
        self.to_probe.retain(|&i| self.results[i].outcome == Outcome::Unknown);
        let now = honest(&self.results, &self.maybe);
        let mut tallied = tally(run.spec(), &now, self.words);
        tallied.message.insert_str(0, "probe: ");
        let open_left = now.iter().any(is_open);
        let (logged, told) = policy::batch_verdict(unsure.is_some(), self.before_horizon, open_left, landed);
        let verdict = match unsure {
            Some(why) => Err(why),
            None => Ok(told),
        };
        ((logged, tallied, serde_json::to_value(&now).ok()), verdict)
    }
}

impl<I, E, A, AF, P> Work for Parts<I, A, P>
where
    I: Clone + ItemId,
    E: Classify,
    A: FnMut(crate::call::Call, Vec<I>) -> AF,
    AF: Future<Output = Result<Vec<Item>, E>>,
    P: BulkProber<I>,
{
    type Value = ();
    type Answer = Vec<Item>;
    type Error = E;

    fn has_probe(&self) -> bool {
        self.probe.exists()
    }

    fn stopped(&mut self, run: &Run<'_>, stop: Stop) -> Report<()> {
        // The items carry the outcome; the stop adds why the rest was not tried again.
        let items = honest(&self.results, &self.maybe);
        let mut report = summarise(run, items, self.words, stop.why(), Some(stop.reason));
        report.retry_after_s = stop.wait.map(ceil_secs);
        report
    }

    fn refused(&mut self, run: &Run<'_>, stop: Stop) -> Report<()> {
        // Every item is listed, none attempted: a refusal is never an empty list.
        let mut report = run.report_stop(stop);
        let applied = report.effect_applied;
        let outcome =
            if report.outcome == Outcome::Permanent { Outcome::Permanent } else { Outcome::Retryable };
        report.items = (self.ids.iter())
            .map(|id| Item { id: id.clone(), outcome, applied, reason: Some("not attempted".to_owned()) })
            .collect();
        report
    }

    fn invalid(&self, spec: &ToolSpec) -> Option<Stop> {
        // Each item's results, its probe's verdict and its record are found by its id: one id named
        // twice would leave one of the two without them, to be sent again.
        let mut seen = std::collections::HashSet::with_capacity(self.ids.len());
        let twice = self.ids.iter().find(|id| !seen.insert(id.as_str()))?;
        let why = format!(
            "{}: two {} are named `{twice}`; each needs its own id within one call (`ItemId::item_id`): \
             nothing was sent",
            spec.name(),
            self.words.noun
        );
        Some(Stop::new(Outcome::Permanent, Applied::No, why, None, Reason::BadArguments))
    }

    fn shape(&mut self, recall: &Recall) -> Shape<'_> {
        let listed = recall.last.value.as_ref();
        self.recorded = listed.and_then(|v| <Vec<Item> as serde::Deserialize>::deserialize(v).ok());
        Shape::Batch(self.recorded.as_deref())
    }

    fn resume(&mut self, run: &mut Run<'_>, recall: Recall, start: Start) -> Option<Report<()>> {
        let recorded = self.recorded.take();
        if recall.settlement().is_some() {
            return self.resume_settled(run, &recall, start, recorded);
        }
        // The machine decided from the items (`policy::batch`); this only carries them in.
        let unfinished = recall.last_word() == LastWord::Unfinished;
        let attempt = &recall.last.attempt_id;
        match (start, recorded) {
            (Start::Replay, Some(recorded)) if matches!(recall.last_word(), LastWord::Ok(_)) => {
                crate::observe::replayed(run.spec());
                let mut report = summarise(run, recorded, self.words, "", None);
                report.message = format!("{} (recorded in the attempt log; not repeated)", report.message);
                return Some(report);
            }
            (_, Some(recorded)) => self.carry(recorded, unfinished),
            (Start::Probe, None) => self.all_in_doubt(),
            (_, None) => {}
        }
        if start == Start::SecondAttempt {
            let why = match recall.last_word() {
                LastWord::Ended(outcome) if recall.last.value.is_none() => {
                    format!("attempt {attempt} ended {outcome} with its effect no in an earlier call")
                }
                LastWord::Ended(outcome) => format!("attempt {attempt} ended {outcome} in an earlier call"),
                _ => format!("attempt {attempt} applied nothing in an earlier call"),
            };
            self.second_attempt(why);
        }
        None
    }

    fn undecided(&mut self, run: &Run<'_>, made: u32) -> ControlFlow<Report<()>, Option<Class>> {
        let open = self.results.iter().any(is_open);
        match policy::between(open, self.last.is_some(), !self.to_probe.is_empty(), made) {
            Between::Done => ControlFlow::Break(self.summary(run)),
            Between::Attempt => ControlFlow::Continue(None),
            Between::Decide => ControlFlow::Continue(Some(self.open_class())),
        }
    }

    fn attempting(&mut self) {
        // The next attempt carries what is still open: what applied nothing, and what may have landed
        // only where the machine let it be sent again (a `create` the receiver deduplicates by the key).
        self.pending = (0..self.results.len()).filter(|&i| is_open(&self.results[i])).collect();
    }

    async fn probe(
        &mut self,
        run: &Run<'_>,
        of: &Class,
        looked: tokio::time::Instant,
    ) -> Result<ProbeMark, String> {
        self.before_horizon = false;
        if self.to_probe.is_empty() {
            // Nothing is in doubt by the tool's own word; the probe, asked before a second attempt as
            // for a single call, has the last word on every item still to do.
            let results = &self.results;
            self.to_probe = (0..results.len()).filter(|&i| is_open(&results[i])).collect();
        }
        let asked: Vec<I> = self.to_probe.iter().map(|&i| self.items[i].clone()).collect();
        let (key, probe) = (run.key(), &mut self.probe);
        let (answer, asked) = execute::ask(run, || probe.probe(key, asked)).await;
        let ((mark, tallied, value), verdict) = self.fold_probe(run, of, answer, looked);
        let Tally { outcome, applied, message } = tallied;
        asked.log(run, mark, (outcome, applied), &message, value.as_ref()).await;
        verdict
    }

    fn horizon(&self, run: &Run<'_>, of: &Class, looked: tokio::time::Instant) -> Horizon {
        if self.before_horizon {
            run.machine.judge(of.effect(), looked, tokio::time::Instant::now())
        } else {
            Horizon::Passed
        }
    }

    fn close(&mut self, run: &Run<'_>, _class: &Class, end: End) -> Report<()> {
        let items = honest(&self.results, &self.maybe);
        if end == End::Landed {
            let why = format!("the probe found attempt {} landed, so it was not repeated", run.now.id());
            return summarise(run, items, self.words, &why, Some(Reason::Landed));
        }
        // The items carry the attempt's own outcome.
        summarise(run, items, self.words, "", Some(Reason::Answered))
    }

    fn before(&self) -> Option<serde_json::Value> {
        // The start record carries the items as known before this attempt: if the process dies
        // mid-attempt, a restart keeps what had landed or been refused and probes only what this attempt
        // carried.
        serde_json::to_value(honest(&self.results, &self.maybe)).ok()
    }

    fn attempt(&mut self, mut call: crate::call::Call) -> impl Future<Output = Result<Vec<Item>, E>> {
        let batch: Vec<I> = self.pending.iter().map(|&i| self.items[i].clone()).collect();
        let progress = crate::call::Progress::default();
        call.progress = Some(std::sync::Arc::clone(&progress));
        self.progress = Some(progress);
        (self.attempt)(call, batch)
    }

    fn after<'a>(
        &mut self,
        run: &mut Run<'a>,
        answer: Result<Vec<Item>, Class>,
        left: Duration,
        started: SystemTime,
        written: &mut Option<Pending<'a>>,
    ) -> Option<Report<()>> {
        let kind = run.spec().effect();
        // What the attempt reported item by item before it returned (or was cut off).
        let early = match self.progress.take() {
            Some(progress) => std::mem::take(&mut *progress.lock().unwrap_or_else(|e| e.into_inner())),
            None => Vec::new(),
        };
        let whole = fold_answer(kind, &mut self.results, &self.pending, answer, early);
        for (i, item) in self.results.iter().enumerate() {
            self.maybe[i] |= item.applied == Applied::Unknown;
        }
        if let Some(wait) = whole.as_ref().and_then(Class::wait) {
            run.now.asked_to_wait(wait);
        }
        let now = honest(&self.results, &self.maybe);
        let Tally { outcome, applied, message } = tally(run.spec(), &now, self.words);
        // Every end record carries the items, so a restart resumes from them.
        let value = serde_json::to_value(&now).ok();
        *written =
            run.log().end_now(end_record(left, started, (outcome, applied), None, &message, value.as_ref()));
        self.last = whole;
        if kind.has_side_effect() {
            let results = &self.results;
            self.to_probe =
                self.pending.iter().copied().filter(|&i| results[i].outcome == Outcome::Unknown).collect();
        }
        None
    }
}

/// `class` as `(outcome, applied)`, its message and wait kept.
fn reclassed(class: Class, (outcome, applied): (Outcome, Applied)) -> Class {
    if (class.outcome(), class.effect()) == (outcome, applied) {
        return class;
    }
    let said = match outcome {
        Outcome::Unknown => Class::unknown(class.message()),
        Outcome::Permanent => Class::permanent(class.message()).with_effect(applied),
        _ => Class::retryable(class.message()).with_effect(applied),
    };
    match class.wait() {
        Some(wait) => said.retry_after(wait),
        None => said,
    }
}
