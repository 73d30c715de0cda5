//! The claim rules of DESIGN.md section 9, each against a real PostgreSQL server, plus concurrent
//! claimers, fencing after a takeover and a fleet migrating at once.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::{end, key, lease_left, start, starts};
use tool_contract::effect::EffectKind;
use tool_contract::journal::{Claimed, LastWord, Owner};
use tool_contract::journal::{Durability, Journal, JournalError};
use tool_contract::spec::ToolSpec;
use tool_contract::{Class, MemoryJournal, Outcome, Probe, Task, engine};
use tool_contract_postgres::{PgJournal, PgOptions, SCHEMA_VERSION};

const SYNCED: Durability = Durability::Synced;

fn refused(result: Result<(), JournalError>) -> String {
    match result {
        Err(JournalError::Conflict { why, .. }) => why,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

/// Rule 1: the fence is the store's unique (intent, attempt) start row, checked in the same statement
/// as the claim; the lease alone is not what stops a second start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_1_the_start_row_is_the_fence_not_the_lease() {
    let Some((journal, conninfo)) = common::journal("rule_1").await else { return };
    let client = common::client(&conninfo).await;
    let (a, b) = (Owner::new("worker-a"), Owner::new("worker-b"));

    // Two owners that both believe they hold the intent: b is made holder behind a's back.
    let k = key("rule-1");
    journal.claim(&k, &a, Duration::from_secs(10)).await.unwrap();
    journal.start(&a, start(k, 1).as_record_ref(), SYNCED).await.unwrap();
    client
        .execute(
            "UPDATE tool_contract.claims SET owner = 'worker-b' WHERE intent = $1",
            &[&k.as_bytes().as_slice()],
        )
        .await
        .unwrap();
    let why = refused(journal.start(&b, start(k, 1).as_record_ref(), SYNCED).await);
    assert!(why.contains("the next is 2"), "{why}");
    // The unique index itself: a second fenced start row of one attempt cannot exist.
    let forged = client
        .execute(
            "INSERT INTO tool_contract.attempts (intent, attempt, phase, task, tool, attempt_id, started, budget_left_s, owner)
             VALUES ($1, 1, 'start', 't', 'post', 'x', 's', 1, 'worker-b')",
            &[&k.as_bytes().as_slice()],
        )
        .await
        .unwrap_err();
    assert_eq!(forged.code(), Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION), "{forged}");
    assert_eq!(starts(&client, &k).await, (1, 1));

    // At the lease's end, the old holder's start and the new holder's claim and start race: never
    // both start the attempt.
    let journal = Arc::new(journal);
    let mut both = 0;
    let mut one = 0;
    for round in 0..12 {
        let k = key(&format!("rule-1-race-{round}"));
        let lease = Duration::from_millis(150);
        journal.claim(&k, &a, lease).await.unwrap();
        let late = {
            let journal = Arc::clone(&journal);
            let a = a.clone();
            tokio::spawn(async move {
                tokio::time::sleep(lease - Duration::from_millis(2)).await;
                journal.start(&a, start(k, 1).as_record_ref(), SYNCED).await.is_ok()
            })
        };
        let taker = {
            let journal = Arc::clone(&journal);
            let b = b.clone();
            tokio::spawn(async move {
                loop {
                    match journal.claim(&k, &b, Duration::from_secs(5)).await.unwrap() {
                        Claimed::Held(recall) => {
                            let next = recall.map_or(1, |r| r.attempts + 1);
                            let first = journal.start(&b, start(k, 1).as_record_ref(), SYNCED).await.is_ok();
                            return (first, next);
                        }
                        Claimed::Busy { .. } => tokio::time::sleep(Duration::from_millis(1)).await,
                    }
                }
            })
        };
        let (a_started, (b_started, b_next)) = (late.await.unwrap(), taker.await.unwrap());
        assert!(!(a_started && b_started), "round {round}: both started attempt 1");
        // Whoever took over after a start by the old holder saw it and would start attempt 2.
        assert_eq!(b_next, if a_started { 2 } else { 1 }, "round {round}");
        let (rows, fenced) = starts(&client, &k).await;
        assert_eq!((rows, fenced), (1, 1), "round {round}: exactly one start row");
        if a_started { both += 1 } else { one += 1 }
    }
    eprintln!("rule 1 race: old holder started first in {both} rounds, the new holder in {one}");
}

