//! The start-of-call decision: what a call does first, from what the log holds of its intent.

use super::asks_approval;
use crate::effect::EffectKind;
use crate::report::Applied;

/// What a call does first, from what the log holds of its intent ([`start`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Nothing stands in the way: the next attempt, as a first one (no record, or an end that applied
    /// nothing of a kind whose next attempt needs nobody's yes).
    Fresh,
    /// The last word is `ok`: answer from the log, nothing sent again.
    Replay,
    /// A person settled the last attempt `landed`: answer from the settlement, nothing sent or probed.
    Settled,
    /// The last attempt applied nothing for sure (a person's `not_landed`, or a `money` attempt's own end
    /// with effect `no`): what the log says stands for the probe's "not landed", and the next attempt is
    /// a second attempt of the intent, decided by [`next`](super::next), which asks the approver first
    /// where the kind needs their yes (`money`, [`asks_approval`]).
    SecondAttempt,
    /// The last attempt may have landed (it never ended, or ended with its effect unknown): probe it
    /// before anything is sent.
    Probe,
}

/// The start-of-call decision: what a call of an intent of kind `kind` does first, given the intent's
/// last word in the log (`None`: never recorded). Pure, like [`next`](super::next): the engine maps it
/// and decides nothing else before the first step.
pub fn start(recall: Option<&crate::records::Recall>, kind: EffectKind) -> Start {
    use crate::records::LastWord;
    let Some(recall) = recall else { return Start::Fresh };
    let money = asks_approval(kind);
    if let Some(settled) = recall.settlement() {
        return match settled.verdict {
            crate::records::Verdict::Landed => Start::Settled,
            crate::records::Verdict::NotLanded => Start::SecondAttempt,
        };
    }
    match recall.last_word() {
        LastWord::Ok(_) => Start::Replay,
        LastWord::Unfinished => Start::Probe,
        // An end that applied nothing for sure leaves nothing to resolve; but money's next attempt is a
        // second attempt, which the approver says yes to first, in whichever call it comes.
        LastWord::Ended(_) if recall.last.effect_applied == Some(Applied::No) => {
            if money {
                Start::SecondAttempt
            } else {
                Start::Fresh
            }
        }
        LastWord::Ended(_) => Start::Probe,
    }
}

/// What a call resumes: one call, or a batch with the items its intent's last record lists (`None`
/// when that record lists none the call can read).
#[derive(Debug, Clone, Copy)]
pub enum Shape<'a> {
    /// A single call: [`start`] decides.
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

/// The start-of-call decision for a call of the shape `shape`: [`start`]'s for the intent as a whole,
/// which a batch refines from its items ([`item`]) unless a person settled the batch (their word is
/// for every item). A batch whose record lists no items it can read is as in doubt as its record says,
/// and is never answered from the log: a recorded `ok` without its items is probed, not replayed. One
/// whose items are all done answers from them; one with an item that may have landed probes; one with
/// items that applied nothing sends them again: as a first attempt where [`start`] says so, otherwise
/// as a second attempt of the intent (for `money`, after the approver's yes).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Outcome;

    /// The start-of-call decision as a table: every last word the log can hold, for every kind.
    #[test]
    fn the_start_of_a_call_as_a_table() {
        use crate::person::Settle as Settlement;
        use crate::records::{Phase, Recall, Record, Verdict};
        let record = |phase, outcome: Option<Outcome>, effect: Option<Applied>| Record {
            phase,
            task: "t".into(),
            call: "c".into(),
            intent_key: crate::Intent::new("t", "a", "c", "x").key(),
            attempt: 1,
            attempt_id: "t-a1".into(),
            started: "2026-12-01T00:00:00Z".into(),
            budget_left_s: 30,
            outcome,
            effect_applied: effect,
            probe: None,
            message: Some("m".into()),
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: None,
        };
        let unknown = record(Phase::End, Some(Outcome::Unknown), Some(Applied::Unknown));
        let settled = |verdict| {
            Settlement::new(verdict, "alice", "seen").record_for(&unknown, "2026-12-01T00:01:00Z".into())
        };
        let lasts = [
            ("started", record(Phase::Start, None, None)),
            ("ok", record(Phase::End, Some(Outcome::Ok), Some(Applied::Yes))),
            ("read ok", record(Phase::End, Some(Outcome::Ok), Some(Applied::No))),
            ("unknown", unknown.clone()),
            ("refused, effect no", record(Phase::End, Some(Outcome::Retryable), Some(Applied::No))),
            ("refused, effect unknown", record(Phase::End, Some(Outcome::Retryable), Some(Applied::Unknown))),
            ("permanent, effect no", record(Phase::End, Some(Outcome::Permanent), Some(Applied::No))),
            ("settled landed", settled(Verdict::Landed)),
            ("settled not landed", settled(Verdict::NotLanded)),
        ];
        use EffectKind::*;
        use Start::*;
        let (approve, again) = (SecondAttempt, SecondAttempt);
        // One row per last word: the decision for read, create, send, money, destructive.
        let table: [[Start; 5]; 9] = [
            [Probe, Probe, Probe, Probe, Probe],
            [Replay, Replay, Replay, Replay, Replay],
            [Replay, Replay, Replay, Replay, Replay],
            [Probe, Probe, Probe, Probe, Probe],
            [Fresh, Fresh, Fresh, approve, Fresh],
            [Probe, Probe, Probe, Probe, Probe],
            [Fresh, Fresh, Fresh, approve, Fresh],
            [Settled, Settled, Settled, Settled, Settled],
            [again, again, again, approve, again],
        ];
        for ((name, last), row) in lasts.into_iter().zip(table) {
            let recall = Recall { attempts: 1, last };
            for (kind, expected) in [Read, Create, Send, Money, Destructive].into_iter().zip(row) {
                assert_eq!(start(Some(&recall), kind), expected, "{name}, {kind:?}");
            }
        }
        assert_eq!(start(None, Money), Fresh, "never recorded");
    }

    /// A batch's start as a table: what its record lists, against the intent's start. A recorded item
    /// is sent again only when it applied nothing by the record's word, and a batch answers from the
    /// log only with every item at hand.
    #[test]
    fn the_start_of_a_batch_as_a_table() {
        use crate::records::{Phase, Recall, Record};
        use crate::report::{Item, Outcome};
        let record = |phase, outcome: Option<Outcome>, effect: Option<Applied>| Recall {
            attempts: 1,
            last: Record {
                phase,
                task: "t".into(),
                call: "c".into(),
                intent_key: crate::Intent::new("t", "a", "c", "x").key(),
                attempt: 1,
                attempt_id: "t-a1".into(),
                started: "2026-12-01T00:00:00Z".into(),
                budget_left_s: 30,
                outcome,
                effect_applied: effect,
                probe: None,
                message: None,
                retry_at: None,
                sent_by: None,
                args: None,
                value: None,
                settled: None,
                approval: None,
            },
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
}
