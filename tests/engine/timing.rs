//! When a verdict was seen, and until when a request could leave: the engine's reading of time, on
//! tokio's paused clock. Each test is a way the clock let a second send through before these rules:
//! a probe judged by when it answered (T1), a later call's horizon computed from stamps that end it
//! early (T2), a person's word judged by when it was recorded (T3), a request that leaves after its
//! call's deadline because the worker stood still in between (T4).

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use tool_contract::journal::{
    Answer, Claimed, Durability, Journal, JournalError, Owner, Recall, RecordRef, Verdict,
};
use tool_contract::person::{Settle, settle};
use tool_contract::unstable::wall_clock;

use super::*;

/// A service that applies each request it received `hold` after its caller let go of it: what the
/// service saw, and when each request lands.
#[derive(Clone, Default)]
struct Service {
    lands: Arc<Mutex<Vec<Instant>>>,
}

impl Service {
    /// A request in flight: it lands `hold` after it is dropped (its caller stopped waiting).
    fn request(&self, hold: Duration) -> Request {
        Request { service: self.clone(), hold }
    }

    fn landed(&self) -> bool {
        let now = Instant::now();
        self.lands.lock().unwrap().iter().any(|at| *at <= now)
    }

    fn effects(&self) -> usize {
        self.lands.lock().unwrap().len()
    }
}

struct Request {
    service: Service,
    hold: Duration,
}

impl Drop for Request {
    fn drop(&mut self) {
        self.service.lands.lock().unwrap().push(Instant::now() + self.hold);
    }
}

fn send_spec() -> ToolSpec {
    spec("post_notice", EffectKind::Send).probe_reserve(Duration::from_secs(1))
}

/// T1: a probe that looks at the service, then takes 6 s to answer "not landed", under the default
/// 5 s horizon. The held request lands at 3 s, after the probe looked and before it answered: its
/// verdict says nothing of what landed since it looked.
#[tokio::test(start_paused = true)]
async fn a_probe_is_judged_by_when_it_looked_not_when_it_answered() {
    let service = Service::default();
    let task =
        Task::new("t1-slow-probe", "agent", Duration::from_secs(60)).escalate_to(EscalationQueue::new());
    let spec = send_spec();
    let made = AtomicU32::new(0);
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"thread-9", None),
        |_| {
            let first = made.fetch_add(1, Ordering::SeqCst) == 0;
            let request = service.request(Duration::from_secs(3));
            async move {
                drop(request);
                if first {
                    Err(Class::unknown("connection reset after the request was sent"))
                } else {
                    Ok(7u64)
                }
            }
        },
        |_| {
            // The read happens now; the answer comes 6 s later.
            let seen = service.landed();
            async move {
                tokio::time::sleep(Duration::from_secs(6)).await;
                if seen { Probe::Landed(7u64) } else { Probe::NotLanded }
            }
        },
    )
    .await;
    assert_eq!(service.effects(), 1, "{}", report.message);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes), "{}", report.message);
}

/// T1 for a batch: each item's "not landed" is judged by when the probe looked, as a single call's
/// verdict is. Row 2's reply is lost and its request, held by the service, lands at 3 s: after the
/// probe looked (0 s), before it answered (6 s, past the 5 s horizon). Taken as of its answer, the
/// probe's "not landed" would send row 2 again.
#[tokio::test(start_paused = true)]
async fn a_batch_probe_is_judged_item_by_item_by_when_it_looked() {
    let service = Service::default();
    let task = Task::new("t1-slow-batch-probe", "agent", Duration::from_secs(60))
        .escalate_to(EscalationQueue::new());
    let spec = send_spec();
    let made = AtomicU32::new(0);
    let report = engine::run_bulk(
        &task,
        &spec,
        task.key(&spec, &"sheet-9", None),
        vec!["row-1", "row-2"],
        |_, rows: Vec<&'static str>| {
            let first = made.fetch_add(1, Ordering::SeqCst) == 0;
            // Every request that carries row 2 applies it once its caller lets go, 3 s later.
            let request = rows.contains(&"row-2").then(|| service.request(Duration::from_secs(3)));
            async move {
                drop(request);
                let items = rows.iter().map(|row| match (*row, first) {
                    ("row-2", true) => Item::unknown("row-2", "reply lost"),
                    (row, _) => Item::ok(row),
                });
                Ok::<_, Class>(items.collect::<Vec<_>>())
            }
        },
        |_, rows: Vec<&'static str>| {
            // The read happens now; the answer comes 6 s later.
            let seen = service.landed();
            async move {
                tokio::time::sleep(Duration::from_secs(6)).await;
                let found = |row| match seen {
                    true => Item::ok(row),
                    false => Item { applied: Applied::No, ..Item::retryable(row, "not found") },
                };
                rows.into_iter().map(found).collect::<Vec<_>>()
            }
        },
    )
    .await;
    assert_eq!(service.effects(), 1, "row 2 was sent again: {}", report.message);
    assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
}

