//! Claims and fencing: who may write a start, and what records about an attempt a store takes.

use super::*;

/// A start is accepted only from the holder of an unexpired claim, and only for the highest attempt
/// recorded + 1.
pub async fn starts_are_fenced(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a start is fenced by the claim and the next attempt number";
    let k = key(scope, "starts-are-fenced");
    let (a, b) = (Owner::new(format!("{scope}-a")), Owner::new(format!("{scope}-b")));
    conflict(store.start(&a, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await, RULE);
    claim(store, k, &a, RULE).await;
    match store.claim(&k, &b, LEASE).await {
        Ok(Claimed::Busy { holder, .. }) => assert_eq!(holder, a, "{RULE}: the holder is named"),
        other => panic!("{RULE}: a second owner took a held intent: {other:?}"),
    }
    conflict(store.start(&b, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await, RULE);
    conflict(store.start(&a, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await, RULE);
    store.start(&a, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    // The same start again: refused, or (a store that retries a start whose answer was lost) taken as
    // the one already stored; never a second attempt 1.
    let again = store.start(&a, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await;
    assert!(matches!(again, Ok(()) | Err(JournalError::Conflict { .. })), "{RULE}: {again:?}");
    let (attempts, last) = last(store, k).await;
    assert_eq!((attempts, last.phase), (1, Phase::Start), "{RULE}");
    store.release(&k, &a);
}

/// An end record (an attempt's end, a probe's verdict) is accepted only from the holder of an
/// unexpired claim, for the attempt it started, or as a probe's verdict on the highest attempt.
pub async fn records_about_an_attempt_are_fenced(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a record about an attempt comes from its starter or the holder's probe";
    let k = key(scope, "ends-are-fenced");
    let (a, b) = (Owner::new(format!("{scope}-a")), Owner::new(format!("{scope}-b")));
    let ended = |n| end(k, n, Outcome::Unknown, Applied::Unknown, "timed out");
    // No claim, no end.
    conflict(store.end(&a, ended(1).as_record_ref(), Durability::Buffered).await, RULE);
    claim(store, k, &a, RULE).await;
    // The holder has started nothing: no end of its own for attempt 1.
    conflict(store.end(&a, ended(1).as_record_ref(), Durability::Buffered).await, RULE);
    store.start(&a, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    store.end(&a, ended(1).as_record_ref(), Durability::Buffered).await.expect(RULE);
    // Another owner, not holding the claim, writes nothing about it.
    conflict(
        store.end(&b, verdict(k, 1, ProbeMark::NotLanded).as_record_ref(), Durability::Buffered).await,
        RULE,
    );
    store.release(&k, &a);
    // b takes over: it may give a probe's verdict on attempt 1, not an end as if it had made it.
    claim(store, k, &b, RULE).await;
    conflict(store.end(&b, ended(1).as_record_ref(), Durability::Buffered).await, RULE);
    store.end(&b, verdict(k, 1, ProbeMark::Failed).as_record_ref(), Durability::Buffered).await.expect(RULE);
    let (attempts, last) = last(store, k).await;
    assert_eq!((attempts, last.probe), (1, Some(ProbeMark::Failed)), "{RULE}: the verdict is the last word");
    // The last record of a call gives the claim up with it (`finish`), under the same fence.
    store.start(&b, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await.expect(RULE);
    let done = end(k, 2, Outcome::Ok, Applied::Yes, "transfer done on attempt 2");
    store.finish(&b, done.as_record_ref(), Durability::Buffered).await.expect(RULE);
    claim(store, k, &a, "the finishing record gives the claim up").await;
    store.release(&k, &a);
}

/// The partition story: a worker whose start and end of attempt 2 are held back while another worker
/// takes the intent over, makes attempt 2 and lands it; the held records are delivered late. Neither
/// may become the last word: the intent stays done, and its next call replays it.
pub async fn a_late_record_of_an_old_owner_changes_nothing(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a record held back and delivered late changes nothing";
    let k = key(scope, "late-record");
    let (first, partitioned, taker) = (
        Owner::new(format!("{scope}-w1")),
        Owner::new(format!("{scope}-w4")),
        Owner::new(format!("{scope}-w5")),
    );
    // Attempt 1: a 503 and a probe that found nothing.
    claim(store, k, &first, RULE).await;
    store.start(&first, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    let refused = end(k, 1, Outcome::Retryable, Applied::No, "503");
    store.finish(&first, refused.as_record_ref(), Durability::Buffered).await.expect(RULE);
    // w4 claims; its start of attempt 2 never arrives, and its lease runs out (a release, to the store).
    claim(store, k, &partitioned, RULE).await;
    store.release(&k, &partitioned);
    // w5 takes over, makes attempt 2, and the transfer lands.
    claim(store, k, &taker, RULE).await;
    store.start(&taker, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await.expect(RULE);
    let landed =
        Record { value: Some(serde_json::json!(4411)), ..end(k, 2, Outcome::Ok, Applied::Yes, "done") };
    store.finish(&taker, landed.as_record_ref(), Durability::Buffered).await.expect(RULE);
    // The partition heals: w4's held start and its "not started" end arrive.
    conflict(
        store.start(&partitioned, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await,
        RULE,
    );
    let stale = end(k, 2, Outcome::Retryable, Applied::No, "the start record was not stored; not started");
    conflict(store.end(&partitioned, stale.as_record_ref(), Durability::Buffered).await, RULE);
    conflict(store.finish(&partitioned, stale.as_record_ref(), Durability::Buffered).await, RULE);
    let stale_probe = verdict(k, 2, ProbeMark::NotLanded);
    conflict(store.end(&partitioned, stale_probe.as_record_ref(), Durability::Buffered).await, RULE);
    let recall = store.recall(&k).await.expect("the store answers").expect("the intent has records");
    assert_eq!(recall.attempts, 2, "{RULE}");
    assert_eq!(recall.last_word(), LastWord::Ok(Some(&serde_json::json!(4411))), "{RULE}: {:?}", recall.last);
}

/// A start whose writer gave up waiting for the store (a stalled disk, a commit that did not come
/// back within the budget) is either never stored, or stored and then followed by the end record the
/// writer hands over next under its claim, saying the attempt was not started: the intent is not left
/// in doubt, so nobody is asked about a call that sent nothing, and its next call needs no probe.
pub async fn a_start_given_up_on_is_not_in_doubt(store: &dyn Journal, scope: &str) {
    const RULE: &str =
        "a start given up on is never stored, or followed by the end saying it was not started";
    let k = key(scope, "start-given-up-on");
    let owner = Owner::new(format!("{scope}-gave-up"));
    claim(store, k, &owner, RULE).await;
    // Handed to the store; its answer is never waited for.
    let given_up = store.start(&owner, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced);
    drop(given_up);
    let message = "the start record was not stored within the budget; the attempt was not started";
    let not_started = end(k, 1, Outcome::Retryable, Applied::No, message);
    // Taken after the start, or refused by the fence when the start was never stored.
    let ended = store.end(&owner, not_started.as_record_ref(), Durability::Buffered).await;
    assert!(matches!(ended, Ok(()) | Err(JournalError::Conflict { .. })), "{RULE}: {ended:?}");
    store.release(&k, &owner);
    let unresolved = store.unresolved().await.expect("the store answers");
    assert!(!unresolved.iter().any(|open| open.last.intent_key == k), "{RULE}: {unresolved:?}");
    if let Some(recall) = store.recall(&k).await.expect("the store answers") {
        assert_eq!(
            (recall.attempts, recall.last.phase, recall.last.effect_applied),
            (1, Phase::End, Some(Applied::No)),
            "{RULE}: {:?}",
            recall.last
        );
    }
}

/// An intent left unfinished by `owner`'s attempt 1, its claim given up (a worker that died).
pub(super) async fn left_unfinished(store: &dyn Journal, k: IntentKey, owner: &Owner, rule: &str) {
    claim(store, k, owner, rule).await;
    store.start(owner, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(rule);
    store.release(&k, owner);
}
