//! A batch's rules (bulk items, the pages of a read): how it starts from the items its last record
//! lists, and what the policy is told of its items after an attempt and after a probe. The policy
//! itself ([`next`](super::next)) is the same for every shape: a batch only folds its items into the
//! facts it decides from.

use super::Start;
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome};

/// What a call resumes: one call, or a batch with the items its intent's last record lists (`None`
/// when that record lists none the call can read).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape<'a> {
    /// A single call: [`start`](fn@super::start) decides.
    One,
    /// A batch (bulk items, the pages of a read): [`batch`] decides from its items.
    Batch(Option<&'a [crate::report::Item]>),
}

/// What a batch call does first with one item its intent's last record lists ([`item`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemStart {
    /// Done or refused for good: never sent again, reported as recorded.
    Done,
    /// Applied nothing, by the record's word: sent again.
    Open,
    /// May have landed: probed before anything of it is sent, and in doubt until the probe answers for
    /// it.
    Probe,
}

/// How a recorded item starts, listed by an attempt whose call ended or never finished (`unfinished`).
/// Only an item recorded as applying nothing is sent again: of an attempt that never finished, any
/// item not yet done or refused may have been sent; of one that ended, any item whose effect is not
/// `no` (unknown, or applied although not done) may have landed.
pub fn item(unfinished: bool, recorded: &crate::report::Item) -> ItemStart {
    use crate::report::Outcome;
    match (recorded.outcome, recorded.applied) {
        (Outcome::Ok | Outcome::Permanent, Applied::No | Applied::Yes) => ItemStart::Done,
        (Outcome::Ok | Outcome::Permanent, _) if unfinished => ItemStart::Done,
        (Outcome::Retryable | Outcome::Unknown, Applied::No) if !unfinished => ItemStart::Open,
        _ => ItemStart::Probe,
    }
}

/// The start-of-call decision for a call of the shape `shape`: `start`, the decision for the intent
/// as a whole ([`start`](fn@super::start)), which a batch refines from its items ([`item`]) unless a
/// person settled the batch (their word is for every item). A batch whose record lists no items it
/// can read is as in doubt as its record says, and is never answered from the log: a recorded `ok`
/// without its items is probed, not replayed. One whose items are all done answers from them; one
/// with an item that may have landed probes; one with items that applied nothing sends them again:
/// as a first attempt where `start` says so, otherwise as a second attempt of the intent (for
/// `money`, after the approver's yes).
pub fn batch(start: Start, recall: Option<&crate::records::Recall>, shape: Shape<'_>) -> Start {
    let Shape::Batch(items) = shape else { return start };
    let Some(recall) = recall.filter(|recall| recall.settlement().is_none()) else { return start };
    let Some(items) = items else {
        return if start == Start::Replay { Start::Probe } else { start };
    };
    let unfinished = recall.last_word() == crate::records::LastWord::Unfinished;
    let starts = || items.iter().map(|recorded| item(unfinished, recorded));
    if start == Start::Replay || starts().all(|item| item == ItemStart::Done) {
        Start::Replay
    } else if starts().any(|item| item == ItemStart::Probe) {
        Start::Probe
    } else if start == Start::Fresh {
        Start::Fresh
    } else {
        Start::SecondAttempt
    }
}

/// What a batch call does between its attempts, and before its first ([`between`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Between {
    /// Every item is done or refused: the call reports.
    Done,
    /// Send the items still open, at once: nothing is in doubt and nothing failed.
    Attempt,
    /// Decide by the policy ([`next`](super::next)) whether, when and what to send again.
    Decide,
}

