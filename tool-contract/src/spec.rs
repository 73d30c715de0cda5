//! What the engine needs to know of a tool: its name, effect kind, floor and retry settings.

use std::time::Duration;

use crate::effect::EffectKind;

/// Who deduplicates a `create` (defined beside the policy table, whose default landing horizon for a
/// `create` depends on it).
pub use tool_contract_effect::Dedupe;

/// Exponential backoff between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first wait's ceiling.
    pub base: Duration,
    /// The largest wait.
    pub max: Duration,
    /// Whether each wait is drawn uniformly from zero to its ceiling ("full jitter").
    pub jitter: Jitter,
}

/// Whether waits are randomised.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// Draw each wait from `0..=ceiling`, so retrying callers spread out.
    Full,
    /// Wait exactly the ceiling (deterministic; for tests and for services that ask for it).
    None,
}

impl Backoff {
    /// 200 ms doubling to 5 s, full jitter.
    pub const DEFAULT: Backoff =
        Backoff { base: Duration::from_millis(200), max: Duration::from_secs(5), jitter: Jitter::Full };

    /// The wait after failed attempt number `failed` (1-based) of the intent `seed`.
    ///
    /// The jitter is drawn from the intent key and the attempt number: callers with different intents
    /// spread out, and one intent's schedule can be replayed exactly.
    pub fn wait(&self, failed: u32, seed: u64) -> Duration {
        let shift = failed.saturating_sub(1).min(20);
        let ceiling = self.base.saturating_mul(1 << shift).min(self.max);
        match self.jitter {
            Jitter::None => ceiling,
            Jitter::Full => {
                let draw = splitmix64(seed ^ u64::from(failed).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
                Duration::from_nanos(if nanos == 0 { 0 } else { draw % (nanos + 1) })
            }
        }
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A tool's static description: what the `#[tool]` attribute writes, or what a hand-written tool builds.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::effect::EffectKind;
/// use tool_contract::spec::ToolSpec;
///
/// const POST_NOTICE: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send)
///     .deadline_floor(Duration::from_secs(2));
/// assert_eq!(POST_NOTICE.name(), "post_notice");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    name: &'static str,
    verb: &'static str,
    service: &'static str,
    effect: EffectKind,
    floor: Duration,
    probe_reserve: Option<Duration>,
    horizon: Option<Duration>,
    max_attempts: u32,
    backoff: Backoff,
    dedupe: Dedupe,
    key_lifetime: Duration,
    shows: &'static [&'static str],
}

/// How long a receiver that deduplicates is taken to keep a key when the tool does not say: the
/// shortest lifetime receivers that document one give (30 minutes), so no receiver forgets a key the
/// engine still relies on.
const DEFAULT_KEY_LIFETIME: Duration = Duration::from_secs(30 * 60);

impl ToolSpec {
    /// A tool named `name` of kind `effect`: no floor, three attempts at most, default backoff.
    pub const fn new(name: &'static str, effect: EffectKind) -> ToolSpec {
        ToolSpec {
            name,
            verb: name,
            service: name,
            effect,
            floor: Duration::ZERO,
            probe_reserve: None,
            horizon: None,
            max_attempts: 3,
            backoff: Backoff::DEFAULT,
            dedupe: Dedupe::Probe,
            key_lifetime: DEFAULT_KEY_LIFETIME,
            shows: &[],
        }
    }

    /// The verb in the intent key, when it should differ from the tool's name.
    pub const fn verb(mut self, verb: &'static str) -> ToolSpec {
        self.verb = verb;
        self
    }

    /// No attempt starts with less budget left than this.
    pub const fn deadline_floor(mut self, floor: Duration) -> ToolSpec {
        self.floor = floor;
        self
    }

    /// How much of the budget a side-effecting attempt keeps back for its probe (default: the floor;
    /// with no floor either, a quarter of the budget left when the attempt starts).
    pub const fn probe_reserve(mut self, reserve: Duration) -> ToolSpec {
        self.probe_reserve = Some(reserve);
        self
    }

    /// The tool's landing horizon: how long the service may still apply a request after its caller
    /// stopped waiting for it (queued behind a gateway, retried by a load balancer, held by a worker
    /// mid-request when the connection dropped or the caller's process died). A probe's (or a person's)
    /// "not landed" about an attempt counts only once this has passed since the attempt's request could
    /// last have reached the service; until then the engine waits, within the budget, and probes
    /// again, and when the budget cannot hold the wait the call ends `unknown`. Without one, the kind's
    /// default given who deduplicates ([`Policy::horizon`](crate::effect::Policy::horizon): 5 s for
    /// `send`, `money`, `destructive` and a `create` only the probe deduplicates, none for `read` and a
    /// `create` with [`Dedupe::Receiver`]); `Duration::ZERO` trusts "not landed" at once.
    pub const fn horizon(mut self, horizon: Duration) -> ToolSpec {
        self.horizon = Some(horizon);
        self
    }

    /// The service the tool calls, by name, whose [retry budget](crate::budget) its retries draw on;
    /// the tool's name by default. Tools that call one service name it alike, so a storm of retries
    /// against it is counted once.
    pub const fn service(mut self, service: &'static str) -> ToolSpec {
        self.service = service;
        self
    }

    /// The most attempts one call makes (at least one).
    pub const fn max_attempts(mut self, attempts: u32) -> ToolSpec {
        self.max_attempts = if attempts == 0 { 1 } else { attempts };
        self
    }

