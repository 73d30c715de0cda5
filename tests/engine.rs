//! The attempt engine on tokio's paused clock: exact attempt counts and exact elapsed time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tool_contract::{
    Applied, Approval, ApprovalRequest, Approve, Backoff, Class, Dedupe, EffectKind, EscalationQueue, Item,
    Jitter, MemoryJournal, NoProbe, Outcome, Probe, Task, ToolSpec, engine,
};

const NO_JITTER: Backoff =
    Backoff { base: Duration::from_millis(100), max: Duration::from_secs(5), jitter: Jitter::None };

fn spec(name: &'static str, kind: EffectKind) -> ToolSpec {
    ToolSpec::new(name, kind).backoff(NO_JITTER)
}

/// The attempt id the engine gives attempt `n` of `key` in task `ord-7741`.
fn attempt_id(key: tool_contract::IntentKey, n: u32) -> String {
    format!("ord-7741-{}-a{n}", &key.to_string()[..8])
}

fn task(budget_s: u64) -> Task {
    Task::new("ord-7741", "agent", Duration::from_secs(budget_s))
}

/// Counts calls and keeps the instant of each, relative to the test's start.
#[derive(Clone)]
struct Calls {
    start: Instant,
    at: Arc<std::sync::Mutex<Vec<Duration>>>,
}

impl Calls {
    fn new() -> Calls {
        Calls { start: Instant::now(), at: Arc::default() }
    }
    fn hit(&self) -> usize {
        let mut at = self.at.lock().unwrap();
        at.push(self.start.elapsed());
        at.len()
    }
    fn count(&self) -> usize {
        self.at.lock().unwrap().len()
    }
    fn times(&self) -> Vec<Duration> {
        self.at.lock().unwrap().clone()
    }
}

#[tokio::test(start_paused = true)]
async fn read_retries_with_backoff_then_succeeds_within_budget() {
    let spec = spec("read_price", EffectKind::Read);
    let task = task(30);
    let calls = Calls::new();
    let key = task.key(&spec, &"sku-1", None);
    let report = engine::run(
        &task,
        &spec,
        key,
        |call| {
            let n = calls.hit();
            assert_eq!(call.attempt() as usize, n);
            async move { if n < 3 { Err(Class::retryable("503 from /prices")) } else { Ok(1299u32) } }
        },
        NoProbe,
    )
    .await;
    assert_eq!(report.outcome, Outcome::Ok);
    assert_eq!(report.effect_applied, Applied::No, "a read applies nothing");
    assert_eq!(report.value, Some(1299));
    assert_eq!(report.attempt_id, attempt_id(key, 3));
    // Waits of 100 ms then 200 ms: exactly 300 ms of backoff, all inside the budget.
    assert_eq!(calls.times(), [Duration::ZERO, Duration::from_millis(100), Duration::from_millis(300)]);
    assert_eq!(report.deadline_left_s, 29);
}

#[tokio::test(start_paused = true)]
async fn read_gives_up_after_max_attempts() {
    let spec = spec("read_price", EffectKind::Read).max_attempts(2);
    let task = task(30);
    let calls = Calls::new();
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"sku", None),
        |_| {
            calls.hit();
            async { Err::<u32, _>(Class::retryable("503")) }
        },
        NoProbe,
    )
    .await;
    assert_eq!(calls.count(), 2);
    assert_eq!(report.outcome, Outcome::Retryable);
    assert!(report.message.contains("gave up after 2 attempts"), "{}", report.message);
}

#[tokio::test(start_paused = true)]
async fn no_attempt_starts_on_an_empty_budget_even_without_a_floor() {
    for kind in [EffectKind::Read, EffectKind::Send, EffectKind::Money] {
        let spec = spec("post_notice", kind);
        let task = task(5);
        tokio::time::advance(Duration::from_secs(5)).await;
        let calls = Calls::new();
        let report = engine::run(
            &task,
            &spec,
            task.key(&spec, &"thread-9", None),
            |_| {
                calls.hit();
                async { Ok::<u32, Class>(1) }
            },
            |_| async { Probe::NotLanded },
        )
        .await;
        assert_eq!(calls.count(), 0, "{kind:?} started with nothing left");
        assert_eq!((report.outcome, report.effect_applied), (Outcome::Retryable, Applied::No));
        assert_eq!(report.deadline_left_s, 0);
        assert!(report.message.contains("nothing left"), "{}", report.message);
    }
}

