//! The store's reads against the memory store's, retention, durability, and what it does when the
//! server fails.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::{end, key, start};
use tool_contract::effect::EffectKind;
use tool_contract::journal::{Claimed, LastWord, Owner, Record};
use tool_contract::journal::{Durability, Journal, JournalError};
use tool_contract::probe::ProbeMark;
use tool_contract::spec::ToolSpec;
use tool_contract::{Applied, Class, MemoryJournal, Outcome, Probe, Task, engine};
use tool_contract_postgres::testing::PgServer;
use tool_contract_postgres::{PgJournal, PgOptions};

/// Every shape of record sequence the fold has to get right, over several intents.
fn sequences() -> Vec<Record> {
    let (a, b, c, d, e, f, g) = (key("a"), key("b"), key("c"), key("d"), key("e"), key("f"), key("g"));
    let with = |mut r: Record, edit: &dyn Fn(&mut Record)| {
        edit(&mut r);
        r
    };
    vec![
        // a: a start and its end, ok with a value.
        start(a, 1),
        with(end(a, 1, Outcome::Ok), &|r| r.value = Some(serde_json::json!({"id": 4411, "ü": [1, null]}))),
        // b and c interleaved; c ends unknown after a probe that failed.
        start(b, 1),
        start(c, 1),
        with(end(b, 1, Outcome::Retryable), &|r| r.retry_at = Some("2026-12-01T03:00:09Z".to_owned())),
        with(end(c, 1, Outcome::Unknown), &|r| {
            r.effect_applied = Some(Applied::Unknown);
            r.probe = Some(ProbeMark::Failed);
        }),
        start(b, 2),
        // d: a late end of attempt 1 after attempt 2 started: attempt 2 stays unfinished.
        start(d, 1),
        start(d, 2),
        end(d, 1, Outcome::Ok),
        // e: an end alone, then a start alone, with its own ids and stamps.
        with(end(e, 1, Outcome::Permanent), &|r| r.attempt_id = "mine-1".to_owned()),
        with(start(e, 2), &|r| {
            r.started = "2026-11-30T05:12:04Z".to_owned();
            r.task = "another task".to_owned();
        }),
        // f: two ends of one attempt (the second, a probe's verdict), then ok.
        start(f, 1),
        end(f, 1, Outcome::Unknown),
        with(end(f, 1, Outcome::Ok), &|r| r.probe = Some(ProbeMark::Landed)),
        // g: a start carrying items, a budget of zero, an empty message.
        with(start(g, 1), &|r| {
            r.value = Some(serde_json::json!(["row-1", "row-2"]));
            r.budget_left_s = 0;
        }),
        with(end(g, 1, Outcome::Retryable), &|r| r.message = Some(String::new())),
        start(g, 2),
        with(end(g, 2, Outcome::Unknown), &|r| r.probe = Some(ProbeMark::NotLanded)),
        start(b, 3),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_attempts_and_unresolved_answer_as_the_memory_store_does() {
    let Some((journal, _)) = common::journal("equivalence").await else { return };
    let memory = MemoryJournal::new();
    let records = sequences();
    for (i, record) in records.iter().enumerate() {
        let durability = if i % 3 == 0 { Durability::Synced } else { Durability::Buffered };
        journal.append(record.as_record_ref(), durability).await.unwrap();
        memory.append(record.as_record_ref(), durability).await.unwrap();
        // After every record, not only at the end: the fold is right at every step.
        let k = record.intent_key;
        assert_eq!(journal.recall(&k).await.unwrap(), memory.recall_now(&k), "after record {i}");
    }
    for name in ["a", "b", "c", "d", "e", "f", "g", "never-written"] {
        let k = key(name);
        assert_eq!(journal.recall(&k).await.unwrap(), memory.recall_now(&k), "recall of {name}");
        let attempts = Journal::attempts(&memory, &k).await.unwrap();
        assert_eq!(journal.attempts(&k).await.unwrap(), attempts, "attempts of {name}");
    }
    let unresolved = journal.try_unresolved().await.unwrap();
    assert_eq!(unresolved, memory.unresolved_now());
    let open: Vec<String> = unresolved.iter().map(|r| format!("{}:{}", r.last.task, r.attempts)).collect();
    assert_eq!(unresolved.len(), 5, "b, c, d, e and g wait on someone: {open:?}");
    // Every field of every record comes back as written, in order.
    let records: Vec<_> = journal.records(None).await.unwrap().into_iter().map(|row| row.record).collect();
    assert_eq!(records, memory.records());
    assert_eq!(journal.records(Some("another task")).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reads_lazy_start_is_written_before_its_end() {
    let Some((journal, _)) = common::journal("lazy").await else { return };
    let k = key("lazy-read");
    // A lazy start is answered at once and not yet in the table...
    let lazy = start(k, 1);
    let answer = journal.append(lazy.as_record_ref(), Durability::Lazy);
    assert!(answer.ready().is_some(), "a lazy record is taken at once");
    assert_eq!(journal.try_recall(&k).await.unwrap(), None);
    // ... and lands, in order, with the next record of its intent.
    journal.append(end(k, 1, Outcome::Ok).as_record_ref(), Durability::Buffered).await.unwrap();
    let records: Vec<_> = journal.records(None).await.unwrap().into_iter().map(|row| row.record).collect();
    assert_eq!(records, [start(k, 1), end(k, 1, Outcome::Ok)]);
    assert_eq!(journal.try_recall(&k).await.unwrap().unwrap().last_word(), LastWord::Ok(None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_removes_only_resolved_unclaimed_old_intents() {
    let Some((journal, conninfo)) = common::journal("retention").await else { return };
    let (done, unfinished, unknown, claimed, recent) =
        (key("done"), key("unfinished"), key("unknown"), key("claimed"), key("recent"));
    let owner = Owner::new("worker-a");
    for k in [done, claimed] {
        journal.append(start(k, 1).as_record_ref(), Durability::Buffered).await.unwrap();
        journal.append(end(k, 1, Outcome::Ok).as_record_ref(), Durability::Buffered).await.unwrap();
    }
    journal.append(start(unfinished, 1).as_record_ref(), Durability::Buffered).await.unwrap();
    journal.append(end(unknown, 1, Outcome::Unknown).as_record_ref(), Durability::Buffered).await.unwrap();
    // Refused after an attempt that may have landed: retryable, its effect unknown; the next call probes it.
    let doubtful = key("doubtful");
    let refused = Record {
        effect_applied: Some(tool_contract::Applied::Unknown),
        ..end(doubtful, 1, Outcome::Retryable)
    };
    journal.append(refused.as_record_ref(), Durability::Buffered).await.unwrap();
    // A worker is running the intent again (a repeated call being answered).
    journal.claim(&claimed, &owner, Duration::from_secs(60)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    journal.append(end(recent, 1, Outcome::Permanent).as_record_ref(), Durability::Buffered).await.unwrap();

    let removed = journal.remove_resolved_older_than(Duration::from_millis(500)).await.unwrap();
    assert_eq!(removed, 1);
    assert_eq!(journal.try_recall(&done).await.unwrap(), None);
    for (name, k) in [
        ("unfinished", unfinished),
        ("unknown", unknown),
        ("doubtful", doubtful),
        ("claimed", claimed),
        ("recent", recent),
    ] {
        assert!(journal.try_recall(&k).await.unwrap().is_some(), "{name} was removed");
    }
    // The worker's claim is untouched, and retention left no claim of its own.
    assert!(matches!(
        journal.claim(&claimed, &owner, Duration::from_secs(60)).await.unwrap(),
        Claimed::Held(Some(_))
    ));
    let client = common::client(&conninfo).await;
    let claims: i64 =
        client.query_one("SELECT count(*) FROM tool_contract.claims", &[]).await.unwrap().get(0);
    assert_eq!(claims, 1);
    assert_eq!(journal.remove_resolved_older_than(Duration::from_millis(500)).await.unwrap(), 0);
}

/// Side-effect starts wait for the WAL to reach the disk; other records do not. Counted by the
/// server's own WAL statistics: one sync per synced commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synced_records_flush_the_wal_and_buffered_ones_do_not() {
    let Some(conninfo) = common::database("durability").await else { return };
    let client = common::client(&conninfo).await;
    let wal_syncs = || async {
        // Backends report their statistics when they go idle, at most once a second.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let row = client.query_one("SELECT wal_sync FROM pg_stat_wal", &[]).await.unwrap();
        row.get::<_, i64>(0)
    };
    let n = 40;
    let mut syncs = Vec::new();
    for (round, durability) in [Durability::Buffered, Durability::Synced].into_iter().enumerate() {
        let journal = PgJournal::connect_with(&conninfo, PgOptions::default().pool_size(1)).await.unwrap();
        let before = wal_syncs().await;
        for i in 0..n {
            journal
                .append(start(key(&format!("wal-{round}-{i}")), 1).as_record_ref(), durability)
                .await
                .unwrap();
        }
        drop(journal);
        syncs.push(wal_syncs().await - before);
    }
    eprintln!("WAL syncs for {n} records: buffered {}, synced {}", syncs[0], syncs[1]);
    assert!(syncs[1] >= n, "synced records: {} WAL syncs for {n} commits", syncs[1]);
    assert!(syncs[0] < n / 2, "buffered records: {} WAL syncs for {n} commits", syncs[0]);
}

#[tokio::test]
async fn a_server_that_cannot_be_reached_is_an_error_naming_it_without_its_password() {
    let began = Instant::now();
    let options = PgOptions::default().connect_timeout(Duration::from_secs(2));
    let err =
        PgJournal::connect_with("postgres://agent:hunter2@127.0.0.1:1/fleet", options).await.unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("postgres://agent@127.0.0.1:1/fleet"), "{shown}");
    assert!(began.elapsed() < Duration::from_secs(5), "{:?}", began.elapsed());
    let err = PgJournal::connect("host=/nowhere password=hunter2 port=x").await.unwrap_err();
    assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");
}

const POST: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);

const COUNT: ToolSpec = ToolSpec::new("count_notices", EffectKind::Read);

/// A read that counts its attempts.
async fn read_count(task: &Task, reads: &AtomicU32) -> tool_contract::Report<u32> {
    engine::run(
        task,
        &COUNT,
        task.key(&COUNT, &"t", None),
        |_| async { Ok::<u32, tool_contract::Class>(reads.fetch_add(1, Ordering::SeqCst)) },
        tool_contract::probe::NoProbe,
    )
    .await
}

async fn post(
    task: &Task,
    target: &str,
    effects: &AtomicU32,
    during: impl AsyncFn(),
) -> tool_contract::Report<u32> {
    let during = &during;
    engine::run(
        task,
        &POST,
        task.key(&POST, &target, None),
        |_| async move {
            let n = effects.fetch_add(1, Ordering::SeqCst) + 1;
            during().await;
            Ok::<u32, Class>(n)
        },
        |_| async {
            match effects.load(Ordering::SeqCst) {
                0 => Probe::NotLanded,
                n => Probe::Landed(n),
            }
        },
    )
    .await
}

/// The server goes away and comes back: a call with no store is not attempted, a lost end record
/// leaves the intent unfinished and it is probed later, and the store reconnects by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_down_refuses_calls_a_lost_end_is_probed_later_and_the_store_reconnects() {
    if common::server().is_none() {
        return;
    }
    // A server of its own, to stop and start.
    let server = Arc::new(PgServer::start().unwrap());
    let conninfo = server.database("faults").await.unwrap();
    let options = PgOptions::default().op_timeout(Duration::from_secs(3));
    let journal = Arc::new(PgJournal::connect_with(&conninfo, options).await.unwrap());
    let task_for = |id: &str, budget: u64| {
        Task::new(id.to_owned(), "agent", Duration::from_secs(budget)).journal(journal.clone())
    };
    let task = |id: &str| task_for(id, 5);
    let nothing = async || {};

    // Up: one effect.
    let effects = AtomicU32::new(0);
    let report = post(&task("up"), "t-1", &effects, nothing).await;
    assert_eq!((report.outcome, effects.load(Ordering::SeqCst)), (Outcome::Ok, 1), "{}", report.message);

    // Connections killed between the start and the end record: the end is tried again and stored.
    let killer = common::client(&conninfo).await;
    let kill = async || {
        killer
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'faults' AND pid <> pg_backend_pid()",
                &[],
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let effects = AtomicU32::new(0);
    let report = post(&task("killed"), "t-2", &effects, kill).await;
    assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
    let k = task("killed").key(&POST, &"t-2", None);
    let recall = journal.try_recall(&k).await.unwrap().unwrap();
    assert_eq!(recall.last_word(), LastWord::Ok(Some(&serde_json::json!(1))), "the end record was stored");

    // Down mid-call: the effect lands, its end record cannot be stored.
    let effects = AtomicU32::new(0);
    let stopper = Arc::clone(&server);
    let stop = async move || {
        let stopper = Arc::clone(&stopper);
        tokio::task::spawn_blocking(move || stopper.stop().unwrap()).await.unwrap();
    };
    let report = post(&task_for("lost-end", 2), "t-3", &effects, stop).await;
    assert_eq!(report.outcome, Outcome::Ok, "the call itself succeeded: {}", report.message);
    // Down: nothing is attempted, quickly.
    let began = Instant::now();
    let refused = post(&task("down"), "t-4", &effects, nothing).await;
    assert_eq!(refused.outcome, Outcome::Retryable, "{}", refused.message);
    assert_ne!(refused.effect_applied, Applied::Yes);
    assert_eq!(effects.load(Ordering::SeqCst), 1, "nothing sent while the store is down");
    assert!(began.elapsed() < Duration::from_secs(5), "{:?}", began.elapsed());
    let err = journal.claim(&key("down"), &Owner::new("w"), Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(&err, JournalError::Io { .. }), "{err}");
    // Reads say they could not ask: never "nothing recorded", never "no intent in doubt".
    let store: &dyn Journal = &*journal;
    assert!(store.recall(&key("down")).await.is_err(), "recall while down");
    assert!(store.attempts(&key("down")).await.is_err(), "attempts while down");
    assert!(store.unresolved().await.is_err(), "the escalation queue while down");
    // A read is not numbered as if its intent were new: it is refused, nothing started.
    let reads = AtomicU32::new(0);
    let read = read_count(&task("down-read"), &reads).await;
    assert_eq!((read.outcome, reads.load(Ordering::SeqCst)), (Outcome::Retryable, 0), "{}", read.message);
    assert!(read.message.contains("could not be read"), "{}", read.message);
    assert_eq!(
        (read.reason, refused.reason),
        (tool_contract::Reason::StoreFailed, tool_contract::Reason::StoreFailed)
    );

    // Back up: the same store works again, and the intent whose end was lost is probed, not re-sent.
    let starter = Arc::clone(&server);
    tokio::task::spawn_blocking(move || starter.start_again().unwrap()).await.unwrap();
    let k = task("lost-end").key(&POST, &"t-3", None);
    let recall = journal.try_recall(&k).await.unwrap().unwrap();
    assert_eq!(recall.last_word(), LastWord::Unfinished, "the end record was lost with the server");
    // Its claim could not be released while the server was down: the call waits out its lease (the
    // budget of the call that took it, plus a margin), then probes.
    let again = post(&task_for("lost-end", 10), "t-3", &effects, nothing).await;
    assert_eq!((again.outcome, again.value), (Outcome::Ok, Some(1)), "{}", again.message);
    assert_eq!(effects.load(Ordering::SeqCst), 1, "probed, not sent again");
    let recall = journal.try_recall(&k).await.unwrap().unwrap();
    assert_eq!((recall.attempts, recall.last.probe), (1, Some(ProbeMark::Landed)));
    let effects = AtomicU32::new(0);
    let report = post(&task("after"), "t-5", &effects, nothing).await;
    assert_eq!((report.outcome, effects.load(Ordering::SeqCst)), (Outcome::Ok, 1), "{}", report.message);
}

/// Issue 22, item 8: `connect` can wait, bounded, for a server that is restarting; without the option
/// it fails at once, and a wrong database is never waited for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_waits_for_a_restarting_server_as_long_as_told() {
    if common::server().is_none() {
        return;
    }
    let server = Arc::new(PgServer::start().unwrap());
    let conninfo = server.database("restarting").await.unwrap();
    let stopper = Arc::clone(&server);
    tokio::task::spawn_blocking(move || stopper.stop().unwrap()).await.unwrap();
    let began = Instant::now();
    assert!(PgJournal::connect(&conninfo).await.is_err(), "no wait by default");
    assert!(began.elapsed() < Duration::from_secs(3), "{:?}", began.elapsed());
    let starter = Arc::clone(&server);
    let restart = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(800)).await;
        tokio::task::spawn_blocking(move || starter.start_again().unwrap()).await.unwrap();
    });
    let options = PgOptions::default().wait_for_server(Duration::from_secs(20));
    let journal = PgJournal::connect_with(&conninfo, options.clone()).await.unwrap();
    restart.await.unwrap();
    assert!(journal.try_unresolved().await.unwrap().is_empty());
    let began = Instant::now();
    let wrong = conninfo.replace("dbname=restarting", "dbname=no_such_database");
    assert!(PgJournal::connect_with(&wrong, options).await.is_err());
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "a missing database is not waited for: {:?}",
        began.elapsed()
    );
}
