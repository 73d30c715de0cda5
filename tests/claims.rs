//! One intent, one effect: calls of one intent take turns in a process, with or without an attempt log,
//! and a store's claim fences the intent against other owners.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tool_contract::effect::EffectKind;
use tool_contract::journal::{Claimed, Owner};
use tool_contract::journal::{Journal, JournalError};
use tool_contract::spec::ToolSpec;
use tool_contract::{Applied, Class, FileJournal, MemoryJournal, Outcome, Probe, Task, engine};

const POST: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);

/// A send that takes a second at the service and counts what landed. Each test uses its own task id:
/// calls of one intent take turns across the whole process, tests included.
async fn post(task: &Task, effects: &AtomicU32) -> tool_contract::Report<u64> {
    engine::run(
        task,
        &POST,
        task.key(&POST, &"thread-9", None),
        |_| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<u64, Class>(u64::from(effects.fetch_add(1, Ordering::SeqCst)) + 4411)
        },
        |_| async {
            match effects.load(Ordering::SeqCst) {
                0 => Probe::NotLanded,
                _ => Probe::Landed(4411),
            }
        },
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn two_hundred_calls_of_one_send_at_once_without_a_log_make_one_effect() {
    // No attempt log is configured: the calls still take turns and each finds what the first did.
    let task = Task::new("two-hundred", "agent", Duration::from_secs(30));
    let effects = AtomicU32::new(0);
    let reports = futures_join_all((0..200).map(|_| post(&task, &effects))).await;
    assert_eq!(effects.load(Ordering::SeqCst), 1, "one effect for one intent");
    for report in &reports {
        assert_eq!(
            (report.outcome, report.effect_applied, report.value),
            (Outcome::Ok, Applied::Yes, Some(4411))
        );
    }
    let repeated = reports.iter().filter(|r| r.message.contains("not repeated")).count();
    assert_eq!(repeated, 199, "{:?}", reports.iter().map(|r| &r.message).collect::<Vec<_>>());
    // A later call of the intent, once none runs: still answered from memory, without a log.
    let later = post(&task, &effects).await;
    assert_eq!(effects.load(Ordering::SeqCst), 1, "{}", later.message);
}

#[tokio::test(start_paused = true)]
async fn a_call_cancelled_mid_attempt_without_a_log_makes_the_next_call_probe_first() {
    let task = Task::new("cancelled", "agent", Duration::from_secs(30));
    let effects = AtomicU32::new(0);
    // The first call is cancelled (an MCP client gave up) after its request left, and the service
    // applies it anyway; a second call of the intent was waiting its turn.
    let first = async {
        tokio::select! {
            _ = post(&task, &effects) => unreachable!("cancelled at 500 ms"),
            () = tokio::time::sleep(Duration::from_millis(500)) => effects.fetch_add(1, Ordering::SeqCst),
        };
    };
    let second = async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        post(&task, &effects).await
    };
    let ((), report) = tokio::join!(first, second);
    assert_eq!(effects.load(Ordering::SeqCst), 1, "the waiting call probed and did not send again");
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes));
    assert!(report.message.contains("the probe found"), "{}", report.message);
}

#[tokio::test(start_paused = true)]
async fn an_intent_claimed_by_another_worker_past_the_budget_is_not_started() {
    let journal = Arc::new(MemoryJournal::new());
    let key = Task::new("claimed-elsewhere", "agent", Duration::ZERO).key(&POST, &"thread-9", None);
    let other = Owner::new("worker-b.1");
    let claimed = journal.claim(&key, &other, Duration::from_secs(60)).await.unwrap();
    assert_eq!(claimed, Claimed::Held(None));
    let task = Task::new("claimed-elsewhere", "agent", Duration::from_secs(30)).journal(journal.clone());
    let effects = AtomicU32::new(0);
    let report = post(&task, &effects).await;
    assert_eq!(effects.load(Ordering::SeqCst), 0, "nothing sent while another worker holds the intent");
    assert_eq!(report.outcome, Outcome::Retryable);
    // It waited for an early release while the budget lasted, then stopped: the claim outlives it.
    let (after, left) = (report.retry_after_s.unwrap_or(0), report.deadline_left_s);
    assert!(after > left && after >= 30, "retry after {after} s with {left} s left");
    assert!(report.message.contains("worker-b.1"), "{}", report.message);
    assert!(journal.records().is_empty(), "no start record from a call without the claim");
}

