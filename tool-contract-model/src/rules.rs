//! The decisions the model takes from the crate, each through one field of [`Rules`], so a test can
//! swap one for a broken one and watch the checker find the hole.

use std::time::Duration;

use tool_contract::journal::{Phase, Recall};
use tool_contract::policy::{self, Facts, Horizon, Start, Step};
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
    /// Whether a "not landed" counts yet ([`policy::landing`]): given when the attempt can no longer
    /// land (`None`: nothing of it in flight), when the verdict was seen, now, and the call's deadline.
    pub horizon: fn(Option<u8>, u8, u8, u8) -> Horizon,
    /// The start-of-call decision ([`policy::start`]).
    pub start: fn(Option<&Recall>, tool_contract::effect::EffectKind) -> Start,
    /// The decision after an attempt that did not end ok ([`policy::next`]).
    pub next: fn(&Facts) -> Step,
    /// The budget's rule for a start ([`rules::may_start`]).
    pub may_start: fn(Duration, Duration) -> bool,
    /// When a probe's verdict was seen, given when the probe looked and when it answered: when it
    /// looked, as the engine's executor judges it (`engine/execute.rs`; tests/engine/timing.rs holds
    /// the engine to it). The one rule here that is the model's own, kept as a field so a test can
    /// break it.
    pub verdict_seen: fn(u8, u8) -> u8,
    /// The owner id of a worker's call, given the worker (its name, kept across restarts), its process
    /// (one more at each restart) and the call's serial in that process: all three, as
    /// `journal::Owner::of_worker` writes `{name}.{incarnation}.{serial}`
    /// (`journal::tests::a_named_worker_restarted_claims_under_owner_ids_of_its_own` holds it).
    pub owner: fn(u8, u8, u8) -> Who,
}

impl Rules {
    /// The crate's own rules.
    pub fn real() -> Rules {
        Rules {
            claim: rules::claim,
            fence: rules::fence,
            answer_bound: rules::answer_bound,
            horizon: policy::landing,
            start: policy::start,
            next: policy::next,
            may_start: rules::may_start,
            verdict_seen: |looked, _answered| looked,
            owner: |worker, incarnation, call| Who { worker, incarnation, call },
        }
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

/// The policy's facts for a call that knows `k`, with `horizon`, the landing rule's answer
/// ([`policy::landing`]) about the "not landed" in hand.
pub fn policy_facts(k: &Known, horizon: Horizon) -> Facts {
    Facts {
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
    }
}

/// One tick of the model's clock as the budget rules read it.
pub fn ticks(n: u8) -> Duration {
    Duration::from_secs(u64::from(n))
}
