//! The retry policy as the engine runs it: one pure function from what is known after an attempt that
//! did not end `ok` to the engine's next step. Not public API: the engine's, shared with the protocol
//! model (`tool-contract-model`), and hidden from the docs; docs/contract.md states the policy.
//!
//! [`EffectKind::policy`] is the table per kind; [`next`] reads that table and nothing else decides.
//! Single and bulk calls both ask it, so they cannot drift apart. In the order the rules apply:
//!
//! 1. A `permanent` outcome stops the call: the same call gives the same answer.
//! 2. Before a second attempt, the kind's [`BeforeSecond`] says whether to probe: never for a read; a
//!    `create` when it has a probe (without one, when `dedupe = "receiver"`, the receiver's key makes the
//!    retry safe); always for `send` and `money`; for `destructive`, when the effect may have landed. A
//!    probe that is needed and missing stops the call (`unknown` when the effect may have landed).
//! 3. The probe's verdict: landed ends the call `ok`; failed stops it (`unknown` when the effect may have
//!    landed); not landed (the probe's, or a person's) means nothing was applied only once the
//!    attempt's landing horizon has passed: the tool's horizon ([`crate::spec::ToolSpec::horizon`], by
//!    default the kind's, [`crate::effect::Policy::horizon`]) since the attempt's request could last
//!    have reached the service, and only if it was seen after that ([`landing`]: a verdict seen before
//!    says nothing of what landed since). Before that, wait and probe again, or end `unknown` when the
//!    budget cannot hold the wait; never a second attempt.
//! 4. The kind's [`AutoRetry`]: `destructive` never retries; an effect that may have landed is retried
//!    only by `create` (same key); everything else stops `unknown` and escalates.
//! 5. The attempt limit, then the budget (the next wait and the tool's floor must fit), then the
//!    service's retry budget ([`crate::budget`]), then, for `money`, the approver's yes. An approver
//!    who said no, or did not answer in time, is the reason the call stops, whatever the budget left
//!    after asking: the wait for the answer may have spent it.
//! 6. Otherwise: wait (backoff and `Retry-After`, within the budget) and attempt again.
//!
//! A person is a step of the same table ([`PersonFact`]): when the probe of an attempt that may have
//! landed cannot tell, and a person can be asked (a call resuming an intent in doubt, with an approver
//! to ask), the next step is [`Step::AskPerson`], once the attempt's landing horizon has passed (before
//! it, the call waits it out and probes again), so that what they see counts. Their `landed` ends the
//! call from their settlement; their `not_landed` stands for the probe's verdict; no answer leaves the
//! probe's failure standing.
//!
//! Before any attempt, `start` decides from what the log holds of the intent whether the call
//! answers from the log (a recorded `ok`, a person's `landed`), probes an attempt that may have landed,
//! makes a second attempt of an intent whose last attempt applied nothing (for `money`, after the
//! approver's yes), or starts afresh. Single, bulk and paged calls only map that decision onto a value
//! or onto items.

use crate::effect::{AutoRetry, BeforeSecond, EffectKind};
use crate::probe::ProbeMark;
use crate::records::Verdict;
use crate::report::{Applied, Outcome};
use crate::spec::Dedupe;

mod batch;
mod decision;
mod start;

pub use batch::{Between, ItemStart, Shape, batch, batch_ended, batch_verdict, between, item};
pub use decision::{Change, Decision, verdict};
pub use start::{Start, start};

/// What is known when the engine decides what to do after an attempt that did not end `ok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Facts {
    /// The tool's effect kind.
    pub kind: EffectKind,
    /// Who deduplicates a `create`.
    pub dedupe: Dedupe,
    /// Whether the tool has a probe.
    pub has_probe: bool,
    /// Whether the task has an approver (asked before a second attempt of `money`).
    pub has_approver: bool,
    /// How the last attempt ended.
    pub outcome: Outcome,
    /// What is known of the call's effect now, after the probe if one ran.
    pub effect: Applied,
    /// The probe's verdict on the last attempt, once asked.
    pub probe: Option<ProbeMark>,
    /// The approver's answer for the next attempt, once asked.
    pub approved: Option<bool>,
    /// Attempts made by this call, and the tool's limit.
    pub made: u32,
    /// The tool's attempt limit.
    pub max_attempts: u32,
    /// Whether the budget left can hold the next wait and an attempt.
    pub room: Room,
    /// Whether the last attempt's request may still be applied by the service (its landing horizon).
    pub horizon: Horizon,
    /// Whether the service's retry budget, shared by every task that calls it, has room for a retry.
    pub retry_budget: bool,
    /// Whether a person can be asked whether the attempt in doubt landed, and what they said.
    pub person: PersonFact,
}

