//! A receiver that deduplicates by the intent key keeps each key for a while only
//! ([`ToolSpec::key_lifetime`]): a resend it would no longer recognise is a second create. The engine
//! resends on the receiver's word only while every request the call may send reaches it within the
//! lifetime of the intent's first attempt; otherwise it probes, or ends `unknown` without a probe.

use super::*;
use tool_contract::journal::{Durability, Journal};

const MINUTE: Duration = Duration::from_secs(60);

fn receiver(lifetime: Duration) -> ToolSpec {
    spec("create_order", EffectKind::Create).dedupe(Dedupe::Receiver).key_lifetime(lifetime)
}

/// Run a create whose first attempt ends in doubt and whose second would succeed; the keys each
/// attempt was sent with.
async fn create(task: &Task, spec: &ToolSpec) -> (tool_contract::Report<u64>, Vec<tool_contract::IntentKey>) {
    let keys = std::sync::Mutex::new(Vec::new());
    let report = engine::run(
        task,
        spec,
        task.key(spec, &"cart-1", None),
        |call| {
            let mut keys = keys.lock().unwrap();
            keys.push(call.key());
            let first = keys.len() == 1;
            async move { if first { Err(Class::unknown("502 from the gateway")) } else { Ok(17u64) } }
        },
        NoProbe,
    )
    .await;
    (report, keys.into_inner().unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_resend_inside_the_key_lifetime_carries_the_key_and_is_answered_once() {
    let (report, keys) = create(&task(30), &receiver(MINUTE)).await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(17)), "{}", report.message);
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1], "the resend carries the key the receiver deduplicates by");
}

#[tokio::test(start_paused = true)]
async fn a_call_that_could_send_past_the_key_lifetime_does_not_resend() {
    // The budget (2 minutes) outlasts what the receiver keeps the key for (1 minute): a resend could
    // reach it after it forgot the first request.
    let (report, keys) = create(&task(120), &receiver(MINUTE)).await;
    assert_eq!(keys.len(), 1, "no second request: {}", report.message);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Unknown, Applied::Unknown));
    assert_eq!(report.reason, tool_contract::Reason::NoProbe);
    assert!(report.message.contains("keeps a key for 1m"), "{}", report.message);
    assert!(report.message.contains("second create"), "{}", report.message);
}

#[tokio::test(start_paused = true)]
async fn an_expired_key_sends_a_create_with_a_probe_to_its_probe_first() {
    let spec = receiver(MINUTE);
    let task = task(120);
    let probes = AtomicU32::new(0);
    let sent = AtomicU32::new(0);
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"cart-1", None),
        |_| {
            let n = sent.fetch_add(1, Ordering::SeqCst);
            async move { if n == 0 { Err(Class::unknown("502 from the gateway")) } else { Ok(17u64) } }
        },
        |_| {
            probes.fetch_add(1, Ordering::SeqCst);
            async { Probe::Landed(17u64) }
        },
    )
    .await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(17)), "{}", report.message);
    assert_eq!((probes.load(Ordering::SeqCst), sent.load(Ordering::SeqCst)), (1, 1), "found, not resent");
}

/// A task whose log holds `attempts` attempts of the intent, all started `ago` and unfinished (a
/// process killed mid-call), then one call of `spec` on it: the report, and the requests it sent.
async fn resumed(spec: &ToolSpec, ago: Duration, attempts: u32) -> (tool_contract::Report<u64>, u32) {
    let journal = Arc::new(MemoryJournal::new());
    let task = task(30).journal(journal.clone());
    let key = task.key(spec, &"cart-1", None);
    let started = tool_contract::unstable::rfc3339(tool_contract::unstable::wall_clock() - ago);
    for attempt in 1..=attempts {
        let mut record = super::resumed::record(key, "create_order", attempt);
        record.started = started.clone();
        journal.append(record.as_record_ref(), Durability::Synced).await.unwrap();
    }
    let sent = AtomicU32::new(0);
    let report = engine::run(
        &task,
        spec,
        key,
        |_| {
            sent.fetch_add(1, Ordering::SeqCst);
            async { Ok::<u64, Class>(17) }
        },
        NoProbe,
    )
    .await;
    (report, sent.load(Ordering::SeqCst))
}

#[tokio::test(start_paused = true)]
async fn a_restarted_process_resends_only_while_the_receiver_keeps_the_key() {
    // Attempt 1 started 3 minutes ago and its process died. A receiver that keeps keys for 2 minutes
    // has forgotten it; one that keeps them for an hour has not.
    for (lifetime, resent) in [(2 * MINUTE, false), (60 * MINUTE, true)] {
        let (report, sent) = resumed(&receiver(lifetime), 3 * MINUTE, 1).await;
        assert_eq!(sent == 1, resent, "{lifetime:?}: {}", report.message);
        if resent {
            assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
        } else {
            assert_eq!((report.outcome, report.effect_applied), (Outcome::Unknown, Applied::Unknown));
            assert!(report.message.contains("keeps a key for 2m"), "{}", report.message);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_intent_resumed_past_its_first_attempt_is_not_resent_on_the_receivers_word() {
    // Two attempts in the log, the last started just now: when the first started is not recorded, so
    // it is taken as long ago, whatever the lifetime.
    let (report, sent) = resumed(&receiver(24 * 60 * MINUTE), Duration::ZERO, 2).await;
    assert_eq!(sent, 0, "{}", report.message);
    assert_eq!(report.outcome, Outcome::Unknown);
    assert!(report.message.contains("keeps a key for 24h"), "{}", report.message);
}

#[tokio::test(start_paused = true)]
async fn a_batch_past_the_key_lifetime_is_not_resent_either() {
    let spec = receiver(MINUTE);
    let sent = AtomicU32::new(0);
    for (budget, resends) in [(30, 1), (120, 0)] {
        sent.store(0, Ordering::SeqCst);
        let task = task(budget);
        let report = engine::run_bulk(
            &task,
            &spec,
            task.key(&spec, &"rows", None),
            vec!["a".to_owned(), "b".to_owned()],
            |_, rows: Vec<String>| {
                let n = sent.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n == 0 {
                        Err(Class::unknown("connection reset after the batch was sent"))
                    } else {
                        Ok(rows.into_iter().map(Item::ok).collect())
                    }
                }
            },
            NoProbe,
        )
        .await;
        assert_eq!(sent.load(Ordering::SeqCst), 1 + resends, "budget {budget}: {}", report.message);
        if resends == 0 {
            assert_eq!((report.outcome, report.effect_applied), (Outcome::Unknown, Applied::Unknown));
            assert!(report.message.contains("keeps a key for 1m"), "{}", report.message);
        } else {
            assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
        }
    }
}