#[tokio::test(start_paused = true)]
async fn attempt_below_the_floor_is_refused_without_a_call() {
    let spec = spec("post_notice", EffectKind::Send).deadline_floor(Duration::from_secs(2));
    let task = task(1);
    let calls = Calls::new();
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"thread-9", None),
        |_| {
            calls.hit();
            async { Ok::<u32, Class>(1) }
        },
        |_| async { Probe::NotLanded },
    )
    .await;
    assert_eq!(calls.count(), 0);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Retryable, Applied::No));
    assert_eq!(report.deadline_left_s, 1, "the budget left, not a stand-in zero");
    assert!(report.message.contains("budget spent"), "{}", report.message);
    assert_eq!(report.attempt_id, "");
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured_before_the_next_attempt() {
    let spec = spec("read_price", EffectKind::Read);
    let task = task(30);
    let calls = Calls::new();
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"sku", None),
        |_| {
            let n = calls.hit();
            async move {
                if n == 1 {
                    Err(Class::retryable("429").retry_after(Duration::from_secs(5)))
                } else {
                    Ok(7u8)
                }
            }
        },
        NoProbe,
    )
    .await;
    assert_eq!(report.outcome, Outcome::Ok);
    assert_eq!(calls.times(), [Duration::ZERO, Duration::from_secs(5)]);
}

#[tokio::test(start_paused = true)]
async fn retry_after_beyond_the_budget_returns_at_once() {
    let spec = spec("read_price", EffectKind::Read);
    let task = task(10);
    let calls = Calls::new();
    let start = Instant::now();
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"sku", None),
        |_| {
            calls.hit();
            async { Err::<u8, _>(Class::retryable("429").retry_after(Duration::from_secs(60))) }
        },
        NoProbe,
    )
    .await;
    assert_eq!(calls.count(), 1);
    assert_eq!(start.elapsed(), Duration::ZERO, "no sleeping on a wait the budget cannot hold");
    assert_eq!(report.outcome, Outcome::Retryable);
    assert_eq!(report.retry_after_s, Some(60));
    // `deadline_left_s` is the budget left, always; `retry_after_s` above it says stop.
    assert_eq!(report.deadline_left_s, 10);
}

#[tokio::test(start_paused = true)]
async fn send_timeout_is_unknown_then_probe_landed_is_ok_with_one_call() {
    let spec = spec("post_notice", EffectKind::Send).deadline_floor(Duration::from_secs(2));
    let task = task(30);
    let calls = Calls::new();
    let probes = AtomicU32::new(0);
    let start = Instant::now();
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"thread-9", None),
        |_| {
            calls.hit();
            // The service applies the notice, then the reply never comes.
            async { std::future::pending::<Result<u64, Class>>().await }
        },
        |_| {
            probes.fetch_add(1, Ordering::SeqCst);
            async { Probe::Landed(4411u64) }
        },
    )
    .await;
    assert_eq!(calls.count(), 1, "never a second send");
    assert_eq!(probes.load(Ordering::SeqCst), 1);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes));
    assert_eq!(report.value, Some(4411));
    // The attempt kept back the 2 s floor for its probe: it was cut at 28 s.
    assert_eq!(start.elapsed(), Duration::from_secs(28));
    assert!(report.message.contains("probe found"), "{}", report.message);
}

#[tokio::test(start_paused = true)]
async fn send_probe_not_landed_allows_exactly_one_more_attempt() {
    let spec = spec("post_notice", EffectKind::Send);
    let task = task(30);
    let calls = Calls::new();
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"thread-9", None),
        |_| {
            let n = calls.hit();
            async move { if n == 1 { Err(Class::unknown("connection reset")) } else { Ok(5u64) } }
        },
        |_| async { Probe::NotLanded },
    )
    .await;
    assert_eq!(calls.count(), 2);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes));
}