/// What is known of the person who can settle an attempt in doubt when its probe cannot tell
/// ([`crate::person::Approve::settle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PersonFact {
    /// Nobody can be asked: the call did not resume an intent in doubt, the task has no approver, or
    /// the call's shape is not settled as a whole (a batch).
    Nobody,
    /// A person can be asked, and has not been yet (a call asks at most once).
    CanAsk,
    /// The person asked said this, and it is recorded as a settlement of the attempt.
    Said(Verdict),
    /// The person asked could not tell, did not answer in time, or their word was not recorded.
    NoAnswer,
}

/// Whether a "not landed" about the last attempt can be trusted yet: where the attempt stands against
/// its landing horizon (when it may have last reached the service, plus how long the service may still
/// apply it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Horizon {
    /// The horizon has passed (or the tool has none, or the attempt applied nothing by the service's
    /// own word): the attempt can no longer land.
    Passed,
    /// It has not passed; the budget can hold the rest of it.
    Wait,
    /// It has not passed, and the budget cannot hold the rest of it.
    TooLong,
}

/// Whether a "not landed" counts yet, on any clock (the engine's instants, the protocol model's ticks):
/// the one rule every reader of a "not landed" follows.
///
/// - `ends`: when the attempt can no longer land, its request's last possible reach of the service plus
///   the tool's landing horizon; `None` when no request of it can be in flight (none was sent, or the
///   service's own answer said it applied nothing).
/// - `observed`: when the "not landed" was seen: a probe's, when it ran; a person's, when they settled.
/// - `now`, and `deadline`, the call's.
///
/// A verdict seen once the attempt could no longer land counts. One seen before says nothing of what
/// landed since, however long ago that was: the call waits out what is left of the horizon (nothing,
/// if it has passed) and looks again, or stops when its budget cannot hold that.
///
/// ```
/// use tool_contract::policy::{Horizon, landing};
///
/// assert_eq!(landing(Some(10), 12, 12, 30), Horizon::Passed);
/// assert_eq!(landing(None, 3, 3, 30), Horizon::Passed);
/// // Seen at 8, before the horizon ended at 10: looked at again, even at 20.
/// assert_eq!(landing(Some(10), 8, 20, 30), Horizon::Wait);
/// assert_eq!(landing(Some(10), 8, 8, 10), Horizon::TooLong);
/// ```
pub fn landing<T: Ord + Copy>(ends: Option<T>, observed: T, now: T, deadline: T) -> Horizon {
    match ends {
        None => Horizon::Passed,
        Some(ends) if observed >= ends => Horizon::Passed,
        Some(ends) if ends.max(now) >= deadline => Horizon::TooLong,
        Some(_) => Horizon::Wait,
    }
}

/// When an attempt can no longer land, as [`landing`] takes it: `reached`, until when its request may
/// have reached the service ([`crate::rules::reached_by`]), plus the tool's landing horizon (`plus`);
/// `None` when no request of it can be in flight: none was sent, or the service's own answer said it
/// applied nothing (`answered` is [`Applied::No`]). A "not landed" from anyone else (a probe, a person)
/// is what [`landing`] judges, so it does not count here.
///
/// ```
/// use tool_contract::Applied;
/// use tool_contract::policy::landing_ends;
///
/// assert_eq!(landing_ends(Some(4), Applied::Unknown, |at| at + 5), Some(9));
/// assert_eq!(landing_ends(Some(4), Applied::No, |at| at + 5), None);
/// assert_eq!(landing_ends(None::<u8>, Applied::Unknown, |at| at + 5), None);
/// ```
pub fn landing_ends<T>(reached: Option<T>, answered: Applied, plus: impl FnOnce(T) -> T) -> Option<T> {
    if answered == Applied::No { None } else { reached.map(plus) }
}

