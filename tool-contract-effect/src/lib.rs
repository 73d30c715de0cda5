//! The effect kinds of tool-contract and the policy table each one carries: the one table the runtime's
//! executor of the policy and the `#[tool]` attribute's checks both read. Use it through the
//! `tool-contract` crate (`tool_contract::effect::EffectKind`).
//!
//! # Features
//!
//! | feature | what it adds | default |
//! |---|---|---|
//! | `serde` | `Serialize` and `Deserialize` for [`EffectKind`] (lowercase names), as the runtime crate uses it | no |
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// What a tool does to the world, which decides what a duplicate costs and so how it may be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum EffectKind {
    /// Changes nothing; a duplicate is harmless.
    Read,
    /// Creates something (a record, a ticket) under the idempotency key. A receiver that deduplicates
    /// by the key makes a duplicate harmless (`dedupe = "receiver"`); by default only the probe stands
    /// between a retry and a second object.
    Create,
    /// Sends something a human sees; a duplicate is visible.
    Send,
    /// Moves money; a duplicate is expensive to reverse.
    Money,
    /// Deletes or overwrites; a duplicate may be irreversible.
    Destructive,
}

/// Whether a tool of a kind must come with a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeRule {
    /// A read has nothing to find out.
    NotNeeded,
    /// Required unless the receiver deduplicates by the key (`dedupe = "receiver"`).
    RequiredUnlessReceiverDedupes,
    /// Always required.
    Required,
}

/// When the engine may start a second attempt on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoRetry {
    /// Retry with backoff and full jitter while the budget lasts.
    WithBackoff,
    /// Retry, always with the same key.
    SameKey,
    /// Retry only after the probe says the first attempt did not land.
    AfterProbeSaysNotLanded,
    /// Retry only after the probe says it did not land and an approver says yes.
    AfterProbeAndApproval,
    /// Never: resolve the state with the probe, then stop and report.
    Never,
}

/// What must happen between a failed attempt and the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeforeSecond {
    /// Nothing.
    Nothing,
    /// Run the probe when the tool has one.
    ProbeIfAny,
    /// Run the probe.
    Probe,
    /// Run the probe, then ask the approver.
    ProbeThenApproval,
    /// Run the probe to learn the state, then stop and report whatever it found.
    ProbeThenStop,
}

/// Who deduplicates a `create`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dedupe {
    /// Nobody but the probe and the attempt log.
    Probe,
    /// The receiver honours the idempotency key; a retry with the same key is safe without a probe.
    Receiver,
}

/// Which landing horizon a tool of a kind gets when it declares none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HorizonRule {
    /// None: a read changes nothing, so nothing waits on a request still held.
    None,
    /// [`DEFAULT_HORIZON`], unless the receiver deduplicates by the key (`dedupe = "receiver"`): then
    /// none, since a retry carries the same key and a request still held does not make a second effect.
    DefaultUnlessReceiverDedupes,
    /// [`DEFAULT_HORIZON`].
    Default,
}

impl HorizonRule {
    /// The landing horizon of a tool under this rule that declares none, given who deduplicates it:
    /// the one place the default is decided (the runtime's `ToolSpec::get_horizon` and the `#[tool]`
    /// attribute's checks both ask it).
    pub const fn horizon(self, dedupe: Dedupe) -> Duration {
        match (self, dedupe) {
            (HorizonRule::None, _) | (HorizonRule::DefaultUnlessReceiverDedupes, Dedupe::Receiver) => {
                Duration::ZERO
            }
            (HorizonRule::DefaultUnlessReceiverDedupes, Dedupe::Probe) | (HorizonRule::Default, _) => {
                DEFAULT_HORIZON
            }
        }
    }
}

/// One row of the policy table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Whether a probe is required.
    pub probe: ProbeRule,
    /// When an automatic second attempt is allowed.
    pub auto_retry: AutoRetry,
    /// What happens before a second attempt.
    pub before_second: BeforeSecond,
    /// The landing horizon of a tool that declares none ([`HorizonRule::horizon`] says which, given who
    /// deduplicates): how long after its caller stopped waiting for a request (its reply failed, its
    /// time limit passed, it was cancelled, its process died) the service may still apply it. A
    /// probe's (or a person's) "not landed" about an attempt counts only once this has passed; zero
    /// trusts it at once.
    pub horizon: HorizonRule,
}