/// A store whose start records take `slow` to be confirmed: a slow disk, a busy database.
struct SlowStart {
    inner: MemoryJournal,
    slow: Duration,
}

impl Journal for SlowStart {
    fn claim(
        &self,
        key: &tool_contract::IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        self.inner.claim(key, owner, lease)
    }

    fn release(&self, key: &tool_contract::IntentKey, owner: &Owner) {
        self.inner.release(key, owner);
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        // The memory store answers at once; the answer reaches the caller `slow` later.
        let stored =
            self.inner.start(owner, record, durability).ready().expect("the memory store answers at once");
        let slow = self.slow;
        Answer::later(async move {
            tokio::time::sleep(slow).await;
            stored
        })
    }

    fn end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.inner.end(owner, record, durability)
    }

    fn append(&self, record: RecordRef<'_>, durability: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.inner.append(record, durability)
    }

    fn recall(&self, key: &tool_contract::IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        self.inner.recall(key)
    }

    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        self.inner.unresolved()
    }
}

/// T2: the first call's start record takes 5 s to store, on a 10 s budget; its attempt then hangs
/// until its limit (9 s) and the service applies it 4 s later (13 s). The call is cancelled while its
/// probe runs, so the attempt's own end record (`unknown`) is the intent's last word. A later call's
/// horizon runs from the attempt's latest possible send (9 s, the start plus the budget it started
/// with), not from the start's stamp plus the budget left after the slow write (6 s at most).
#[tokio::test(start_paused = true)]
async fn a_later_calls_horizon_runs_from_the_attempts_latest_possible_send() {
    let service = Service::default();
    let log: Arc<dyn Journal> =
        Arc::new(SlowStart { inner: MemoryJournal::new(), slow: Duration::from_secs(5) });
    let spec = send_spec();
    let first = Task::new("t2-slow-start", "agent", Duration::from_secs(10)).journal(log.clone());
    let key = first.key(&spec, &"thread-9", None);
    let began = Instant::now();
    let cut = tokio::time::timeout(
        Duration::from_millis(9_500),
        engine::run(
            &first,
            &spec,
            key,
            |_| {
                let request = service.request(Duration::from_secs(4));
                async move {
                    let _request = request;
                    std::future::pending::<Result<u64, Class>>().await
                }
            },
            |_| async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Probe::<u64>::Failed("not asked: the call is cut before".into())
            },
        ),
    )
    .await;
    assert!(cut.is_err(), "the first call is cancelled mid-probe");
    assert_eq!(service.effects(), 1);
    assert_eq!(began.elapsed(), Duration::from_millis(9_500));

    let later = Task::new("t2-slow-start", "agent", Duration::from_secs(60))
        .journal(log.clone())
        .escalate_to(EscalationQueue::new());
    let report = engine::run(
        &later,
        &spec,
        key,
        |_| {
            let request = service.request(Duration::ZERO);
            async move {
                drop(request);
                Ok::<u64, Class>(7)
            }
        },
        |_| async { if service.landed() { Probe::Landed(7u64) } else { Probe::NotLanded } },
    )
    .await;
    assert_eq!(service.effects(), 1, "{}", report.message);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes), "{}", report.message);
}

