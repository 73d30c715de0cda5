//! Calls that find an earlier run in the attempt log: replayed, probed first, resumed, or made to wait.

use super::*;

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
        sent_by: None,
        args: None,
        value: None,
        settled: None,
        approval: None,
    };
    journal.append(start.as_record_ref(), Durability::Synced).await.unwrap();
    for (verdict, calls_expected, final_attempt) in [(Probe::NotLanded, 1, 2), (Probe::Landed(7u64), 0, 1)] {
        let journal = Arc::new(MemoryJournal::new());
        journal.append(start.as_record_ref(), Durability::Synced).await.unwrap();
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

/// A start record of attempt `attempt` of `key`, stamped long ago, as a process killed mid-call leaves it.
pub(super) fn record(
    key: tool_contract::IntentKey,
    call: &str,
    attempt: u32,
) -> tool_contract::journal::Record {
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
        sent_by: None,
        args: None,
        value: None,
        settled: None,
        approval: None,
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

/// Run a batch of rows 1 and 2 of `kind` over a log whose last record is `last`, with a probe that
/// finds no row landed (none answered for when `probe_answers` is false): the rows sent, and the rows
/// probed, in order.
async fn batch_after(
    kind: EffectKind,
    last: impl FnOnce(tool_contract::IntentKey) -> tool_contract::journal::Record,
    probe_answers: bool,
) -> (Vec<Vec<u32>>, Vec<Vec<u32>>, tool_contract::Report<()>) {
    let spec = spec("send_rows", kind);
    let task = task(30);
    let key = task.key(&spec, &"sheet", None);
    let journal = Arc::new(MemoryJournal::from_records([last(key)]));
    let task = task.journal(journal).escalate_to(EscalationQueue::new());
    let (sent, probed) = (std::sync::Mutex::new(Vec::new()), std::sync::Mutex::new(Vec::new()));
    let report = engine::run_bulk(
        &task,
        &spec,
        key,
        vec![1u32, 2],
        |_, rows: Vec<u32>| {
            sent.lock().unwrap().push(rows.clone());
            async move { Ok::<_, Class>(rows.iter().map(|r| Item::ok(r.to_string())).collect()) }
        },
        |_, rows: Vec<u32>| {
            probed.lock().unwrap().push(rows.clone());
            let not_landed = |r: &u32| Item { applied: Applied::No, ..Item::retryable(r.to_string(), "") };
            async move { if probe_answers { rows.iter().map(not_landed).collect() } else { Vec::new() } }
        },
    )
    .await;
    (sent.into_inner().unwrap(), probed.into_inner().unwrap(), report)
}

#[tokio::test(start_paused = true)]
async fn a_batch_recorded_ok_without_its_items_is_probed_not_sent_again() {
    // The record says the batch was done, but its list is not in the log (torn, or written by another
    // version): what landed is not known item by item, so nothing is sent before the probe answers.
    let ok =
        |key| ended(record(key, "send_rows", 1), Outcome::Ok, Applied::Yes, Some(serde_json::json!("?")));
    let (sent, probed, _) = batch_after(EffectKind::Send, ok, false).await;
    assert_eq!(probed, [vec![1, 2]], "every row is probed");
    assert!(sent.is_empty(), "a probe that answers for no row leaves them in doubt: {sent:?}");
    let (sent, probed, report) = batch_after(EffectKind::Send, ok, true).await;
    assert_eq!((probed, sent), (vec![vec![1, 2]], vec![vec![1, 2]]), "sent again once found not landed");
    assert_eq!(report.outcome, Outcome::Ok);
}

#[tokio::test(start_paused = true)]
async fn a_recorded_item_that_may_have_landed_is_never_sent_before_the_probe_answers_for_it() {
    // Row 2 is recorded `retryable`, but not with its effect `no`: it may have landed.
    for applied in [Applied::Unknown, Applied::Yes, Applied::Partial] {
        let items = [Item::ok("1"), Item { applied, ..Item::retryable("2", "429") }];
        let partial = |key| {
            let items = serde_json::to_value(items.clone()).unwrap();
            ended(record(key, "send_rows", 1), Outcome::Retryable, Applied::Partial, Some(items))
        };
        let (sent, probed, report) = batch_after(EffectKind::Send, partial, false).await;
        assert_eq!(probed, [vec![2]], "{applied:?}: only row 2 is probed");
        assert!(sent.is_empty(), "{applied:?}: row 2 was sent again with its probe silent: {sent:?}");
        assert_eq!(report.items[1].outcome, Outcome::Unknown, "{applied:?}: {:?}", report.items);
        assert_eq!(report.outcome, Outcome::Unknown, "{applied:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_batch_refused_with_its_rows_open_starts_as_a_single_call_would() {
    // Refused with nothing applied, rows listed: a `send` starts afresh, a `money` batch's next attempt
    // is a second one, which needs the approver's yes (there is none here).
    let refused = |key| {
        let items = serde_json::to_value([Item::retryable("1", "429"), Item::retryable("2", "429")]).unwrap();
        ended(record(key, "send_rows", 1), Outcome::Retryable, Applied::No, Some(items))
    };
    let (sent, probed, report) = batch_after(EffectKind::Send, refused, true).await;
    assert_eq!((sent, probed), (vec![vec![1, 2]], vec![]), "a fresh start asks no probe");
    assert_eq!(report.outcome, Outcome::Ok);
    let (sent, _, report) = batch_after(EffectKind::Money, refused, true).await;
    assert!(sent.is_empty(), "no approver, no second attempt of money: {sent:?}");
    assert_eq!(report.reason, tool_contract::Reason::NoApprover, "{}", report.message);
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
    use tool_contract::unstable::{parse_rfc3339, rfc3339, wall_clock};
    let spec = spec("post_notice", EffectKind::Send);
    let task = task(30);
    let key = task.key(&spec, &"thread-9", None);
    let asked = |secs: u64| {
        let mut end = ended(record(key, "post_notice", 1), Outcome::Retryable, Applied::No, None);
        // On the clock the engine reads: the system's, moved with tokio's paused one.
        end.retry_at = Some(rfc3339(wall_clock() + Duration::from_secs(secs)));
        Arc::new(MemoryJournal::from_records([end]))
    };

    // The wait a stamp of `secs` from now asks for: its stamp has whole seconds, so it ends at the
    // second it names.
    let asked_wait = |secs: u64| {
        let now = wall_clock();
        parse_rfc3339(&rfc3339(now + Duration::from_secs(secs))).unwrap().duration_since(now).unwrap()
    };
    let calls = Calls::new();
    let expected = asked_wait(5);
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
    assert!(
        at.abs_diff(expected) < Duration::from_millis(1),
        "first attempt at {at:?}, asked for {expected:?}"
    );

    let calls = Calls::new();
    let expected = asked_wait(100);
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
    let whole_seconds = expected.as_secs() + u64::from(expected.subsec_nanos() > 0);
    assert_eq!(report.retry_after_s, Some(whole_seconds));
}

#[tokio::test(start_paused = true)]
async fn an_attempt_told_to_wait_logs_when_the_wait_ends() {
    let spec = spec("post_notice", EffectKind::Send).max_attempts(1);
    let journal = Arc::new(MemoryJournal::new());
    let task = task(30).journal(journal.clone());
    let before = tool_contract::unstable::wall_clock();
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
            tool_contract::unstable::parse_rfc3339(end.retry_at.as_deref().expect("retry_at on every end"))
                .expect("an RFC 3339 time");
        // 30 s after the attempt, on the paused clock, rounded up to the second the log can write.
        let due = (before + Duration::from_secs(30)).duration_since(std::time::UNIX_EPOCH).unwrap();
        let rounded = Duration::from_secs(due.as_secs() + u64::from(due.subsec_nanos() > 0));
        assert_eq!(at.duration_since(std::time::UNIX_EPOCH).unwrap(), rounded);
    }
}

/// One call of `spec`'s intent `key` with `budget_s` of budget on `journal`: its attempts answer
/// `answer` (each counted in `calls`), its probe says `verdict`.
async fn call_on(
    journal: &Arc<MemoryJournal>,
    budget_s: u64,
    spec: &ToolSpec,
    key: tool_contract::IntentKey,
    calls: &Calls,
    answer: Result<u64, Class>,
    verdict: Probe<u64>,
) -> tool_contract::Report<u64> {
    engine::run(
        &task(budget_s).journal(journal.clone()),
        spec,
        key,
        |_| {
            calls.hit();
            let answer = answer.clone();
            async move { answer }
        },
        |_| {
            let verdict = verdict.clone();
            async move { verdict }
        },
    )
    .await
}

/// Issue 23, item 1: a wait the service asked for binds every later attempt of the intent until it
/// passes, whoever writes the next record. Here a second call resumes the intent, probes, logs the
/// probe's verdict and stops (the wait is longer than its budget); the third call still waits.
#[tokio::test(start_paused = true)]
async fn a_wait_the_service_asked_for_outlives_the_records_written_after_it() {
    let spec = spec("post_notice", EffectKind::Send);
    let journal = Arc::new(MemoryJournal::new());
    let key = task(30).key(&spec, &"thread-9", None);
    let calls = Calls::new();
    // A 502 behind the gateway with `Retry-After: 20`; the probe fails: in doubt.
    let refused = Class::unknown("502 from the gateway").retry_after(Duration::from_secs(20));
    let down = Probe::Failed("the thread API is down".into());
    let first = call_on(&journal, 5, &spec, key, &calls, Err(refused), down).await;
    assert_eq!(first.outcome, Outcome::Unknown, "{}", first.message);
    // Another call resumes it, past the attempt's landing horizon (the 5 s budget it started with, and
    // the default 5 s): its probe finds nothing, and the wait is longer than its budget.
    tokio::time::sleep(Duration::from_secs(11)).await;
    let second = call_on(&journal, 5, &spec, key, &calls, Ok(1), Probe::NotLanded).await;
    assert_eq!((second.outcome, calls.count()), (Outcome::Retryable, 1), "{}", second.message);
    let last = journal.recall_now(&key).unwrap().last;
    assert!(last.probe.is_some() && last.retry_at.is_some(), "the probe's record keeps the wait: {last:?}");
    // The next call, with budget enough, sends only once the service's 20 s have passed.
    let third = call_on(&journal, 60, &spec, key, &calls, Ok(1), Probe::NotLanded).await;
    assert_eq!(third.outcome, Outcome::Ok, "{}", third.message);
    let sent = calls.times()[1];
    assert!(sent >= Duration::from_secs(20), "sent {sent:?} after the first attempt, asked to wait 20 s");
}

/// Issue 23, item 2: after a 503 that applied nothing, a probe that fails leaves the call as its
/// attempt ended, in the report and in the log alike: not in doubt, not escalated, and the next call
/// does not wait for the landing horizon for a request that never landed.
#[tokio::test(start_paused = true)]
async fn a_failed_probe_after_a_refusal_is_logged_as_the_report_says() {
    let spec = spec("post_notice", EffectKind::Send).horizon(Duration::from_secs(10));
    let journal = Arc::new(MemoryJournal::new());
    let key = task(30).key(&spec, &"thread-9", None);
    let calls = Calls::new();
    let first = call_on(
        &journal,
        30,
        &spec,
        key,
        &calls,
        Err(Class::retryable("503 from /notices")),
        Probe::<u64>::Failed("the thread API is down".into()),
    )
    .await;
    assert_eq!((first.outcome, first.effect_applied), (Outcome::Retryable, Applied::No), "{}", first.message);
    let last = journal.recall_now(&key).unwrap().last;
    assert_eq!(
        (last.outcome, last.effect_applied),
        (Some(Outcome::Retryable), Some(Applied::No)),
        "{last:?}"
    );
    assert!(journal.unresolved_now().is_empty(), "not an intent in doubt");
    let second = call_on(&journal, 30, &spec, key, &calls, Ok(1), Probe::NotLanded).await;
    assert_eq!(second.outcome, Outcome::Ok, "{}", second.message);
    assert_eq!(calls.times()[1], Duration::ZERO, "no landing horizon waited for a request that never landed");
}
