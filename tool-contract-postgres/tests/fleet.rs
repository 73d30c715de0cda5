//! A fleet of worker processes on one PostgreSQL log, against a service that does not deduplicate:
//! exactly one effect per intent, also when workers are killed with SIGKILL mid-call and when the
//! server restarts mid-run.
//!
//! The workers are this test binary again, running only [`worker_entry`] with their config in
//! `TOOL_CONTRACT_FLEET_WORKER`; the fake service, the kills and the counting are the `fleet`
//! example's own code (`examples/fleet/`).

mod common;

#[path = "../examples/fleet/fake.rs"]
#[allow(dead_code)]
mod fake;
#[path = "../examples/fleet/fleet.rs"]
#[allow(dead_code)]
mod fleet;
#[path = "../examples/fleet/worker.rs"]
mod worker;

use std::sync::Arc;

use fleet::{Interruption, Plan, Spawner, Tally};

/// Not a test: the body of a worker process, when this binary is started as one. Run as a test (no
/// config in the environment) it returns at once.
#[test]
fn worker_entry() {
    let Some(config) = worker::WorkerConfig::from_env() else { return };
    let config = config.expect("the worker config");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let code = match runtime.block_on(worker::work(config.clone())) {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("fleet worker {} (process {}): {why}", config.index, config.generation);
            1
        }
    };
    std::process::exit(code);
}

/// This binary, told to run [`worker_entry`] alone.
fn spawner() -> Spawner {
    Arc::new(|_index| {
        let mut command =
            tokio::process::Command::new(std::env::current_exe().expect("the test binary's path"));
        command.args(["--exact", "worker_entry", "--nocapture", "--test-threads", "1"]);
        command
    })
}

/// One fleet at a time: the runs share two cores and one server, which one of them restarts.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn fleet(plan: &Plan, interrupt: Option<Interruption>) -> Tally {
    let began = std::time::Instant::now();
    let tally =
        fleet::run(plan, spawner(), interrupt).await.unwrap_or_else(|why| panic!("the fleet broke: {why}"));
    eprintln!(
        "{} workers, {} intents, {} kills: {:?}\n{}",
        plan.workers,
        plan.intents,
        plan.kills,
        began.elapsed(),
        tally.table()
    );
    tally
}

fn assert_held(plan: &Plan, tally: &Tally) {
    let table = tally.table();
    assert_eq!(tally.duplicates, 0, "{table}");
    assert_eq!(tally.false_ok, 0, "every ok names an effect of its intent\n{table}");
    assert_eq!(tally.unresolved, 0, "{table}");
    assert_eq!((tally.effects, tally.missing), (plan.intents, 0), "one effect per intent\n{table}");
    assert_eq!(tally.never_ok, 0, "every intent was reported ok\n{table}");
    assert_eq!(tally.permanent, 0, "{table}");
    assert_eq!(tally.killed, plan.kills, "{table}");
    assert!(tally.holds(plan), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_workers_sharing_a_thousand_intents_make_one_effect_each() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(db) = common::database("fleet_plain").await else { return };
    let plan = Plan::new(4, 1000, db);
    let tally = fleet(&plan, None).await;
    assert_held(&plan, &tally);
    // Every worker tried every intent: the other three found the first one's end in the log.
    assert_eq!(tally.ok, 4 * plan.intents, "{}", tally.table());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_killed_mid_call_are_taken_over_with_a_probe_and_nothing_is_sent_twice() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(db) = common::database("fleet_kills").await else { return };
    let mut plan = Plan::new(4, 1000, db);
    plan.kills = 2;
    let tally = fleet(&plan, None).await;
    assert_held(&plan, &tally);
    // The killed workers left attempts open (the held request at least): the takers probed them, and
    // sent again only the one the probe found missing.
    assert!(tally.probed >= plan.kills, "{}", tally.table());
    assert!(tally.resent >= 1, "the request held unapplied was sent again\n{}", tally.table());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_mid_run_loses_no_effect_and_repeats_none() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(server) = common::server() else { return };
    let db = server.database("fleet_restart").await.unwrap_or_else(|e| panic!("{e}\n{}", server.log()));
    let mut plan = Plan::new(4, 1000, db);
    plan.kills = 1;
    let restart: Interruption = Box::new(move || {
        server.stop().map_err(|e| e.to_string())?;
        server.start_again().map_err(|e| e.to_string())
    });
    let tally = fleet(&plan, Some(restart)).await;
    assert!(tally.interrupted.is_some(), "{}", tally.table());
    assert_held(&plan, &tally);
}
