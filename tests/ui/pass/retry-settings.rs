//! `max_attempts`, `backoff`, `probe_reserve` and `horizon` (and `horizon = "0s"`, the opt-out, on a send and on a create only its probe deduplicates), and a floor in hours: each changes what the
//! engine does.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tool_contract::{Applied, Call, Class, IntentKey, Outcome, Probe, Task, tool};

static READS: AtomicU32 = AtomicU32::new(0);
static SENDS: AtomicU32 = AtomicU32::new(0);

/// A read against a service that is always busy; five attempts, waits from 1 s doubling to 2 s.
#[tool(effect = "read", max_attempts = 5, backoff = "1s..2s")]
pub async fn busy_read(call: &Call) -> Result<u32, Class> {
    let _ = call;
    READS.fetch_add(1, Ordering::SeqCst);
    Err(Class::retryable("503 from the service"))
}

/// A read that needs at least an hour.
#[tool(effect = "read", deadline_floor = "1h")]
pub async fn archive_scan() -> Result<u32, Class> {
    Ok(1)
}

pub async fn sent(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::Landed(5)
}

/// A send that hangs; the probe keeps 3 s of the budget.
#[tool(effect = "send", probe = sent, target = thread, deadline_floor = "1s", probe_reserve = "3s")]
pub async fn hanging_send(call: &Call, thread: String) -> Result<u64, Class> {
    let _ = (call, thread);
    SENDS.fetch_add(1, Ordering::SeqCst);
    std::future::pending().await
}

static QUEUED: AtomicU32 = AtomicU32::new(0);

/// Lands 15 s after it was sent: the service queues it.
pub async fn queued_landed(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    let sent_at = QUEUED.load(Ordering::SeqCst);
    if sent_at > 0 && landed_yet() { Probe::Landed(6) } else { Probe::NotLanded }
}

fn landed_yet() -> bool {
    START.with(|start| start.get().is_some_and(|start| start.elapsed() >= Duration::from_secs(15)))
}

thread_local! {
    static START: std::cell::Cell<Option<tokio::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// A send to a queue that may hold it 20 s; the connection drops at once.
#[tool(effect = "send", probe = queued_landed, target = thread, deadline_floor = "1s", horizon = "20s")]
pub async fn queued_send(thread: String) -> Result<u64, Class> {
    let _ = thread;
    QUEUED.fetch_add(1, Ordering::SeqCst);
    START.with(|start| start.set(Some(tokio::time::Instant::now())));
    Err(Class::unknown("connection reset after the request was sent"))
}

/// A send whose service applies a request only while its caller waits: "not landed" is trusted at once.
#[tool(effect = "send", probe = queued_landed, target = thread, horizon = "0s")]
pub async fn synchronous_send(thread: String) -> Result<u64, Class> {
    let _ = thread;
    Ok(7)
}

static CREATES: AtomicU32 = AtomicU32::new(0);
static PLAIN_CREATES: AtomicU32 = AtomicU32::new(0);

pub async fn not_created(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::NotLanded
}

/// A create only its probe deduplicates, against a service that applies a request only while its
/// caller waits: `horizon = "0s"` opts out of the default, so "not landed" is trusted at once.
#[tool(effect = "create", probe = not_created, target = thread, horizon = "0s")]
pub async fn synchronous_create(thread: String) -> Result<u64, Class> {
    let _ = thread;
    let first = CREATES.fetch_add(1, Ordering::SeqCst) == 0;
    if first { Err(Class::unknown("connection reset after the request was sent")) } else { Ok(8) }
}

/// The same create on its default horizon: the probe's "not landed" counts only 5 s after the reset.
#[tool(effect = "create", probe = not_created, target = thread)]
pub async fn plain_create(thread: String) -> Result<u64, Class> {
    let _ = thread;
    let first = PLAIN_CREATES.fetch_add(1, Ordering::SeqCst) == 0;
    if first { Err(Class::unknown("connection reset after the request was sent")) } else { Ok(8) }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let task = Task::new("settings-1", "agent", Duration::from_secs(60));
    let started = tokio::time::Instant::now();
    let report = busy_read(&task).await;
    assert_eq!(report.outcome, Outcome::Retryable);
    assert_eq!(READS.load(Ordering::SeqCst), 5, "max_attempts = 5");
    // Four waits, each at most its ceiling: 1 s, then 2 s capped three times.
    assert!(started.elapsed() <= Duration::from_secs(7), "{:?}", started.elapsed());

    let task = Task::new("settings-2", "agent", Duration::from_secs(1800));
    assert_eq!(archive_scan(&task).await.outcome, Outcome::Retryable, "half an hour is under the floor");

    let task = Task::new("settings-3", "agent", Duration::from_secs(10));
    let started = tokio::time::Instant::now();
    let report = hanging_send(&task, "thread-1".to_owned()).await;
    // The attempt was cut at 10 s - 3 s, leaving the probe its reserve; the probe found the notice.
    assert_eq!((report.outcome, report.effect_applied, report.value), (Outcome::Ok, Applied::Yes, Some(5)));
    assert_eq!(SENDS.load(Ordering::SeqCst), 1);
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(7) && elapsed < Duration::from_secs(8), "{elapsed:?}");

    let task = Task::new("settings-4", "agent", Duration::from_secs(60));
    let report = queued_send(&task, "thread-2".to_owned()).await;
    // The first probe found nothing; the engine waited out the 20 s horizon and looked again.
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(6)), "{}", report.message);
    assert_eq!(QUEUED.load(Ordering::SeqCst), 1, "sent once");

    let task = Task::new("settings-5", "agent", Duration::from_secs(60));
    let started = tokio::time::Instant::now();
    let report = synchronous_create(&task, "thread-3".to_owned()).await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(8)), "{}", report.message);
    assert_eq!(CREATES.load(Ordering::SeqCst), 2, "created again at once");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    let task = Task::new("settings-6", "agent", Duration::from_secs(60));
    let started = tokio::time::Instant::now();
    let report = plain_create(&task, "thread-4".to_owned()).await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(8)), "{}", report.message);
    assert_eq!(PLAIN_CREATES.load(Ordering::SeqCst), 2);
    assert!(started.elapsed() >= Duration::from_secs(5), "waited out the default: {:?}", started.elapsed());
}
