//! The seeded simulation: 50,000 fault schedules, invariants checked on every one.
//!
//! A failing seed is printed with the one command that replays it.

use tool_contract::testing::sim;

/// CI's count; each schedule costs about 70 µs of wall time in a debug build.
const SCHEDULES: u64 = 50_000;

fn base_seed() -> u64 {
    std::env::var("SIM_SEED_BASE").ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[tokio::test(start_paused = true)]
async fn fifty_thousand_schedules_keep_the_contract() {
    let base = base_seed();
    let mut failures = Vec::new();
    for seed in base..base + SCHEDULES {
        if let Err(failure) = sim::check(seed).await {
            failures.push(failure);
        }
    }
    for failure in failures.iter().take(5) {
        eprintln!("{failure}\n");
    }
    assert!(
        failures.is_empty(),
        "{} of {SCHEDULES} schedules broke the contract (first seeds above)",
        failures.len()
    );
}

/// `SIM_SEED=N cargo test -p tool-contract-tests --test simulation replay -- --nocapture`
#[tokio::test(start_paused = true)]
async fn replay() {
    let seed = std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let schedule = sim::Schedule::draw(seed);
    eprintln!("replaying seed {seed}: {schedule:?}");
    if let Err(failure) = sim::check(seed).await {
        panic!("{failure}");
    }
}

#[test]
fn the_same_seed_draws_the_same_schedule() {
    for seed in [0, 1, 42, u64::MAX] {
        assert_eq!(format!("{:?}", sim::Schedule::draw(seed)), format!("{:?}", sim::Schedule::draw(seed)));
    }
    let kinds: std::collections::HashSet<_> = (0..200).map(|s| sim::Schedule::draw(s).kind).collect();
    assert_eq!(kinds.len(), 5, "every effect kind is drawn");
}

/// Each situation that once broke the contract is drawn, often enough to matter in 50,000 schedules.
#[test]
fn every_class_of_failure_is_drawn() {
    use sim::LogMode;
    let schedules: Vec<_> = (0..5_000).map(sim::Schedule::draw).collect();
    let share = |what: &str, hit: &dyn Fn(&sim::Schedule) -> bool| {
        let n = schedules.iter().filter(|s| hit(s)).count();
        assert!(n >= 50, "{what}: {n} of 5,000 schedules");
    };
    share("several calls of one intent at once", &|s| s.callers > 1);
    share("several processes on one log", &|s| s.openers);
    share("a retry budget with no room", &|s| s.no_retry_budget);
    share("no attempt log", &|s| s.log == LogMode::None);
    share("a log that stalls", &|s| matches!(s.log, LogMode::Stalls(_)));
    share("a log that vanishes", &|s| matches!(s.log, LogMode::Vanishes(_)));
    share("fields holding `|`", &|s| s.pipes);
    share("an empty budget and no floor", &|s| s.budget.is_zero() && s.floor.is_zero());
    share("a request held past the probe", &|s| s.held);
    share("a crash mid-call", &|s| s.crash_at.is_some());
}
