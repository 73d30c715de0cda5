//! The decisions the model takes from the crate, each through one field of [`Rules`], so a test can
//! swap one for a broken one and watch the checker find the hole.

use std::time::Duration;

use tool_contract::journal::{Phase, Recall};
use tool_contract::rules::{self, Claiming, Fenced, Holder};
use tool_contract::spec::ToolSpec;
use tool_contract::unstable::machine::{Can, Hooks, Machine, Setup};

use crate::state::Who;

/// The claim rule's signature, on the model's owners and clock.
pub type ClaimRule = fn(Option<&Holder<Who, u8>>, &Who, u8, Option<u8>) -> Claiming<Who, u8>;
/// The fence's signature, on the model's owners and clock.
pub type FenceRule = fn(Option<&Holder<Who, u8>>, &Who, Phase, u32, bool, u32, u8) -> Result<(), Fenced<Who>>;

/// The rules the model's actors follow: by default ([`Rules::real`]) the crate's own functions. A
/// worker's decisions are its [`Machine`]'s, the engine's own type; `hooks` are the functions on that
/// machine's path a test may swap.
#[derive(Clone, Copy)]
pub struct Rules {
    /// The claim rule ([`rules::claim`]).
    pub claim: ClaimRule,
    /// The fence ([`rules::fence`]).
    pub fence: FenceRule,
    /// A person's answer bound to the attempt examined ([`rules::answer_bound`]).
    pub answer_bound: fn(u32, &Recall) -> Option<String>,
    /// The owner id of a worker's call, given the worker (its name, kept across restarts), its process
    /// (one more at each restart) and the call's serial in that process: all three, as
    /// `journal::Owner::of_worker` writes `{name}.{incarnation}.{serial}`
    /// (`journal::tests::a_named_worker_restarted_claims_under_owner_ids_of_its_own` holds it).
    pub owner: fn(u8, u8, u8) -> Who,
    /// The functions on the worker's machine's path ([`Hooks::real`]: the engine's).
    pub hooks: &'static Hooks<u8>,
}

/// The machine's functions as the engine runs them.
static REAL: Hooks<u8> = Hooks::real();

impl Rules {
    /// The crate's own rules.
    pub fn real() -> Rules {
        Rules {
            claim: rules::claim,
            fence: rules::fence,
            answer_bound: rules::answer_bound,
            owner: |worker, incarnation, call| Who { worker, incarnation, call },
            hooks: &REAL,
        }
    }

    /// A worker's call with `deadline`, by the model's bounds: its decisions are the engine's
    /// [`Machine`], run with these rules' hooks.
    pub fn machine(&self, config: &crate::Config, deadline: u8) -> Machine<u8> {
        // The model's tool: a probe, at most 3 attempts, the model's horizon; an approver to ask; its
        // person settles through the store, not as a step of a call.
        let tool = ToolSpec::new("post", config.kind).max_attempts(3).horizon(config.horizon());
        let setup = Setup::of(&tool, Can { probe: true, approver: true, person: false }, deadline);
        Machine::new(setup).with_hooks(self.hooks)
    }
}

/// One tick of the model's clock as the budget rules read it.
pub fn ticks(n: u8) -> Duration {
    Duration::from_secs(u64::from(n))
}
