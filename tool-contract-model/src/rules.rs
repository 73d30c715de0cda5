//! The decisions the model takes from the crate, each through one field of [`Rules`], so a test can
//! swap one for a broken one and watch the checker find the hole.

use std::time::Duration;

use tool_contract::journal::{Phase, Recall};
use tool_contract::policy::{self, Facts, Start, Step};
use tool_contract::rules::{self, Claiming, Fenced, Holder};

use crate::state::Who;

/// The claim rule's signature, on the model's owners and clock.
pub type ClaimRule = fn(Option<&Holder<Who, u8>>, &Who, u8, Option<u8>) -> Claiming<Who, u8>;
/// The fence's signature, on the model's owners and clock.
pub type FenceRule = fn(Option<&Holder<Who, u8>>, &Who, Phase, u32, bool, u32, u8) -> Result<(), Fenced<Who>>;

/// The rules the model's actors follow: by default ([`Rules::real`]) the crate's own functions.
#[derive(Clone, Copy)]
pub struct Rules {
    /// The claim rule ([`rules::claim`]).
    pub claim: ClaimRule,
    /// The fence ([`rules::fence`]).
    pub fence: FenceRule,
    /// A person's answer bound to the attempt examined ([`rules::answer_bound`]).
    pub answer_bound: fn(u32, &Recall) -> Option<String>,
    /// Whether a "not landed" observed at `observed` about an attempt started at `started` counts at
    /// `now` for a call whose deadline is `deadline`, with the tool's horizon ([`horizon`]).
    pub horizon: fn(Horizon) -> Landing,
    /// The start-of-call decision ([`policy::start`]).
    pub start: fn(Option<&Recall>, tool_contract::effect::EffectKind) -> Start,
    /// The decision after an attempt that did not end ok ([`policy::next`]).
    pub next: fn(&Facts) -> Step,
    /// The budget's rule for a start ([`rules::may_start`]).
    pub may_start: fn(Duration, Duration) -> bool,
}

impl Rules {
    /// The crate's own rules.
    pub fn real() -> Rules {
        Rules {
            claim: rules::claim,
            fence: rules::fence,
            answer_bound: rules::answer_bound,
            horizon,
            start: policy::start,
            next: policy::next,
            may_start: rules::may_start,
        }
    }
}

/// What the horizon's decision is given, in ticks of the model's clock.
#[derive(Debug, Clone, Copy)]
pub struct Horizon {
    /// When the attempt the verdict is about started (its start record's stamp).
    pub started: u8,
    /// When the verdict was observed (a probe's: now; a person's: their settlement's stamp).
    pub observed: u8,
    /// Now.
    pub now: u8,
    /// The call's deadline.
    pub deadline: u8,
    /// The tool's horizon: how long after being sent a request may still be applied.
    pub window: u8,
}

/// Whether a "not landed" can be trusted yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Landing {
    /// It was observed after the attempt's horizon: the attempt can no longer land.
    Past,
    /// Not yet, and the budget can hold the wait.
    Wait,
    /// Not yet, and the budget cannot hold the wait.
    TooLong,
}

/// The horizon rule as the contract states it (docs/contract.md, "the landing horizon"): a "not
/// landed" counts once it was observed past the attempt's start plus the window; before, the call
/// waits out the rest (and looks again) when its budget can hold it.
pub fn horizon(h: Horizon) -> Landing {
    let ends = h.started.saturating_add(h.window);
    if h.observed > ends {
        Landing::Past
    } else if ends.max(h.now) >= h.deadline {
        Landing::TooLong
    } else {
        Landing::Wait
    }
}

/// What a call knows when it asks the policy for its next step.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    /// The tool's kind.
    pub kind: tool_contract::effect::EffectKind,
    /// How the last attempt ended.
    pub outcome: tool_contract::Outcome,
    /// What is known of the effect.
    pub effect: tool_contract::Applied,
    /// The probe's (or a person's) verdict, once given.
    pub probe: Option<tool_contract::probe::ProbeMark>,
    /// The approver's answer, once given.
    pub approved: Option<bool>,
    /// Attempts made by this call.
    pub made: u32,
    /// Whether the budget can hold another attempt.
    pub room: bool,
}

/// The one place the model names the policy's landing horizon (`Facts::horizon`, `policy::Horizon`,
/// `Step::WaitHorizon`): the policy's facts with the horizon's decision in them, and the step by which
/// the policy says "wait it out, then look again".
pub fn policy_facts(k: &Known, landing: Landing) -> (Facts, Step) {
    let horizon = match landing {
        Landing::Past => policy::Horizon::Passed,
        Landing::Wait => policy::Horizon::Wait,
        Landing::TooLong => policy::Horizon::TooLong,
    };
    let facts = Facts {
        kind: k.kind,
        dedupe: tool_contract::spec::Dedupe::Probe,
        has_probe: true,
        has_approver: true,
        outcome: k.outcome,
        effect: k.effect,
        probe: k.probe,
        approved: k.approved,
        made: k.made,
        max_attempts: 3,
        room: if k.room { policy::Room::Enough } else { policy::Room::TooShort },
        horizon,
        retry_budget: true,
        // The model's person settles through the store, not as a step of a call.
        person: policy::PersonFact::Nobody,
    };
    (facts, Step::WaitHorizon)
}

/// One tick of the model's clock as the budget rules read it.
pub fn ticks(n: u8) -> Duration {
    Duration::from_secs(u64::from(n))
}