#[tokio::test(start_paused = true)]
async fn a_claim_outlasts_the_budget_and_the_landing_horizon() {
    // A worker's call holds the intent while its attempt hangs at the service. Another owner asking
    // meanwhile must find it held past the call's deadline by the tool's landing horizon (a request the
    // service still holds may land that much after the attempt was dropped), plus the margin.
    const SETTLING: ToolSpec = POST.horizon(Duration::from_secs(20));
    let journal = Arc::new(MemoryJournal::new());
    let task = Task::new("claim-settle", "agent", Duration::from_secs(30)).journal(journal.clone());
    let key = task.key(&SETTLING, &"thread-9", None);
    let call = engine::run(
        &task,
        &SETTLING,
        key,
        |_| std::future::pending::<Result<u64, Class>>(),
        |_| async { Probe::<u64>::NotLanded },
    );
    let asked = async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        journal.claim(&key, &Owner::new("worker-b.1"), Duration::from_secs(1)).await.unwrap()
    };
    let (report, asked) = tokio::join!(call, asked);
    let Claimed::Busy { left, .. } = asked else { panic!("the intent was free while a call ran") };
    // Asked 10 s in: 20 s of budget, 20 s of landing horizon and 1 s of margin were left on the lease.
    assert_eq!(left, Duration::from_secs(41), "{}", report.message);
    assert_eq!(report.outcome, Outcome::Unknown, "{}", report.message);
}

#[tokio::test(start_paused = true)]
async fn a_claim_that_ends_within_the_budget_is_waited_for() {
    let journal = Arc::new(MemoryJournal::new());
    let key = Task::new("claim-ends", "agent", Duration::ZERO).key(&POST, &"thread-9", None);
    journal.claim(&key, &Owner::new("worker-b.1"), Duration::from_secs(5)).await.unwrap();
    let task = Task::new("claim-ends", "agent", Duration::from_secs(30)).journal(journal.clone());
    let effects = AtomicU32::new(0);
    let started = tokio::time::Instant::now();
    let report = post(&task, &effects).await;
    assert_eq!(report.outcome, Outcome::Ok);
    assert_eq!(effects.load(Ordering::SeqCst), 1);
    assert_eq!(started.elapsed(), Duration::from_secs(6), "5 s for the other lease, 1 s for the call");
}