/// Whether the budget left can hold the next wait and an attempt of at least the tool's floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Room {
    /// It can.
    Enough,
    /// The service asked for a wait (`Retry-After`) longer than the budget can hold.
    AskedTooLong,
    /// The backoff and the floor do not fit in what is left.
    TooShort,
}

/// The engine's next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Run the probe.
    Probe,
    /// Ask the approver.
    Approve,
    /// Ask a person whether the attempt in doubt landed (the probe could not tell).
    AskPerson,
    /// Wait until the attempt's landing horizon has passed, then probe again.
    WaitHorizon,
    /// Wait (backoff, `Retry-After`) and attempt again.
    Retry,
    /// Stop and report.
    Stop(End),
}

/// Why the call stops, which decides its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The probe found the effect: `ok`, effect `yes`.
    Landed,
    /// A person settled the attempt in doubt as landed: `ok`, effect `yes`, from their settlement.
    Settled,
    /// The attempt's own outcome stands (`permanent`, or a failure that applied nothing).
    AsIs,
    /// A probe was needed and the tool has none.
    NoProbe,
    /// The probe could not tell.
    ProbeFailed,
    /// The probe found nothing, but the attempt's landing horizon lies past the budget.
    BeforeHorizon,
    /// The effect may have landed and the kind may not repeat it: `unknown`, escalated.
    Unresolved,
    /// The kind never retries on its own (`destructive`).
    NeverRetried,
    /// The attempt limit is reached.
    GaveUp,
    /// The budget cannot hold the next wait and attempt.
    OutOfBudget(Room),
    /// A `money` call has no approver to ask.
    NoApprover,
    /// The approver said no.
    Denied,
    /// The service's retry budget is spent: a storm of retries against it is under way.
    RetryBudgetSpent,
    /// The budget left cannot hold an attempt of the tool's floor: none is started.
    NotStarted,
    /// The store did not confirm the attempt's start record, so it was not sent: the fence refused it
    /// (`fenced`: another owner holds the intent, and what it did is its own), or the store failed.
    Unstarted {
        /// The store's fence refused the record.
        fenced: bool,
    },
    /// Another owner holds the intent's claim longer than the budget can wait: nothing is started.
    Busy,
}

/// The next step after an attempt that did not end `ok`: the policy table of [`EffectKind::policy`],
/// executed.
pub fn next(f: &Facts) -> Step {
    let policy = f.kind.policy();
    if f.outcome == Outcome::Permanent {
        return Step::Stop(End::AsIs);
    }
    let maybe = f.effect != Applied::No;
    if f.probe.is_none() {
        let wanted = match policy.before_second {
            BeforeSecond::Nothing => false,
            BeforeSecond::ProbeIfAny => f.has_probe || (maybe && f.dedupe == Dedupe::Probe),
            BeforeSecond::Probe | BeforeSecond::ProbeThenApproval => true,
            BeforeSecond::ProbeThenStop => maybe,
        };
        if wanted {
            return if f.has_probe { Step::Probe } else { Step::Stop(End::NoProbe) };
        }
    }
    // A person's word stands for the verdict of a probe that could not tell.
    let verdict = match (f.probe, f.person) {
        // Asked only once the attempt can no longer land, so a "not landed" they give counts.
        (Some(ProbeMark::Failed), PersonFact::CanAsk) if maybe && f.horizon == Horizon::Wait => {
            return Step::WaitHorizon;
        }
        (Some(ProbeMark::Failed), PersonFact::CanAsk) if maybe => return Step::AskPerson,
        (Some(ProbeMark::Failed), PersonFact::Said(Verdict::Landed)) => return Step::Stop(End::Settled),
        (Some(ProbeMark::Failed), PersonFact::Said(Verdict::NotLanded)) => Some(ProbeMark::NotLanded),
        (probe, _) => probe,
    };
    match verdict {
        Some(ProbeMark::Landed) => return Step::Stop(End::Landed),
        Some(ProbeMark::Failed) => return Step::Stop(End::ProbeFailed),
        // Not landed is trusted once the attempt can no longer land.
        Some(ProbeMark::NotLanded) => match f.horizon {
            Horizon::Passed => {}
            Horizon::Wait => return Step::WaitHorizon,
            Horizon::TooLong => return Step::Stop(End::BeforeHorizon),
        },
        None => {}
    }
    match policy.auto_retry {
        AutoRetry::Never => return Step::Stop(End::NeverRetried),
        AutoRetry::SameKey => {}
        AutoRetry::WithBackoff | AutoRetry::AfterProbeSaysNotLanded | AutoRetry::AfterProbeAndApproval
            if maybe =>
        {
            return Step::Stop(End::Unresolved);
        }
        _ => {}
    }
    if f.made >= f.max_attempts {
        return Step::Stop(End::GaveUp);
    }
    // An approver's no (or no answer), once asked, is why the call stops, whatever the budget left
    // after asking.
    if f.approved == Some(false) {
        return Step::Stop(End::Denied);
    }
    if f.room != Room::Enough {
        return Step::Stop(End::OutOfBudget(f.room));
    }
    if !f.retry_budget {
        return Step::Stop(End::RetryBudgetSpent);
    }
    if asks_approval(f.kind) {
        match f.approved {
            None if !f.has_approver => return Step::Stop(End::NoApprover),
            None => return Step::Approve,
            Some(false) => return Step::Stop(End::Denied),
            Some(true) => {}
        }
    }
    Step::Retry
}