    /// The waits between attempts.
    pub const fn backoff(mut self, backoff: Backoff) -> ToolSpec {
        self.backoff = backoff;
        self
    }

    /// Who deduplicates a `create`.
    pub const fn dedupe(mut self, dedupe: Dedupe) -> ToolSpec {
        self.dedupe = dedupe;
        self
    }

    /// How long the receiver keeps an idempotency key, for a `create` with [`Dedupe::Receiver`]: from
    /// when it first sees the key, a resend with it is answered as a repeat; after that, it may be taken
    /// as a new request, a second create. The engine resends on the receiver's word only while every
    /// request the call may still send reaches the receiver within this of the intent's first attempt;
    /// past it (or when the first attempt is not known, as for an intent resumed past its first), a
    /// `create` that may have landed is probed first, or ends `unknown` without a probe. Receivers
    /// keep keys from 30 minutes to 30 days (Stripe: 24 hours); the default is the shortest, 30
    /// minutes, so a receiver never forgets a key the engine relies on.
    pub const fn key_lifetime(mut self, lifetime: Duration) -> ToolSpec {
        self.key_lifetime = lifetime;
        self
    }

    /// The arguments a question to a person shows, by name: what they need to judge an approval or a
    /// settlement (for `money`, the amount and the target). A question shows them, and binds them: an
    /// answer given about one amount never applies to a call with another. Shown from a call by name
    /// (a model's JSON arguments), as JSON text cut to 240 bytes.
    pub const fn shows(mut self, arguments: &'static [&'static str]) -> ToolSpec {
        self.shows = arguments;
        self
    }

    // Each setting is read back by its builder's name with `get_` before it, as `std::process::Command`
    // does (`arg` / `get_args`): one name per setting.

    /// The tool's name, as the log and the report name it.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The verb of its intent key.
    pub const fn get_verb(&self) -> &'static str {
        self.verb
    }

    /// The service whose retry budget its retries draw on.
    pub const fn get_service(&self) -> &'static str {
        self.service
    }

    /// Its effect kind.
    pub const fn effect(&self) -> EffectKind {
        self.effect
    }

    /// Its deadline floor.
    pub const fn get_deadline_floor(&self) -> Duration {
        self.floor
    }

    /// The budget kept back for the probe.
    pub const fn get_probe_reserve(&self) -> Duration {
        match self.probe_reserve {
            Some(reserve) => reserve,
            None => self.floor,
        }
    }

    /// Its landing horizon: the one it declares, else its kind's default given who deduplicates it
    /// ([`EffectKind::default_horizon`]).
    pub const fn get_horizon(&self) -> Duration {
        match self.horizon {
            Some(horizon) => horizon,
            None => self.effect.default_horizon(self.dedupe),
        }
    }

    /// The most attempts one call makes.
    pub const fn get_max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Its backoff.
    pub const fn get_backoff(&self) -> Backoff {
        self.backoff
    }

    /// Who deduplicates a `create`.
    pub const fn get_dedupe(&self) -> Dedupe {
        self.dedupe
    }

    /// How long the receiver keeps an idempotency key ([`ToolSpec::key_lifetime`]).
    pub const fn get_key_lifetime(&self) -> Duration {
        self.key_lifetime
    }

    /// The arguments a question to a person shows ([`ToolSpec::shows`]).
    pub const fn get_shows(&self) -> &'static [&'static str] {
        self.shows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_waits_for_the_default_horizon_unless_the_receiver_deduplicates() {
        use crate::effect::DEFAULT_HORIZON;
        let create = ToolSpec::new("open_ticket", EffectKind::Create);
        assert_eq!(create.get_horizon(), DEFAULT_HORIZON);
        assert_eq!(create.dedupe(Dedupe::Receiver).get_horizon(), Duration::ZERO);
        // A declared horizon wins either way, zero included.
        assert_eq!(create.horizon(Duration::ZERO).get_horizon(), Duration::ZERO);
        let declared = create.dedupe(Dedupe::Receiver).horizon(Duration::from_secs(9));
        assert_eq!(declared.get_horizon(), Duration::from_secs(9));
        assert_eq!(
            ToolSpec::new("post", EffectKind::Send).dedupe(Dedupe::Receiver).get_horizon(),
            DEFAULT_HORIZON
        );
        assert_eq!(ToolSpec::new("look", EffectKind::Read).get_horizon(), Duration::ZERO);
    }

    #[test]
    fn backoff_doubles_to_its_max() {
        let b = Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_millis(1000),
            jitter: Jitter::None,
        };
        let waits: Vec<_> = (1..=6).map(|n| b.wait(n, 7).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.wait(u32::MAX, 7), Duration::from_millis(1000));
    }

    #[test]
    fn full_jitter_stays_under_the_ceiling_and_spreads() {
        let b = Backoff { jitter: Jitter::Full, ..Backoff::DEFAULT };
        let draws: Vec<_> = (0..64u64).map(|seed| b.wait(3, seed)).collect();
        assert!(draws.iter().all(|d| *d <= Duration::from_millis(800)));
        let distinct: std::collections::HashSet<_> = draws.iter().collect();
        assert!(distinct.len() > 60, "jitter should spread callers: {distinct:?}");
        assert_eq!(b.wait(3, 11), b.wait(3, 11));
    }
}