#[tokio::test(start_paused = true)]
async fn probe_failure_leaves_unknown_and_escalates() {
    let spec = spec("post_notice", EffectKind::Send);
    let queue = EscalationQueue::new();
    let task = task(30).escalate_to(queue.clone());
    let calls = Calls::new();
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"thread-9", None),
        |_| {
            calls.hit();
            async { Err::<u64, _>(Class::unknown("connection reset after send")) }
        },
        |_| async { Probe::Failed("thread search returned 500".into()) },
    )
    .await;
    assert_eq!(calls.count(), 1);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Unknown, Applied::Unknown));
    let escalated = queue.drain();
    assert_eq!(escalated.len(), 1);
    assert_eq!(escalated[0].attempt_id, attempt_id(report.idempotency_key, 1));
    assert!(escalated[0].reason.contains("thread search returned 500"), "{}", escalated[0].reason);
}

#[tokio::test(start_paused = true)]
async fn unknown_without_an_escalation_sink_says_so() {
    let spec = spec("post_notice", EffectKind::Send);
    let task = task(30);
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"t", None),
        |_| async { Err::<u64, _>(Class::unknown("reset")) },
        |_| async { Probe::Failed("down".into()) },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Unknown);
    assert!(report.message.contains("no escalation sink"), "{}", report.message);
}

struct Says(Approval, Arc<AtomicU32>);

impl Approve for Says {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> tool_contract::task::BoxFuture<'a, Approval> {
        self.1.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::ready(self.0.clone()))
    }
}

async fn charge(task: &Task, calls: &Calls) -> tool_contract::Report<u64> {
    let spec = spec("charge_card", EffectKind::Money);
    engine::run(task, &spec, task.key(&spec, &"card-42", None), |_| {
        let n = calls.hit();
        async move { if n == 1 { Err(Class::unknown("gateway timeout after submit")) } else { Ok(99u64) } }
    }, |_| async { Probe::NotLanded })
    .await
}

#[tokio::test(start_paused = true)]
async fn money_without_an_approver_stops_after_the_probe() {
    let queue = EscalationQueue::new();
    let task = task(30).escalate_to(queue.clone());
    let calls = Calls::new();
    let report = charge(&task, &calls).await;
    assert_eq!(calls.count(), 1);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Retryable, Applied::No));
    assert!(report.message.contains("needs an approver"), "{}", report.message);
    assert_eq!(queue.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn money_retries_only_with_an_approvers_yes() {
    let asked = Arc::new(AtomicU32::new(0));
    let task = task(30).approver(Says(Approval::Approved, asked.clone()));
    let calls = Calls::new();
    let report = charge(&task, &calls).await;
    assert_eq!((calls.count(), asked.load(Ordering::SeqCst)), (2, 1));
    assert_eq!(report.outcome, Outcome::Ok);

    let task2 = Task::new("ord-7742", "agent", Duration::from_secs(30))
        .approver(Says(Approval::Denied("over the daily limit".into()), asked.clone()));
    let calls = Calls::new();
    let report = charge(&task2, &calls).await;
    assert_eq!(calls.count(), 1);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Permanent, Applied::No));
    assert!(report.message.contains("over the daily limit"));
}

#[tokio::test(start_paused = true)]
async fn destructive_never_calls_twice() {
    let spec = spec("delete_record", EffectKind::Destructive);
    for (first, verdict) in [
        (Class::unknown("reset after send"), Probe::NotLanded),
        (Class::retryable("503"), Probe::NotLanded),
        (Class::unknown("reset after send"), Probe::Landed(())),
    ] {
        let task = task(30);
        let calls = Calls::new();
        let probes = AtomicU32::new(0);
        let report = engine::run(
            &task,
            &spec,
            task.key(&spec, &"rec-1", None),
            |_| {
                calls.hit();
                let first = first.clone();
                async move { Err::<(), _>(first) }
            },
            |_| {
                probes.fetch_add(1, Ordering::SeqCst);
                let verdict = verdict.clone();
                async move { verdict }
            },
        )
        .await;
        assert_eq!(calls.count(), 1, "{first:?}");
        match verdict {
            Probe::Landed(()) => assert_eq!(report.outcome, Outcome::Ok),
            _ => {
                assert_eq!((report.outcome, report.effect_applied), (Outcome::Retryable, Applied::No));
                assert!(report.message.contains("never retried automatically"), "{}", report.message);
            }
        }
        // The probe resolves an unknown; a refusal known to have applied nothing needs none.
        let expected_probes = u32::from(first.effect() == Applied::Unknown);
        assert_eq!(probes.load(Ordering::SeqCst), expected_probes);
    }
}