#[tokio::test(start_paused = true)]
async fn every_store_fences_start_records_by_claim_and_attempt() {
    let dir = std::env::temp_dir().join(format!("tool-contract-claims-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let stores: [(&str, Arc<dyn Journal>); 2] = [
        ("memory", Arc::new(MemoryJournal::new())),
        ("file", Arc::new(FileJournal::open(dir.join("attempts.log")).unwrap())),
    ];
    for (name, store) in stores {
        let key = tool_contract::key::Intent::new("t", "a", "post", name).key();
        let (a, b) = (Owner::new("a"), Owner::new("b"));
        let start = |attempt: u32| tool_contract::journal::Record {
            phase: tool_contract::journal::Phase::Start,
            task: "t".into(),
            call: "post".into(),
            intent_key: key,
            attempt,
            attempt_id: format!("t-a{attempt}"),
            started: "2026-11-30T05:12:04Z".into(),
            budget_left_s: 30,
            outcome: None,
            effect_applied: None,
            probe: None,
            message: None,
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: None,
        };
        let durable = tool_contract::journal::Durability::Synced;
        let refused = |r: Result<(), JournalError>| matches!(r, Err(JournalError::Conflict { .. }));
        assert!(refused(store.start(&a, start(1).as_record_ref(), durable).await), "{name}: no claim");
        assert_eq!(store.claim(&key, &a, Duration::from_secs(10)).await.unwrap(), Claimed::Held(None));
        assert!(matches!(
            store.claim(&key, &b, Duration::from_secs(10)).await.unwrap(),
            Claimed::Busy { .. }
        ));
        assert!(refused(store.start(&b, start(1).as_record_ref(), durable).await), "{name}: not the holder");
        assert!(refused(store.start(&a, start(2).as_record_ref(), durable).await), "{name}: skips attempt 1");
        store.start(&a, start(1).as_record_ref(), durable).await.unwrap();
        assert!(refused(store.start(&a, start(1).as_record_ref(), durable).await), "{name}: attempt 1 again");
        store.release(&key, &a);
        let Claimed::Held(Some(recall)) = store.claim(&key, &b, Duration::from_secs(10)).await.unwrap()
        else {
            panic!("{name}: released, then claimed by b with what the store knows");
        };
        assert_eq!(recall.attempts, 1, "{name}");
        store.start(&b, start(2).as_record_ref(), durable).await.unwrap();
        // A lease that ran out fences its holder too.
        tokio::time::advance(Duration::from_secs(11)).await;
        assert!(refused(store.start(&b, start(3).as_record_ref(), durable).await), "{name}: lease over");
        assert_eq!(
            store.recall(&key).await.unwrap().unwrap().attempts,
            2,
            "{name}: nothing refused was written"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `join_all` for a test, without a futures dependency: every future polled on this task.
async fn futures_join_all<F: std::future::Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    let mut out: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending { std::task::Poll::Pending } else { std::task::Poll::Ready(()) }
    })
    .await;
    out.into_iter().map(|v| v.expect("every future finished")).collect()
}

#[tokio::test(start_paused = true)]
async fn two_unrelated_tasks_sharing_a_log_send_once() {
    // Not clones of one task: two tasks built apart, one log. The store's claim keeps them apart.
    let journal = Arc::new(MemoryJournal::new());
    let task = || Task::new("two-tasks", "agent", Duration::from_secs(30)).journal(journal.clone());
    let (a, b) = (task(), task());
    let effects = AtomicU32::new(0);
    let (first, second) = tokio::join!(post(&a, &effects), post(&b, &effects));
    assert_eq!(effects.load(Ordering::SeqCst), 1);
    assert_eq!((first.outcome, second.outcome), (Outcome::Ok, Outcome::Ok));
    assert!(second.message.contains("not repeated"), "{}", second.message);
}

/// A store that counts how its claims are given up, and keeps the rest to a memory log.
#[derive(Default)]
struct CountingReleases {
    inner: MemoryJournal,
    finished: std::sync::Mutex<Vec<(Owner, tool_contract::journal::Record)>>,
    released: AtomicU32,
}

impl Journal for CountingReleases {
    fn claim(
        &self,
        key: &tool_contract::IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> tool_contract::journal::Answer<'_, Result<Claimed, JournalError>> {
        self.inner.claim(key, owner, lease)
    }
    fn release(&self, key: &tool_contract::IntentKey, owner: &Owner) {
        self.released.fetch_add(1, Ordering::SeqCst);
        self.inner.release(key, owner);
    }
    fn start(
        &self,
        owner: &Owner,
        record: tool_contract::journal::RecordRef<'_>,
        durability: tool_contract::journal::Durability,
    ) -> tool_contract::journal::Answer<'_, Result<(), JournalError>> {
        self.inner.start(owner, record, durability)
    }
    fn end(
        &self,
        owner: &Owner,
        record: tool_contract::journal::RecordRef<'_>,
        durability: tool_contract::journal::Durability,
    ) -> tool_contract::journal::Answer<'_, Result<(), JournalError>> {
        self.inner.end(owner, record, durability)
    }
    fn append(
        &self,
        record: tool_contract::journal::RecordRef<'_>,
        durability: tool_contract::journal::Durability,
    ) -> tool_contract::journal::Answer<'_, Result<(), JournalError>> {
        self.inner.append(record, durability)
    }
    fn finish(
        &self,
        owner: &Owner,
        record: tool_contract::journal::RecordRef<'_>,
        durability: tool_contract::journal::Durability,
    ) -> tool_contract::journal::Answer<'_, Result<(), JournalError>> {
        self.finished.lock().unwrap().push((owner.clone(), record.to_record()));
        // The memory store's own `finish`, which releases through its own `release`, not ours.
        self.inner.finish(owner, record, durability)
    }
    fn recall(
        &self,
        key: &tool_contract::IntentKey,
    ) -> tool_contract::journal::Answer<'_, Result<Option<tool_contract::journal::Recall>, JournalError>>
    {
        Journal::recall(&self.inner, key)
    }
    fn unresolved(
        &self,
    ) -> tool_contract::journal::Answer<'_, Result<Vec<tool_contract::journal::Recall>, JournalError>> {
        Journal::unresolved(&self.inner)
    }
}

