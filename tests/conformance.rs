//! The six scenarios in process, on tokio's paused clock, against hand-written tools of every kind.

use std::time::Duration;

use tool_contract::testing::{
    Conformance, FakeService, Scenario, Verdict, batch_probe, batch_result, single_result,
};
use tool_contract::{Dedupe, EffectKind, NoProbe, Probe, Report, Task, ToolSpec, engine};

fn spec(kind: EffectKind) -> ToolSpec {
    ToolSpec::new("act", kind).deadline_floor(Duration::from_secs(2))
}

async fn single(kind: EffectKind, task: Task, service: FakeService) -> Report<u64> {
    let spec = spec(kind);
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
    assert_eq!(verdicts.len(), 6);
    for v in verdicts {
        assert!(v.pass, "{kind} {}: {v:?}", v.scenario);
    }
}

#[tokio::test(start_paused = true)]
async fn every_side_effect_kind_passes_the_six() {
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
}

/// A send tool whose probe cannot see a request in flight and calls it "not landed": the slow-success
/// scenario must catch the effect that lands after the report said `no`.
#[tokio::test(start_paused = true)]
async fn a_probe_blind_to_requests_in_flight_is_caught() {
    async fn careless(task: Task, service: FakeService) -> Report<u64> {
        let spec = spec(EffectKind::Send);
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
                        Ok(tool_contract::testing::Lookup::Landed(id)) => Probe::Landed(id),
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
                        Ok(tool_contract::testing::Reply::Done(id)) => Ok(id),
                        Ok(tool_contract::testing::Reply::Status { status: 200, .. }) => Ok(0),
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
