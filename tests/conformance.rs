//! The six scenarios and the held request in process, on tokio's paused clock, against hand-written
//! tools of every kind.

use std::time::Duration;

use tool_contract::effect::EffectKind;
use tool_contract::probe::NoProbe;
use tool_contract::spec::{Dedupe, ToolSpec};
use tool_contract::{Applied, Outcome, Probe, Report, Task, engine};
use tool_contract_testing::{
    Conformance, FakeService, Scenario, Verdict, batch_probe, batch_result, single_result,
};

fn spec(kind: EffectKind) -> ToolSpec {
    // No horizon declared: every kind with a side effect, a create only its probe deduplicates
    // included, waits out the default before it trusts the probe's "not landed".
    ToolSpec::new("act", kind).deadline_floor(Duration::from_secs(2))
}

async fn single(kind: EffectKind, task: Task, service: FakeService) -> Report<u64> {
    single_with(spec(kind), kind, task, service).await
}

/// A single call of a tool of `spec`, against `service`, probed by its settled lookup.
async fn single_with(spec: ToolSpec, kind: EffectKind, task: Task, service: FakeService) -> Report<u64> {
    let key = task.key(&spec, &"thread-9", None);
    let probe_service = service.clone();
    engine::run(
        &task,
        &spec,
        key,
        |call| {
            let service = service.clone();
            async move { single_result(kind, service.submit(call.key()).await) }
        },
        move |key| {
            let service = probe_service.clone();
            async move {
                match service.lookup_settled(key).await {
                    Ok(found) => found.into_probe(),
                    Err(why) => Probe::Failed(why),
                }
            }
        },
    )
    .await
}

async fn bulk(kind: EffectKind, task: Task, service: FakeService, items: Vec<String>) -> Report<()> {
    let spec = spec(kind);
    let key = task.key(&spec, &"sheet-1", None);
    let probe_service = service.clone();
    engine::run_bulk(
        &task,
        &spec,
        key,
        items,
        |call, items: Vec<String>| {
            let service = service.clone();
            async move { batch_result(kind, service.submit_batch(call.key(), &items).await) }
        },
        move |key, items: Vec<String>| {
            let service = probe_service.clone();
            async move { batch_probe(service.lookup_items(key, &items), &items) }
        },
    )
    .await
}

fn assert_all_pass(kind: EffectKind, verdicts: &[Verdict]) {
    assert_eq!(verdicts.len(), 7);
    for v in verdicts {
        assert!(v.pass, "{kind} {}: {v:?}", v.scenario);
    }
}

#[tokio::test(start_paused = true)]
async fn every_side_effect_kind_passes_the_six_and_the_held_request() {
    for kind in [EffectKind::Create, EffectKind::Send, EffectKind::Money, EffectKind::Destructive] {
        let verdicts = Conformance::new(kind, move |t, s| single(kind, t, s))
            .bulk(move |t, s, items| bulk(kind, t, s, items))
            .run()
            .await;
        assert_all_pass(kind, &verdicts);
    }
}

#[tokio::test(start_paused = true)]
async fn kill_mid_call_is_resolved_by_the_probe_with_one_effect() {
    let verdict = Conformance::new(EffectKind::Send, |t, s| single(EffectKind::Send, t, s))
        .run_one(Scenario::KillMidCall)
        .await;
    assert!(verdict.pass, "{verdict:?}");
    assert_eq!(verdict.effects_at_service, 1);
    assert_eq!(verdict.attempts, 1);
    assert_eq!(verdict.probe, Some(tool_contract::probe::ProbeMark::Landed));
}

#[tokio::test(start_paused = true)]
async fn a_create_deduplicated_by_the_receiver_passes_without_a_probe() {
    async fn create(task: Task, service: FakeService) -> Report<u64> {
        let spec = ToolSpec::new("create_order", EffectKind::Create).dedupe(Dedupe::Receiver);
        let key = task.key(&spec, &"cart-1", None);
        engine::run(
            &task,
            &spec,
            key,
            |call| {
                let service = service.clone();
                async move { single_result(EffectKind::Create, service.submit(call.key()).await) }
            },
            NoProbe,
        )
        .await
    }
    let verdicts = Conformance::new(EffectKind::Create, create).receiver_dedupes().run().await;
    for v in &verdicts[..4] {
        assert!(v.pass, "{v:?}");
    }
    assert!(!verdicts[4].pass, "no bulk tool given: the batch scenario says it did not run");
    assert!(verdicts[4].detail.contains("no bulk tool"));
    assert!(verdicts[5].pass, "{:?}", verdicts[5]);
    assert!(verdicts[6].pass, "the receiver's key keeps the held request once: {:?}", verdicts[6]);
}