/// Whether a second attempt of a tool of kind `kind` needs the approver's yes (`money`), by the policy
/// table: the one place this rule is read, by [`next`], by `start` and by a batch resumed from its
/// items.
pub fn asks_approval(kind: EffectKind) -> bool {
    kind.policy().auto_retry == AutoRetry::AfterProbeAndApproval
}

#[cfg(test)]
mod tests {
    use super::*;
    use EffectKind::*;

    /// A record of attempt 1 of one intent in `phase`, ended as `outcome` and `effect` (none for a start):
    /// what the tables of the start of a call read.
    pub(super) fn record(
        phase: crate::records::Phase,
        outcome: Option<Outcome>,
        effect: Option<Applied>,
    ) -> crate::records::Record {
        crate::records::Record {
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
        }
    }

    /// What is known after a side effect's attempt in doubt (a read's that failed), before any step.
    pub(super) fn facts(kind: EffectKind) -> Facts {
        Facts {
            kind,
            dedupe: Dedupe::Probe,
            has_probe: kind.has_side_effect(),
            has_approver: true,
            outcome: Outcome::Unknown,
            effect: if kind.has_side_effect() { Applied::Unknown } else { Applied::No },
            probe: None,
            approved: None,
            made: 1,
            max_attempts: 3,
            room: Room::Enough,
            horizon: Horizon::Passed,
            retry_budget: true,
            person: PersonFact::Nobody,
        }
    }

    /// One call's decisions in order: after a timeout, the probe says `verdict`, the approver says yes.
    fn walk(f: Facts, verdict: ProbeMark) -> Vec<Step> {
        walk_asking(f, verdict, PersonFact::NoAnswer)
    }

    /// [`walk`], with a person who, asked, answers `answer`; the engine then takes their `not_landed`
    /// as it takes the probe's.
    fn walk_asking(mut f: Facts, verdict: ProbeMark, answer: PersonFact) -> Vec<Step> {
        let mut steps = Vec::new();
        loop {
            let step = next(&f);
            steps.push(step);
            match step {
                Step::Probe => {
                    f.probe = Some(verdict);
                    if verdict == ProbeMark::NotLanded {
                        f.effect = Applied::No;
                    }
                }
                Step::Approve => f.approved = Some(true),
                Step::AskPerson => {
                    f.person = answer;
                    if answer == PersonFact::Said(Verdict::NotLanded) {
                        (f.outcome, f.effect) = (Outcome::Retryable, Applied::No);
                    }
                }
                Step::WaitHorizon => f.horizon = Horizon::Passed,
                Step::Retry | Step::Stop(_) => return steps,
            }
        }
    }