/// A start record whose write leaves less than the tool's floor (7 s of a 10 s budget, a 4 s floor):
/// the machine checks the budget again once the write is done and names the end record that says
/// nothing was sent, then the stop. The tool is never called, and the log's last word is that end,
/// not an attempt in doubt that a later call would have to probe.
#[tokio::test(start_paused = true)]
async fn a_start_written_too_slowly_for_the_floor_sends_nothing_and_says_so() {
    let log: Arc<dyn Journal> =
        Arc::new(SlowStart { inner: MemoryJournal::new(), slow: Duration::from_secs(7) });
    let spec = send_spec().deadline_floor(Duration::from_secs(4));
    let task = Task::new("slow-start-floor", "agent", Duration::from_secs(10)).journal(log.clone());
    let key = task.key(&spec, &"thread-9", None);
    let calls = AtomicU32::new(0);
    let report = engine::run(
        &task,
        &spec,
        key,
        |_| {
            calls.fetch_add(1, Ordering::Relaxed);
            async { Ok::<u64, Class>(7) }
        },
        |_| async { Probe::<u64>::NotLanded },
    )
    .await;
    assert_eq!(calls.load(Ordering::Relaxed), 0, "{}", report.message);
    let said = (report.outcome, report.effect_applied, report.reason);
    assert_eq!(said, (Outcome::Retryable, Applied::No, tool_contract::Reason::BudgetSpent));
    assert!(report.message.contains("needs at least 4.0s"), "{}", report.message);
    let recall = log.recall(&key).ready().expect("the memory store answers at once").unwrap();
    let last = recall.expect("the intent is recorded").last;
    assert_eq!((last.outcome, last.effect_applied), (Some(Outcome::Retryable), Some(Applied::No)));
    assert_eq!(last.phase, tool_contract::journal::Phase::End);
}

/// Sleep until the wall clock (the one the log's stamps come from) reads `frac` past a whole second.
async fn to_fraction(frac: Duration) {
    let now = wall_clock().duration_since(UNIX_EPOCH).unwrap();
    let past = Duration::from_nanos(u64::from(now.subsec_nanos()));
    let wait = if frac >= past { frac - past } else { Duration::from_secs(1) - past + frac };
    tokio::time::sleep(wait).await;
}

/// T2: stamps are whole seconds rounded down, and the records may come from another worker whose
/// clock stands apart from this one's. Here the attempt's request leaves, and its probe looks, 0.99 s
/// past a whole second; the probe's stamp says that second. A later call reached 0.2 s after the
/// horizon as that stamp reads it must not take a "not landed" seen then as final: the request lands
/// 0.49 s after that.
#[tokio::test(start_paused = true)]
async fn a_later_call_reads_a_stamp_as_the_latest_instant_it_may_stand_for() {
    to_fraction(Duration::from_millis(990)).await;
    let service = Service::default();
    let log = Arc::new(MemoryJournal::new());
    let spec = send_spec();
    // A budget too short for the horizon: the first call ends unknown after its probe, and the probe's
    // record ("not landed yet") is the intent's last word.
    let first = Task::new("t2-stamps", "agent", Duration::from_secs(3))
        .journal(log.clone())
        .escalate_to(EscalationQueue::new());
    let key = first.key(&spec, &"thread-9", None);
    let hold = Duration::from_millis(5_500);
    let report = engine::run(
        &first,
        &spec,
        key,
        |_| {
            let request = service.request(hold);
            async move {
                drop(request);
                Err::<u64, Class>(Class::unknown("connection reset after the request was sent"))
            }
        },
        |_| async { if service.landed() { Probe::Landed(7u64) } else { Probe::NotLanded } },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Unknown, "{}", report.message);
    let probed = log.records().last().cloned().unwrap();
    assert!(probed.probe.is_some(), "{probed:?}");
    // The stamp's second plus the horizon, and 0.2 s: 4.21 s from now, 1.29 s before the request lands.
    tokio::time::sleep(Duration::from_millis(4_210)).await;
    assert!(!service.landed());
    let later = Task::new("t2-stamps", "agent", Duration::from_secs(60))
        .journal(log.clone())
        .escalate_to(EscalationQueue::new());
    let report = engine::run(
        &later,
        &spec,
        key,
        |_| {
            let request = service.request(Duration::ZERO);
            async move {
                drop(request);
                Ok::<u64, Class>(7)
            }
        },
        |_| async { if service.landed() { Probe::Landed(7u64) } else { Probe::NotLanded } },
    )
    .await;
    assert_eq!(service.effects(), 1, "{}", report.message);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes), "{}", report.message);
}