/// Rule 2: every write by a holder is conditional on still holding the claim, atomically; a late write
/// of an old attempt changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_2_every_holder_write_is_conditional_on_holding_the_claim() {
    let Some((journal, conninfo)) = common::journal("rule_2").await else { return };
    let client = common::client(&conninfo).await;
    let (a, b, c) = (Owner::new("worker-a"), Owner::new("worker-b"), Owner::new("worker-c"));
    let k = key("rule-2");

    let why = refused(journal.start(&a, start(k, 1).as_record_ref(), SYNCED).await);
    assert!(why.contains("holds no claim"), "{why}");
    assert_eq!(journal.claim(&k, &a, Duration::from_millis(300)).await.unwrap(), Claimed::Held(None));
    let why = refused(journal.start(&b, start(k, 1).as_record_ref(), SYNCED).await);
    assert!(why.contains("claimed by worker-a"), "{why}");
    let why = refused(journal.start(&a, start(k, 2).as_record_ref(), SYNCED).await);
    assert!(why.contains("the next is 1"), "{why}");
    journal.start(&a, start(k, 1).as_record_ref(), SYNCED).await.unwrap();

    tokio::time::sleep(Duration::from_millis(400)).await;
    let why = refused(journal.start(&a, start(k, 2).as_record_ref(), SYNCED).await);
    assert!(why.contains("expired"), "{why}");
    let Claimed::Held(Some(recall)) = journal.claim(&k, &b, Duration::from_secs(10)).await.unwrap() else {
        panic!("the lease ran out: b takes the intent and learns of attempt 1");
    };
    assert_eq!((recall.attempts, recall.last_word()), (1, LastWord::Unfinished));
    journal.start(&b, start(k, 2).as_record_ref(), SYNCED).await.unwrap();
    // a comes back: it cannot renew, cannot start, and its late end of attempt 1 hides nothing.
    assert!(
        matches!(journal.claim(&k, &a, Duration::from_secs(10)).await.unwrap(), Claimed::Busy { holder, .. } if holder == b)
    );
    let why = refused(journal.start(&a, start(k, 3).as_record_ref(), SYNCED).await);
    assert!(why.contains("claimed by worker-b"), "{why}");
    journal.append(end(k, 1, Outcome::Ok).as_record_ref(), Durability::Buffered).await.unwrap();
    let recall = journal.try_recall(&k).await.unwrap().unwrap();
    assert_eq!(
        (recall.attempts, recall.last_word()),
        (2, LastWord::Unfinished),
        "b's attempt 2 is the last word"
    );
    // A release by someone else leaves b's claim; b's own frees the intent.
    journal.release(&k, &a);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(matches!(journal.claim(&k, &c, Duration::from_secs(1)).await.unwrap(), Claimed::Busy { .. }));
    journal.release(&k, &b);
    let mut held = false;
    for _ in 0..50 {
        if let Claimed::Held(_) = journal.claim(&k, &c, Duration::from_secs(1)).await.unwrap() {
            held = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(held, "released by its holder, the intent is free at once, before its lease ends");
    assert_eq!(starts(&client, &k).await, (2, 2), "only the two accepted starts were written");
}

const POST: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);