    #[test]
    fn after_a_timeout_each_kind_does_what_its_row_says() {
        use ProbeMark::*;
        use Step::*;
        let rows: [(EffectKind, ProbeMark, &[Step]); 10] = [
            (Read, NotLanded, &[Retry]),
            (Create, NotLanded, &[Probe, Retry]),
            (Create, Landed, &[Probe, Stop(End::Landed)]),
            (Send, NotLanded, &[Probe, Retry]),
            (Send, Landed, &[Probe, Stop(End::Landed)]),
            (Send, Failed, &[Probe, Stop(End::ProbeFailed)]),
            (Money, NotLanded, &[Probe, Approve, Retry]),
            (Money, Failed, &[Probe, Stop(End::ProbeFailed)]),
            (Destructive, NotLanded, &[Probe, Stop(End::NeverRetried)]),
            (Destructive, Landed, &[Probe, Stop(End::Landed)]),
        ];
        for (kind, verdict, steps) in rows {
            assert_eq!(walk(facts(kind), verdict), steps, "{kind} with the probe saying {verdict:?}");
        }
    }

    /// The person step as a table: a call resuming an intent in doubt whose probe cannot tell.
    #[test]
    fn a_person_is_asked_once_when_the_probe_cannot_tell_and_their_word_decides() {
        use PersonFact::{CanAsk, NoAnswer, Nobody, Said};
        use Step::{AskPerson, Probe, Retry, Stop};
        let (landed, not_landed) = (Said(Verdict::Landed), Said(Verdict::NotLanded));
        let rows: [(EffectKind, PersonFact, PersonFact, &[Step]); 10] = [
            (Send, CanAsk, landed, &[Probe, AskPerson, Stop(End::Settled)]),
            (Send, CanAsk, not_landed, &[Probe, AskPerson, Retry]),
            (Create, CanAsk, not_landed, &[Probe, AskPerson, Retry]),
            (Money, CanAsk, not_landed, &[Probe, AskPerson, Step::Approve, Retry]),
            (Money, CanAsk, landed, &[Probe, AskPerson, Stop(End::Settled)]),
            (Destructive, CanAsk, not_landed, &[Probe, AskPerson, Stop(End::NeverRetried)]),
            (Send, CanAsk, NoAnswer, &[Probe, AskPerson, Stop(End::ProbeFailed)]),
            // Nobody to ask: the probe's failure stands.
            (Send, Nobody, landed, &[Probe, Stop(End::ProbeFailed)]),
            // Asked once: a person who gave no answer is not asked again.
            (Send, NoAnswer, landed, &[Probe, Stop(End::ProbeFailed)]),
            // A read has no probe to fail: nobody is asked.
            (Read, CanAsk, landed, &[Retry]),
        ];
        for (kind, person, answer, steps) in rows {
            let resumed = Facts { made: 0, person, ..facts(kind) };
            let walked = walk_asking(resumed, ProbeMark::Failed, answer);
            assert_eq!(walked, steps, "{kind}, {person:?}, answering {answer:?}");
        }
        // An attempt known to have applied nothing is not in doubt: its failed probe asks nobody.
        let applied_nothing = Facts {
            outcome: Outcome::Retryable,
            effect: Applied::No,
            probe: Some(ProbeMark::Failed),
            person: CanAsk,
            ..facts(Send)
        };
        assert_eq!(next(&applied_nothing), Stop(End::ProbeFailed));
        // A person's not landed waits for the landing horizon as the probe's does.
        let early = Facts {
            outcome: Outcome::Retryable,
            effect: Applied::No,
            probe: Some(ProbeMark::Failed),
            person: not_landed,
            horizon: Horizon::Wait,
            ..facts(Send)
        };
        assert_eq!(next(&early), Step::WaitHorizon);
        // Before the horizon a person is not asked yet: the call waits it out and probes again, so a
        // "not landed" they give is seen once the attempt can no longer land.
        for kind in [Create, Send, Money, Destructive] {
            let resumed = Facts { made: 0, person: CanAsk, horizon: Horizon::Wait, ..facts(kind) };
            let probed = Facts { probe: Some(ProbeMark::Failed), ..resumed };
            assert_eq!(next(&probed), Step::WaitHorizon, "{kind}");
            assert_eq!(next(&Facts { horizon: Horizon::Passed, ..probed }), AskPerson, "{kind}");
            assert_eq!(next(&Facts { horizon: Horizon::TooLong, ..probed }), AskPerson, "{kind}");
        }
    }