/// T3: the person looked at the thread one second after the attempt, found nothing, and their
/// settlement was written 40 s later. The held request landed at 3 s, after they looked: their word
/// counts from when they saw the attempt, so the next call probes again instead of sending.
#[tokio::test(start_paused = true)]
async fn a_persons_not_landed_counts_from_when_they_saw_the_attempt() {
    let service = Service::default();
    let log = Arc::new(MemoryJournal::new());
    let spec = send_spec();
    let first = Task::new("t3-seen", "agent", Duration::from_secs(30))
        .journal(log.clone())
        .escalate_to(EscalationQueue::new());
    let key = first.key(&spec, &"thread-9", None);
    let report = engine::run(
        &first,
        &spec,
        key,
        |_| {
            let request = service.request(Duration::from_secs(3));
            async move {
                drop(request);
                Err::<u64, Class>(Class::unknown("connection reset after the request was sent"))
            }
        },
        |_| async { Probe::<u64>::Failed("the thread's API is down".into()) },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Unknown, "{}", report.message);
    // They look at second 1.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let looked: SystemTime = wall_clock();
    assert!(!service.landed());
    tokio::time::sleep(Duration::from_secs(39)).await;
    let word = Settle::new(Verdict::NotLanded, "alice", "thread-9 holds no notice").seen(looked);
    settle(&*log, &key, 1, &word).await.unwrap();
    let later = Task::new("t3-seen", "agent", Duration::from_secs(30))
        .journal(log.clone())
        .escalate_to(EscalationQueue::new());
    let report = engine::run(
        &later,
        &spec,
        key,
        |_| {
            let request = service.request(Duration::ZERO);
            async move {
                drop(request);
                Ok::<u64, Class>(7)
            }
        },
        |_| async { if service.landed() { Probe::Landed(7u64) } else { Probe::NotLanded } },
    )
    .await;
    assert_eq!(service.effects(), 1, "{}", report.message);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes), "{}", report.message);
}

/// T4: the attempt waits for its connection; the worker then stands still for a minute (a stopped
/// process, a frozen VM), and when it runs again its connection is ready and its deadline long past.
/// The request must not leave: by now another worker may have taken the intent over.
#[tokio::test(start_paused = true)]
async fn a_request_never_leaves_after_its_calls_deadline() {
    let log = Arc::new(MemoryJournal::new());
    let spec = send_spec();
    let task = Task::new("t4-paused", "agent", Duration::from_secs(10))
        .journal(log.clone())
        .escalate_to(EscalationQueue::new());
    let key = task.key(&spec, &"thread-9", None);
    let sent = Arc::new(Mutex::new(Vec::new()));
    let (waiting_tx, waiting_rx) = tokio::sync::oneshot::channel::<()>();
    let (connected_tx, connected_rx) = tokio::sync::oneshot::channel::<()>();
    let deadline = Instant::now() + Duration::from_secs(10);
    let call = tokio::spawn({
        let sent = sent.clone();
        let task = task.clone();
        async move {
            let waiting = Mutex::new(Some((waiting_tx, connected_rx)));
            engine::run(
                &task,
                &spec,
                key,
                |_| {
                    let sent = sent.clone();
                    let ends = waiting.lock().unwrap().take();
                    async move {
                        if let Some((waiting, connected)) = ends {
                            let _ = waiting.send(());
                            let _ = connected.await;
                        }
                        sent.lock().unwrap().push(Instant::now());
                        Ok::<u64, Class>(7)
                    }
                },
                |_| async { Probe::<u64>::Failed("the thread's API is down".into()) },
            )
            .await
        }
    });
    waiting_rx.await.unwrap();
    // The connection comes up as the worker stops; the clock jumps a minute before it runs again.
    connected_tx.send(()).unwrap();
    tokio::time::advance(Duration::from_secs(60)).await;
    let report = call.await.unwrap();
    let late: Vec<Instant> = sent.lock().unwrap().iter().copied().filter(|at| *at > deadline).collect();
    assert!(
        late.is_empty(),
        "a request left {:?} after the deadline: {}",
        late[0] - deadline,
        report.message
    );
    assert_ne!(report.outcome, Outcome::Ok, "{}", report.message);
}

