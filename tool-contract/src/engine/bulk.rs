//! Bulk work: per-item outcomes, an honest aggregate, and retries scoped to what did not land.

use std::future::Future;
use std::time::{Duration, SystemTime};

use super::attempts::{Next, Work, drive};
use super::state::{EndRecord, Pending};
use super::{Run, Stop, ceil_secs, guarded, retry_stamp, secs};
use crate::bulk::{BulkProber, ItemId};
use crate::classify::{Class, Classify};
use crate::effect::EffectKind;
use crate::journal::{LastWord, Recall};
use crate::key::IntentKey;
use crate::policy::{self, End, Facts, Step};
use crate::probe::ProbeMark;
use crate::report::{Applied, Item, Outcome, Report};
use crate::spec::{Dedupe, ToolSpec};
use crate::task::Task;

/// Run one bulk call: each attempt gets the items still to do, and reports per item.
///
/// Items that landed or were refused for good are never sent again; items whose fate is unknown are
/// probed before the next attempt; the report counts every item and never presents a partial list as
/// complete.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::{Applied, Class, EffectKind, Item, NoProbe, Outcome, Task, ToolSpec, engine};
///
/// const WRITE_ROWS: ToolSpec = ToolSpec::new("write_rows", EffectKind::Create)
///     .dedupe(tool_contract::Dedupe::Receiver);
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
    A: FnMut(crate::Call, Vec<I>) -> AF,
    AF: Future<Output = Result<Vec<Item>, E>>,
    P: BulkProber<I>,
{
    run_parts(task, spec, key, items, attempt, probe, ITEMS).await
}

/// How the report of a call in parts names them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Words {
    /// The parts (`items`, `pages`).
    pub(crate) noun: &'static str,
    /// What a part that succeeded is (`done`, `read`).
    pub(crate) done: &'static str,
    /// What a part still to do is.
    pub(crate) pending: &'static str,
    /// Whether the message names the first part that failed, and why.
    pub(crate) name_failure: bool,
}

/// Bulk work.
pub(crate) const ITEMS: Words =
    Words { noun: "items", done: "done", pending: "not applied, retryable", name_failure: false };

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
    A: FnMut(crate::Call, Vec<I>) -> AF,
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
        pending: Vec::new(),
        last: None,
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
    /// The items the next (or current) attempt carries.
    pending: Vec<usize>,
    /// How the last attempt failed as a whole, if it did.
    last: Option<Class>,
    /// What the current attempt reported item by item ([`crate::Call::report_item`]).
    progress: Option<crate::call::Progress>,
    attempt: A,
    probe: P,
    words: Words,
}