    #[test]
    fn a_spent_retry_budget_stops_the_retry_after_the_probe_and_before_the_approver() {
        use ProbeMark::*;
        use Step::*;
        let spent = |kind| Facts { retry_budget: false, ..facts(kind) };
        let rows: [(EffectKind, ProbeMark, &[Step]); 5] = [
            (Read, NotLanded, &[Stop(End::RetryBudgetSpent)]),
            (Send, NotLanded, &[Probe, Stop(End::RetryBudgetSpent)]),
            // The probe still resolves what may have landed: the budget refuses retries, not reads.
            (Send, Landed, &[Probe, Stop(End::Landed)]),
            (Money, NotLanded, &[Probe, Stop(End::RetryBudgetSpent)]),
            (Destructive, NotLanded, &[Probe, Stop(End::NeverRetried)]),
        ];
        for (kind, verdict, steps) in rows {
            assert_eq!(walk(spent(kind), verdict), steps, "{kind} with the probe saying {verdict:?}");
        }
    }

    #[test]
    fn without_a_probe_only_a_receiver_deduplicated_create_retries_an_unknown() {
        for kind in [Send, Money, Destructive] {
            let f = Facts { has_probe: false, ..facts(kind) };
            assert_eq!(next(&f), Step::Stop(End::NoProbe), "{kind}");
        }
        let receiver = Facts { has_probe: false, dedupe: Dedupe::Receiver, ..facts(Create) };
        assert_eq!(next(&receiver), Step::Retry);
        let unprotected = Facts { has_probe: false, ..facts(Create) };
        assert_eq!(next(&unprotected), Step::Stop(End::NoProbe));
    }

    #[test]
    fn a_failure_that_applied_nothing_is_still_probed_before_a_second_send() {
        let refused = Facts { outcome: Outcome::Retryable, effect: Applied::No, ..facts(Send) };
        assert_eq!(walk(refused, ProbeMark::NotLanded), [Step::Probe, Step::Retry]);
        // A destructive call that applied nothing for sure needs no probe, and still never retries.
        let destructive = Facts { outcome: Outcome::Retryable, effect: Applied::No, ..facts(Destructive) };
        assert_eq!(next(&destructive), Step::Stop(End::NeverRetried));
    }

    #[test]
    fn not_landed_is_trusted_only_past_the_landing_horizon() {
        for kind in [Create, Send, Money, Destructive] {
            let before = Facts { probe: Some(ProbeMark::NotLanded), horizon: Horizon::Wait, ..facts(kind) };
            assert_eq!(next(&before), Step::WaitHorizon, "{kind}");
            let past_budget = Facts { horizon: Horizon::TooLong, ..before };
            assert_eq!(next(&past_budget), Step::Stop(End::BeforeHorizon), "{kind}");
            // Never a second attempt before the horizon, whatever the approver said.
            let approved = Facts { approved: Some(true), effect: Applied::No, ..past_budget };
            assert_eq!(next(&approved), Step::Stop(End::BeforeHorizon), "{kind}");
        }
        let past_budget =
            Facts { probe: Some(ProbeMark::NotLanded), horizon: Horizon::TooLong, ..facts(Send) };
        // A verdict of landed needs no horizon.
        let landed = Facts { probe: Some(ProbeMark::Landed), ..past_budget };
        assert_eq!(next(&landed), Step::Stop(End::Landed));
    }

    #[test]
    fn limits_stop_in_order_attempts_then_budget_then_approval() {
        let probed = |kind| Facts { probe: Some(ProbeMark::NotLanded), effect: Applied::No, ..facts(kind) };
        let spent = Facts { made: 3, room: Room::TooShort, ..probed(Money) };
        assert_eq!(next(&spent), Step::Stop(End::GaveUp));
        let short = Facts { room: Room::AskedTooLong, ..probed(Money) };
        assert_eq!(next(&short), Step::Stop(End::OutOfBudget(Room::AskedTooLong)));
        assert_eq!(next(&Facts { has_approver: false, ..probed(Money) }), Step::Stop(End::NoApprover));
        assert_eq!(next(&Facts { approved: Some(false), ..probed(Money) }), Step::Stop(End::Denied));
        // Asking may spend the budget (a person who does not answer): the no is still the reason.
        let asked_out =
            Facts { approved: Some(false), room: Room::TooShort, retry_budget: false, ..probed(Money) };
        assert_eq!(next(&asked_out), Step::Stop(End::Denied));
        assert_eq!(next(&Facts { approved: Some(true), ..probed(Money) }), Step::Retry);
    }