/// The reqwest helper keeps a request inside its attempt: the intent key as `Idempotency-Key`, and a
/// timeout no longer than the attempt's time left.
#[tokio::test(start_paused = true)]
async fn a_reqwest_request_for_a_call_ends_with_its_attempt() {
    use tool_contract::reqwest::RequestBuilderExt;
    let key = tool_contract::key::Intent::new("t4-reqwest", "agent", "post_notice", "thread-9").key();
    let call = tool_contract::Call::new("t4-reqwest", key, 1, Duration::from_secs(7));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let request = reqwest::Client::new().post("http://127.0.0.1:9/notices").for_call(&call).build().unwrap();
    assert_eq!(request.timeout(), Some(&Duration::from_secs(5)), "the attempt's 7 s, 2 s of it gone");
    assert_eq!(request.headers()["idempotency-key"], key.to_string().as_str());
}

/// A batch's early "not landed": the person looked at the rows right after the batch was cut, and the
/// service applied the held rows 3 s later. The next call does not take the word as it stands: it
/// waits out the landing horizon and probes, as a single call does, and sends no row twice.
#[tokio::test(start_paused = true)]
async fn a_batch_settled_not_landed_too_early_waits_for_its_horizon() {
    let rows = Arc::new(Mutex::new(Vec::<(&'static str, Instant)>::new()));
    let log = Arc::new(MemoryJournal::new());
    let spec = spec("write_rows", EffectKind::Send);
    let landed = |rows: &Mutex<Vec<(&'static str, Instant)>>, row: &str| {
        let now = Instant::now();
        rows.lock().unwrap().iter().any(|(r, at)| *r == row && *at <= now)
    };
    let batch = |task: Task, first: bool| {
        let rows = rows.clone();
        async move {
            let key = task.key(&spec, &"sheet-1", None);
            engine::run_bulk(
                &task,
                &spec,
                key,
                vec!["row-1", "row-2"],
                |_, items: Vec<&'static str>| {
                    let rows = rows.clone();
                    async move {
                        // Each row sent is applied 3 s after the caller lets go of it.
                        let at = Instant::now() + Duration::from_secs(3);
                        rows.lock().unwrap().extend(items.iter().map(|r| (*r, at)));
                        if first {
                            Err(Class::unknown("connection reset after the batch was sent"))
                        } else {
                            Ok(items.into_iter().map(Item::ok).collect::<Vec<_>>())
                        }
                    }
                },
                |_, items: Vec<&'static str>| {
                    let rows = rows.clone();
                    async move {
                        if first {
                            // The sheet cannot be read while the first call runs.
                            return items
                                .iter()
                                .map(|r| Item::unknown(*r, "the sheet is unreadable"))
                                .collect();
                        }
                        items
                            .iter()
                            .map(|r| match landed(&rows, r) {
                                true => Item::ok(*r),
                                false => Item { applied: Applied::No, ..Item::retryable(*r, "") },
                            })
                            .collect()
                    }
                },
            )
            .await
        }
    };
    let first = Task::new("t-batch", "agent", Duration::from_secs(30))
        .journal(log.clone())
        .escalate_to(EscalationQueue::new());
    let key = first.key(&spec, &"sheet-1", None);
    let report = batch(first, true).await;
    assert_eq!(report.outcome, Outcome::Unknown, "{}", report.message);
    // The person looks at once, finds neither row, and says so.
    let word = Settle::new(Verdict::NotLanded, "alice", "the sheet holds neither row").seen(wall_clock());
    settle(&*log, &key, 1, &word).await.unwrap();
    let later = Task::new("t-batch", "agent", Duration::from_secs(30))
        .journal(log.clone())
        .escalate_to(EscalationQueue::new());
    let report = batch(later, false).await;
    let sent = |row: &str| rows.lock().unwrap().iter().filter(|(r, _)| *r == row).count();
    assert_eq!((sent("row-1"), sent("row-2")), (1, 1), "{}", report.message);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes), "{}", report.message);
}