impl<I, E, A, AF, P> Work for Parts<I, A, P>
where
    I: Clone + ItemId,
    E: Classify,
    A: FnMut(crate::Call, Vec<I>) -> AF,
    AF: Future<Output = Result<Vec<Item>, E>>,
    P: BulkProber<I>,
{
    type Report = Report<()>;
    type Answer = Vec<Item>;
    type Error = E;

    fn has_probe(&self) -> bool {
        self.probe.exists()
    }

    fn stopped(&mut self, run: &Run<'_>, stop: Stop) -> Report<()> {
        let mut report = summarise(run, honest(&self.results, &self.maybe), self.words);
        // The items carry the outcome; the stop adds why the rest was not tried again.
        report.message = format!("{}; {}", report.message, stop.message);
        report.retry_after_s = stop.wait.map(ceil_secs);
        report.reason = stop.reason;
        report
    }

    fn refused(&mut self, run: &Run<'_>, stop: Stop) -> Report<()> {
        // Every item is listed, none attempted: a refusal is never an empty list.
        let mut report = run.stopped(stop);
        let applied = report.effect_applied;
        report.items = (self.ids.iter())
            .map(|id| Item {
                id: id.clone(),
                outcome: Outcome::Retryable,
                applied,
                reason: Some("not attempted".to_owned()),
            })
            .collect();
        report
    }

    fn resume(&mut self, run: &mut Run<'_>, recall: Recall) -> Option<Report<()>> {
        let recorded =
            recall.last.value.as_ref().and_then(|v| <Vec<Item> as serde::Deserialize>::deserialize(v).ok());
        let (ids, results, maybe, to_probe) =
            (&self.ids, &mut self.results, &mut self.maybe, &mut self.to_probe);
        match (recall.last_word(), recorded) {
            (LastWord::Ok(_), Some(recorded)) => {
                crate::observe::replayed(run.spec);
                let mut report = run.bulk_report(recorded, self.words);
                report.message = format!("{} (recorded in the attempt log; not repeated)", report.message);
                return Some(report);
            }
            // An earlier run ended with per-item results: resume from them, so what landed is not sent
            // again and what is unknown is probed first.
            (LastWord::Ended(_), Some(recorded)) => {
                for item in recorded {
                    let Some(i) = ids.iter().position(|id| *id == item.id) else { continue };
                    if item.applied == Applied::Unknown {
                        to_probe.push(i);
                        maybe[i] = true;
                    }
                    results[i] = item;
                }
            }
            (LastWord::Unfinished, Some(recorded)) => {
                for item in recorded {
                    let Some(i) = ids.iter().position(|id| *id == item.id) else { continue };
                    results[i] = match item.outcome {
                        Outcome::Ok | Outcome::Permanent => item,
                        // Carried by the attempt that never finished: it may have landed.
                        _ => {
                            to_probe.push(i);
                            maybe[i] = true;
                            Item::unknown(item.id, "sent by an attempt that never finished")
                        }
                    };
                }
            }
            (LastWord::Ended(_), None) if recall.last.effect_applied == Some(Applied::No) => {}
            (LastWord::Unfinished | LastWord::Ended(_), _) => {
                for item in results.iter_mut() {
                    *item = Item::unknown(item.id.clone(), "left unresolved by an earlier run");
                }
                *to_probe = (0..results.len()).collect();
                *maybe = vec![true; results.len()];
            }
            (LastWord::Ok(_), None) => {}
        }
        None
    }

    async fn next(&mut self, run: &mut Run<'_>, made: u32) -> Next<Report<()>> {
        if !self.to_probe.is_empty() {
            let started = crate::journal::wall_clock();
            let left = run.task.remaining();
            let mark = resolve(run, &mut self.probe, &self.items, &mut self.results, &self.to_probe).await;
            if let Some(mark) = mark {
                for &i in &self.to_probe {
                    self.maybe[i] = self.results[i].applied == Applied::Unknown;
                }
                let now = honest(&self.results, &self.maybe);
                let Tally { outcome, applied, message } = tally(run.spec, &now, self.words);
                let value = serde_json::to_value(&now).ok();
                run.log_end(left, started, outcome, applied, Some(mark), &format!("probe: {message}"), value)
                    .await;
            }
            self.to_probe.clear();
        }
        let results = &self.results;
        self.pending = (0..results.len()).filter(|&i| results[i].outcome == Outcome::Retryable).collect();
        if self.pending.is_empty() {
            return Next::Done(summarise(run, honest(&self.results, &self.maybe), self.words));
        }
        if made == 0 {
            return Next::Attempt(Duration::ZERO);
        }
        let pending = self.pending.len();
        let class = self.last.take().unwrap_or_else(|| Class::retryable(format!("{pending} items left")));
        // The items still to do applied nothing: the tool said so per item, or the probe did.
        let mut facts = Facts {
            effect: Applied::No,
            probe: run.spec.effect().has_side_effect().then_some(ProbeMark::NotLanded),
            ..run.facts(&class, self.probe.exists(), made)
        };
        let mut denied = None;
        let stop = loop {
            let (room, wait) = run.room(&class, made);
            facts.room = room;
            match policy::next(&facts) {
                Step::Approve => match Box::pin(run.approve(&class)).await {
                    Ok(()) => facts.approved = Some(true),
                    Err(why) => (facts.approved, denied) = (Some(false), Some(why)),
                },
                Step::Retry => match run.take_retry(&class) {
                    Ok(()) => return Next::Attempt(wait),
                    Err(stop) => break Some(stop),
                },
                Step::Stop(End::OutOfBudget(room)) => break Some(run.out_of_budget(&class, room, wait)),
                Step::Stop(End::RetryBudgetSpent) => {
                    let wait =
                        run.task.budgets().room(run.spec.service_name()).err().and_then(|spent| spent.wait);
                    break Some(run.retry_budget_spent(&class, wait));
                }
                Step::Stop(End::NoApprover) => break Some(run.no_approver(&class)),
                // As a single call says it: the items say what each did, the message why no more.
                Step::Stop(End::GaveUp) => {
                    let message = format!("gave up after {}", super::attempts_text(made));
                    break Some(Stop::from_class(
                        &class,
                        message,
                        class.wait(),
                        crate::report::Reason::GaveUp,
                    ));
                }
                Step::Stop(End::Denied) => break denied.take(),
                // The items carry their own outcomes; nothing more to say.
                Step::Probe | Step::Settle | Step::Stop(_) => break None,
            }
        };
        let report = match stop {
            Some(stop) => self.stopped(run, stop),
            None => summarise(run, honest(&self.results, &self.maybe), self.words),
        };
        Next::Done(report)
    }

    fn before(&self) -> Option<serde_json::Value> {
        // The start record carries the items as known before this attempt: if the process dies
        // mid-attempt, a restart keeps what had landed or been refused and probes only what this attempt
        // carried.
        serde_json::to_value(honest(&self.results, &self.maybe)).ok()
    }

    fn attempt(&mut self, mut call: crate::Call) -> impl Future<Output = Result<Vec<Item>, E>> {
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
        let kind = run.spec.effect();
        // What the attempt reported item by item before it returned (or was cut off).
        let early = match self.progress.take() {
            Some(progress) => std::mem::take(&mut *progress.lock().unwrap_or_else(|e| e.into_inner())),
            None => Vec::new(),
        };
        let (results, pending) = (&mut self.results, &self.pending);
        let whole = match answer {
            Ok(mut reported) => {
                // The list returned has the last word: it comes first, and the first answer counts.
                reported.extend(early);
                merge(kind, results, pending, reported);
                None
            }
            Err(class) => {
                for &i in pending {
                    results[i] = Item {
                        id: results[i].id.clone(),
                        outcome: class.outcome(),
                        applied: class.effect(),
                        reason: Some(class.message().to_owned()),
                    };
                }
                // Items reported before the attempt was cut off keep what was reported.
                let reported: Vec<usize> = pending
                    .iter()
                    .copied()
                    .filter(|&i| early.iter().any(|item| item.id == results[i].id))
                    .collect();
                merge(kind, results, &reported, early);
                Some(class)
            }
        };
        for (i, item) in results.iter().enumerate() {
            self.maybe[i] |= item.applied == Applied::Unknown;
        }
        if let Some(wait) = whole.as_ref().and_then(Class::wait) {
            run.retry_at = Some(retry_stamp(wait));
        }
        let now = honest(results, &self.maybe);
        let Tally { outcome, applied, message } = tally(run.spec, &now, self.words);
        // Every end record carries the items, so a restart resumes from them.
        let value = serde_json::to_value(&now).ok();
        let end = EndRecord {
            left,
            started,
            outcome,
            applied,
            probe: None,
            message: &message,
            value: value.as_ref(),
            last: false,
        };
        *written = run.end_now(end);
        self.last = whole;
        if kind.has_side_effect() {
            self.to_probe =
                pending.iter().copied().filter(|&i| results[i].outcome == Outcome::Unknown).collect();
            if !self.probe.exists()
                && kind == EffectKind::Create
                && run.spec.deduplication() == Dedupe::Receiver
            {
                // The receiver deduplicates by the key: an unknown item is simply sent again.
                for &i in &self.to_probe {
                    results[i].outcome = Outcome::Retryable;
                }
                self.to_probe.clear();
            }
        }
        None
    }
}