#[tokio::test(start_paused = true)]
async fn panic_in_a_side_effect_is_unknown() {
    let spec = spec("delete_record", EffectKind::Destructive);
    let queue = EscalationQueue::new();
    let task = task(30).escalate_to(queue.clone());
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"rec-1", None),
        |_| async {
            if true {
                panic!("index out of range in the client");
            }
            Ok::<(), Class>(())
        },
        |_| async { Probe::Failed("audit log unreachable".into()) },
    )
    .await;
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Unknown, Applied::Unknown));
    assert!(report.message.contains("panicked"), "{}", report.message);
    assert_eq!(queue.len(), 1);

    let read = spec_read();
    let report = engine::run(
        &task,
        &read,
        task.key(&read, &"x", None),
        |_| async {
            if true {
                panic!("bug");
            }
            Ok::<u8, Class>(1)
        },
        NoProbe,
    )
    .await;
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Permanent, Applied::No));
}

fn spec_read() -> ToolSpec {
    spec("read_price", EffectKind::Read)
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_is_dropped_before_the_next_starts() {
    struct InFlight(Arc<AtomicU32>);
    impl Drop for InFlight {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let spec = spec("read_price", EffectKind::Read).deadline_floor(Duration::from_secs(1));
    let task = task(3);
    let in_flight = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let calls = Calls::new();
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"sku", None),
        |_| {
            let n = calls.hit();
            let guard = {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                InFlight(in_flight.clone())
            };
            async move {
                let _guard = guard;
                if n == 1 {
                    std::future::pending::<()>().await;
                }
                Ok::<u8, Class>(3)
            }
        },
        NoProbe,
    )
    .await;
    assert_eq!(report.outcome, Outcome::Retryable, "{}", report.message);
    assert_eq!(calls.count(), 1, "the whole budget went to the first attempt");
    assert_eq!(most.load(Ordering::SeqCst), 1);
    assert_eq!(in_flight.load(Ordering::SeqCst), 0, "the timed-out attempt was dropped");
}

#[tokio::test(start_paused = true)]
async fn create_with_receiver_dedupe_retries_an_unknown_with_the_same_key() {
    let spec = spec("create_order", EffectKind::Create).dedupe(Dedupe::Receiver);
    let task = task(30);
    let keys = std::sync::Mutex::new(Vec::new());
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"cart-1", None),
        |call| {
            keys.lock().unwrap().push(call.key());
            let n = keys.lock().unwrap().len();
            async move { if n == 1 { Err(Class::unknown("502 from gateway")) } else { Ok(17u64) } }
        },
        NoProbe,
    )
    .await;
    assert_eq!(report.outcome, Outcome::Ok);
    let keys = keys.into_inner().unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1]);
    assert_eq!(keys[0], report.idempotency_key);
}

#[tokio::test(start_paused = true)]
async fn a_recorded_ok_is_replayed_without_a_second_effect() {
    let spec = spec("post_notice", EffectKind::Send);
    let journal = Arc::new(MemoryJournal::new());
    let calls = Calls::new();
    for _ in 0..2 {
        let task = task(30).journal(journal.clone());
        let report = engine::run(
            &task,
            &spec,
            task.key(&spec, &"thread-9", None),
            |_| {
                calls.hit();
                async { Ok::<u64, Class>(4411) }
            },
            |_| async { Probe::NotLanded },
        )
        .await;
        let first = attempt_id(report.idempotency_key, 1);
        assert_eq!((report.outcome, report.value, report.attempt_id), (Outcome::Ok, Some(4411), first));
    }
    assert_eq!(calls.count(), 1);
}