/// A send through the engine whose effect is counted in `effects`; its probe says whether any landed.
async fn post(task: &Task, effects: &AtomicU32, act: Duration) -> tool_contract::Report<u32> {
    engine::run(
        task,
        &POST,
        task.key(&POST, &"thread-9", None),
        |_| async move {
            tokio::time::sleep(act).await;
            Ok::<u32, Class>(effects.fetch_add(1, Ordering::SeqCst) + 1)
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

/// Rule 3: whoever takes over assumes the old attempt can still land: the claim shows the unfinished
/// start and the engine probes before anything else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_3_a_takeover_sees_the_unfinished_start_and_probes_first() {
    let Some((journal, conninfo)) = common::journal("rule_3").await else { return };
    let journal = Arc::new(journal);
    let task = Task::new("rule-3", "agent", Duration::from_secs(10)).journal(journal.clone());
    let k = task.key(&POST, &"thread-9", None);
    // Worker a claims, writes its start, sends (the effect lands), and dies before its end record.
    let a = Owner::new("worker-a");
    journal.claim(&k, &a, Duration::from_millis(500)).await.unwrap();
    let mut first = start(k, 1);
    first.task = "rule-3".to_owned();
    journal.start(&a, first.as_record_ref(), SYNCED).await.unwrap();
    let effects = AtomicU32::new(1);

    let began = Instant::now();
    let report = post(&task, &effects, Duration::ZERO).await;
    let waited = began.elapsed();
    assert_eq!(effects.load(Ordering::SeqCst), 1, "nothing sent again: {}", report.message);
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(1)), "{}", report.message);
    assert!(waited >= Duration::from_millis(300), "waited for a's lease to end: {waited:?}");
    let recall = journal.try_recall(&k).await.unwrap().unwrap();
    assert_eq!(recall.attempts, 1, "no second attempt was started");
    assert_eq!(recall.last.probe, Some(tool_contract::probe::ProbeMark::Landed), "{:?}", recall.last);
    let client = common::client(&conninfo).await;
    assert_eq!(starts(&client, &k).await, (1, 1));
}

/// Rule 4: the lease outlasts the whole attempt: while the attempt runs, the lease on the server
/// covers the task's remaining budget, and another worker is kept out for at least that long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_4_the_lease_covers_the_attempts_deadline() {
    let Some((journal, conninfo)) = common::journal("rule_4").await else { return };
    let journal = Arc::new(journal);
    let client = common::client(&conninfo).await;
    let budget = Duration::from_secs(4);
    let task = Task::new("rule-4", "agent", budget).journal(journal.clone());
    let k = task.key(&POST, &"thread-9", None);
    let seen = tokio::sync::Mutex::new(None);
    let report = engine::run(
        &task,
        &POST,
        k,
        |_| async {
            let remaining = task.remaining();
            let left = lease_left(&client, &k).await.expect("a claim while the attempt runs");
            let rival = journal.claim(&k, &Owner::new("worker-b"), Duration::from_secs(60)).await.unwrap();
            *seen.lock().await = Some((remaining, left, rival));
            Ok::<u32, Class>(1)
        },
        |_| async { Probe::<u32>::NotLanded },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
    let (remaining, left, rival) = seen.into_inner().unwrap();
    assert!(left >= remaining, "the lease ({left:?}) ends before the attempt's deadline ({remaining:?})");
    // The lease covers the budget, then the tool's landing horizon (a request still held may land
    // that much later), then a margin.
    let most = budget + POST.get_horizon() + Duration::from_secs(2);
    assert!(left <= most, "the lease ({left:?}) is not the budget's and the horizon's");
    let Claimed::Busy { holder, left: rival_left } = rival else {
        panic!("another worker took the intent mid-attempt")
    };
    assert_ne!(holder.as_str(), "worker-b");
    assert!(rival_left >= remaining, "{rival_left:?} < {remaining:?}");
}

