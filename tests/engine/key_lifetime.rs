//! A receiver that deduplicates by the intent key keeps each key for a while only
//! ([`ToolSpec::key_lifetime`]): a resend it would no longer recognise is a second create. The engine
//! resends on the receiver's word only while every request the call may send reaches it within the
//! lifetime of the intent's first attempt; otherwise it probes, or ends `unknown` without a probe.

use super::*;
use tool_contract::journal::{Durability, Journal, Phase, Record};

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

/// A log holding attempt 1 of the intent, started `ago`, unfinished (a process killed mid-call).
async fn killed_mid_call(task: &Task, spec: &ToolSpec, ago: Duration, attempts: u32) -> Arc<MemoryJournal> {
    let journal = Arc::new(MemoryJournal::new());
    let key = task.key(spec, &"cart-1", None);
    let started = tool_contract::unstable::rfc3339(tool_contract::unstable::wall_clock() - ago);
    for attempt in 1..=attempts {
        let record = Record {
            phase: Phase::Start,
            task: "ord-7741".into(),
            call: "create_order".into(),
            intent_key: key,
            attempt,
            attempt_id: attempt_id(key, attempt),
            started: started.clone(),
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
        journal.append(record.as_record_ref(), Durability::Synced).await.unwrap();
    }
    journal
}

#[tokio::test(start_paused = true)]
async fn a_restarted_process_resends_only_while_the_receiver_keeps_the_key() {
    // Attempt 1 started 3 minutes ago and its process died. A receiver that keeps keys for 2 minutes
    // has forgotten it; one that keeps them for an hour has not.
    for (lifetime, resent) in [(2 * MINUTE, false), (60 * MINUTE, true)] {
        let spec = receiver(lifetime);
        let bare = task(30);
        let journal = killed_mid_call(&bare, &spec, 3 * MINUTE, 1).await;
        let task = bare.journal(journal.clone());
        let sent = AtomicU32::new(0);
        let report = engine::run(
            &task,
            &spec,
            task.key(&spec, &"cart-1", None),
            |_| {
                sent.fetch_add(1, Ordering::SeqCst);
                async { Ok::<u64, Class>(17) }
            },
            NoProbe,
        )
        .await;
        assert_eq!(sent.load(Ordering::SeqCst) == 1, resent, "{lifetime:?}: {}", report.message);
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
    let spec = receiver(24 * 60 * MINUTE);
    let bare = task(30);
    let journal = killed_mid_call(&bare, &spec, Duration::ZERO, 2).await;
    let task = bare.journal(journal);
    let sent = AtomicU32::new(0);
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"cart-1", None),
        |_| {
            sent.fetch_add(1, Ordering::SeqCst);
            async { Ok::<u64, Class>(17) }
        },
        NoProbe,
    )
    .await;
    assert_eq!(sent.load(Ordering::SeqCst), 0, "{}", report.message);
    assert_eq!(report.outcome, Outcome::Unknown);
    assert!(report.message.contains("keeps a key for 24h"), "{}", report.message);
}

#[tokio::test(start_paused = true)]
async fn past_the_key_lifetime_a_held_request_is_waited_for_before_a_resend() {
    // The receiver forgot the key: a request it still holds is a new create, so "not landed" counts
    // only after the horizon of a create only the probe deduplicates (5 s), not at once.
    let spec = receiver(MINUTE);
    let task = task(120);
    let sent = AtomicU32::new(0);
    let began = Instant::now();
    // The first request is held 3 s and then applied; its caller gave up at once.
    let landed = || began.elapsed() >= Duration::from_secs(3) && sent.load(Ordering::SeqCst) >= 1;
    let report = engine::run(
        &task,
        &spec,
        task.key(&spec, &"cart-1", None),
        |_| {
            let n = sent.fetch_add(1, Ordering::SeqCst);
            async move { if n == 0 { Err(Class::unknown("connection reset")) } else { Ok(17u64) } }
        },
        |_| {
            let found = landed();
            async move { if found { Probe::Landed(17u64) } else { Probe::NotLanded } }
        },
    )
    .await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(17)), "{}", report.message);
    assert_eq!(sent.load(Ordering::SeqCst), 1, "found after the horizon, never created twice");
    assert!(began.elapsed() >= Duration::from_secs(5), "{:?}", began.elapsed());
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
