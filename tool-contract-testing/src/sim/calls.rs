//! The calls a schedule makes (one act or a batch, on the fake service), and the per-item invariants
//! of a batch.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Schedule;
use crate::fake::{FakeService, batch_probe, batch_result, single_result};
use tool_contract::effect::EffectKind;
use tool_contract::probe::{NoProbe, Probe};
use tool_contract::spec::ToolSpec;
use tool_contract::task::Task;
use tool_contract::{Applied, Outcome, Report};

/// The per-item invariants of a bulk call.
pub(super) fn items_kept(
    schedule: &Schedule,
    report: &Report<()>,
    service: &FakeService,
    at_most_once: bool,
    violations: &mut Vec<String>,
) {
    let key = report.idempotency_key;
    if report.items.len() != schedule.items.len() {
        violations.push(format!("{} items reported of {}", report.items.len(), schedule.items.len()));
    }
    let side = schedule.kind.has_side_effect();
    for item in &report.items {
        let n = service.item_effects(key, &item.id);
        if at_most_once && n > 1 {
            violations.push(format!("{} applied {n} times", item.id));
        }
        if side && item.outcome == Outcome::Ok && n == 0 {
            violations.push(format!("{} ok without its effect", item.id));
        }
        if side && item.applied == Applied::No && n > 0 {
            violations.push(format!("{} reported not applied, but it landed", item.id));
        }
    }
    let landed = schedule.items.iter().filter(|i| service.item_effects(key, i) > 0).count();
    if side && report.effect_applied == Applied::Yes && landed < schedule.items.len() {
        violations
            .push(format!("effect_applied yes, but only {landed} of {} items landed", schedule.items.len()));
    }
}

pub(super) async fn one_call(
    task: &Task,
    spec: &ToolSpec,
    service: &FakeService,
    schedule: &Schedule,
    started_with: &Arc<Mutex<Vec<Duration>>>,
) -> Report<()> {
    if schedule.items.is_empty() {
        single_call(task, spec, service, schedule, started_with).await.map(|_| ())
    } else {
        bulk_call(task, spec, service, schedule, started_with).await
    }
}

async fn bulk_call(
    task: &Task,
    spec: &ToolSpec,
    service: &FakeService,
    schedule: &Schedule,
    started_with: &Arc<Mutex<Vec<Duration>>>,
) -> Report<()> {
    let kind = schedule.kind;
    let key = task.key(spec, &"list", None);
    let attempt = |call: tool_contract::Call, items: Vec<String>| {
        started_with.lock().unwrap_or_else(|e| e.into_inner()).push(task.remaining());
        let service = service.clone();
        async move { batch_result(kind, service.submit_batch(call.key(), &items).await) }
    };
    if schedule.receiver_dedupes || kind == EffectKind::Read {
        return tool_contract::engine::run_bulk(task, spec, key, schedule.items.clone(), attempt, NoProbe)
            .await;
    }
    let held = schedule.held;
    let probe = |key, items: Vec<String>| {
        let service = service.clone();
        async move {
            // A held request is invisible to a probe that only sees what landed.
            let found = if held {
                service.lookup_items_landed(key, &items)
            } else {
                service.lookup_items_settled(key, &items).await
            };
            batch_probe(found, &items)
        }
    };
    tool_contract::engine::run_bulk(task, spec, key, schedule.items.clone(), attempt, probe).await
}

async fn single_call(
    task: &Task,
    spec: &ToolSpec,
    service: &FakeService,
    schedule: &Schedule,
    started_with: &Arc<Mutex<Vec<Duration>>>,
) -> Report<u64> {
    let kind = schedule.kind;
    let key = task.key(spec, &"target", None);
    let attempt = |call: tool_contract::Call| {
        started_with.lock().unwrap_or_else(|e| e.into_inner()).push(task.remaining());
        let service = service.clone();
        async move { single_result(kind, service.submit(call.key()).await) }
    };
    if schedule.receiver_dedupes || kind == EffectKind::Read {
        return tool_contract::engine::run(task, spec, key, attempt, NoProbe).await;
    }
    let held = schedule.held;
    let probe = |key| {
        let service = service.clone();
        async move {
            let found = if held {
                service.lookup(key).map(crate::Lookup::landed_only)
            } else {
                service.lookup_settled(key).await
            };
            match found {
                Ok(found) => found.into_probe(),
                Err(why) => Probe::Failed(why),
            }
        }
    };
    tool_contract::engine::run(task, spec, key, attempt, probe).await
}