/// What a batch call does between its attempts (and before its first): `open`, whether an item is
/// still to do (neither done nor refused); `failed`, whether the last attempt failed as a whole;
/// `in_doubt`, whether an item may have landed with no probe to say otherwise; `made`, how many
/// attempts this call made. A batch with nothing open and nothing failed is done. Before its first
/// attempt, one with nothing failed and nothing in doubt sends what is open at once (an earlier run's
/// items that applied nothing are sent as the intent's start decided). Every other is decided by the
/// policy, the same as a single call's failure: an item still open after an attempt of this call is a
/// retry, which waits, may need an approver, and counts against the attempt limit.
pub fn between(open: bool, failed: bool, in_doubt: bool, made: u32) -> Between {
    match (open, failed, in_doubt, made) {
        (false, false, _, _) => Between::Done,
        (_, false, false, 0) => Between::Attempt,
        _ => Between::Decide,
    }
}

/// How a batch's attempt ended as the policy is told, from how it ended as a whole (`whole`: its
/// failure, or `retryable` with nothing applied when it answered item by item) and whether any item
/// is still in doubt (`in_doubt`: it may have landed, and no probe has said otherwise). While an item
/// is in doubt the effect is never `no`; with none in doubt, the items still open applied nothing,
/// whatever the whole said, and a batch whose every item is known is not `unknown`.
pub fn batch_ended(whole: (Outcome, Applied), in_doubt: bool) -> (Outcome, Applied) {
    match (in_doubt, whole) {
        (true, (_, Applied::No)) => (Outcome::Unknown, Applied::Unknown),
        (true, whole) => whole,
        (false, (Outcome::Unknown, _)) => (Outcome::Retryable, Applied::No),
        (false, (outcome, _)) => (outcome, Applied::No),
    }
}

