//! The seeded simulation on PostgreSQL: a bounded number of store schedules (the schedules of
//! tool-contract's simulation, scaled down to the real clock, with lost connections, slow commits and
//! leases cut short drawn from each seed) against `PgJournal` on the throwaway server, side by side in
//! one database: each schedule's intents are its own.
//!
//! A failing seed is printed with the one command that replays it. On the real clock and a shared
//! server, a replay draws the same faults but may interleave them differently.

mod common;

use std::sync::Arc;
use std::time::Instant;

use tool_contract::journal::Journal;
use tool_contract_postgres::PgOptions;
use tool_contract_testing::sim::{self, Clock, Failure};

/// CI's count: about 10 s of wall time.
const SCHEDULES: u64 = 200;
/// How many schedules run at once; most of a schedule's time is spent waiting.
const AT_ONCE: usize = 50;

fn replay_command(seed: u64) -> String {
    format!("PG_SIM_SEED={seed} cargo test -p tool-contract-postgres --test simulation replay -- --nocapture")
}

fn env_seed(name: &str) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

async fn check(seed: u64, store: Arc<dyn Journal>) -> Result<(), Failure> {
    sim::check_on(seed, store, Clock::Real).await.map_err(|mut failure| {
        failure.replay = replay_command(seed);
        failure
    })
}

async fn store(database: &str) -> Option<Arc<dyn Journal>> {
    let (journal, _) = common::journal_with(database, PgOptions::default().pool_size(16)).await?;
    Some(Arc::new(journal))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_schedules_keep_the_contract_on_postgres() {
    let Some(store) = store("simulation").await else { return };
    let base = env_seed("PG_SIM_SEED_BASE");
    let began = Instant::now();
    let slots = Arc::new(tokio::sync::Semaphore::new(AT_ONCE));
    let runs: Vec<_> = (base..base + SCHEDULES)
        .map(|seed| {
            let (store, slots) = (Arc::clone(&store), Arc::clone(&slots));
            tokio::spawn(async move {
                let _slot = slots.acquire_owned().await.expect("the semaphore is never closed");
                check(seed, store).await
            })
        })
        .collect();
    let mut failures = Vec::new();
    for run in runs {
        if let Err(failure) = run.await.expect("a schedule panicked") {
            failures.push(failure);
        }
    }
    eprintln!("{SCHEDULES} schedules, {} failures, in {:?}", failures.len(), began.elapsed());
    for failure in failures.iter().take(5) {
        eprintln!("{failure}\n");
    }
    assert!(
        failures.is_empty(),
        "{} of {SCHEDULES} schedules broke the contract on PostgreSQL (first seeds above)",
        failures.len()
    );
}

/// `PG_SIM_SEED=N cargo test -p tool-contract-postgres --test simulation replay -- --nocapture`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay() {
    let Some(store) = store("simulation_replay").await else { return };
    let seed = env_seed("PG_SIM_SEED");
    eprintln!("replaying seed {seed} on PostgreSQL: {:?}", sim::Schedule::draw_on_store(seed));
    if let Err(failure) = check(seed, store).await {
        panic!("{failure}");
    }
}
