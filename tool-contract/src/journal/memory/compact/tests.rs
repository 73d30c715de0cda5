//! The in-memory log's tests: every record shape read back as appended, the pair a read appends,
//! and the engine's forms recognised.
use super::stored::{eq, is_decimal_of, strip};
use super::*;
use crate::report::{Applied, Outcome};

fn key(target: &str) -> IntentKey {
    IntentKey::derive("t-1", "agent", "post_notice", &target, None)
}

fn start(target: &str, attempt: u32) -> Record {
    let key = key(target);
    Record {
        phase: Phase::Start,
        task: "t-1".to_owned(),
        call: "post_notice".to_owned(),
        intent_key: key,
        attempt,
        attempt_id: crate::call::attempt_id("t-1", &key, attempt),
        started: "2026-12-01T03:00:00Z".to_owned(),
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
    }
}

fn end(target: &str, attempt: u32) -> Record {
    Record {
        phase: Phase::End,
        outcome: Some(Outcome::Retryable),
        effect_applied: Some(Applied::No),
        message: Some("503".to_owned()),
        retry_at: Some("2026-12-01T03:00:09Z".to_owned()),
        sent_by: None,
        args: None,
        ..start(target, attempt)
    }
}

#[test]
fn the_records_read_back_are_the_records_appended_whatever_is_folded() {
    let done = |r: Record, message: &str| Record {
        outcome: Some(Outcome::Ok),
        effect_applied: Some(Applied::Yes),
        message: Some(message.to_owned()),
        retry_at: None,
        sent_by: None,
        args: None,
        ..r
    };
    let custom = |mut r: Record, id: &str| {
        r.attempt_id = id.to_owned();
        r
    };
    let cases: Vec<(&str, Vec<Record>)> = vec![
        ("a start and its end", vec![start("a", 1), end("a", 1)]),
        ("two intents interleaved", vec![start("a", 1), start("b", 1), end("a", 1), end("b", 1)]),
        ("an end of another attempt", vec![start("a", 2), end("a", 1)]),
        ("an end alone, then a start alone", vec![end("a", 1), start("a", 2)]),
        (
            "a start carrying items",
            vec![Record { value: Some(serde_json::json!([1])), ..start("a", 1) }, end("a", 1)],
        ),
        ("a start with another budget", vec![start("a", 1), Record { budget_left_s: 29, ..end("a", 1) }]),
        (
            "budgets of 2^32 - 1 seconds and more",
            vec![
                Record { budget_left_s: u64::from(u32::MAX), ..start("a", 1) },
                Record { budget_left_s: u64::from(u32::MAX), ..end("a", 1) },
                Record { budget_left_s: u64::MAX, ..start("a", 2) },
                Record { budget_left_s: u64::from(u32::MAX) - 1, ..end("a", 2) },
            ],
        ),
        (
            "another stamp",
            vec![start("a", 1), Record { started: "2026-12-01T03:00:01Z".to_owned(), ..end("a", 1) }],
        ),
        ("ids of another form", vec![custom(start("a", 1), "mine-1"), custom(end("a", 1), "mine-1")]),
        ("an id changed", vec![start("a", 1), custom(end("a", 1), "mine-1")]),
        ("empty ids", vec![custom(start("a", 1), ""), custom(end("a", 1), "")]),
        (
            "an id with a leading zero",
            vec![custom(start("a", 1), &start("a", 1).attempt_id.replace("-a1", "-a01"))],
        ),
        ("two ends", vec![start("a", 1), end("a", 1), end("a", 1)]),
        (
            "the engine's message for an ok",
            vec![start("a", 3), done(end("a", 3), "post_notice done on attempt 3")],
        ),
        (
            "a message of that form for another attempt",
            vec![done(end("a", 3), "post_notice done on attempt 4")],
        ),
        (
            "a message of that form with a leading zero",
            vec![done(end("a", 3), "post_notice done on attempt 03")],
        ),
        ("a message of that form for another tool", vec![done(end("a", 3), "read_price done on attempt 3")]),
        ("a message of that form and more", vec![done(end("a", 3), "post_notice done on attempt 3!")]),
        ("an empty message", vec![done(end("a", 3), "")]),
        ("a start with its own id and an end", vec![custom(start("a", 1), "mine-1"), done(end("a", 1), "x")]),
    ];
    let values = [
        serde_json::json!(null),
        serde_json::json!(true),
        serde_json::json!(4411),
        serde_json::json!(-7),
        serde_json::json!(0.5),
        serde_json::json!(1.0),
        serde_json::json!(-0.0),
        serde_json::json!(1e300),
        serde_json::json!(u64::MAX),
        serde_json::json!(i64::MIN),
        serde_json::json!(false),
        serde_json::json!([]),
        serde_json::json!("text"),
        serde_json::json!({ "id": 1, "items": [1, 2] }),
    ];
    let cases = cases.into_iter().chain(values.into_iter().map(|value| {
        let end = Record { value: Some(value), ..done(end("a", 1), "post_notice done on attempt 1") };
        ("a value", vec![start("a", 1), end])
    }));
    for (name, records) in cases {
        let log = CompactMemoryJournal::new();
        for record in &records {
            let _ = Journal::append(&log, record.as_record_ref(), Durability::Buffered).ready();
        }
        assert_eq!(log.records(), records, "{name}");
        // The same two records handed over together, as the engine hands a read's: the same log.
        if let [first, second] = &records[..] {
            let paired = CompactMemoryJournal::new();
            let answer =
                paired.append_attempt(first.as_record_ref(), second.as_record_ref(), Durability::Buffered);
            assert!(matches!(answer.ready(), Some(Ok(()))), "{name}");
            assert_eq!(paired.records(), records, "{name}: appended as a pair");
            assert_eq!(
                paired.lock().records.len(),
                log.lock().records.len(),
                "{name}: kept in as many entries as appended one by one"
            );
        }
        let last =
            records.iter().rev().find(|r| r.attempt == records.iter().map(|r| r.attempt).max().unwrap_or(0));
        let recalled = log.recall_now(&records[0].intent_key).map(|r| r.last);
        if records.iter().all(|r| r.intent_key == records[0].intent_key) {
            assert_eq!(recalled.as_ref(), last, "{name}: the last word");
        }
    }
    // Folded: one entry per attempt of a start and its end.
    let log = CompactMemoryJournal::new();
    for record in [start("a", 1), end("a", 1), start("a", 2), end("a", 2)] {
        let _ = Journal::append(&log, record.as_record_ref(), Durability::Buffered).ready();
    }
    assert_eq!(log.lock().records.len(), 2);
    // What a read that succeeds keeps: one entry, nothing boxed beside it.
    assert!(std::mem::size_of::<Stored>() <= 48, "{}", std::mem::size_of::<Stored>());
    let read = CompactMemoryJournal::new();
    let ok = Record {
        outcome: Some(Outcome::Ok),
        effect_applied: Some(Applied::No),
        message: Some("post_notice done on attempt 1".to_owned()),
        retry_at: None,
        sent_by: None,
        args: None,
        value: Some(serde_json::json!(4411)),
        ..end("a", 1)
    };
    for record in [start("a", 1), ok] {
        let _ = Journal::append(&read, record.as_record_ref(), Durability::Buffered).ready();
    }
    assert!(read.lock().records.iter().all(|stored| stored.rare.is_none()));
    assert_eq!(log.records().len(), 4);
    assert_eq!(log.recall_now(&key("a")).map(|r| (r.attempts, r.last)), Some((2, end("a", 2))));
}