/// What a probe of a batch found, from what it found of its items: whether it could not tell of some
/// (`unsure`: it failed, or did not answer for an item in doubt), whether it found an item not landed
/// while the service may still hold it (`before_horizon`), whether any item is still to do
/// (`open_left`), and whether any item it asked about landed (`landed`). The verdict the log records
/// with the items, and the one the policy is told: `landed` only when nothing is left to do; an item
/// that landed beside others still to do is a "not landed" for the rest, which the policy retries.
pub fn batch_verdict(
    unsure: bool,
    before_horizon: bool,
    open_left: bool,
    landed: bool,
) -> (ProbeMark, ProbeMark) {
    match () {
        () if unsure => (ProbeMark::Failed, ProbeMark::Failed),
        () if before_horizon => (ProbeMark::NotLanded, ProbeMark::NotLanded),
        () if !open_left => (ProbeMark::Landed, ProbeMark::Landed),
        () if landed => (ProbeMark::Landed, ProbeMark::NotLanded),
        () => (ProbeMark::NotLanded, ProbeMark::NotLanded),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::EffectKind;
    use crate::policy::start;

    /// What a batch does between its attempts, as a table.
    #[test]
    fn between_attempts_a_batch_reports_sends_or_decides() {
        use Between::*;
        // (open, failed, in doubt, made)
        let rows = [
            ((false, false, false, 0), Done),
            ((false, false, false, 2), Done),
            ((false, true, false, 1), Decide),
            ((true, false, false, 0), Attempt),
            ((true, false, true, 0), Decide),
            ((true, true, false, 0), Decide),
            ((true, false, false, 1), Decide),
            ((true, false, true, 1), Decide),
        ];
        for ((open, failed, in_doubt, made), then) in rows {
            assert_eq!(between(open, failed, in_doubt, made), then, "{:?}", (open, failed, in_doubt, made));
        }
    }

    /// A batch's start as a table: what its record lists, against the intent's start. A recorded item
    /// is sent again only when it applied nothing by the record's word, and a batch answers from the
    /// log only with every item at hand.
    #[test]
    fn the_start_of_a_batch_as_a_table() {
        use crate::records::{Phase, Recall};
        use crate::report::{Item, Outcome};
        let record = |phase, outcome, effect| Recall {
            attempts: 1,
            last: super::super::tests::record(phase, outcome, effect),
        };
        let done = [Item::ok("1"), Item::permanent("2", "bad")];
        let open = [Item::ok("1"), Item::retryable("2", "429")];
        let doubt = [Item::ok("1"), Item::unknown("2", "reply lost")];
        let landed_not_done = [Item { applied: Applied::Yes, ..Item::retryable("2", "429") }];
        let ok = record(Phase::End, Some(Outcome::Ok), Some(Applied::Yes));
        let refused = record(Phase::End, Some(Outcome::Retryable), Some(Applied::No));
        let partial = record(Phase::End, Some(Outcome::Unknown), Some(Applied::Partial));
        let started = record(Phase::Start, None, None);
        use Start::*;
        type Row<'a> = (&'a str, &'a Recall, Option<&'a [Item]>, [Start; 2]);
        let rows: [Row<'_>; 11] = [
            // [send, money]
            ("ok, items listed", &ok, Some(&done), [Replay, Replay]),
            ("ok, no items", &ok, None, [Probe, Probe]),
            ("refused, no items", &refused, None, [Fresh, SecondAttempt]),
            ("refused, items open", &refused, Some(&open), [Fresh, SecondAttempt]),
            ("refused, an item in doubt", &refused, Some(&doubt), [Probe, Probe]),
            ("partial, items open", &partial, Some(&open), [SecondAttempt, SecondAttempt]),
            ("partial, an item in doubt", &partial, Some(&doubt), [Probe, Probe]),
            ("partial, an item applied but not done", &partial, Some(&landed_not_done), [Probe, Probe]),
            ("partial, every item done", &partial, Some(&done), [Replay, Replay]),
            ("never finished, items open", &started, Some(&open), [Probe, Probe]),
            ("never finished, no items", &started, None, [Probe, Probe]),
        ];
        for (name, recall, items, row) in rows {
            for (kind, expected) in [EffectKind::Send, EffectKind::Money].into_iter().zip(row) {
                let intent = start(Some(recall), kind);
                assert_eq!(batch(intent, Some(recall), Shape::Batch(items)), expected, "{name}, {kind:?}");
                assert_eq!(batch(intent, Some(recall), Shape::One), intent, "a single call: {name}");
            }
        }
        assert_eq!(batch(Fresh, None, Shape::Batch(None)), Fresh, "never recorded");
    }

    /// What a batch tells the policy after an attempt, as a table.
    #[test]
    fn a_batch_after_an_attempt_as_a_table() {
        use Applied::{No, Partial};
        use Outcome::{Permanent, Retryable};
        let unknown = (Outcome::Unknown, Applied::Unknown);
        let rows = [
            // (the whole, an item in doubt) -> what the policy is told
            ((Retryable, No), true, unknown),
            ((Retryable, Partial), true, (Retryable, Partial)),
            (unknown, true, unknown),
            (unknown, false, (Retryable, No)),
            ((Retryable, Partial), false, (Retryable, No)),
            ((Permanent, No), false, (Permanent, No)),
        ];
        for (whole, in_doubt, told) in rows {
            assert_eq!(batch_ended(whole, in_doubt), told, "{whole:?}, in doubt: {in_doubt}");
        }
    }

    /// What a batch's probe found, as a table: the verdict logged, and the one the policy is told.
    #[test]
    fn a_batch_probe_as_a_table() {
        use ProbeMark::*;
        let rows = [
            // (unsure, before the horizon, items left to do, some landed) -> (logged, told)
            ((true, true, true, true), (Failed, Failed)),
            ((false, true, true, true), (NotLanded, NotLanded)),
            ((false, false, false, true), (Landed, Landed)),
            ((false, false, false, false), (Landed, Landed)),
            ((false, false, true, true), (Landed, NotLanded)),
            ((false, false, true, false), (NotLanded, NotLanded)),
        ];
        for ((unsure, before, open, landed), told) in rows {
            assert_eq!(
                batch_verdict(unsure, before, open, landed),
                told,
                "{unsure} {before} {open} {landed}"
            );
        }
    }
}