#[tokio::test(start_paused = true)]
async fn a_call_that_succeeds_gives_its_claim_up_with_its_last_record() {
    let journal = Arc::new(CountingReleases::default());
    let task = Task::new("finish-ok", "agent", Duration::from_secs(30)).journal(journal.clone());
    let effects = AtomicU32::new(0);
    let report = post(&task, &effects).await;
    assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
    let finished = journal.finished.lock().unwrap().clone();
    assert_eq!(finished.len(), 1, "one finish: the ok end record");
    let (owner, record) = &finished[0];
    assert_eq!((record.outcome, record.attempt), (Some(Outcome::Ok), 1));
    assert_eq!(journal.released.load(Ordering::SeqCst), 0, "no second release after the finish");
    // The claim went with the record: the intent is free for another owner at once.
    let key = task.key(&POST, &"thread-9", None);
    let other = journal.claim(&key, &Owner::new("worker-b.1"), Duration::from_secs(5)).await.unwrap();
    assert!(matches!(other, Claimed::Held(Some(_))), "{other:?}, held by {owner}");
}

#[tokio::test(start_paused = true)]
async fn a_call_that_fails_for_good_releases_its_claim_once() {
    const REFUSED: ToolSpec = ToolSpec::new("post_refused", EffectKind::Send);
    let journal = Arc::new(CountingReleases::default());
    let task = Task::new("finish-permanent", "agent", Duration::from_secs(30)).journal(journal.clone());
    let report = engine::run(
        &task,
        &REFUSED,
        task.key(&REFUSED, &"thread-9", None),
        |_| async { Err::<u64, Class>(Class::permanent("403 forbidden")) },
        |_| async { Probe::<u64>::NotLanded },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Permanent, "{}", report.message);
    assert!(journal.finished.lock().unwrap().is_empty());
    assert_eq!(journal.released.load(Ordering::SeqCst), 1);
}

