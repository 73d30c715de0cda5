//! The executor's loop over [`next`] as a value: what is known after an attempt, and what each step's
//! finding does to it. The engine carries the steps out (runs the probe, asks the approver or the
//! person, waits); the protocol model feeds this same type, so neither writes the rules again.

use super::{Facts, Horizon, PersonFact, Room, Step, next};
use crate::probe::ProbeMark;
use crate::records::Verdict;
use crate::report::{Applied, Outcome};

/// The policy's decision after an attempt that did not end `ok`, step by step.
///
/// Ask [`Decision::next`] for a step, carry it out, and tell the decision what it found
/// ([`Decision::probed`], [`Decision::approved`], [`Decision::person_said`], [`Decision::waited`]); ask
/// again, until the step is [`Step::Retry`] or [`Step::Stop`].
///
/// ```
/// use tool_contract::effect::EffectKind;
/// use tool_contract::policy::{Change, Decision, Facts, Horizon, PersonFact, Room, Step};
/// use tool_contract::probe::ProbeMark;
/// use tool_contract::spec::Dedupe;
/// use tool_contract::{Applied, Outcome};
///
/// let facts = Facts {
///     kind: EffectKind::Send,
///     dedupe: Dedupe::Probe,
///     has_probe: true,
///     has_approver: false,
///     outcome: Outcome::Unknown,
///     effect: Applied::Unknown,
///     probe: None,
///     approved: None,
///     made: 1,
///     max_attempts: 3,
///     room: Room::Enough,
///     horizon: Horizon::Passed,
///     retry_budget: true,
///     person: PersonFact::Nobody,
/// };
/// let mut decision = Decision::new(facts);
/// assert_eq!(decision.next(Room::Enough), Step::Probe);
/// // The probe looked before the attempt could no longer land: its "not landed" does not count yet.
/// assert_eq!(decision.probed(ProbeMark::NotLanded, || Horizon::Wait), Change::None);
/// assert_eq!(decision.next(Room::Enough), Step::WaitHorizon);
/// assert_eq!(decision.waited(), Change::None);
/// assert_eq!(decision.next(Room::Enough), Step::Probe);
/// // Looked again past the horizon: nothing landed, and a second attempt may go.
/// assert_eq!(decision.probed(ProbeMark::NotLanded, || Horizon::Passed), Change::NotLanded);
/// assert_eq!((decision.facts().outcome, decision.facts().effect), (Outcome::Retryable, Applied::No));
/// assert_eq!(decision.next(Room::Enough), Step::Retry);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decision {
    facts: Facts,
}

/// What a step's finding did to the call's outcome and effect, for the executor to say in its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing the report says changed.
    None,
    /// The attempt in doubt did not land, and can no longer: it applied nothing (the outcome is
    /// `retryable` if it was `unknown`).
    NotLanded,
    /// A "not landed" seen too early no longer stands: the effect is unknown again.
    InDoubt,
    /// The call began (its claim granted): what it does first, from what the log holds of its intent.
    Began(crate::policy::Start),
}

impl Decision {
    /// A decision on `facts`, what is known after the attempt.
    pub fn new(facts: Facts) -> Decision {
        Decision { facts }
    }

    /// What the decision knows now.
    pub fn facts(&self) -> &Facts {
        &self.facts
    }

    /// The next step, with `room` for another attempt in the budget left.
    pub fn next(&mut self, room: Room) -> Step {
        self.next_by(room, next)
    }

    /// [`Decision::next`] by the rule `next` (the policy's own, unless a test of the protocol swapped
    /// it for a broken one).
    pub fn next_by(&mut self, room: Room, next: fn(&Facts) -> Step) -> Step {
        self.facts.room = room;
        next(&self.facts)
    }

    /// The probe's verdict `mark` (a probe that errs is [`ProbeMark::Failed`]); `horizon` says where
    /// the attempt stood against its landing horizon when the probe looked, asked only of a verdict
    /// that does not find the effect.
    pub fn probed(&mut self, mark: ProbeMark, horizon: impl FnOnce() -> Horizon) -> Change {
        self.facts.probe = Some(mark);
        if mark == ProbeMark::Landed {
            return Change::None;
        }
        self.facts.horizon = horizon();
        if mark == ProbeMark::NotLanded && self.facts.horizon == Horizon::Passed {
            self.facts.outcome = resolved(self.facts.outcome);
            self.facts.effect = Applied::No;
            return Change::NotLanded;
        }
        Change::None
    }

    /// The approver's answer: `true` for yes; no, or none in time, is `false`.
    pub fn approved(&mut self, yes: bool) {
        self.facts.approved = Some(yes);
    }

    /// What the person asked said (`None`: no answer, or "can't tell"); `horizon` says where the
    /// attempt stood when they looked, asked only of a "not landed".
    pub fn person_said(&mut self, said: Option<Verdict>, horizon: impl FnOnce() -> Horizon) -> Change {
        match said {
            None => {
                self.facts.person = PersonFact::NoAnswer;
                Change::None
            }
            Some(Verdict::Landed) => {
                self.facts.person = PersonFact::Said(Verdict::Landed);
                Change::None
            }
            Some(Verdict::NotLanded) => {
                // Their word stands for the probe's "not landed", and counts as a probe's would: once
                // the attempt can no longer land.
                self.facts.person = PersonFact::Said(Verdict::NotLanded);
                (self.facts.outcome, self.facts.effect) = (Outcome::Retryable, Applied::No);
                self.facts.horizon = horizon();
                Change::NotLanded
            }
        }
    }