#[tokio::test(start_paused = true)]
async fn a_read_leaves_its_start_and_end_whether_it_waits_or_not() {
    use crate::classify::Class;
    use crate::effect::EffectKind;
    use crate::engine;
    use crate::spec::ToolSpec;
    use crate::task::Task;
    use std::sync::Arc;
    const READ: ToolSpec = ToolSpec::new("read_price", EffectKind::Read);
    let log = Arc::new(CompactMemoryJournal::new());
    let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
    let key = task.key(&READ, &"sku", None);
    // Answered at once: the start record waited in the engine and both went in together.
    let report =
        engine::run(&task, &READ, key, |_| async { Ok::<u64, Class>(4406) }, crate::probe::NoProbe).await;
    assert_eq!(report.outcome, Outcome::Ok);
    let said = |log: &CompactMemoryJournal| -> Vec<(Phase, u32)> {
        log.records().iter().map(|r| (r.phase, r.attempt)).collect()
    };
    assert_eq!(said(&log), [(Phase::Start, 1), (Phase::End, 1)]);
    // A read that waits: its start record is in the log while it runs, and not twice after.
    let seen = &log;
    let report = engine::run(
        &task,
        &READ,
        key,
        |_| async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok::<Vec<(Phase, u32)>, Class>(said(seen))
        },
        crate::probe::NoProbe,
    )
    .await;
    assert_eq!(report.value, Some(vec![(Phase::Start, 1), (Phase::End, 1), (Phase::Start, 2)]));
    assert_eq!(said(&log), [(Phase::Start, 1), (Phase::End, 1), (Phase::Start, 2), (Phase::End, 2)]);
}

