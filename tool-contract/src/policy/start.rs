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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Outcome;

    /// The start-of-call decision as a table: every last word the log can hold, for every kind.
    #[test]
    fn the_start_of_a_call_as_a_table() {
        use crate::person::Settle as Settlement;
        use crate::records::{Phase, Recall, Verdict};
        let record = super::super::tests::record;
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
}