#[tokio::test(start_paused = true)]
async fn bulk_partial_retries_only_what_did_not_land() {
    let spec = spec("write_rows", EffectKind::Create);
    let task = task(30);
    let batches = std::sync::Mutex::new(Vec::<Vec<u32>>::new());
    let probed = std::sync::Mutex::new(Vec::<Vec<u32>>::new());
    let report = engine::run_bulk(
        &task,
        &spec,
        task.key(&spec, &"sheet-1", None),
        vec![1u32, 2, 3, 4],
        |_, rows: Vec<u32>| {
            batches.lock().unwrap().push(rows.clone());
            let first = batches.lock().unwrap().len() == 1;
            async move {
                Ok::<_, Class>(
                    rows.iter()
                        .map(|&r| match (first, r) {
                            (_, 2) => Item::permanent("2", "row 2 has no email"),
                            (true, 3) => Item::retryable("3", "rate limited"),
                            (true, 4) => Item::unknown("4", "connection dropped mid-row"),
                            _ => Item::ok(r.to_string()),
                        })
                        .collect(),
                )
            }
        },
        |_, rows: Vec<u32>| {
            probed.lock().unwrap().push(rows.clone());
            async move {
                rows.iter()
                    .map(|r| Item { applied: Applied::No, ..Item::retryable(r.to_string(), "") })
                    .collect()
            }
        },
    )
    .await;
    assert_eq!(*batches.lock().unwrap(), [vec![1, 2, 3, 4], vec![3, 4]]);
    assert_eq!(*probed.lock().unwrap(), [vec![4]]);
    assert_eq!(report.outcome, Outcome::Permanent);
    assert_eq!(report.effect_applied, Applied::Partial);
    assert_eq!(report.message, "write_rows: 3 of 4 items done; 1 refused");
    let ids: Vec<_> = report.items.iter().map(|i| (i.id.as_str(), i.outcome)).collect();
    assert_eq!(ids, [("1", Outcome::Ok), ("2", Outcome::Permanent), ("3", Outcome::Ok), ("4", Outcome::Ok)]);
}

#[tokio::test(start_paused = true)]
async fn bulk_never_presents_a_partial_list_as_complete() {
    let spec = spec("send_invites", EffectKind::Send).max_attempts(1);
    let task = task(30);
    let report = engine::run_bulk(
        &task,
        &spec,
        task.key(&spec, &"list-1", None),
        vec!["a", "b", "c"],
        |_, rows: Vec<&str>| async move {
            // The tool answers for only the first item.
            Ok::<_, Class>(vec![Item::ok(rows[0])])
        },
        |_, _rows: Vec<&str>| async move { Vec::new() },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Unknown);
    assert_eq!(report.effect_applied, Applied::Partial);
    assert_eq!(report.items.len(), 3);
    assert!(
        report.message.starts_with("send_invites: 1 of 3 items done; 2 unresolved"),
        "{}",
        report.message
    );
}

#[tokio::test(start_paused = true)]
async fn an_unfinished_attempt_in_the_log_is_probed_before_anything_else() {
    use tool_contract::journal::{Durability, Journal, Phase, Record};
    let spec = spec("post_notice", EffectKind::Send);
    let journal = Arc::new(MemoryJournal::new());
    let task = task(30).journal(journal.clone());
    let key = task.key(&spec, &"thread-9", None);
    // What a process killed mid-call leaves behind: a start record with no end.
    let start = Record {
        phase: Phase::Start,
        task: "ord-7741".into(),
        call: "post_notice".into(),
        intent_key: key,
        attempt: 1,
        attempt_id: attempt_id(key, 1),
        started: "2026-11-30T05:12:04Z".into(),
        budget_left_s: 30,
        outcome: None,
        effect_applied: None,
        probe: None,
        message: None,
        retry_at: None,
        value: None,
    };
    journal.append(&start, Durability::Synced).await.unwrap();
    for (verdict, calls_expected, final_attempt) in [(Probe::NotLanded, 1, 2), (Probe::Landed(7u64), 0, 1)] {
        let journal = Arc::new(MemoryJournal::new());
        journal.append(&start, Durability::Synced).await.unwrap();
        let task = task.clone().journal(journal.clone());
        let calls = Calls::new();
        let order = std::sync::Mutex::new(Vec::new());
        let report = engine::run(
            &task,
            &spec,
            key,
            |_| {
                calls.hit();
                order.lock().unwrap().push("attempt");
                async { Ok::<u64, Class>(7) }
            },
            |_| {
                order.lock().unwrap().push("probe");
                let verdict = verdict.clone();
                async move { verdict }
            },
        )
        .await;
        assert_eq!(report.outcome, Outcome::Ok);
        assert_eq!(calls.count(), calls_expected);
        assert_eq!(order.lock().unwrap()[0], "probe");
        assert_eq!(report.attempt_id, attempt_id(key, final_attempt), "attempt numbers continue");
        let probed = journal.records().iter().filter(|r| r.probe.is_some()).count();
        assert_eq!(probed, 1, "the probe's verdict is logged");
        // Started time of the start record is kept; the clock did not move for backoff.
        assert_eq!(Instant::now() - calls.start, Duration::ZERO);
    }
}

