//! What a seed draws: the generator, and the schedule of one run (the tool, the budget, the faults, the
//! log, the crash and the situations that once broke the contract).

use std::time::Duration;

use super::StoreFaults;
use crate::fake::Fault;
use tool_contract::classify::Body;
use tool_contract::effect::EffectKind;

/// A small deterministic generator (SplitMix64): the same seed draws the same schedule everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// `true` with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A duration in `0..max`, in whole milliseconds.
    pub fn millis(&mut self, max: Duration) -> Duration {
        Duration::from_millis(self.below(u64::try_from(max.as_millis()).unwrap_or(u64::MAX).max(1)))
    }
}

/// One drawn schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The seed it was drawn from.
    pub seed: u64,
    /// The tool's kind.
    pub kind: EffectKind,
    /// The tool's floor.
    pub floor: Duration,
    /// A `create` whose receiver deduplicates by the key (and has no probe).
    pub receiver_dedupes: bool,
    /// The task's budget.
    pub budget: Duration,
    /// The service's faults, one per request.
    pub faults: Vec<Fault>,
    /// How many lookups fail.
    pub probe_failures: u32,
    /// When the first run is killed, if it is.
    pub crash_at: Option<Duration>,
    /// The items of a bulk call; empty for a single act.
    pub items: Vec<String>,
    /// The attempt log.
    pub log: LogMode,
    /// How many calls of the intent run at once (after any crash).
    pub callers: u32,
    /// The callers after the first are other processes sharing the log (each its own task, not a clone
    /// of the first): only the store's claim keeps them apart.
    pub openers: bool,
    /// The service's retry budget has no room at all: every retry is refused.
    pub no_retry_budget: bool,
    /// The task id and actor hold `|`, and a decoy intent spelling the same joined text follows.
    pub pipes: bool,
    /// The probe sees only what has landed, not what the service still holds; the tool's landing
    /// horizon covers the longest hold of the plan.
    pub held: bool,
    /// The schedule's durations were divided by this to run on a real clock (1 for tokio's paused one).
    pub scale: u32,
    /// The faults of the store the schedule runs on, for a schedule drawn with
    /// [`Schedule::draw_on_store`]; `None` for one of [`check`](super::check).
    pub store: Option<StoreFaults>,
}

/// The attempt log of a schedule. On a store schedule, `Memory` and `None` both stand for the store
/// given, and the others for it going bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogMode {
    /// An in-memory log.
    Memory,
    /// No log configured.
    None,
    /// A log whose appends stop answering after this many.
    Stalls(u32),
    /// A log that fails every request after this many appends.
    Vanishes(u32),
}

impl Schedule {
    /// Draw the schedule of `seed`.
    pub fn draw(seed: u64) -> Schedule {
        let mut rng = Rng::new(seed);
        let kind = EffectKind::ALL[rng.below(5) as usize];
        let mut floor = Duration::from_millis([0, 500, 1000, 2000][rng.below(4) as usize]);
        let receiver_dedupes = kind == EffectKind::Create && rng.chance(50);
        let mut budget = Duration::from_secs(3 + rng.below(58));
        if rng.chance(5) {
            // Nothing or next to nothing left, and no floor to refuse it.
            budget = Duration::from_millis([0, 1, 300][rng.below(3) as usize]);
            floor = Duration::ZERO;
        }
        let items: Vec<String> = if rng.chance(30) {
            (1..=2 + rng.below(5)).map(|i| format!("item-{i}")).collect()
        } else {
            Vec::new()
        };
        let faults = (0..rng.below(4)).map(|_| draw_fault(&mut rng, budget, &items)).collect();
        let probe_failures = if rng.chance(25) { 1 + rng.below(2) as u32 } else { 0 };
        let log = match rng.below(10) {
            0 => LogMode::None,
            1 => LogMode::Stalls(rng.below(6) as u32),
            2 => LogMode::Vanishes(rng.below(6) as u32),
            _ => LogMode::Memory,
        };
        // A process restarted without a log knows nothing of its first run: no crash then.
        let crash_at = (log != LogMode::None && rng.chance(30)).then(|| rng.millis(budget));
        let callers = if rng.chance(20) { 2 + rng.below(2) as u32 } else { 1 };
        let pipes = rng.chance(15);
        let held = kind.has_side_effect() && !receiver_dedupes && rng.chance(20);
        // Processes with no shared log have nothing to share: two of them may both act (documented).
        let openers = callers > 1 && log != LogMode::None && rng.chance(50);
        let no_retry_budget = rng.chance(10);
        Schedule {
            seed,
            kind,
            floor,
            receiver_dedupes,
            budget,
            faults,
            probe_failures,
            crash_at,
            items,
            log,
            callers,
            openers,
            no_retry_budget,
            pipes,
            held,
            scale: 1,
            store: None,
        }
    }
}

fn draw_fault(rng: &mut Rng, budget: Duration, items: &[String]) -> Fault {
    match rng.below(if items.is_empty() { 10 } else { 12 }) {
        0 => Fault::None,
        9 => Fault::Delay { after: rng.millis(budget), then: Box::new(draw_fault(rng, budget, &[])) },
        10 | 11 => {
            let mut pick = || items.iter().filter(|_| rng.chance(30)).cloned().collect::<Vec<_>>();
            let reject = pick();
            Fault::Batch { reject, defer: pick() }
        }
        1 | 2 => Fault::DropReplyAfterApplying,
        3 | 4 => {
            let apply_after = rng.millis(budget + Duration::from_secs(5));
            Fault::Slow { apply_after, reply_after: apply_after + rng.millis(Duration::from_secs(3)) }
        }
        5 => {
            let body = if rng.chance(50) {
                Body::RetryableError("upstream busy".to_owned())
            } else {
                Body::PermanentError("invalid recipient".to_owned())
            };
            Fault::ErrorBody { status: 200, body }
        }
        6 | 7 => {
            let header = match rng.below(10) {
                0 => "soon".to_owned(),
                1 => "99999999999999999999".to_owned(),
                _ => rng.below(90).to_string(),
            };
            Fault::RetryAfter { status: if rng.chance(50) { 429 } else { 503 }, header }
        }
        _ => Fault::RefuseBeforeApplying,
    }
}