/// Rule 5: lease times come from the store's clock only. The worker's clock jumps an hour ahead (as
/// tokio's clock, which the engine and the embedded stores read); the server still holds the lease.
#[tokio::test]
async fn rule_5_lease_times_come_from_the_servers_clock_only() {
    let Some((journal, conninfo)) = common::journal("rule_5").await else { return };
    let client = common::client(&conninfo).await;
    let memory = MemoryJournal::new();
    let (a, b) = (Owner::new("worker-a"), Owner::new("worker-b"));
    let k = key("rule-5");
    let lease = Duration::from_secs(5);
    journal.claim(&k, &a, lease).await.unwrap();
    memory.claim(&k, &a, lease).await.unwrap();
    let wall = tool_contract::unstable::wall_clock();

    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(3600)).await;
    tokio::time::resume();
    let jumped = tool_contract::unstable::wall_clock().duration_since(wall).unwrap();
    assert!(jumped >= Duration::from_secs(3600), "the worker's clock moved {jumped:?}");

    // A store on the worker's clock would call the lease over (the memory store does)...
    assert!(matches!(memory.claim(&k, &b, lease).await.unwrap(), Claimed::Held(_)));
    // ... the server's lease runs on.
    let Claimed::Busy { holder, left } = journal.claim(&k, &b, lease).await.unwrap() else {
        panic!("the lease was judged on the worker's clock");
    };
    assert_eq!(holder, a);
    assert!(left > Duration::from_secs(3) && left <= lease, "{left:?}");
    journal.start(&a, start(k, 1).as_record_ref(), SYNCED).await.unwrap();
    // The lease stored is the server's now + the lease, to the millisecond's scale.
    let left = lease_left(&client, &k).await.unwrap();
    assert!(left > Duration::from_secs(3) && left <= lease, "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_claimers_of_one_intent_one_holds() {
    let Some((journal, _)) = common::journal("claimers").await else { return };
    let journal = Arc::new(journal);
    let lease = Duration::from_secs(5);
    let mut latencies = Vec::new();
    for round in 0..3 {
        let k = key(&format!("claimers-{round}"));
        let claims: Vec<_> = (0..64)
            .map(|i| {
                let journal = Arc::clone(&journal);
                tokio::spawn(async move {
                    let owner = Owner::new(format!("worker-{i}"));
                    let began = Instant::now();
                    let claimed = journal.claim(&k, &owner, lease).await.unwrap();
                    (owner, claimed, began.elapsed())
                })
            })
            .collect();
        let mut held = Vec::new();
        let mut busy = Vec::new();
        for claim in claims {
            let (owner, claimed, took) = claim.await.unwrap();
            // The first round opens the pool's connections.
            if round > 0 {
                latencies.push(took);
            }
            match claimed {
                Claimed::Held(recall) => held.push((owner, recall)),
                Claimed::Busy { holder, left } => busy.push((holder, left)),
            }
        }
        assert_eq!(held.len(), 1, "round {round}: {held:?}");
        assert_eq!(busy.len(), 63);
        let winner = &held[0].0;
        for (holder, left) in &busy {
            assert_eq!(holder, winner);
            assert!(*left > Duration::ZERO && *left <= lease, "{left:?}");
        }
    }
    let (p50, p99) = (common::percentile(&mut latencies, 50), common::percentile(&mut latencies, 99));
    eprintln!("claim latency, 64 concurrent claimers, pool of 16: p50 {p50:?}, p99 {p99:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_after_the_lease_expired_and_another_owner_took_over_is_fenced() {
    let Some((journal, conninfo)) = common::journal("fencing").await else { return };
    let client = common::client(&conninfo).await;
    let (a, b) = (Owner::new("worker-a"), Owner::new("worker-b"));
    let k = key("fencing");
    journal.claim(&k, &a, Duration::from_millis(200)).await.unwrap();
    // a stalls (a GC pause, a stopped VM) past its lease; b takes over.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(journal.claim(&k, &b, Duration::from_secs(10)).await.unwrap(), Claimed::Held(None));
    let why = refused(journal.start(&a, start(k, 1).as_record_ref(), SYNCED).await);
    assert!(why.contains("claimed by worker-b, not worker-a"), "{why}");
    journal.start(&b, start(k, 1).as_record_ref(), SYNCED).await.unwrap();
    // a can never write a start for the intent again while b holds it, whatever attempt it names.
    for attempt in 1..=3 {
        assert!(matches!(
            journal.start(&a, start(k, attempt).as_record_ref(), SYNCED).await,
            Err(JournalError::Conflict { .. })
        ));
    }
    assert!(matches!(journal.claim(&k, &a, Duration::from_secs(10)).await.unwrap(), Claimed::Busy { .. }));
    let owners: Vec<String> = client
        .query("SELECT owner FROM tool_contract.attempts WHERE intent = $1", &[&k.as_bytes().as_slice()])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(owners, ["worker-b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_workers_connecting_at_once_migrate_once() {
    let Some(conninfo) = common::database("migration").await else { return };
    let began = Instant::now();
    let connects: Vec<_> = (0..8)
        .map(|_| {
            let conninfo = conninfo.clone();
            tokio::spawn(async move {
                PgJournal::connect_with(&conninfo, PgOptions::default().pool_size(2)).await
            })
        })
        .collect();
    let mut journals = Vec::new();
    for connect in connects {
        journals.push(connect.await.unwrap().unwrap());
    }
    eprintln!("8 workers connected and migrated in {:?}", began.elapsed());
    let client = common::client(&conninfo).await;
    let versions: Vec<i32> = client
        .query("SELECT version FROM tool_contract.schema_version ORDER BY version", &[])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    // Every worker works on the one schema.
    let k = key("migration");
    for (i, journal) in journals.iter().enumerate() {
        let owner = Owner::new(format!("worker-{i}"));
        let claimed = journal.claim(&k, &owner, Duration::from_secs(5)).await.unwrap();
        assert_eq!(matches!(claimed, Claimed::Held(_)), i == 0, "worker {i}");
    }
    // Connecting again changes nothing; a newer schema than this build knows is refused untouched.
    PgJournal::connect(&conninfo).await.unwrap();
    let count: i64 =
        client.query_one("SELECT count(*) FROM tool_contract.schema_version", &[]).await.unwrap().get(0);
    assert_eq!(count, i64::from(SCHEMA_VERSION));
    client.execute("INSERT INTO tool_contract.schema_version (version) VALUES (999)", &[]).await.unwrap();
    let err = PgJournal::connect(&conninfo).await.unwrap_err();
    assert!(matches!(&err, JournalError::NotALog { why, .. } if why.contains("999")), "{err}");
}

/// A log written by the build before schema version 4 (no `intent_has_records`, which the claim calls,
/// nor the columns of version 5, nor the MCP task rule of version 6) is refused by a reader of this build, with what to do, and migrated by the first worker that
/// connects: the old intent's records are kept and read at its next claim, and a new intent's claim
/// answers that it has none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_of_version_3_is_migrated_by_a_worker_and_its_records_are_read_at_the_next_claim() {
    let Some((journal, conninfo)) = common::journal("from_version_3").await else { return };
    let a = Owner::new("worker-a.1");
    let old = key("from-3-old");
    journal.claim(&old, &a, Duration::from_secs(30)).await.unwrap();
    journal.start(&a, start(old, 1).as_record_ref(), SYNCED).await.unwrap();
    journal.finish(&a, end(old, 1, Outcome::Ok).as_record_ref(), SYNCED).await.unwrap();
    drop(journal);
    // What version 3 left: the same tables without the columns of version 5, without the function of
    // version 4, without the MCP task rule of version 6, and without their version rows.
    let client = common::client(&conninfo).await;
    client
        .batch_execute(
            "DROP FUNCTION tool_contract.intent_has_records(bytea);
             ALTER TABLE tool_contract.attempts DROP COLUMN sent_by, DROP COLUMN args,
                 DROP CONSTRAINT attempts_mcp_task_account;
             DELETE FROM tool_contract.schema_version WHERE version >= 4;",
        )
        .await
        .unwrap();
    let refused = PgJournal::connect_with(&conninfo, PgOptions::default().read_only(true)).await.unwrap_err();
    assert!(
        matches!(&refused, JournalError::NotALog { why, .. } if why.contains("version 3") && why.contains("a worker")),
        "{refused}"
    );
    let journal = PgJournal::connect(&conninfo).await.unwrap();
    let b = Owner::new("worker-b.1");
    let Claimed::Held(Some(recall)) = journal.claim(&old, &b, Duration::from_secs(30)).await.unwrap() else {
        panic!("the old intent's records survive the migration and are read at the claim")
    };
    assert_eq!((recall.attempts, recall.last_word()), (1, LastWord::Ok(None)));
    let new = key("from-3-new");
    assert_eq!(journal.claim(&new, &b, Duration::from_secs(30)).await.unwrap(), Claimed::Held(None));
    PgJournal::connect_with(&conninfo, PgOptions::default().read_only(true)).await.unwrap();
}

/// A claim answers with what the store knows of the intent whichever way it was taken: a fresh claim
/// row (a new intent, or one released after its end), a renewal and a takeover alike, read after the
/// claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_answers_with_the_intents_records_fresh_renewed_or_taken_over() {
    let Some((journal, _)) = common::journal("claims_answer").await else { return };
    let (a, b) = (Owner::new("worker-a.1"), Owner::new("worker-b.1"));
    let lease = Duration::from_secs(30);
    let held = |claimed: Claimed| match claimed {
        Claimed::Held(recall) => recall,
        Claimed::Busy { holder, .. } => panic!("held by {holder}"),
    };
    // A new intent: nothing known.
    let new = key("answer-new");
    assert_eq!(held(journal.claim(&new, &a, lease).await.unwrap()), None);
    // Done and released by a, then claimed afresh by b: b reads a's attempt and its end.
    let done = key("answer-done");
    held(journal.claim(&done, &a, lease).await.unwrap());
    journal.start(&a, start(done, 1).as_record_ref(), SYNCED).await.unwrap();
    journal.append(end(done, 1, Outcome::Ok).as_record_ref(), SYNCED).await.unwrap();
    journal.release(&done, &a);
    let mut fresh = None;
    for _ in 0..100 {
        // The release is sent off; wait for it to land.
        match journal.claim(&done, &b, lease).await.unwrap() {
            Claimed::Held(recall) => {
                fresh = recall;
                break;
            }
            Claimed::Busy { .. } => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    let fresh = fresh.expect("b claims the released intent and reads its records");
    assert_eq!((fresh.attempts, fresh.last_word()), (1, LastWord::Ok(None)));
    // b renews: the same answer, read after the claim.
    let renewed = held(journal.claim(&done, &b, lease).await.unwrap()).expect("records");
    assert_eq!(renewed, fresh);
    // A crash: c's start without an end, its short lease runs out, d takes over and reads the start.
    let (c, d) = (Owner::new("worker-c.1"), Owner::new("worker-d.1"));
    let crashed = key("answer-crashed");
    held(journal.claim(&crashed, &c, Duration::from_millis(300)).await.unwrap());
    journal.start(&c, start(crashed, 1).as_record_ref(), SYNCED).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let taken = held(journal.claim(&crashed, &d, lease).await.unwrap()).expect("the crashed start");
    assert_eq!((taken.attempts, taken.last_word()), (1, LastWord::Unfinished));
}

/// A claim that waits on the intent's row while its holder writes its last records and lets go reads
/// those records: whether the intent has any is asked on a snapshot taken once the claim's row is
/// written, and the records are read by a statement of its own, never on the claim statement's own
/// snapshot (taken before the wait, it would miss them, and the second worker would start attempt 1
/// again, only for the fence to refuse it). With the question asked in a plain subquery of the claim,
/// this test fails: the claim answers that the intent is new.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_waited_on_the_holder_reads_what_the_holder_wrote_meanwhile() {
    let Some((journal, conninfo)) = common::journal("claims_waited").await else { return };
    let second = PgJournal::connect(&conninfo).await.unwrap();
    let (a, b) = (Owner::new("worker-a.1"), Owner::new("worker-b.1"));
    let intent = key("waited");
    assert_eq!(journal.claim(&intent, &a, Duration::from_secs(30)).await.unwrap(), Claimed::Held(None));
    // The holder's last moments, by hand in one transaction: its claim row locked, its start written,
    // the claim let go. b's claim arrives while the row is locked and waits for the commit.
    let mut holder = common::client(&conninfo).await;
    let tx = holder.transaction().await.unwrap();
    let bytes = intent.as_bytes().as_slice();
    tx.execute("SELECT 1 FROM tool_contract.claims WHERE intent = $1 FOR UPDATE", &[&bytes]).await.unwrap();
    let claim = tokio::spawn(async move { second.claim(&intent, &b, Duration::from_secs(30)).await });
    let watcher = common::client(&conninfo).await;
    let waiting =
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = 'claims_waited'";
    let began = Instant::now();
    while watcher.query_one(waiting, &[]).await.unwrap().get::<_, i64>(0) == 0 {
        assert!(began.elapsed() < Duration::from_secs(10), "the second claim never waited on the row");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tx.execute(
        "INSERT INTO tool_contract.attempts \
         (intent, attempt, phase, task, tool, attempt_id, started, budget_left_s, owner) \
         VALUES ($1, 1, 'start', 'pg-test', 'post_notice', 'pg-test-a1', '2026-12-01T03:00:00Z', 30, 'worker-a.1')",
        &[&bytes],
    )
    .await
    .unwrap();
    tx.execute("DELETE FROM tool_contract.claims WHERE intent = $1", &[&bytes]).await.unwrap();
    tx.commit().await.unwrap();
    let Claimed::Held(Some(recall)) = claim.await.unwrap().unwrap() else {
        panic!("b claims the intent a let go, and reads a's start")
    };
    assert_eq!((recall.attempts, recall.last_word()), (1, LastWord::Unfinished));
}

/// Issue 32 item 5: a call's last record and its release are one statement whose delete of the claim
/// row is the fence. A takeover that has changed the claim row but not yet committed when the holder's
/// last record arrives makes that record wait on the row; once the takeover commits, the record is
/// judged on the row the takeover left: refused, nothing written, and the new holder's claim stays.
/// (Judged on the snapshot the statement began with, it would have been written, and the new holder,
/// having read the intent before it, would not know of it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_record_racing_a_takeover_waits_for_it_and_is_refused() {
    let Some((journal, conninfo)) = common::journal("finish_race").await else { return };
    let a = Owner::new("worker-a.1");
    let intent = key("finish-race");
    let bytes = intent.as_bytes().as_slice();
    assert_eq!(journal.claim(&intent, &a, Duration::from_secs(30)).await.unwrap(), Claimed::Held(None));
    journal.start(&a, start(intent, 1).as_record_ref(), SYNCED).await.unwrap();
    // b's takeover, by hand and left open: the claim row is b's in a transaction not yet committed.
    let mut taker = common::client(&conninfo).await;
    let tx = taker.transaction().await.unwrap();
    tx.execute(
        "UPDATE tool_contract.claims SET owner = 'worker-b.1', lease_until = clock_timestamp() + interval '30 seconds' \
         WHERE intent = $1",
        &[&bytes],
    )
    .await
    .unwrap();
    let finishing = {
        let journal = journal.clone();
        let a = a.clone();
        tokio::spawn(async move {
            journal.finish(&a, end(intent, 1, Outcome::Ok).as_record_ref(), Durability::Buffered).await
        })
    };
    let watcher = common::client(&conninfo).await;
    let waiting =
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = 'finish_race'";
    let began = Instant::now();
    while watcher.query_one(waiting, &[]).await.unwrap().get::<_, i64>(0) == 0 {
        assert!(!finishing.is_finished(), "the last record was judged without waiting for the takeover");
        assert!(began.elapsed() < Duration::from_secs(10), "the last record never waited on the claim row");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tx.commit().await.unwrap();
    let why = refused(finishing.await.unwrap());
    assert!(why.contains("claimed by worker-b.1"), "{why}");
    let recall = journal.try_recall(&intent).await.unwrap().unwrap();
    assert_eq!((recall.attempts, recall.last_word()), (1, LastWord::Unfinished), "nothing was written");
    let holder = watcher
        .query_one("SELECT owner FROM tool_contract.claims WHERE intent = $1", &[&bytes])
        .await
        .unwrap();
    assert_eq!(holder.get::<_, String>(0), "worker-b.1", "b's claim stays");
}

/// The store conformance suite every store runs, on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_passes_the_store_conformance_suite() {
    let Some((journal, _)) = common::journal("conformance_suite").await else { return };
    tool_contract_testing::stores::all(&journal, Some(&journal.reader()), "postgres").await;
}