/// The landing horizon of `send`, `money` and `destructive` tools that declare none, and of `create`
/// tools that declare none and whose receiver does not deduplicate by the key: 5 s. A service that
/// finishes a request a few seconds after its caller gave up (a queue behind a gateway, a worker that
/// was mid-request when the connection dropped) is then found by the probe, not sent twice. Its cost:
/// after a reset or a timeout, and after a restart, a probe that finds nothing is asked again up to 5 s
/// later before a second attempt; a budget that cannot hold that wait ends `unknown`.
pub const DEFAULT_HORIZON: Duration = Duration::from_secs(5);

impl EffectKind {
    /// Every kind, in order of the cost of a duplicate.
    pub const ALL: [EffectKind; 5] =
        [EffectKind::Read, EffectKind::Create, EffectKind::Send, EffectKind::Money, EffectKind::Destructive];

    /// The policy table, in one place: the engine's one executor of the policy reads it, and so do the
    /// `#[tool]` attribute's checks (which kinds need a probe), and the table of docs/contract.md is
    /// checked against it (`Display` of each column):
    ///
    /// | kind | probe | automatic retry | before a second attempt | landing horizon |
    /// |---|---|---|---|---|
    /// | `read` | not needed | with backoff and jitter | nothing | none |
    /// | `create` | required unless `dedupe = "receiver"` | same key | probe, if any | 5 s, none with `dedupe = "receiver"` |
    /// | `send` | required | after probe says not landed | probe | 5 s |
    /// | `money` | required | after probe and approval | probe, then approval | 5 s |
    /// | `destructive` | required | never | probe, then stop | 5 s |
    pub const fn policy(self) -> Policy {
        use AutoRetry as R;
        use BeforeSecond as B;
        use HorizonRule as H;
        use ProbeRule as P;
        match self {
            EffectKind::Read => Policy {
                probe: P::NotNeeded,
                auto_retry: R::WithBackoff,
                before_second: B::Nothing,
                horizon: H::None,
            },
            // A create's retry carries the same key: a receiver that deduplicates by it makes no second
            // effect of a request still held, and one that does not has only the probe, which waits.
            EffectKind::Create => Policy {
                probe: P::RequiredUnlessReceiverDedupes,
                auto_retry: R::SameKey,
                before_second: B::ProbeIfAny,
                horizon: H::DefaultUnlessReceiverDedupes,
            },
            EffectKind::Send => Policy {
                probe: P::Required,
                auto_retry: R::AfterProbeSaysNotLanded,
                before_second: B::Probe,
                horizon: H::Default,
            },
            EffectKind::Money => Policy {
                probe: P::Required,
                auto_retry: R::AfterProbeAndApproval,
                before_second: B::ProbeThenApproval,
                horizon: H::Default,
            },
            EffectKind::Destructive => Policy {
                probe: P::Required,
                auto_retry: R::Never,
                before_second: B::ProbeThenStop,
                horizon: H::Default,
            },
        }
    }

    /// What a duplicate of this kind is, in the words of the policy table.
    pub const fn duplicate(self) -> &'static str {
        match self {
            EffectKind::Read => "harmless",
            EffectKind::Create => "a second object, unless the receiver deduplicates by the key",
            EffectKind::Send => "visible to a human",
            EffectKind::Money => "expensive to reverse",
            EffectKind::Destructive => "possibly irreversible",
        }
    }

    /// The landing horizon of a tool of this kind that declares none, given who deduplicates it (the
    /// policy table's [`HorizonRule`]).
    pub const fn default_horizon(self, dedupe: Dedupe) -> Duration {
        self.policy().horizon.horizon(dedupe)
    }

    /// `false` for a read, `true` for every kind that changes the world.
    pub const fn has_side_effect(self) -> bool {
        !matches!(self, EffectKind::Read)
    }

    /// The lowercase name used in `#[tool(effect = "...")]` and in the log.
    pub const fn as_str(self) -> &'static str {
        match self {
            EffectKind::Read => "read",
            EffectKind::Create => "create",
            EffectKind::Send => "send",
            EffectKind::Money => "money",
            EffectKind::Destructive => "destructive",
        }
    }
}