/// The items as reported: one that an earlier attempt may have applied is never `no`.
fn honest(results: &[Item], maybe: &[bool]) -> Vec<Item> {
    results
        .iter()
        .zip(maybe)
        .map(|(item, &maybe)| {
            let mut item = item.clone();
            if maybe && item.applied == Applied::No {
                item.applied = Applied::Unknown;
            }
            item
        })
        .collect()
}

/// Fold one attempt's per-item answers into the results; an item the tool left out is not done.
fn merge(kind: EffectKind, results: &mut [Item], pending: &[usize], reported: Vec<Item>) {
    let mut answered = vec![false; results.len()];
    for item in reported {
        if let Some(&i) = pending.iter().find(|&&i| results[i].id == item.id && !answered[i]) {
            answered[i] = true;
            let item = if kind.has_side_effect() { item } else { read_item(item) };
            results[i] = item;
        }
    }
    for &i in pending {
        if !answered[i] {
            let id = results[i].id.clone();
            results[i] = if kind.has_side_effect() {
                Item::unknown(id, "the tool did not report this item")
            } else {
                Item::retryable(id, "the tool did not report this item")
            };
        }
    }
}

fn read_item(mut item: Item) -> Item {
    item.applied = Applied::No;
    if item.outcome == Outcome::Unknown {
        item.outcome = Outcome::Retryable;
    }
    item
}