#[tokio::test(start_paused = true)]
async fn bulk_stops_at_the_floor_and_keeps_the_remaining_items_retryable() {
    let spec = spec("write_rows", EffectKind::Create)
        .deadline_floor(Duration::from_secs(5))
        .dedupe(Dedupe::Receiver);
    let task = task(6);
    let report = engine::run_bulk(
        &task,
        &spec,
        task.key(&spec, &"sheet", None),
        vec![1u32, 2],
        |_, rows: Vec<u32>| async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            Ok::<_, Class>(
                rows.iter()
                    .map(|r| if *r == 1 { Item::ok("1") } else { Item::retryable("2", "429") })
                    .collect(),
            )
        },
        NoProbe,
    )
    .await;
    assert_eq!(report.outcome, Outcome::Retryable);
    assert_eq!(report.effect_applied, Applied::Partial);
    assert_eq!(report.deadline_left_s, 4, "the budget left, not a stand-in zero");
    assert!(report.message.contains("1 of 2 items done"), "{}", report.message);
    assert!(report.message.contains("not retried"), "{}", report.message);
}

fn record(key: tool_contract::IntentKey, call: &str, attempt: u32) -> tool_contract::journal::Record {
    tool_contract::journal::Record {
        phase: tool_contract::journal::Phase::Start,
        task: "ord-7741".into(),
        call: call.into(),
        intent_key: key,
        attempt,
        attempt_id: attempt_id(key, attempt),
        started: "2026-11-30T05:12:04Z".into(),
        budget_left_s: 30,
        outcome: None,
        effect_applied: None,
        probe: None,
        message: None,
        retry_at: None,
        value: None,
    }
}

fn ended(
    mut record: tool_contract::journal::Record,
    outcome: Outcome,
    applied: Applied,
    value: Option<serde_json::Value>,
) -> tool_contract::journal::Record {
    record.phase = tool_contract::journal::Phase::End;
    record.outcome = Some(outcome);
    record.effect_applied = Some(applied);
    record.message = Some("earlier run".into());
    record.value = value;
    record
}

#[tokio::test(start_paused = true)]
async fn a_read_is_never_replayed_from_the_log() {
    let spec = spec_read();
    let task = task(30);
    let key = task.key(&spec, &"sku", None);
    let journal = Arc::new(MemoryJournal::from_records([ended(
        record(key, "read_price", 1),
        Outcome::Ok,
        Applied::No,
        Some(1.into()),
    )]));
    let task = task.journal(journal);
    let report = engine::run(&task, &spec, key, |_| async { Ok::<u32, Class>(2) }, NoProbe).await;
    assert_eq!(report.value, Some(2), "a price read now, not the one recorded");
}