    #[test]
    fn permanent_stops_every_kind_and_an_unresolved_effect_stops_all_but_create() {
        for kind in EffectKind::ALL {
            let f = Facts { outcome: Outcome::Permanent, ..facts(kind) };
            assert_eq!(next(&f), Step::Stop(End::AsIs), "{kind}");
        }
        // The probe ran and could tell nothing new (a verdict of not landed on an effect still unknown
        // cannot happen; an unknown effect with no probe needed can): only create repeats itself.
        let unknown = |kind| Facts { probe: Some(ProbeMark::NotLanded), ..facts(kind) };
        assert_eq!(next(&unknown(Create)), Step::Retry);
        assert_eq!(next(&unknown(Send)), Step::Stop(End::Unresolved));
    }

    /// The table as the engine carries it out: a first attempt whose reply was lost, then the probe's
    /// verdict, then whatever the engine does; counted at the tool and at the probe.
    #[tokio::test(start_paused = true)]
    async fn the_engine_runs_the_table() {
        use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
        use std::time::Duration;

        use crate::classify::Class;
        use crate::probe::Probe;
        use crate::task::Task;
        use crate::{Approval, EscalationQueue, ToolSpec, engine};

        let rows: [(EffectKind, ProbeMark, u32, u32, Outcome); 10] = [
            (Read, ProbeMark::NotLanded, 2, 0, Outcome::Ok),
            // The probe at the reset finds nothing before the landing horizon (5 s by default, a create
            // only its probe deduplicates included): it is asked again once the horizon has passed,
            // and only then is the second attempt made.
            (Create, ProbeMark::NotLanded, 2, 2, Outcome::Ok),
            (Create, ProbeMark::Landed, 1, 1, Outcome::Ok),
            (Send, ProbeMark::NotLanded, 2, 2, Outcome::Ok),
            (Send, ProbeMark::Landed, 1, 1, Outcome::Ok),
            (Send, ProbeMark::Failed, 1, 1, Outcome::Unknown),
            (Money, ProbeMark::NotLanded, 2, 2, Outcome::Ok),
            (Money, ProbeMark::Failed, 1, 1, Outcome::Unknown),
            (Destructive, ProbeMark::NotLanded, 1, 2, Outcome::Retryable),
            (Destructive, ProbeMark::Landed, 1, 1, Outcome::Ok),
        ];
        for (kind, verdict, attempts, probes, outcome) in rows {
            let spec = ToolSpec::new("tool", kind);
            let task = Task::new(format!("table-{kind}-{verdict:?}"), "agent", Duration::from_secs(30))
                .approver(|_| async { Approval::Approved })
                .escalate_to(EscalationQueue::new());
            let (made, asked) = (AtomicU32::new(0), AtomicU32::new(0));
            let report = engine::run(
                &task,
                &spec,
                task.key(&spec, &"x", None),
                |_| async {
                    match made.fetch_add(1, SeqCst) {
                        0 => Err(Class::unknown("connection reset after the request was sent")),
                        _ => Ok(7u32),
                    }
                },
                |_| async {
                    asked.fetch_add(1, SeqCst);
                    match verdict {
                        ProbeMark::Landed => Probe::Landed(7u32),
                        ProbeMark::NotLanded => Probe::NotLanded,
                        ProbeMark::Failed => Probe::Failed("the thread cannot be read".to_owned()),
                    }
                },
            )
            .await;
            let row = format!("{kind} with the probe saying {verdict:?}: {}", report.message);
            assert_eq!(
                (made.load(SeqCst), asked.load(SeqCst), report.outcome),
                (attempts, probes, outcome),
                "{row}"
            );
        }
    }

    #[test]
    fn the_readme_table_is_this_table() {
        let readme = include_str!("../../docs/contract.md");
        for kind in EffectKind::ALL {
            let p = kind.policy();
            let row = format!(
                "| `{kind}` | {} | {} | {} | {} | {} |",
                kind.duplicate(),
                p.probe,
                p.auto_retry,
                p.before_second,
                p.horizon
            );
            assert!(readme.contains(&row), "docs/contract.md lacks the row\n{row}");
        }
    }
}