#[test]
fn an_attempt_number_is_recognised_only_in_the_engines_form() {
    for (text, n, is) in [
        ("1", 1, true),
        ("4294967295", u32::MAX, true),
        ("0", 0, true),
        ("01", 1, false),
        ("00", 0, false),
        ("", 0, false),
        ("+1", 1, false),
        ("1a", 1, false),
        ("42949672950", 0, false),
        ("12", 21, false),
    ] {
        assert_eq!(is_decimal_of(text.as_bytes(), n), is, "{text:?} for {n}");
    }
    for (a, b, is) in [("", "", true), ("ord-7741", "ord-7741", true), ("ord-7741x", "ord-7741y", false)] {
        assert_eq!(eq(a.as_bytes(), b.as_bytes()), is, "{a:?} {b:?}");
        assert_eq!(strip(a, b).is_some(), is || b.is_empty(), "{a:?} {b:?}");
    }
    assert_eq!(strip("2026-12-01T03:00:00Z done", "2026-12-01T03:00:00Z"), Some(" done"));
    assert_eq!(strip("2026-12-01T03:00:00Z", "2026-12-01T03:00:01Z"), None);
}

/// Issue 22, item 6: the in-memory log is bounded. Past the bound the intents resolved longest ago go,
/// never one in doubt, and a claim held meanwhile stays held.
#[tokio::test(start_paused = true)]
async fn the_log_forgets_the_oldest_resolved_intents_past_its_bound_never_one_in_doubt() {
    let log = CompactMemoryJournal::with_max_intents(8);
    for n in 0..3 {
        log.append(start(&format!("open-{n}"), 1).as_record_ref(), Durability::Synced).await.unwrap();
    }
    let holder = Owner::new("w");
    // A resolved intent a call has claimed again (it is about to make its next attempt) stays.
    log.append(start("claimed", 1).as_record_ref(), Durability::Synced).await.unwrap();
    log.append(end("claimed", 1).as_record_ref(), Durability::Buffered).await.unwrap();
    log.claim(&key("claimed"), &holder, std::time::Duration::from_secs(60)).await.unwrap();
    for n in 0..40 {
        let target = format!("done-{n}");
        log.append(start(&target, 1).as_record_ref(), Durability::Synced).await.unwrap();
        log.append(end(&target, 1).as_record_ref(), Durability::Buffered).await.unwrap();
        assert!(log.intents() <= 8, "after {n}: {}", log.intents());
    }
    for n in 0..3 {
        assert!(
            CompactMemoryJournal::recall_now(&log, &key(&format!("open-{n}"))).is_some(),
            "an intent in doubt is kept"
        );
    }
    assert!(CompactMemoryJournal::recall_now(&log, &key("done-39")).is_some(), "the newest is kept");
    assert!(
        CompactMemoryJournal::recall_now(&log, &key("done-0")).is_none(),
        "the oldest resolved is forgotten"
    );
    assert_eq!(CompactMemoryJournal::unresolved_now(&log).len(), 3);
    let other = Owner::new("v");
    let busy = log.claim(&key("claimed"), &other, std::time::Duration::from_secs(1)).await.unwrap();
    assert!(matches!(busy, Claimed::Busy { .. }), "the claim survived the rebuild");
    assert_eq!(
        CompactMemoryJournal::recall_now(&log, &key("claimed")).map(|r| r.attempts),
        Some(1),
        "and its records"
    );

    // A log full of intents in doubt holds them all, past its bound.
    let log = CompactMemoryJournal::with_max_intents(8);
    for n in 0..20 {
        log.append(start(&format!("open-{n}"), 1).as_record_ref(), Durability::Synced).await.unwrap();
    }
    assert_eq!(log.intents(), 20);
}