/// A landing horizon in the words of the policy table: `none` for zero, else whole seconds (`5 s`).
pub fn horizon_text(horizon: Duration) -> String {
    match horizon {
        Duration::ZERO => "none".to_owned(),
        h if h.subsec_nanos() == 0 => format!("{} s", h.as_secs()),
        h => format!("{} ms", h.as_millis()),
    }
}

impl fmt::Display for EffectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ProbeRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProbeRule::NotNeeded => "not needed (rejected)",
            ProbeRule::RequiredUnlessReceiverDedupes => "required, unless `dedupe = \"receiver\"`",
            ProbeRule::Required => "required",
        })
    }
}

impl fmt::Display for HorizonRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HorizonRule::None => f.write_str("none"),
            HorizonRule::DefaultUnlessReceiverDedupes => {
                write!(f, "{}, none with `dedupe = \"receiver\"`", horizon_text(DEFAULT_HORIZON))
            }
            HorizonRule::Default => f.write_str(&horizon_text(DEFAULT_HORIZON)),
        }
    }
}

impl fmt::Display for AutoRetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AutoRetry::WithBackoff => "yes, backoff with full jitter, within budget",
            AutoRetry::SameKey => "yes, always with the same key",
            AutoRetry::AfterProbeSaysNotLanded => "only after the probe says it did not land",
            AutoRetry::AfterProbeAndApproval => {
                "only after the probe says it did not land and an approver says yes"
            }
            AutoRetry::Never => "never",
        })
    }
}

impl fmt::Display for BeforeSecond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BeforeSecond::Nothing => "nothing",
            BeforeSecond::ProbeIfAny => "probe, if there is one",
            BeforeSecond::Probe => "probe",
            BeforeSecond::ProbeThenApproval => "probe, then approval",
            BeforeSecond::ProbeThenStop => "probe resolves the state, then stop and report",
        })
    }
}

/// A name that is not one of the five effect kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEffect(pub String);

impl fmt::Display for UnknownEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown effect kind `{}`; expected one of read, create, send, money, destructive", self.0)
    }
}

impl std::error::Error for UnknownEffect {}

impl FromStr for EffectKind {
    type Err = UnknownEffect;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EffectKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownEffect(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_retry_without_looking_first() {
        for kind in EffectKind::ALL {
            let policy = kind.policy();
            let looks_first = policy.before_second != BeforeSecond::Nothing;
            assert_eq!(looks_first, kind.has_side_effect(), "{kind}");
        }
    }

    #[test]
    fn every_effect_only_the_probe_deduplicates_waits_for_the_horizon_by_default() {
        for kind in EffectKind::ALL {
            let waits = kind.default_horizon(Dedupe::Probe);
            let expected = if kind.has_side_effect() { DEFAULT_HORIZON } else { Duration::ZERO };
            assert_eq!(waits, expected, "{kind}");
        }
        // The receiver's key makes a create's retry safe: it waits for nothing. A receiver's key says
        // nothing to the other kinds, which the probe guards.
        for kind in EffectKind::ALL {
            let waits = !kind.default_horizon(Dedupe::Receiver).is_zero();
            let costly = matches!(kind, EffectKind::Send | EffectKind::Money | EffectKind::Destructive);
            assert_eq!(waits, costly, "{kind}");
        }
        assert_eq!(EffectKind::Create.policy().horizon.to_string(), "5 s, none with `dedupe = \"receiver\"`");
        assert_eq!(EffectKind::Send.policy().horizon.to_string(), "5 s");
        assert_eq!(EffectKind::Read.policy().horizon.to_string(), "none");
        assert_eq!(horizon_text(DEFAULT_HORIZON), "5 s");
        assert_eq!(horizon_text(Duration::ZERO), "none");
        assert_eq!(horizon_text(Duration::from_millis(1500)), "1500 ms");
    }

    #[test]
    fn names_round_trip() {
        for kind in EffectKind::ALL {
            assert_eq!(kind.as_str().parse::<EffectKind>(), Ok(kind));
        }
        let err = "write".parse::<EffectKind>().unwrap_err();
        assert!(err.to_string().contains("read, create, send, money, destructive"));
    }
}