    /// The landing horizon was waited out: the probe looks again. A "not landed" seen before it (a
    /// probe's, or a person's) says nothing of what landed since, and a person whose word came too early
    /// is not asked again in this call: one question per attempt per call.
    pub fn waited(&mut self) -> Change {
        (self.facts.probe, self.facts.horizon) = (None, Horizon::Passed);
        if self.facts.person == PersonFact::Said(Verdict::NotLanded) {
            self.facts.person = PersonFact::NoAnswer;
        }
        if self.facts.effect == Applied::No {
            // Only a word seen too early said `no`: until the probe looks, the effect is unknown.
            (self.facts.outcome, self.facts.effect) = (Outcome::Unknown, Applied::Unknown);
            return Change::InDoubt;
        }
        Change::None
    }
}

/// The outcome of an attempt in doubt found not to have landed: `unknown` becomes `retryable`.
fn resolved(outcome: Outcome) -> Outcome {
    if outcome == Outcome::Unknown { Outcome::Retryable } else { outcome }
}

/// What a probe's verdict `mark` on an attempt means, as the log records it beside the verdict:
/// `horizon`, where the attempt stood when the probe looked; `ended`, the outcome the attempt ended
/// with and the call's effect so far (never `no` while an earlier attempt may have landed).
///
/// Landed is `ok`, effect `yes`. Not landed is `retryable`, effect `no`, once the attempt can no longer
/// land, and `unknown` before. A probe that could not tell leaves a call that applied nothing for sure
/// as its attempt ended, and any other in doubt: the call's report follows the same rule.
///
/// ```
/// use tool_contract::policy::{Horizon, verdict};
/// use tool_contract::probe::ProbeMark;
/// use tool_contract::{Applied, Outcome};
///
/// let lost = (Outcome::Unknown, Applied::Unknown);
/// assert_eq!(verdict(ProbeMark::NotLanded, Horizon::Wait, lost), lost);
/// assert_eq!(verdict(ProbeMark::NotLanded, Horizon::Passed, lost), (Outcome::Retryable, Applied::No));
/// let refused = (Outcome::Retryable, Applied::No);
/// assert_eq!(verdict(ProbeMark::Failed, Horizon::Passed, refused), refused);
/// ```
pub fn verdict(mark: ProbeMark, horizon: Horizon, ended: (Outcome, Applied)) -> (Outcome, Applied) {
    match mark {
        ProbeMark::Landed => (Outcome::Ok, Applied::Yes),
        ProbeMark::NotLanded if horizon != Horizon::Passed => (Outcome::Unknown, Applied::Unknown),
        ProbeMark::NotLanded => (Outcome::Retryable, Applied::No),
        ProbeMark::Failed if ended.1 == Applied::No => (ended.0, Applied::No),
        ProbeMark::Failed => (Outcome::Unknown, Applied::Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::EffectKind;

    /// The policy's own fixture, with a person who can be asked and no attempt made in this call.
    fn facts(kind: EffectKind) -> Facts {
        Facts { made: 0, person: PersonFact::CanAsk, ..crate::policy::tests::facts(kind) }
    }

    #[test]
    fn a_person_asked_once_whose_not_landed_came_early_is_not_asked_again() {
        let mut decision = Decision::new(facts(EffectKind::Send));
        assert_eq!(decision.next(Room::Enough), Step::Probe);
        assert_eq!(decision.probed(ProbeMark::Failed, || Horizon::Passed), Change::None);
        assert_eq!(decision.next(Room::Enough), Step::AskPerson);
        assert_eq!(decision.person_said(Some(Verdict::NotLanded), || Horizon::Wait), Change::NotLanded);
        assert_eq!(decision.next(Room::Enough), Step::WaitHorizon);
        // Waited out: their early "no" no longer stands, the probe looks again, and they are not asked.
        assert_eq!(decision.waited(), Change::InDoubt);
        assert_eq!((decision.facts().outcome, decision.facts().effect), (Outcome::Unknown, Applied::Unknown));
        assert_eq!(decision.next(Room::Enough), Step::Probe);
        assert_eq!(decision.probed(ProbeMark::Failed, || Horizon::Passed), Change::None);
        assert_eq!(decision.next(Room::Enough), Step::Stop(super::super::End::ProbeFailed));
    }

    #[test]
    fn a_landed_verdict_asks_no_horizon_and_a_money_retry_asks_the_approver() {
        let mut decision = Decision::new(facts(EffectKind::Money));
        decision.facts.person = PersonFact::Nobody;
        assert_eq!(decision.next(Room::Enough), Step::Probe);
        let asked = decision.probed(ProbeMark::NotLanded, || Horizon::Passed);
        assert_eq!(asked, Change::NotLanded);
        assert_eq!(decision.next(Room::Enough), Step::Approve);
        decision.approved(false);
        assert_eq!(decision.next(Room::Enough), Step::Stop(super::super::End::Denied));
        let mut landed = Decision::new(facts(EffectKind::Money));
        assert_eq!(
            landed.probed(ProbeMark::Landed, || unreachable!("a landed verdict needs no horizon")),
            Change::None
        );
        assert_eq!(landed.next(Room::Enough), Step::Stop(super::super::End::Landed));
    }

    #[test]
    fn a_verdict_on_a_refused_attempt_keeps_its_outcome() {
        let refused = (Outcome::Retryable, Applied::No);
        assert_eq!(verdict(ProbeMark::Landed, Horizon::Wait, refused), (Outcome::Ok, Applied::Yes));
        assert_eq!(verdict(ProbeMark::Failed, Horizon::Wait, refused), refused);
        let lost = (Outcome::Unknown, Applied::Unknown);
        assert_eq!(verdict(ProbeMark::Failed, Horizon::Passed, lost), lost);
        assert_eq!(verdict(ProbeMark::NotLanded, Horizon::TooLong, refused), lost);
    }
}