/// The store conformance suite, on the embedded stores, on the real clock: the file store syncs on a
/// thread of its own, in real time, and a paused clock would run a waiting settler's patience out
/// while the winner's record is still being synced.
#[tokio::test]
async fn the_embedded_stores_pass_the_store_conformance_suite() {
    let dir = std::env::temp_dir().join(format!("tool-contract-suite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    tool_contract_testing::stores::all(&MemoryJournal::new(), None, "memory").await;
    tool_contract_testing::stores::all(&tool_contract::journal::CompactMemoryJournal::new(), None, "compact")
        .await;
    let path = dir.join("attempts.log");
    let reader = tool_contract::journal::file::FileReader::new(&path);
    tool_contract_testing::stores::all(&FileJournal::open(&path).unwrap(), Some(&reader), "file").await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A store seen through a link that can be cut: while cut, every write is held (it has left the
/// process) and delivered, in order, once the link heals, whether or not its caller still waits.
struct Link {
    inner: Arc<dyn Journal>,
    cut: tokio::sync::watch::Sender<bool>,
    /// Writes are delivered one after another, in the order they were made.
    order: Arc<tokio::sync::Mutex<()>>,
}

type Held<'a> = tool_contract::journal::Answer<'a, Result<(), JournalError>>;

impl Link {
    fn new(inner: Arc<dyn Journal>) -> Link {
        Link { inner, cut: tokio::sync::watch::channel(false).0, order: Arc::default() }
    }

    /// `write` on the inner store, held while the link is cut.
    fn send(
        &self,
        write: impl FnOnce(
            Arc<dyn Journal>,
        ) -> tool_contract::journal::BoxFuture<'static, Result<(), JournalError>>
        + Send
        + 'static,
    ) -> Held<'_> {
        let (inner, mut cut, order) =
            (Arc::clone(&self.inner), self.cut.subscribe(), Arc::clone(&self.order));
        let (done, answer) = tokio::sync::oneshot::channel();
        let queued = order.clone().try_lock_owned();
        tokio::spawn(async move {
            let _turn = match queued {
                Ok(turn) => turn,
                Err(_) => order.lock_owned().await,
            };
            let _ = cut.wait_for(|cut| !*cut).await;
            let _ = done.send(write(inner).await);
        });
        tool_contract::journal::Answer::later(async move {
            answer
                .await
                .unwrap_or_else(|_| Err(JournalError::Failed { log: "link".into(), why: "gone".into() }))
        })
    }
}

impl Journal for Link {
    fn claim(
        &self,
        key: &tool_contract::IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> tool_contract::journal::Answer<'_, Result<Claimed, JournalError>> {
        self.inner.claim(key, owner, lease)
    }
    fn release(&self, key: &tool_contract::IntentKey, owner: &Owner) {
        let (key, owner) = (*key, owner.clone());
        drop(self.send(move |inner| {
            Box::pin(async move {
                inner.release(&key, &owner);
                Ok(())
            })
        }));
    }
    fn start(
        &self,
        owner: &Owner,
        record: tool_contract::journal::RecordRef<'_>,
        durability: tool_contract::journal::Durability,
    ) -> Held<'_> {
        let (owner, record) = (owner.clone(), record.to_record());
        self.send(move |inner| {
            Box::pin(async move { inner.start(&owner, record.as_record_ref(), durability).await })
        })
    }
    fn end(
        &self,
        owner: &Owner,
        record: tool_contract::journal::RecordRef<'_>,
        durability: tool_contract::journal::Durability,
    ) -> Held<'_> {
        let (owner, record) = (owner.clone(), record.to_record());
        self.send(move |inner| {
            Box::pin(async move { inner.end(&owner, record.as_record_ref(), durability).await })
        })
    }
    fn append(
        &self,
        record: tool_contract::journal::RecordRef<'_>,
        durability: tool_contract::journal::Durability,
    ) -> Held<'_> {
        let record = record.to_record();
        self.send(move |inner| {
            Box::pin(async move { inner.append(record.as_record_ref(), durability).await })
        })
    }
    fn recall(
        &self,
        key: &tool_contract::IntentKey,
    ) -> tool_contract::journal::Answer<'_, Result<Option<tool_contract::journal::Recall>, JournalError>>
    {
        self.inner.recall(key)
    }
    fn unresolved(
        &self,
    ) -> tool_contract::journal::Answer<'_, Result<Vec<tool_contract::journal::Recall>, JournalError>> {
        self.inner.unresolved()
    }
}

// The story is about the fence: its takeover waits out w4's lease, which would otherwise also cover
// the default landing horizon (5 s) and double the file log's run on the real clock.
const TRANSFER: ToolSpec = ToolSpec::new("transfer", EffectKind::Money)
    .deadline_floor(Duration::from_millis(500))
    .horizon(Duration::ZERO);

