//! The attempt engine on tokio's paused clock: exact attempt counts and exact elapsed time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tool_contract::effect::EffectKind;
use tool_contract::person::{Approval, ApprovalRequest, Approve};
use tool_contract::probe::NoProbe;
use tool_contract::spec::{Backoff, Dedupe, Jitter, ToolSpec};
use tool_contract::task::EscalationQueue;
use tool_contract::{Applied, Class, Item, MemoryJournal, Outcome, Probe, Task, engine};

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
    fn approve<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> tool_contract::journal::BoxFuture<'a, Approval> {
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
        // The probe resolves an unknown; a refusal known to have applied nothing needs none. A "not
        // landed" counts only past the landing horizon (5 s by default): the probe is asked again then.
        let expected_probes = match (first.effect(), &verdict) {
            (Applied::Unknown, Probe::NotLanded) => 2,
            (Applied::Unknown, _) => 1,
            _ => 0,
        };
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
    // Only the row in doubt is probed: once at the drop, and again once the default landing horizon
    // of a create only its probe deduplicates (5 s) has passed, before it is written again.
    assert_eq!(*probed.lock().unwrap(), [vec![4], vec![4]]);
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

mod approvals;
mod horizon;
mod key_lifetime;
mod parity;
mod resumed;
mod settled;
mod shapes;
mod timing;

/// Issue 22, item 7: a report's typed reason, for every rule of the contract that can decide a call,
/// so code matches on it instead of parsing `message`.
#[tokio::test(start_paused = true)]
async fn every_way_a_call_ends_has_its_reason() {
    use tool_contract::Reason;
    async fn one(
        spec: ToolSpec,
        task: Task,
        answers: Vec<Result<u64, Class>>,
        verdict: Option<Probe<u64>>,
    ) -> tool_contract::Report<u64> {
        let answers = std::sync::Mutex::new(answers.into_iter());
        let key = task.key(&spec, &"target", None);
        let attempt = |_: tool_contract::Call| {
            let answer = answers.lock().unwrap().next().unwrap_or(Ok(1));
            async move { answer }
        };
        match verdict {
            Some(verdict) => {
                engine::run(&task, &spec, key, attempt, move |_| {
                    let verdict = verdict.clone();
                    async move { verdict }
                })
                .await
            }
            None => engine::run(&task, &spec, key, attempt, NoProbe).await,
        }
    }
    let send = || spec("post_notice", EffectKind::Send);
    let reset = || Err(Class::unknown("connection reset after the request was sent"));
    let log = Arc::new(MemoryJournal::new());
    let cases: Vec<(&str, tool_contract::Report<u64>, Reason)> = vec![
        ("done", one(spec_read(), task(30), vec![], None).await, Reason::Done),
        (
            "replayed",
            {
                let task = task(30).journal(log.clone());
                one(send(), task.clone(), vec![], Some(Probe::NotLanded)).await;
                one(send(), task, vec![], Some(Probe::NotLanded)).await
            },
            Reason::Replayed,
        ),
        ("landed", one(send(), task(30), vec![reset()], Some(Probe::Landed(7))).await, Reason::Landed),
        (
            "answered",
            one(send(), task(30), vec![Err(Class::permanent("404"))], Some(Probe::NotLanded)).await,
            Reason::Answered,
        ),
        (
            "gave up",
            one(spec_read().max_attempts(2), task(30), vec![Err(Class::retryable("503")); 3], None).await,
            Reason::GaveUp,
        ),
        (
            "never retried",
            one(spec("drop", EffectKind::Destructive), task(30), vec![reset()], Some(Probe::NotLanded)).await,
            Reason::NeverRetried,
        ),
        ("no probe", one(send(), task(30), vec![reset()], None).await, Reason::NoProbe),
        (
            "probe failed",
            one(send(), task(30), vec![reset()], Some(Probe::Failed("down".into()))).await,
            Reason::ProbeFailed,
        ),
        (
            "budget spent",
            one(send().deadline_floor(Duration::from_secs(5)), task(3), vec![], None).await,
            Reason::BudgetSpent,
        ),
        (
            "asked to wait",
            one(
                spec_read(),
                task(5),
                vec![Err(Class::retryable("429").retry_after(Duration::from_secs(60)))],
                None,
            )
            .await,
            Reason::AskedToWait,
        ),
        (
            "no approver",
            one(spec("charge", EffectKind::Money), task(30), vec![reset()], Some(Probe::NotLanded)).await,
            Reason::NoApprover,
        ),
        (
            "denied",
            {
                let denied = task(30).approver(Says(Approval::Denied("no".into()), Arc::default()));
                one(spec("charge", EffectKind::Money), denied, vec![reset()], Some(Probe::NotLanded)).await
            },
            Reason::Denied,
        ),
    ];
    for (name, report, reason) in cases {
        assert_eq!(report.reason, reason, "{name}: {}", report.message);
    }
    let long = send().horizon(Duration::from_secs(60));
    let early = one(long, task(5), vec![reset()], Some(Probe::NotLanded)).await;
    assert_eq!(early.reason, Reason::BeforeHorizon, "{}", early.message);
    let bulk = engine::run_bulk(
        &task(30),
        &spec("write_rows", EffectKind::Create).dedupe(Dedupe::Receiver),
        task(30).key(&spec("write_rows", EffectKind::Create), &"sheet", None),
        vec![1u32, 2],
        |_, rows: Vec<u32>| async move {
            Ok::<_, Class>(
                rows.iter()
                    .map(|r| if *r == 2 { Item::permanent("2", "bad") } else { Item::ok("1") })
                    .collect(),
            )
        },
        NoProbe,
    )
    .await;
    assert_eq!(bulk.reason, Reason::Items, "{}", bulk.message);
}