#[tokio::test(start_paused = true)]
async fn an_earlier_run_that_ended_with_its_effect_unknown_is_probed_first() {
    let spec = spec("post_notice", EffectKind::Send);
    let task = task(30);
    let key = task.key(&spec, &"thread-9", None);
    // Attempt 2 was refused (nothing applied) after attempt 1 was lost: the intent is still unresolved.
    let journal = Arc::new(MemoryJournal::from_records([ended(
        record(key, "post_notice", 2),
        Outcome::Retryable,
        Applied::Unknown,
        None,
    )]));
    let task = task.journal(journal);
    let calls = Calls::new();
    let report = engine::run(
        &task,
        &spec,
        key,
        |_| {
            calls.hit();
            async { Ok::<u64, Class>(1) }
        },
        |_| async { Probe::Landed(9u64) },
    )
    .await;
    assert_eq!((report.outcome, report.value, calls.count()), (Outcome::Ok, Some(9), 0));
}

#[tokio::test(start_paused = true)]
async fn an_attempt_after_a_lost_one_is_logged_with_the_calls_effect() {
    let spec = spec("create_order", EffectKind::Create).dedupe(Dedupe::Receiver).max_attempts(2);
    let journal = Arc::new(MemoryJournal::new());
    let task = task(30).journal(journal.clone());
    let calls = Calls::new();
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"cart", None),
        |_| {
            let n = calls.hit();
            async move {
                Err::<u64, _>(if n == 1 { Class::unknown("reply lost") } else { Class::retryable("429") })
            }
        },
        NoProbe,
    )
    .await;
    assert_eq!(calls.count(), 2);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Retryable, Applied::Unknown));
    let last = journal.records().pop().unwrap();
    assert_eq!(last.effect_applied, Some(Applied::Unknown), "the 429 does not make the intent's effect `no`");
}

#[tokio::test(start_paused = true)]
async fn bulk_resumes_from_the_items_an_earlier_run_recorded() {
    let spec = spec("write_rows", EffectKind::Create);
    let task = task(30);
    let key = task.key(&spec, &"sheet", None);
    let items = vec![
        Item::ok("1"),
        Item::unknown("2", "reply lost"),
        Item::retryable("3", "429"),
        Item::permanent("4", "bad"),
    ];
    let journal = Arc::new(MemoryJournal::from_records([ended(
        record(key, "write_rows", 1),
        Outcome::Unknown,
        Applied::Partial,
        Some(serde_json::to_value(&items).unwrap()),
    )]));
    let queue = EscalationQueue::new();
    let task = task.journal(journal.clone()).escalate_to(queue.clone());
    let sent = std::sync::Mutex::new(Vec::new());
    let probed = std::sync::Mutex::new(Vec::new());
    let report = engine::run_bulk(
        &task,
        &spec,
        key,
        vec![1u32, 2, 3, 4],
        |_, rows: Vec<u32>| {
            sent.lock().unwrap().push(rows.clone());
            async move { Ok::<_, Class>(rows.iter().map(|r| Item::ok(r.to_string())).collect()) }
        },
        |_, rows: Vec<u32>| {
            probed.lock().unwrap().push(rows.clone());
            async move {
                rows.iter()
                    .map(|r| Item { applied: Applied::No, ..Item::retryable(r.to_string(), "") })
                    .collect()
            }
        },
    )
    .await;
    assert_eq!(*probed.lock().unwrap(), [vec![2]], "only the unknown item is probed");
    assert_eq!(*sent.lock().unwrap(), [vec![2, 3]], "landed and refused items are not sent again");
    assert_eq!(report.message, "write_rows: 3 of 4 items done; 1 refused");
    assert!(queue.is_empty());
    let probe_records = journal.records().iter().filter(|r| r.probe.is_some()).count();
    assert_eq!(probe_records, 1, "the bulk probe's verdict is logged");
}

#[tokio::test(start_paused = true)]
async fn bulk_escalates_an_unresolved_call_once() {
    let spec = spec("send_invites", EffectKind::Send);
    let queue = EscalationQueue::new();
    let task = task(30).escalate_to(queue.clone());
    let report = engine::run_bulk(
        &task,
        &spec,
        task.key(&spec, &"list", None),
        vec!["a", "b"],
        |_, rows: Vec<&'static str>| async move {
            Ok::<_, Class>(
                rows.iter()
                    .map(|r| {
                        if *r == "a" { Item::unknown("a", "reply lost") } else { Item::retryable("b", "429") }
                    })
                    .collect(),
            )
        },
        |_, rows: Vec<&'static str>| async move {
            rows.iter().map(|r| Item::unknown(r.to_string(), "search down")).collect()
        },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Unknown);
    assert_eq!(queue.len(), 1, "{:?}", queue.drain());
}

