//! The engine on the PostgreSQL store: sends against the fake service, two workers sharing intents,
//! and the six conformance scenarios with the held request.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tool_contract::effect::EffectKind;
use tool_contract::journal::Journal;
use tool_contract::journal::{Claimed, Owner, Phase};
use tool_contract::spec::ToolSpec;
use tool_contract::{Applied, Outcome, Probe, Report, Task, engine};
use tool_contract_postgres::PgJournal;
use tool_contract_testing::{
    Conformance, FakeService, Timing, Verdict, batch_probe, batch_result, single_result,
};

fn spec(kind: EffectKind) -> ToolSpec {
    ToolSpec::new("act", kind).deadline_floor(Duration::from_secs(1))
}

/// One call of a tool of `kind` that submits to the fake service and probes it.
async fn single(kind: EffectKind, task: Task, service: FakeService, target: &str) -> Report<u64> {
    let spec = spec(kind);
    let key = task.key(&spec, &target, None);
    let prober = service.clone();
    engine::run(
        &task,
        &spec,
        key,
        |call| {
            let service = service.clone();
            async move { single_result(kind, service.submit(call.key()).await) }
        },
        move |key| {
            let service = prober.clone();
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

/// One call of a bulk tool of `kind` on `items`.
async fn bulk(kind: EffectKind, task: Task, service: FakeService, items: Vec<String>) -> Report<()> {
    let spec = spec(kind);
    let key = task.key(&spec, &"sheet-1", None);
    let prober = service.clone();
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
            let service = prober.clone();
            async move { batch_probe(service.lookup_items(key, &items), &items) }
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_through_the_engine_is_logged_and_never_repeated() {
    let Some((journal, _)) = common::journal("engine_send").await else { return };
    let journal = Arc::new(journal);
    let service = FakeService::new();
    let task = || Task::new("ord-7741", "agent", Duration::from_secs(10)).journal(journal.clone());
    let first = single(EffectKind::Send, task(), service.clone(), "thread-9").await;
    assert_eq!((first.outcome, first.effect_applied), (Outcome::Ok, Applied::Yes), "{}", first.message);
    // The claim went in the end record's statement, not after the call: the intent is free at once.
    let key = task().key(&spec(EffectKind::Send), &"thread-9", None);
    let other = Owner::new("worker-b.1");
    let claimed = journal.claim(&key, &other, Duration::from_secs(5)).await.unwrap();
    assert!(matches!(claimed, Claimed::Held(Some(_))), "{claimed:?}");
    journal.release(&key, &other);
    // A new task of the same id (a restarted process): answered from the log, not sent again.
    let second = single(EffectKind::Send, task(), service.clone(), "thread-9").await;
    assert_eq!((second.outcome, second.value), (Outcome::Ok, first.value), "{}", second.message);
    assert_eq!(service.effects(first.idempotency_key), 1);
    assert_eq!(service.requests(), 1);
    let stored = journal.records(Some("ord-7741")).await.unwrap();
    // The inspector's rows say who wrote each record and when: a side effect's under its claim.
    for row in &stored {
        assert!(row.owner.as_deref().is_some_and(|o| !o.is_empty()), "{row:?}");
        let at = row.written_at.as_deref().unwrap_or_default();
        assert!(tool_contract::unstable::parse_rfc3339(at).is_some(), "written_at {at:?}");
    }
    let records: Vec<_> = stored.into_iter().map(|row| row.record).collect();
    let phases: Vec<(Phase, u32, Option<Outcome>)> =
        records.iter().map(|r| (r.phase, r.attempt, r.outcome)).collect();
    assert_eq!(phases, [(Phase::Start, 1, None), (Phase::End, 1, Some(Outcome::Ok))]);
    assert_eq!(records[1].value, first.value.map(|v| serde_json::json!(v)));
}

/// Two workers (two stores, two pools: as two processes would) run the same 40 sends at once against
/// a service that does not deduplicate: one effect per intent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_sharing_intents_make_one_effect_each() {
    let Some((first, conninfo)) = common::journal("engine_workers").await else { return };
    let second = PgJournal::connect(&conninfo).await.unwrap();
    let service = FakeService::new();
    let began = Instant::now();
    let intents = 40;
    let mut calls = Vec::new();
    for journal in [Arc::new(first), Arc::new(second)] {
        for i in 0..intents {
            let (journal, service) = (journal.clone(), service.clone());
            calls.push(tokio::spawn(async move {
                let task = Task::new(format!("order-{i}"), "agent", Duration::from_secs(20)).journal(journal);
                single(EffectKind::Send, task, service, "thread-1").await
            }));
        }
    }
    let mut keys = std::collections::HashSet::new();
    for call in calls {
        let report = call.await.unwrap();
        assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
        keys.insert(report.idempotency_key);
    }
    assert_eq!(keys.len(), intents);
    for key in &keys {
        assert_eq!(service.effects(*key), 1, "{key}");
    }
    assert_eq!(service.total_effects(), intents);
    eprintln!("{} calls of {intents} intents by 2 workers in {:?}", intents * 2, began.elapsed());
}

fn assert_all_pass(kind: EffectKind, verdicts: &[Verdict]) {
    assert_eq!(verdicts.len(), 7);
    for v in verdicts {
        assert!(v.pass, "{kind} {}: {v:?}", v.scenario);
    }
}

/// The six scenarios and the held request, every attempt written to PostgreSQL, on the real clock: a send and a
/// destructive tool, side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seven_conformance_scenarios_pass_on_postgres() {
    let Some((journal, _)) = common::journal("conformance").await else { return };
    let journal: Arc<PgJournal> = Arc::new(journal);
    let began = Instant::now();
    let run = |kind: EffectKind| {
        let journal = journal.clone();
        async move {
            Conformance::new(kind, move |t, s| single(kind, t, s, "thread-9"))
                .bulk(move |t, s, items| bulk(kind, t, s, items))
                .timing(Timing::REAL)
                .task_prefix(format!("pg-{kind}"))
                .journal(journal)
                .run()
                .await
        }
    };
    let (send, destructive) = tokio::join!(run(EffectKind::Send), run(EffectKind::Destructive));
    assert_all_pass(EffectKind::Send, &send);
    assert_all_pass(EffectKind::Destructive, &destructive);
    eprintln!("conformance on PostgreSQL, two kinds side by side: {:?}", began.elapsed());
    // Everything the scenarios wrote is resolved but the rate limit beyond the budget (retryable).
    let open = journal.try_unresolved().await.unwrap();
    assert!(open.is_empty(), "{:?}", open.iter().map(|r| &r.last.task).collect::<Vec<_>>());
}

/// A send left in doubt (its reply lost, its probe failing), settled by a person: `landed` makes no
/// further attempt; `not_landed` exactly one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settlement_on_postgres_is_honoured_by_the_next_call() {
    use std::sync::atomic::{AtomicU32, Ordering};
    use tool_contract::Class;
    use tool_contract::journal::Verdict;
    use tool_contract::person::Settle;
    let Some((journal, _)) = common::journal("engine_settle").await else { return };
    let journal = Arc::new(journal);
    // The person settles seconds after the attempt: with no landing horizon to wait for, it counts at
    // once (the log's stamps are whole seconds, perhaps from a clock a second apart: a word seen within
    // three seconds of the probe that found the attempt over is looked at again).
    let spec = spec(EffectKind::Send).horizon(Duration::ZERO);
    for (target, verdict, attempts_after) in
        [("thread-l", Verdict::Landed, 0), ("thread-n", Verdict::NotLanded, 1)]
    {
        let task = || Task::new("ord-settle", "agent", Duration::from_secs(10)).journal(journal.clone());
        let key = task().key(&spec, &target, None);
        let attempts = AtomicU32::new(0);
        let call = |lose: bool| {
            let task = task();
            let attempts = &attempts;
            let spec = &spec;
            async move {
                engine::run(
                    &task,
                    spec,
                    key,
                    |_| {
                        attempts.fetch_add(1, Ordering::SeqCst);
                        async move { if lose { Err(Class::unknown("reset after sending")) } else { Ok(7u64) } }
                    },
                    |_| async { Probe::<u64>::Failed("the thread's API is down".into()) },
                )
                .await
            }
        };
        assert_eq!(call(true).await.outcome, Outcome::Unknown);
        let before = attempts.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(3_500)).await;
        let settle = Settle::new(verdict, "alice", "looked at the thread");
        let settle = if verdict == Verdict::Landed { settle.value(7u64) } else { settle };
        tool_contract::person::settle(&*journal, &key, 1, &settle).await.unwrap();
        let report = call(false).await;
        assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(7)), "{verdict:?}: {}", report.message);
        assert_eq!(attempts.load(Ordering::SeqCst) - before, attempts_after, "{verdict:?}");
        let again = call(false).await;
        assert_eq!(again.outcome, Outcome::Ok);
        assert_eq!(attempts.load(Ordering::SeqCst) - before, attempts_after, "{verdict:?}: nothing more");
    }
}