/// A send tool whose probe cannot see a request in flight and calls it "not landed": the slow-success
/// scenario must catch the effect that lands after the report said `no`.
#[tokio::test(start_paused = true)]
async fn a_probe_blind_to_requests_in_flight_is_caught() {
    async fn careless(task: Task, service: FakeService) -> Report<u64> {
        // Careless twice: a blind probe, and no landing horizon to cover for it (the default's 5 s
        // would find the slow success before a second attempt).
        let spec = spec(EffectKind::Send).horizon(std::time::Duration::ZERO);
        let key = task.key(&spec, &"thread-9", None);
        let probe_service = service.clone();
        engine::run(
            &task,
            &spec,
            key,
            |call| {
                let service = service.clone();
                async move { single_result(EffectKind::Send, service.submit(call.key()).await) }
            },
            move |key| {
                let service = probe_service.clone();
                async move {
                    match service.lookup(key) {
                        Ok(tool_contract_testing::Lookup::Landed(id)) => Probe::Landed(id),
                        _ => Probe::NotLanded,
                    }
                }
            },
        )
        .await
    }
    let verdict = Conformance::new(EffectKind::Send, careless).run_one(Scenario::SlowSuccess).await;
    assert!(!verdict.pass, "{verdict:?}");
    assert!(verdict.detail.contains("effect_applied no, but the effect landed"), "{}", verdict.detail);
}

/// A tool that trusts the status line: a 200 with an error body must not pass.
#[tokio::test(start_paused = true)]
async fn a_tool_that_trusts_the_status_line_is_caught() {
    async fn naive(task: Task, service: FakeService) -> Report<u64> {
        let spec = spec(EffectKind::Send);
        let key = task.key(&spec, &"thread-9", None);
        engine::run(
            &task,
            &spec,
            key,
            |call| {
                let service = service.clone();
                async move {
                    match service.submit(call.key()).await {
                        Ok(tool_contract_testing::Reply::Done(id)) => Ok(id),
                        Ok(tool_contract_testing::Reply::Status { status: 200, .. }) => Ok(0),
                        other => single_result(EffectKind::Send, other),
                    }
                }
            },
            |_| async { Probe::NotLanded },
        )
        .await
    }
    let verdict = Conformance::new(EffectKind::Send, naive).run_one(Scenario::ErrorBody).await;
    assert!(!verdict.pass);
    assert_eq!(verdict.outcome, tool_contract::Outcome::Ok);
    assert!(verdict.detail.contains("ok without the effect"), "{}", verdict.detail);
}

/// The seed's partial read: a paginated read that fails halfway returns what it got, marked incomplete,
/// and a retry reads only the pages still missing.
#[tokio::test(start_paused = true)]
async fn a_read_that_fails_halfway_returns_what_it_got_and_retries_only_the_missing_pages() {
    use std::sync::Mutex;
    use tool_contract::Class;

    const LIST: ToolSpec = ToolSpec::new("list_orders", EffectKind::Read).max_attempts(3);
    // Page 3 fails `fails` times with a 503, then answers.
    async fn read(fails: u32) -> (Report<Vec<u32>>, Vec<u32>) {
        let fetched = Mutex::new(vec![0u32; 4]);
        let task = Task::new(format!("partial-{fails}"), "agent", Duration::from_secs(60));
        let key = task.key(&LIST, &"customer-9", None);
        let report = engine::run_pages(&task, &LIST, key, vec![1u32, 2, 3, 4], |_call, &page| {
            let n = {
                let mut fetched = fetched.lock().unwrap();
                fetched[page as usize - 1] += 1;
                fetched[page as usize - 1]
            };
            async move {
                if page == 3 && n <= fails {
                    Err(Class::retryable("503 from /orders"))
                } else {
                    Ok(vec![page * 10, page * 10 + 1])
                }
            }
        })
        .await;
        let fetched = fetched.into_inner().unwrap();
        (report, fetched)
    }

    // Fails twice, then answers on the third attempt: complete, each page read once but the third.
    let (report, fetched) = read(2).await;
    assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
    assert_eq!(report.value, Some(vec![10, 11, 20, 21, 30, 31, 40, 41]), "in page order");
    assert_eq!(fetched, [1, 1, 3, 1], "a retry reads only the pages still missing");
    assert!(report.items.iter().all(|item| item.outcome == Outcome::Ok));

    // Fails every time: what it got, never presented as complete.
    let (report, fetched) = read(u32::MAX).await;
    assert_eq!(report.outcome, Outcome::Retryable);
    assert_eq!(report.value, Some(vec![10, 11, 20, 21]));
    assert_eq!(
        report.message,
        "list_orders: 2 of 4 pages read; 2 not read, retryable; 3: 503 from /orders; gave up after 3 attempts"
    );
    assert_eq!(fetched, [1, 1, 3, 0]);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["items"][2]["outcome"], "retryable");
    assert_eq!(json["items"][3]["reason"], "not read: a page before it failed");

    // Not one page: `value` is null, never an empty list.
    let task = Task::new("partial-none", "agent", Duration::from_secs(60));
    let key = task.key(&LIST, &"customer-9", None);
    let report = engine::run_pages(&task, &LIST, key, vec![1u32, 2], |_call, _page| async {
        Err::<Vec<u32>, _>(Class::permanent("403 from /orders: no access"))
    })
    .await;
    assert_eq!((report.outcome, report.value), (Outcome::Permanent, None));
}

