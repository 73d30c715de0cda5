//! A bounded model check of the tool-contract protocol with the crate's own rules in the loop
//! (docs/protocol.md).
//!
//! The model is a [`stateright::Model`]: workers calling one intent, the store with its claims and
//! fence, a service that applies, refuses or holds a request, a truthful probe that can fail, a person
//! who settles and approves, and a network that delays, drops, reorders and delivers late. A worker's
//! call is the engine's own call machine (`tool_contract::unstable::machine::Machine`), fed what the
//! call finds; the store's decisions are calls to [`Rules`], by default the crate's own functions
//! ([`tool_contract::rules`]); only the I/O is modelled.
//!
//! ```
//! use tool_contract::effect::EffectKind;
//! use tool_contract_model::{Config, Protocol, Rules, check};
//!
//! let config = Config { max_time: 3, crashes: 0, looks: 0, answers: 0, ..Config::ci(EffectKind::Send) };
//! let run = check(Protocol { config, rules: Rules::real() });
//! assert!(run.violations.is_empty(), "{:?}", run.violations);
//! assert!(run.states > 100);
//! ```

mod model;
pub mod properties;
mod rules;
mod state;
mod steps;
mod store;
mod timeline;

pub use model::{Act, Action, Config, Protocol, State, Worker};
pub use rules::Rules;
pub use state::{Msg, Who};
pub use timeline::{Run, check, check_for, check_until, check_with, timeline};
