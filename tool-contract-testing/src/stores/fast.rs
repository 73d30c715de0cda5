//! The optional fast paths a store may take ([`Journal::attempts`], [`Journal::append_attempt`],
//! [`Journal::claim_by`], [`Journal::finish`]) agree with what they stand for.

use super::*;

/// Each fast path agrees with its slow equivalent, read through [`Journal::recall`]: `attempts` is
/// `recall`'s attempt count; `append_attempt` leaves what appending the start then the end leaves;
/// `claim_by` with a deadline ahead claims as `claim` does and says what `recall` says; `finish` takes
/// the end record as `end` does and gives the claim up, so another owner can take it.
pub async fn fast_paths_agree(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a fast path agrees with its slow equivalent";
    let reference = tool_contract::MemoryJournal::new();
    // append_attempt: a read's two records as one entry, three times, the last ok.
    let read = key(scope, "fast-read");
    for (attempt, outcome) in [(1, Outcome::Retryable), (2, Outcome::Retryable), (3, Outcome::Ok)] {
        let start = record(read, Phase::Start, attempt);
        let ended = end(read, attempt, outcome, Applied::No, "read");
        store
            .append_attempt(start.as_record_ref(), ended.as_record_ref(), Durability::Buffered)
            .await
            .expect(RULE);
        reference.append(start.as_record_ref(), Durability::Buffered).await.expect(RULE);
        reference.append(ended.as_record_ref(), Durability::Buffered).await.expect(RULE);
        let ours = store.recall(&read).await.expect("the store answers");
        assert_eq!(ours, reference.recall_now(&read), "{RULE}: append_attempt, attempt {attempt}");
        let attempts = store.attempts(&read).await.expect("the store answers");
        assert_eq!(attempts, ours.map(|r| r.attempts), "{RULE}: attempts after append_attempt {attempt}");
    }
    let nothing = key(scope, "fast-nothing");
    assert_eq!(
        store.attempts(&nothing).await.expect("the store answers"),
        None,
        "{RULE}: attempts of nothing"
    );

    // claim_by, then finish.
    let k = key(scope, "fast-claimed");
    let (a, b) = (Owner::new(format!("{scope}-fast-a")), Owner::new(format!("{scope}-fast-b")));
    let deadline = tokio::time::Instant::now() + LEASE;
    match store.claim_by(&k, &a, LEASE, deadline).await.expect(RULE) {
        Claimed::Held(None) => {}
        other => panic!("{RULE}: claim_by of a free intent: {other:?}"),
    }
    match store.claim_by(&k, &b, LEASE, deadline).await.expect(RULE) {
        Claimed::Busy { holder, .. } => assert_eq!(holder, a, "{RULE}: claim_by names the holder"),
        other => panic!("{RULE}: claim_by took a held intent: {other:?}"),
    }
    store.start(&a, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    match store.claim_by(&k, &a, LEASE, deadline).await.expect(RULE) {
        Claimed::Held(held) => {
            assert_eq!(
                held,
                store.recall(&k).await.expect("the store answers"),
                "{RULE}: claim_by says what recall says"
            )
        }
        other => panic!("{RULE}: the holder renewing with claim_by: {other:?}"),
    }
    let ended = end(k, 1, Outcome::Ok, Applied::Yes, "done");
    store.finish(&a, ended.as_record_ref(), Durability::Buffered).await.expect(RULE);
    let recall = store.recall(&k).await.expect("the store answers").expect("records were written");
    assert_eq!((recall.attempts, &recall.last), (1, &ended), "{RULE}: finish takes the end record");
    assert_eq!(
        store.attempts(&k).await.expect("the store answers"),
        Some(1),
        "{RULE}: attempts after finish"
    );
    // The claim was given up: another owner takes it (a release may be sent off: `claim` waits).
    claim(store, k, &b, RULE).await;
    store.release(&k, &b);
    // finish by an owner that holds nothing is refused as end is, and writes nothing.
    let late = end(k, 1, Outcome::Unknown, Applied::Unknown, "late");
    conflict(store.finish(&a, late.as_record_ref(), Durability::Buffered).await, RULE);
    let after = store.recall(&k).await.expect("the store answers").expect("records were written");
    assert_eq!(after.last, ended, "{RULE}: a refused finish writes nothing");
}