#[tokio::test(start_paused = true)]
async fn the_same_intent_twice_at_once_sends_once() {
    let spec = spec("post_notice", EffectKind::Send);
    let journal = Arc::new(MemoryJournal::new());
    let task = task(30).journal(journal);
    let calls = Calls::new();
    let call = || {
        engine::run(
            &task,
            &spec,
            task.key(&spec, &"thread-9", None),
            |_| {
                calls.hit();
                async {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Ok::<u64, Class>(4411)
                }
            },
            |_| async { Probe::NotLanded },
        )
    };
    // A model that issues the same tool call twice in parallel.
    let (first, second) = tokio::join!(call(), call());
    assert_eq!((first.outcome, second.outcome), (Outcome::Ok, Outcome::Ok));
    assert_eq!((first.value, second.value), (Some(4411), Some(4411)));
    assert_eq!(calls.count(), 1, "the second waited for the first and found it in the log");
    assert!(second.message.contains("not repeated"), "{}", second.message);
}

#[tokio::test(start_paused = true)]
async fn a_restarted_process_waits_as_the_service_asked_the_earlier_one() {
    use tool_contract::journal::rfc3339;
    let spec = spec("post_notice", EffectKind::Send);
    let task = task(30);
    let key = task.key(&spec, &"thread-9", None);
    let asked = |secs: u64| {
        let mut end = ended(record(key, "post_notice", 1), Outcome::Retryable, Applied::No, None);
        end.retry_at = Some(rfc3339(std::time::SystemTime::now() + Duration::from_secs(secs)));
        Arc::new(MemoryJournal::from_records([end]))
    };

    let calls = Calls::new();
    let task1 = task.clone().journal(asked(5));
    let report = engine::run(
        &task1,
        &spec,
        key,
        |_| {
            calls.hit();
            async { Ok::<u64, Class>(1) }
        },
        |_| async { Probe::NotLanded },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Ok);
    let at = calls.times()[0];
    assert!(at >= Duration::from_secs(4) && at <= Duration::from_secs(5), "first attempt at {at:?}");

    let calls = Calls::new();
    let task2 = task.clone().journal(asked(100));
    let report = engine::run(
        &task2,
        &spec,
        key,
        |_| {
            calls.hit();
            async { Ok::<u64, Class>(1) }
        },
        |_| async { Probe::NotLanded },
    )
    .await;
    assert_eq!(calls.count(), 0);
    // The true budget left; the wait asked for is longer, which is the caller's sign to stop.
    assert_eq!((report.outcome, report.deadline_left_s), (Outcome::Retryable, 25));
    assert!(report.retry_after_s.is_some_and(|s| (99..=100).contains(&s)), "{:?}", report.retry_after_s);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_told_to_wait_logs_when_the_wait_ends() {
    let spec = spec("post_notice", EffectKind::Send).max_attempts(1);
    let journal = Arc::new(MemoryJournal::new());
    let task = task(30).journal(journal.clone());
    let before = std::time::SystemTime::now();
    engine::run(
        &task,
        &spec,
        task.key(&spec, &"t", None),
        |_| async { Err::<u64, _>(Class::retryable("429").retry_after(Duration::from_secs(30))) },
        |_| async { Probe::NotLanded },
    )
    .await;
    let records = journal.records();
    let ends: Vec<_> = records.iter().filter(|r| r.phase == tool_contract::journal::Phase::End).collect();
    assert!(!ends.is_empty());
    for end in ends {
        let at =
            tool_contract::journal::parse_rfc3339(end.retry_at.as_deref().expect("retry_at on every end"))
                .expect("an RFC 3339 time");
        let wait = at.duration_since(before).unwrap_or_default();
        assert!(wait >= Duration::from_secs(30) && wait <= Duration::from_secs(32), "{wait:?}");
    }
}
