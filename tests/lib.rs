//! Integration suite of tool-contract: the tests are the files beside this one; this library holds
//! what several of them share.

pub mod http_tools;

/// The README's compiled examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct Readme;

/// The compiled examples of the docs/ chapters, run as doctests: a chapter says only what compiles.
#[cfg(doctest)]
pub mod chapters {
    #[doc = include_str!("../docs/contract.md")]
    pub struct Contract;
    #[doc = include_str!("../docs/macro.md")]
    pub struct Macro;
    #[doc = include_str!("../docs/attempt-log.md")]
    pub struct AttemptLog;
    #[doc = include_str!("../docs/agent-surface.md")]
    pub struct AgentSurface;
    #[doc = include_str!("../docs/observability.md")]
    pub struct Observability;
    #[doc = include_str!("../docs/testing-kit.md")]
    pub struct TestingKit;
    #[doc = include_str!("../docs/fuzzing.md")]
    pub struct Fuzzing;
    #[doc = include_str!("../docs/unknown.md")]
    pub struct Unknown;
    #[doc = include_str!("../docs/console.md")]
    pub struct Console;
    #[doc = include_str!("../docs/FLEET.md")]
    pub struct Fleet;
    #[doc = include_str!("../docs/README.md")]
    pub struct ReadingOrder;
    #[doc = include_str!("../docs/protocol.md")]
    pub struct Protocol;
    // docs/postgres.md needs `tool-contract-postgres`: its holder is in that crate's lib.rs.
}