async fn transfer(journal: Arc<dyn Journal>, applied: &AtomicU32) -> tool_contract::Report<u64> {
    let task = Task::new("ord-7741", "agent", Duration::from_secs(2)).journal(journal).approver(
        |_: tool_contract::person::ApprovalRequest| async { tool_contract::person::Approval::Approved },
    );
    engine::run(
        &task,
        &TRANSFER,
        task.key(&TRANSFER, &"acct-9", None),
        |_| async {
            applied.fetch_add(1, Ordering::SeqCst);
            Ok::<u64, Class>(4411)
        },
        |_| async {
            if applied.load(Ordering::SeqCst) > 0 { Probe::Landed(4411u64) } else { Probe::NotLanded }
        },
    )
    .await
}

/// Issue 23, item 0, in one process on every embedded store: w4's start of attempt 1 is held by a cut
/// link and its call gives up "not started"; its lease runs out, w5 makes attempt 1 and the transfer
/// lands; the link heals and whatever w4 wrote arrives. The next call of the intent replays the
/// transfer: the money moves once, and w4's report never named the attempt w5 made.
#[tokio::test(start_paused = true)]
async fn a_start_held_by_a_partition_leaves_no_record_that_moves_money_twice() {
    partition_story("memory", Arc::new(MemoryJournal::new())).await;
}

/// The same on the file log, on the real clock: its writer is a thread of its own, which a paused
/// clock would outrun.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_held_by_a_partition_leaves_no_record_that_moves_money_twice_in_a_file_log() {
    let dir = std::env::temp_dir().join(format!("tool-contract-partition-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    partition_story("file", Arc::new(FileJournal::open(dir.join("attempts.log")).unwrap())).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

async fn partition_story(name: &str, store: Arc<dyn Journal>) {
    let applied = AtomicU32::new(0);
    let link = Arc::new(Link::new(Arc::clone(&store)));
    link.cut.send_replace(true);
    let cut_off = transfer(link.clone(), &applied).await;
    assert_eq!(cut_off.outcome, Outcome::Retryable, "{name}: {}", cut_off.message);
    assert!(cut_off.message.contains("not started"), "{name}: {}", cut_off.message);
    assert_eq!(applied.load(Ordering::SeqCst), 0, "{name}");
    // w4's lease (its budget and a margin) runs out; w5 takes over.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let landed = transfer(Arc::clone(&store), &applied).await;
    assert_eq!(
        (landed.outcome, landed.effect_applied),
        (Outcome::Ok, Applied::Yes),
        "{name}: {}",
        landed.message
    );
    assert_ne!(cut_off.attempt_id, landed.attempt_id, "{name}: one attempt id, two attempts");
    // The link heals: w4's held writes arrive.
    link.cut.send_replace(false);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let again = transfer(Arc::clone(&store), &applied).await;
    assert_eq!(again.outcome, Outcome::Ok, "{name}: {}", again.message);
    assert!(again.message.contains("not repeated"), "{name}: {}", again.message);
    assert_eq!(applied.load(Ordering::SeqCst), 1, "{name}: the money moved once");
}

/// Issue 22, item 8: a worker names itself, and the owner of its claims shows the name, where another
/// worker that finds the intent busy reads it.
#[tokio::test(start_paused = true)]
async fn a_worker_that_names_itself_is_named_by_its_claims() {
    let journal: Arc<dyn Journal> = Arc::new(MemoryJournal::new());
    let task = Task::new("named-worker", "agent", Duration::from_secs(30)).journal(Arc::clone(&journal));
    let key = task.key(&POST, &"thread-9", None);
    let holder = task.clone().worker("billing-w4");
    let effects = AtomicU32::new(0);
    let (first, second) = tokio::join!(post(&holder, &effects), async {
        // Another process's worker, with a budget too short to wait for the first.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let other =
            Task::new("named-worker", "agent", Duration::from_millis(500)).journal(Arc::clone(&journal));
        post(&other, &effects).await
    });
    assert_eq!(first.outcome, Outcome::Ok, "{}", first.message);
    assert_eq!(second.outcome, Outcome::Retryable, "{}", second.message);
    assert!(second.message.contains("another worker (billing-w4."), "{}", second.message);
    assert_eq!(second.reason, tool_contract::Reason::Busy);
    let _ = key;
}
