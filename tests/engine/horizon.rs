//! The landing horizon, per effect kind, on tokio's paused clock: a service that applies a request
//! `HOLD` after its caller stopped waiting for it (a reset, a time limit, a cancelled call, a killed
//! process) sees it once, in a single call, in a batch and after a restart; when the budget cannot hold
//! the wait, the report is `unknown` and nothing is sent again. With `horizon = "0s"` (the behaviour
//! before the default) every one of these sends twice, or reports `no` for what landed. A `create` the
//! receiver deduplicates by its key waits for no horizon: its retry carries the same key.

use std::sync::Mutex;

use tool_contract::Reason;
use tool_contract::effect::DEFAULT_HORIZON;

use super::*;

/// How long the service holds a request after its caller stopped waiting, before applying it.
const HOLD: Duration = Duration::from_secs(3);

/// The kinds that wait for the horizon by default: every side effect only its probe deduplicates (a
/// `create` with `dedupe = "receiver"` waits for none: `a_receiver_deduplicated_create_waits_for_no_horizon`).
const KINDS: [EffectKind; 4] =
    [EffectKind::Create, EffectKind::Send, EffectKind::Money, EffectKind::Destructive];

/// A service that holds every request it received and applies it `hold` after its caller stopped
/// waiting: the instant each request (by item) lands.
#[derive(Clone)]
struct Held {
    hold: Duration,
    lands: Arc<Mutex<Vec<(&'static str, Instant)>>>,
}

impl Held {
    fn new(hold: Duration) -> Held {
        Held { hold, lands: Arc::default() }
    }

    /// The requests for `item` the service received (each lands, sooner or later).
    fn effects(&self, item: &str) -> usize {
        self.lands.lock().unwrap().iter().filter(|(i, _)| *i == item).count()
    }

    /// Whether a request for `item` has landed by now: what a probe sees.
    fn landed(&self, item: &str) -> bool {
        let now = Instant::now();
        self.lands.lock().unwrap().iter().any(|(i, at)| *i == item && *at <= now)
    }

    /// A request for `items` in flight: it lands `hold` after its caller lets go of it.
    fn send(&self, items: Vec<&'static str>) -> InFlight {
        InFlight(self.clone(), items)
    }
}

/// A request the service holds; dropped when its caller stops waiting (its reply, its time limit, its
/// cancellation, its process gone).
struct InFlight(Held, Vec<&'static str>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let at = Instant::now() + self.0.hold;
        self.0.lands.lock().unwrap().extend(self.1.iter().map(|item| (*item, at)));
    }
}

/// How the caller stops waiting for its request.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// The connection is reset at once, after the request left.
    Reset,
    /// No reply: the attempt's time limit drops it.
    Hang,
}

fn held_spec(kind: EffectKind) -> ToolSpec {
    spec("act", kind)
}

fn task_for(name: String, budget_s: u64, log: Option<Arc<dyn tool_contract::journal::Journal>>) -> Task {
    let task = Task::new(name, "agent", Duration::from_secs(budget_s))
        .approver(|_: ApprovalRequest| async { Approval::Approved })
        .escalate_to(EscalationQueue::new());
    match log {
        Some(log) => task.journal(log),
        None => task,
    }
}

/// One call of `spec` against `held`: the first attempt is cut as `cut`; any later attempt answers.
async fn call(task: &Task, spec: &ToolSpec, held: &Held, cut: Cut) -> tool_contract::Report<u64> {
    let made = AtomicU32::new(0);
    engine::run(
        task,
        spec,
        task.key(spec, &"thread-9", None),
        |_| {
            let first = made.fetch_add(1, Ordering::SeqCst) == 0;
            let request = held.send(vec!["one"]);
            async move {
                let _request = request;
                match (first, cut) {
                    (false, _) => Ok(7u64),
                    (true, Cut::Reset) => Err(Class::unknown("connection reset after the request was sent")),
                    (true, Cut::Hang) => std::future::pending().await,
                }
            }
        },
        |_| async { if held.landed("one") { Probe::Landed(7u64) } else { Probe::NotLanded } },
    )
    .await
}

