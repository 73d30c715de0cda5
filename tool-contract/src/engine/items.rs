//! The items of a call in parts (bulk items, the pages of a read): each attempt's answer and each
//! probe verdict folded into them, and the report that counts them.

use super::state::Run;
use crate::classify::Class;
use crate::effect::EffectKind;
use crate::report::{Applied, Item, Outcome, Reason, Report};
use crate::spec::ToolSpec;

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

/// Fold the probe's verdict on one item in, `past` when the attempt's landing horizon has passed (the
/// service can no longer apply it). An item left in doubt sets `before_horizon` (not landed, but the
/// service may still hold it) or `unsure` (the probe could not tell, and why: the first item's reason
/// speaks for the batch, each item keeps its own).
pub(crate) fn fold_verdict(
    item: &mut Item,
    verdict: Item,
    past: bool,
    before_horizon: &mut bool,
    unsure: &mut Option<String>,
) {
    match verdict.applied {
        Applied::Yes => *item = Item::ok(verdict.id),
        // An item that applied nothing by the tool's own word stays as the tool said.
        Applied::No if item.outcome != Outcome::Unknown => {}
        Applied::No if past => {
            // Why the item was unknown, then what the probe found, as a single call says it.
            let why = match item.reason.as_deref() {
                Some(why) if !why.is_empty() => format!("{why}; the probe found it did not land"),
                _ => "the probe found it did not land".to_owned(),
            };
            *item = Item::retryable(verdict.id, why);
        }
        // Its reason stays why it was in doubt: the call's stop says how long the horizon has to run.
        Applied::No => *before_horizon = true,
        Applied::Unknown | Applied::Partial => {
            let why = verdict.reason.unwrap_or_else(|| "the probe could not tell".to_owned());
            item.reason = Some(why.clone());
            unsure.get_or_insert(why);
        }
    }
}

/// Whether an item is still to do: not done, not refused for good.
pub(crate) fn is_open(item: &Item) -> bool {
    matches!(item.outcome, Outcome::Retryable | Outcome::Unknown)
}

/// Fold one attempt's answer into the results: its per-item list, or its failure as a whole, which
/// every item it carried shares but those it reported before it was cut off. The failure, if any.
pub(crate) fn fold_answer(
    kind: EffectKind,
    results: &mut [Item],
    pending: &[usize],
    answer: Result<Vec<Item>, Class>,
    early: Vec<Item>,
) -> Option<Class> {
    match answer {
        Ok(mut reported) => {
            // The list returned has the last word: it comes first, and the first answer counts.
            reported.extend(early);
            merge(kind, results, pending, reported);
            None
        }
        Err(class) => {
            for &i in pending {
                let shared = Item {
                    id: results[i].id.clone(),
                    outcome: class.outcome(),
                    applied: class.effect(),
                    reason: Some(class.message().to_owned()),
                };
                results[i] = as_reported(kind, shared);
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
    }
}

/// The items as reported: one that an earlier attempt may have applied is never `no`.
pub(crate) fn honest(results: &[Item], maybe: &[bool]) -> Vec<Item> {
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
pub(crate) fn merge(kind: EffectKind, results: &mut [Item], pending: &[usize], reported: Vec<Item>) {
    let mut answered = vec![false; results.len()];
    for item in reported {
        if let Some(&i) = pending.iter().find(|&&i| results[i].id == item.id && !answered[i]) {
            answered[i] = true;
            results[i] = as_reported(kind, item);
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

/// An item as the call keeps it, from what an attempt said of it: a read's applied nothing, whatever
/// it says; a side effect's that is still to do but may have applied (its effect unknown, partial, or
/// even yes) is in doubt, `unknown` with its effect unknown (an item is one act: it landed or it did
/// not), so that it is probed, and its probe's "not landed" waits for the horizon, before it is sent
/// again. A retryable item is sent again only when it applied nothing.
fn as_reported(kind: EffectKind, mut item: Item) -> Item {
    if !kind.has_side_effect() {
        item.applied = Applied::No;
        if item.outcome == Outcome::Unknown {
            item.outcome = Outcome::Retryable;
        }
    } else if is_open(&item) && item.applied != Applied::No {
        (item.outcome, item.applied) = (Outcome::Unknown, Applied::Unknown);
    }
    item
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

/// The final report of a bulk call, its message the count of its items, then `why` it goes no further
/// (when there is more to say); an unresolved item escalates the call.
pub(crate) fn summarise(
    run: &Run<'_>,
    items: Vec<Item>,
    words: Words,
    why: &str,
    reason: Option<Reason>,
) -> Report<()> {
    let Tally { outcome, applied, mut message } = tally(run.spec(), &items, words);
    if !why.is_empty() {
        message.push_str("; ");
        message.push_str(why);
    }
    let reason = reason.unwrap_or(if outcome == Outcome::Ok { Reason::Done } else { Reason::Items });
    let mut report = run.report::<()>(outcome, applied, message, None, reason);
    report.value = (outcome == Outcome::Ok).then_some(());
    report.items = items;
    report
}
