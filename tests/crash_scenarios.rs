//! The six scenarios across a crash: the agent runs in a child process (`scenario_child.rs`) with the
//! file attempt log, is killed with SIGKILL mid-call, and is run again on the same log against the same
//! loopback fake, which lives in this process and so counts every effect of both runs.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tool_contract::classify::Body;
use tool_contract::journal::read_log;
use tool_contract::probe::ProbeMark;
use tool_contract::{IntentKey, Outcome};
use tool_contract_testing::http::LoopbackServer;
use tool_contract_testing::{FakeService, Fault, Scenario};

const CHILD: &str = env!("CARGO_BIN_EXE_scenario-child");
/// Bounds every wait on a child.
const PATIENCE: Duration = Duration::from_secs(60);
const HOLD: Duration = Duration::from_secs(600);

/// When the first run dies.
enum Kill {
    /// Once this many effects landed at the service.
    AtEffects(usize),
    /// Once this many requests reached the service (and `after` more time passed).
    AtRequests(u32, Duration),
    /// Never: the first run ends by itself and the second is a new process on the same log.
    Never,
}

struct Crash {
    scenario: Scenario,
    shape: &'static str,
    plan: Vec<Fault>,
    kill: Kill,
}

/// What both runs left behind.
struct Outcome2 {
    first: Option<Value>,
    last: Value,
    service: FakeService,
    probes: Vec<ProbeMark>,
    key: IntentKey,
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn spawn(url: &str, log: &Path, task: &str, shape: &str) -> Child {
    Command::new(CHILD)
        .args([url, &log.display().to_string(), task, shape])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the child starts")
}

async fn finish(mut child: Child) -> Value {
    let start = std::time::Instant::now();
    while child.try_wait().expect("the child can be waited on").is_none() {
        assert!(start.elapsed() < PATIENCE, "the child did not finish");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out = child.wait_with_output().expect("its output");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}

async fn run(crash: Crash) -> Outcome2 {
    let dir = std::env::temp_dir().join(format!(
        "tc-crash-scenario-{}-{}",
        std::process::id(),
        crash.scenario.name()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch dir");
    let scratch = Scratch(dir);
    let log = scratch.0.join("attempts.log");
    let service = FakeService::new();
    service.plan(crash.plan);
    let server = LoopbackServer::start(service.clone()).await.expect("a loopback port");
    let task = format!("crash-{}", crash.scenario.name());

    let mut child = spawn(&server.url(), &log, &task, crash.shape);
    let start = std::time::Instant::now();
    let first = match crash.kill {
        Kill::Never => Some(finish(child).await),
        Kill::AtEffects(n) => {
            while service.total_effects() < n {
                assert!(start.elapsed() < PATIENCE, "the effect never landed");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            child.kill().expect("SIGKILL");
            child.wait().expect("reaped");
            None
        }
        Kill::AtRequests(n, after) => {
            while service.requests() < n {
                assert!(start.elapsed() < PATIENCE, "the request never came");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(after).await;
            child.kill().expect("SIGKILL");
            child.wait().expect("reaped");
            None
        }
    };
    let last = finish(spawn(&server.url(), &log, &task, crash.shape)).await;
    let records = read_log(&log).expect("the log reads").records;
    let probes = records.iter().filter_map(|r| r.probe).collect();
    let key = records.first().expect("the log has records").intent_key;
    Outcome2 { first, last, service, probes, key }
}

fn outcome(report: &Value) -> (&str, &str) {
    (
        report["report"]["outcome"].as_str().unwrap_or("?"),
        report["report"]["effect_applied"].as_str().unwrap_or("?"),
    )
}

/// The invariants every crash must keep, whatever the scenario.
fn honest(run: &Outcome2) {
    let effects = run.service.effects(run.key);
    let (result, applied) = outcome(&run.last);
    if result == "ok" {
        assert!(effects > 0, "ok without the effect: {}", run.last);
    }
    if applied == "no" {
        assert_eq!(effects, 0, "effect_applied no, but it landed: {}", run.last);
    }
    if result == "unknown" {
        assert_eq!(run.last["escalations"], 1, "{}", run.last);
    }
}

#[tokio::test]
async fn kill_mid_call_after_the_effect_landed() {
    let run = run(Crash {
        scenario: Scenario::KillMidCall,
        shape: "single",
        plan: vec![Fault::Slow { apply_after: Duration::ZERO, reply_after: HOLD }],
        kill: Kill::AtEffects(1),
    })
    .await;
    honest(&run);
    assert_eq!(outcome(&run.last), ("ok", "yes"), "{}", run.last);
    assert_eq!((run.service.effects(run.key), run.service.requests()), (1, 1), "no second post");
    assert_eq!(run.probes, [ProbeMark::Landed]);
}

#[tokio::test]
async fn duplicate_delivery_across_processes() {
    let run = run(Crash {
        scenario: Scenario::DuplicateDelivery,
        shape: "single",
        plan: vec![],
        kill: Kill::Never,
    })
    .await;
    honest(&run);
    assert_eq!(outcome(run.first.as_ref().expect("the first run ended")), ("ok", "yes"));
    assert_eq!(outcome(&run.last), ("ok", "yes"));
    assert!(
        run.last["report"]["message"].as_str().unwrap_or_default().contains("not repeated"),
        "{}",
        run.last
    );
    assert_eq!(
        (run.service.effects(run.key), run.service.requests()),
        (1, 1),
        "the log recognised the intent"
    );
}

#[tokio::test]
async fn an_error_body_after_a_crash_is_still_permanent() {
    let body = Body::PermanentError("recipient is not allowed".into());
    let run = run(Crash {
        scenario: Scenario::ErrorBody,
        shape: "single",
        plan: vec![
            Fault::Delay {
                after: HOLD,
                then: Box::new(Fault::ErrorBody { status: 200, body: body.clone() }),
            },
            Fault::ErrorBody { status: 200, body },
        ],
        kill: Kill::AtRequests(1, Duration::from_millis(100)),
    })
    .await;
    honest(&run);
    assert_eq!(outcome(&run.last), ("permanent", "no"), "{}", run.last);
    assert_eq!((run.service.effects(run.key), run.service.requests()), (0, 2));
    // The unfinished attempt was probed first, and again once its landing horizon (5 s by default
    // for a send) had passed since the restart: only then was it sent again.
    assert_eq!(
        run.probes,
        [ProbeMark::NotLanded, ProbeMark::NotLanded],
        "the unfinished attempt was probed first"
    );
}

#[tokio::test]
async fn slow_success_lands_after_the_crash_and_is_found() {
    let run = run(Crash {
        scenario: Scenario::SlowSuccess,
        shape: "single",
        plan: vec![Fault::Slow { apply_after: Duration::from_millis(1500), reply_after: HOLD }],
        kill: Kill::AtRequests(1, Duration::ZERO),
    })
    .await;
    honest(&run);
    assert_eq!(outcome(&run.last), ("ok", "yes"), "{}", run.last);
    assert_eq!(
        (run.service.effects(run.key), run.service.requests()),
        (1, 1),
        "the probe waited, no second post"
    );
    assert_eq!(run.probes, [ProbeMark::Landed]);
}

#[tokio::test]
async fn partial_batch_resumes_with_only_what_was_in_flight() {
    let run = run(Crash {
        scenario: Scenario::PartialBatch,
        shape: "bulk",
        plan: vec![
            Fault::Batch { reject: vec!["row-3".into()], defer: vec!["row-5".into()] },
            Fault::Delay { after: HOLD, then: Box::new(Fault::None) },
        ],
        kill: Kill::AtRequests(2, Duration::from_millis(100)),
    })
    .await;
    honest(&run);
    assert_eq!(outcome(&run.last), ("permanent", "partial"), "{}", run.last);
    assert!(
        run.last["report"]["message"].as_str().unwrap_or_default().contains("4 of 5 items done; 1 refused"),
        "{}",
        run.last
    );
    for row in ["row-1", "row-2", "row-4", "row-5"] {
        assert_eq!(run.service.item_effects(run.key, row), 1, "{row}");
    }
    assert_eq!(run.service.item_effects(run.key, "row-3"), 0, "the refused row stays refused");
    assert_eq!(run.service.requests(), 3, "the restart sent only row-5");
    // As before any second attempt of a `send`: the deferred row was probed before it was sent again,
    // and after the restart the row in flight was probed (nothing else was open either time), then
    // again once its landing horizon had passed: the first run's refusal of row-5 said it applied
    // nothing, the restart's row in flight did not.
    assert_eq!(run.probes, [ProbeMark::NotLanded, ProbeMark::NotLanded, ProbeMark::NotLanded]);
}

#[tokio::test]
async fn rate_limited_then_killed_while_waiting() {
    let run = run(Crash {
        scenario: Scenario::RateLimit,
        shape: "single",
        plan: vec![Fault::RetryAfter { status: 429, header: "2".into() }],
        kill: Kill::AtRequests(1, Duration::from_millis(300)),
    })
    .await;
    honest(&run);
    assert_eq!(outcome(&run.last), ("ok", "yes"), "{}", run.last);
    assert_eq!((run.service.effects(run.key), run.service.requests()), (1, 2));
    assert_eq!(outcome_of(&run.last), Outcome::Ok);
    // The restarted process read the service's wait from the log and kept it.
    let arrivals = run.service.arrivals();
    let gap = arrivals[1] - arrivals[0];
    assert!(gap >= Duration::from_millis(1900), "second attempt {gap:?} after the 429 asking for 2 s");
}

fn outcome_of(report: &Value) -> Outcome {
    serde_json::from_value(report["report"]["outcome"].clone()).expect("an outcome")
}

/// A request the service holds out of sight and applies 3 s after its caller let go: the connection
/// reset at once (the first process is then killed while it waits out the landing horizon), or left
/// hanging until SIGKILL closed it. The second process starts at once on the same log; it trusts a
/// probe's "not landed" only once the request can no longer land, so it finds the effect instead of
/// sending it again.
#[tokio::test]
async fn a_request_held_past_a_kill_is_applied_once() {
    for reset in [true, false] {
        let run = run(Crash {
            scenario: Scenario::HeldRequest,
            shape: "single",
            plan: vec![Fault::Held { after: Duration::from_secs(3), reset }],
            kill: Kill::AtRequests(1, Duration::from_millis(300)),
        })
        .await;
        honest(&run);
        assert!(run.first.is_none(), "reset {reset}: the first process was killed");
        assert_eq!(outcome(&run.last), ("ok", "yes"), "reset {reset}: {}", run.last);
        assert_eq!(
            (run.service.effects(run.key), run.service.requests()),
            (1, 1),
            "reset {reset}: applied once, never sent again"
        );
        assert_eq!(run.probes.last(), Some(&ProbeMark::Landed), "reset {reset}: {:?}", run.probes);
    }
}