/// A tool with the default horizon (5 s), a create only its probe deduplicates included: the request
/// the service holds and applies 3 s after the caller let go (a reset, a timeout, a kill and restart)
/// is found by the probe, never sent again.
#[tokio::test(start_paused = true)]
async fn a_held_request_is_applied_once_with_the_default_horizon() {
    for kind in [EffectKind::Create, EffectKind::Send, EffectKind::Money, EffectKind::Destructive] {
        let verdict =
            Conformance::new(kind, move |t, s| single(kind, t, s)).run_one(Scenario::HeldRequest).await;
        assert!(verdict.pass, "{kind}: {verdict:?}");
        assert_eq!(verdict.scenario, "held-request");
        assert_eq!((verdict.outcome, verdict.effect_applied), (Outcome::Ok, Applied::Yes), "{kind}");
        assert_eq!((verdict.attempts, verdict.effects_at_service), (1, 1), "{kind}");
    }
}

/// A tool with `horizon = "0s"` trusts the probe's "not landed" while the service still holds the
/// request: the kit fails it and says what to declare.
#[tokio::test(start_paused = true)]
async fn a_horizon_shorter_than_the_hold_fails_with_what_to_declare() {
    async fn hasty(kind: EffectKind, task: Task, service: FakeService) -> Report<u64> {
        single_with(spec(kind).horizon(Duration::ZERO), kind, task, service).await
    }
    const TOLD: &str =
        "declare a landing horizon at least as long as the service can hold a request (#[tool(horizon";
    for (kind, did) in [
        // A create the receiver does not deduplicate, with `horizon = "0s"`, is caught the same.
        (EffectKind::Create, "sent it again"),
        (EffectKind::Send, "sent it again"),
        (EffectKind::Money, "sent it again"),
        (EffectKind::Destructive, "reported it not applied"),
    ] {
        let verdict =
            Conformance::new(kind, move |t, s| hasty(kind, t, s)).run_one(Scenario::HeldRequest).await;
        assert!(!verdict.pass, "{kind}: {verdict:?}");
        assert!(verdict.detail.contains(TOLD), "{kind}: {}", verdict.detail);
        assert!(
            verdict.detail.contains(&format!("after the caller let go, and the tool {did}")),
            "{kind}: {}",
            verdict.detail
        );
        for cut in ["after a reset", "after the attempt timed out", "after the call was killed and restarted"]
        {
            assert!(verdict.detail.contains(cut), "{kind} {cut}: {}", verdict.detail);
        }
        if did == "sent it again" {
            assert_eq!(verdict.effects_at_service, 2, "{kind}: {}", verdict.detail);
        }
    }
    // The other six do not see it: the same tool passes them all.
    let verdicts = Conformance::new(EffectKind::Send, |t, s| hasty(EffectKind::Send, t, s)).run().await;
    for v in verdicts.iter().filter(|v| v.scenario != "held-request" && v.scenario != "partial-batch") {
        assert!(v.pass, "{}: {v:?}", v.scenario);
    }
}
