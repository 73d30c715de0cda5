//! Effect kinds and the retry policy each one carries: the table lives in the `tool-contract-effect`
//! crate, which the `#[tool]` attribute reads too, so the engine and the attribute's checks cannot
//! disagree on which kinds need a probe.

pub use tool_contract_effect::{
    AutoRetry, BeforeSecond, DEFAULT_HORIZON, EffectKind, HorizonRule, Policy, ProbeRule, UnknownEffect,
    horizon_text,
};