/// The service saw each of `items` once, and the report says the call is `ok` with its effect applied.
fn applied_once<T>(held: &Held, items: &[&str], report: &tool_contract::Report<T>, case: &str) {
    for item in items {
        assert_eq!(held.effects(item), 1, "{case} {item}: {}", report.message);
    }
    assert_eq!(
        (report.outcome, report.effect_applied),
        (Outcome::Ok, Applied::Yes),
        "{case}: {}",
        report.message
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_held_after_a_reset_is_applied_once_for_every_kind() {
    for kind in KINDS {
        let held = Held::new(HOLD);
        let began = Instant::now();
        let report =
            call(&task_for(format!("reset-{kind}"), 30, None), &held_spec(kind), &held, Cut::Reset).await;
        applied_once(&held, &["one"], &report, &kind.to_string());
        // The cost of the default: the probe at the reset found nothing, the one 5 s later found it.
        assert_eq!(began.elapsed(), DEFAULT_HORIZON, "{kind}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_held_after_a_timeout_is_applied_once_for_every_kind() {
    for kind in KINDS {
        let held = Held::new(HOLD);
        let report =
            call(&task_for(format!("timeout-{kind}"), 30, None), &held_spec(kind), &held, Cut::Hang).await;
        applied_once(&held, &["one"], &report, &kind.to_string());
    }
}

#[tokio::test(start_paused = true)]
async fn a_budget_that_cannot_hold_the_horizon_reports_unknown_and_sends_nothing_again() {
    for kind in KINDS {
        let held = Held::new(HOLD);
        let report =
            call(&task_for(format!("short-{kind}"), 4, None), &held_spec(kind), &held, Cut::Reset).await;
        assert_eq!(
            (report.outcome, report.effect_applied),
            (Outcome::Unknown, Applied::Unknown),
            "{kind}: {}",
            report.message
        );
        assert_eq!(report.reason, Reason::BeforeHorizon, "{kind}: {}", report.message);
        assert_eq!(report.retry_after_s, Some(5), "{kind}: the rest of the horizon");
        tokio::time::sleep(HOLD).await;
        assert_eq!(held.effects("one"), 1, "{kind}: never a second attempt");
    }
}

/// One batch call of `spec` over two rows against `held`: the first attempt is cut as `cut`; any later
/// attempt answers for the rows it carries. The probe reports each row as the service holds it.
async fn batch(task: &Task, spec: &ToolSpec, held: &Held, cut: Cut) -> tool_contract::Report<()> {
    let made = AtomicU32::new(0);
    engine::run_bulk(
        task,
        spec,
        task.key(spec, &"sheet-1", None),
        vec!["row-1", "row-2"],
        |_, rows: Vec<&'static str>| {
            let first = made.fetch_add(1, Ordering::SeqCst) == 0;
            let request = held.send(rows.clone());
            async move {
                let _request = request;
                match (first, cut) {
                    (false, _) => Ok(rows.iter().map(|r| Item::ok(*r)).collect::<Vec<_>>()),
                    (true, Cut::Reset) => Err(Class::unknown("connection reset after the batch was sent")),
                    (true, Cut::Hang) => std::future::pending().await,
                }
            }
        },
        |_, rows: Vec<&'static str>| {
            let held = held.clone();
            async move {
                rows.iter()
                    .map(|r| match held.landed(r) {
                        true => Item::ok(*r),
                        false => Item { applied: Applied::No, ..Item::retryable(*r, "") },
                    })
                    .collect()
            }
        },
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn a_held_batch_is_applied_once_per_item_for_every_kind() {
    for kind in KINDS {
        let held = Held::new(HOLD);
        let report =
            batch(&task_for(format!("batch-{kind}"), 30, None), &held_spec(kind), &held, Cut::Reset).await;
        applied_once(&held, &["row-1", "row-2"], &report, &kind.to_string());
    }
}

/// A batch whose process is killed mid-attempt, the service holding its request: the restarted
/// process probes each row once the horizon has passed, finds both landed, and sends neither again.
#[tokio::test(start_paused = true)]
async fn a_held_batch_past_a_restart_is_applied_once_per_item_for_every_kind() {
    for kind in KINDS {
        let held = Held::new(HOLD);
        let spec = held_spec(kind);
        let log = Arc::new(MemoryJournal::new());
        let name = format!("batch-restart-{kind}");
        let killed = tokio::time::timeout(
            Duration::from_secs(1),
            batch(&task_for(name.clone(), 30, Some(log.clone())), &spec, &held, Cut::Hang),
        )
        .await;
        assert!(killed.is_err(), "{kind}: the batch was cut off");
        let reopened = Arc::new(MemoryJournal::from_records(log.records()));
        let restarted = Instant::now();
        let report = batch(&task_for(name, 30, Some(reopened)), &spec, &held, Cut::Reset).await;
        applied_once(&held, &["row-1", "row-2"], &report, &kind.to_string());
        assert!(restarted.elapsed() >= HOLD, "{kind}: the restart waited for the held request to land");
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_held_past_a_restart_is_applied_once_for_every_kind() {
    for kind in KINDS {
        let held = Held::new(HOLD);
        let spec = held_spec(kind);
        let log = Arc::new(MemoryJournal::new());
        // The first process is killed 1 s into its attempt: the request it held open lands 3 s later.
        let killed = tokio::time::timeout(
            Duration::from_secs(1),
            call(&task_for(format!("restart-{kind}"), 30, Some(log.clone())), &spec, &held, Cut::Hang),
        )
        .await;
        assert!(killed.is_err(), "{kind}: the call was cut off");
        // A new process opens the log the first one left, with no claim of the dead one.
        let reopened = Arc::new(MemoryJournal::from_records(log.records()));
        let restarted = Instant::now();
        let report =
            call(&task_for(format!("restart-{kind}"), 30, Some(reopened)), &spec, &held, Cut::Reset).await;
        applied_once(&held, &["one"], &report, &kind.to_string());
        // The cost after a restart: the dead attempt's request may have reached the service until the
        // restart at the latest, and the horizon runs 5 s from there.
        assert_eq!(restarted.elapsed(), DEFAULT_HORIZON, "{kind}");
    }
}

/// A person who looked while the service still held the request saw nothing, and settled `not_landed`
/// truthfully. The request lands after they looked. A call that comes once the horizon has passed
/// must not take that word as the probe's: it was seen before the attempt could no longer land, so the
/// call looks again (and finds the effect), for every kind.
#[tokio::test(start_paused = true)]
async fn a_not_landed_seen_before_a_held_request_landed_is_looked_at_again() {
    use tool_contract::journal::{Journal, Verdict};
    use tool_contract::person::{Settle, settle};
    for kind in KINDS {
        let held = Held::new(HOLD);
        let spec = held_spec(kind);
        let log = Arc::new(MemoryJournal::new());
        let name = format!("early-word-{kind}");
        // Killed 1 s into its attempt: the request lands at 4 s.
        let killed = tokio::time::timeout(
            Duration::from_secs(1),
            call(&task_for(name.clone(), 30, Some(log.clone())), &spec, &held, Cut::Hang),
        )
        .await;
        assert!(killed.is_err(), "{kind}: the call was cut off");
        let reopened = Arc::new(MemoryJournal::from_records(log.records()));
        let task = task_for(name, 30, Some(reopened.clone()));
        let key = task.key(&spec, &"thread-9", None);
        // The person looks at once: nothing has landed yet.
        assert!(!held.landed("one"));
        settle(&*reopened, &key, 1, &Settle::new(Verdict::NotLanded, "alice", "thread-9 holds nothing"))
            .await
            .unwrap();
        // Well past every horizon: the held request landed meanwhile.
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert!(held.landed("one"));
        let report = call(&task, &spec, &held, Cut::Reset).await;
        assert_eq!(held.effects("one"), 1, "{kind}: sent again on a word seen too early: {}", report.message);
        assert_eq!(
            (report.outcome, report.effect_applied),
            (Outcome::Ok, Applied::Yes),
            "{kind}: {}",
            report.message
        );
        // The log says what the probe saw, not the word it overruled: every reader shows it landed.
        let recall = reopened.recall(&key).await.unwrap().expect("the intent is in the log");
        assert_eq!(
            tool_contract::rules::last_word(&recall),
            tool_contract::rules::Word::Ok,
            "{kind}: {:?}",
            recall.last
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_declared_horizon_covers_a_service_that_holds_longer_than_the_default() {
    for kind in KINDS {
        let held = Held::new(Duration::from_secs(15));
        let spec = held_spec(kind).horizon(Duration::from_secs(20));
        let report = call(&task_for(format!("declared-{kind}"), 60, None), &spec, &held, Cut::Reset).await;
        applied_once(&held, &["one"], &report, &kind.to_string());
        // The default would have trusted the probe at 5 s and sent again.
        let held = Held::new(Duration::from_secs(15));
        let report =
            call(&task_for(format!("default-{kind}"), 60, None), &held_spec(kind), &held, Cut::Reset).await;
        assert_ne!(
            (held.effects("one"), report.effect_applied),
            (1, Applied::Yes),
            "{kind}: {}",
            report.message
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_held_request_on_a_probe_deduplicated_create_is_created_once_by_default() {
    let spec = held_spec(EffectKind::Create);
    assert_eq!(spec.get_dedupe(), Dedupe::Probe, "the default: nobody but the probe deduplicates");
    for cut in [Cut::Reset, Cut::Hang] {
        let held = Held::new(HOLD);
        let report = call(&task_for(format!("create-{cut:?}"), 30, None), &spec, &held, cut).await;
        assert_eq!(held.effects("one"), 1, "{cut:?}: {}", report.message);
        assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes), "{cut:?}");
    }
    // Opting out (`horizon = "0s"`) trusts the probe while the service still holds the request: the
    // record is created twice, which is what the default is for.
    let held = Held::new(HOLD);
    let hasty = spec.horizon(Duration::ZERO);
    let report = call(&task_for("create-hasty".to_owned(), 30, None), &hasty, &held, Cut::Reset).await;
    assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
    tokio::time::sleep(HOLD).await;
    assert_eq!(held.effects("one"), 2, "created again while the first was held");
}

#[tokio::test(start_paused = true)]
async fn a_receiver_deduplicated_create_waits_for_no_horizon() {
    let spec = held_spec(EffectKind::Create).dedupe(Dedupe::Receiver);
    assert_eq!(spec.get_horizon(), Duration::ZERO);
    let held = Held::new(HOLD);
    let task = task_for("create-receiver".to_owned(), 30, None);
    let keys = Mutex::new(Vec::new());
    let began = Instant::now();
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"thread-9", None),
        |call| {
            let first = {
                let mut keys = keys.lock().unwrap();
                keys.push(call.key());
                keys.len() == 1
            };
            let request = held.send(vec!["one"]);
            async move {
                let _request = request;
                if first {
                    Err(Class::unknown("connection reset after the request was sent"))
                } else {
                    Ok(7u64)
                }
            }
        },
        NoProbe,
    )
    .await;
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes), "{}", report.message);
    // The retry went out while the first request was still held, with the same key: the receiver's
    // deduplication by that key, not a wait, keeps it one record.
    let keys = keys.into_inner().unwrap();
    assert_eq!(keys.len(), 2, "{}", report.message);
    assert_eq!(keys[0], keys[1], "the retry carries the same key");
    assert!(began.elapsed() < HOLD, "no horizon waited for: {:?}", began.elapsed());
    assert!(!held.landed("one"), "the first request was still held when the retry went out");
}
