//! The seeded simulation: 50,000 fault schedules, invariants checked on every one.
//!
//! A failing seed is printed with the one command that replays it.

use std::sync::Arc;

use tool_contract::journal::MemoryJournal;
use tool_contract_testing::sim;

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

/// The store path of the simulation on the in-memory store: the same schedules scaled down, with
/// lost connections, slow commits and leases cut short drawn from each seed. PostgreSQL runs the same
/// path in tool-contract-postgres's tests/simulation.rs.
const STORE_SCHEDULES: u64 = 2_000;

#[tokio::test(start_paused = true)]
async fn store_faults_keep_the_contract_on_the_memory_store() {
    let base = base_seed();
    let mut failures = Vec::new();
    for seed in base..base + STORE_SCHEDULES {
        let store = Arc::new(MemoryJournal::new());
        if let Err(failure) = sim::check_on(seed, store, sim::Clock::Paused).await {
            failures.push(failure);
        }
    }
    eprintln!("{STORE_SCHEDULES} store schedules, {} failures", failures.len());
    for failure in failures.iter().take(5) {
        eprintln!("{failure}\n");
    }
    assert!(
        failures.is_empty(),
        "{} of {STORE_SCHEDULES} store schedules broke the contract",
        failures.len()
    );
}

/// `STORE_SIM_SEED=N cargo test -p tool-contract-tests --test simulation replay_on_store -- --nocapture`
#[tokio::test(start_paused = true)]
async fn replay_on_store() {
    let seed = std::env::var("STORE_SIM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    eprintln!("replaying store seed {seed}: {:?}", sim::Schedule::draw_on_store(seed));
    if let Err(failure) = sim::check_on(seed, Arc::new(MemoryJournal::new()), sim::Clock::Paused).await {
        panic!("{failure}");
    }
}

/// Each store fault is drawn often enough to matter, and the rest of a store schedule is `draw`'s,
/// scaled down.
#[test]
fn every_store_fault_is_drawn() {
    use sim::StoreFault;
    let schedules: Vec<_> = (0..5_000).map(sim::Schedule::draw_on_store).collect();
    let faults = |s: &sim::Schedule| s.store.clone().unwrap_or_default();
    let share = |what: &str, hit: &dyn Fn(&sim::Schedule) -> bool| {
        let n = schedules.iter().filter(|s| hit(s)).count();
        assert!(n >= 200, "{what}: {n} of 5,000 schedules");
    };
    let planned = |hit: fn(&StoreFault) -> bool| move |s: &sim::Schedule| faults(s).plan.iter().any(hit);
    share("a connection lost before the store", &planned(|f| matches!(f, StoreFault::LostBefore(_))));
    share("a connection lost after the store", &planned(|f| matches!(f, StoreFault::LostAfter(_))));
    share("a commit slow to arrive", &planned(|f| matches!(f, StoreFault::SlowBefore(_))));
    share("a commit slow to answer", &planned(|f| matches!(f, StoreFault::SlowAfter(_))));
    share("a lease cut short", &|s| faults(s).lease.is_some());
    for seed in [0, 7, 99] {
        let (plain, store) = (sim::Schedule::draw(seed), sim::Schedule::draw_on_store(seed));
        let scaled = std::time::Duration::from_millis(plain.budget.as_millis().div_ceil(20) as u64);
        assert_eq!((plain.kind, scaled), (store.kind, store.budget));
    }
}