/// Ask the probe about unknown items; items it cannot answer for stay unknown.
async fn resolve<I: Clone + ItemId, P: BulkProber<I>>(
    run: &Run<'_>,
    probe: &mut P,
    items: &[I],
    results: &mut [Item],
    unknown: &[usize],
) -> Option<ProbeMark> {
    if !probe.exists() {
        return None;
    }
    // Items the service may still hold are probed once they cannot be in flight any more.
    let unsettled = run.unsettled_for();
    if !unsettled.is_zero() {
        if unsettled >= run.task.remaining() {
            let why = format!(
                "the service may hold it for {} more, longer than the {} left",
                secs(unsettled),
                secs(run.task.remaining())
            );
            for &i in unknown {
                results[i].reason = Some(why.clone());
            }
            return Some(ProbeMark::Failed);
        }
        tokio::time::sleep(unsettled).await;
    }
    let left = run.task.remaining();
    if left.is_zero() {
        return None;
    }
    let asked: Vec<I> = unknown.iter().map(|&i| items[i].clone()).collect();
    let span = crate::observe::probe_span(run.spec);
    let probed = tokio::time::timeout(left, guarded(|| probe.probe(run.key, asked)));
    let verdicts = match crate::observe::within_span(&span, probed).await {
        Ok(Ok(verdicts)) => verdicts,
        Ok(Err(panic)) => {
            for &i in unknown {
                results[i].reason = Some(format!("the probe panicked: {panic}"));
            }
            return Some(ProbeMark::Failed);
        }
        Err(_) => {
            for &i in unknown {
                results[i].reason = Some(format!("the probe timed out after {}", secs(left)));
            }
            return Some(ProbeMark::Failed);
        }
    };
    for verdict in verdicts {
        let Some(&i) = unknown.iter().find(|&&i| results[i].id == verdict.id) else { continue };
        match verdict.applied {
            Applied::Yes => results[i] = Item::ok(verdict.id),
            Applied::No => {
                // Why the item was unknown, then what the probe found, as a single call reports it.
                let why = match results[i].reason.as_deref() {
                    Some(why) if !why.is_empty() => format!("{why}; the probe found it did not land"),
                    _ => "the probe found it did not land".to_owned(),
                };
                results[i] = Item::retryable(verdict.id, why);
            }
            Applied::Unknown | Applied::Partial => {
                results[i].reason =
                    Some(verdict.reason.unwrap_or_else(|| "the probe could not tell".to_owned()));
            }
        }
    }
    // One mark for the batch: failed while any item stays unknown, landed when any item did.
    let asked = || unknown.iter().map(|&i| &results[i]);
    let mark = if asked().any(|item| item.applied == Applied::Unknown) {
        ProbeMark::Failed
    } else if asked().any(|item| item.applied == Applied::Yes) {
        ProbeMark::Landed
    } else {
        ProbeMark::NotLanded
    };
    span.verdict(run.spec, mark);
    Some(mark)
}

/// The aggregate of per-item results: outcome, effect and a counted message.
pub(crate) struct Tally {
    pub(crate) outcome: Outcome,
    pub(crate) applied: Applied,
    pub(crate) message: String,
}

pub(crate) fn tally(spec: &ToolSpec, items: &[Item], words: Words) -> Tally {
    let count = |o: Outcome| items.iter().filter(|i| i.outcome == o).count();
    let (ok, refused, retry, unknown) =
        (count(Outcome::Ok), count(Outcome::Permanent), count(Outcome::Retryable), count(Outcome::Unknown));
    let yes = items.iter().filter(|i| i.applied == Applied::Yes).count();
    let maybe = items.iter().filter(|i| i.applied == Applied::Unknown).count();
    let total = items.len();
    let applied = if !spec.effect().has_side_effect() {
        Applied::No
    } else if yes == total && total > 0 {
        Applied::Yes
    } else if yes == 0 && maybe == 0 {
        Applied::No
    } else if yes == 0 {
        Applied::Unknown
    } else {
        Applied::Partial
    };
    let outcome = if unknown > 0 {
        Outcome::Unknown
    } else if retry > 0 {
        Outcome::Retryable
    } else if refused > 0 {
        Outcome::Permanent
    } else {
        Outcome::Ok
    };
    let Words { noun, done, pending, name_failure } = words;
    let mut message = format!("{}: {ok} of {total} {noun} {done}", spec.name());
    for (n, what) in [(refused, "refused"), (unknown, "unresolved"), (retry, pending)] {
        if n > 0 {
            message.push_str(&format!("; {n} {what}"));
        }
    }
    if name_failure && let Some(failed) = items.iter().find(|item| item.outcome != Outcome::Ok) {
        message.push_str(&format!("; {}: {}", failed.id, failed.reason.as_deref().unwrap_or("failed")));
    }
    Tally { outcome, applied, message }
}

/// The final report of a bulk call; an unresolved item escalates the call.
pub(crate) fn summarise(run: &Run<'_>, items: Vec<Item>, words: Words) -> Report<()> {
    let Tally { outcome, applied, message } = tally(run.spec, &items, words);
    let reason =
        if outcome == Outcome::Ok { crate::report::Reason::Done } else { crate::report::Reason::Items };
    let mut report = run.report::<()>(outcome, applied, message, None, reason);
    report.value = (outcome == Outcome::Ok).then_some(());
    report.items = items;
    report
}
