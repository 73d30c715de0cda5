//! One attempt loop for every shape of call, and what happens after it: the escalation handed over.

use super::*;

/// How an attempt fails, the same way for a single call and a bulk call of one item.
#[derive(Clone, Copy, Debug)]
enum Failure {
    Panics,
    Hangs,
    Refused,
    RateLimited,
}

async fn fail(how: Failure) -> Result<u64, Class> {
    match how {
        Failure::Panics => panic!("index out of bounds"),
        Failure::Hangs => std::future::pending().await,
        Failure::Refused => Err(Class::retryable("503 service unavailable")),
        Failure::RateLimited => {
            Err(Class::retryable("429 too many requests").retry_after(Duration::from_secs(2)))
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_single_call_and_a_bulk_call_run_the_same_attempt_loop() {
    // One loop for both shapes: the same attempts, at the same instants, failing with the same words.
    for kind in [EffectKind::Read, EffectKind::Send, EffectKind::Create] {
        for how in [Failure::Panics, Failure::Hangs, Failure::Refused, Failure::RateLimited] {
            let name = format!("{kind:?}-{how:?}");
            let spec = spec("sync_rows", kind).max_attempts(3).deadline_floor(Duration::from_secs(1));
            let single_task = Task::new(format!("single-{name}"), "agent", Duration::from_secs(20));
            let single_calls = Calls::new();
            let single = engine::run(
                &single_task,
                &spec,
                single_task.key(&spec, &"sheet-1", None),
                |_| {
                    single_calls.hit();
                    fail(how)
                },
                |_| async { Probe::<u64>::NotLanded },
            )
            .await;
            // The bulk call starts from the same budget, on the same clock, once the single one is over.
            let bulk_task = Task::new(format!("bulk-{name}"), "agent", Duration::from_secs(20));
            let bulk_calls = Calls::new();
            let bulk =
                engine::run_bulk(
                    &bulk_task,
                    &spec,
                    bulk_task.key(&spec, &"sheet-1", None),
                    vec!["row-1"],
                    |_, rows: Vec<&'static str>| {
                        bulk_calls.hit();
                        async move {
                            fail(how).await.map(|_| rows.iter().map(|r| Item::ok(*r)).collect::<Vec<_>>())
                        }
                    },
                    |_, rows: Vec<&'static str>| async move {
                        rows.iter()
                            .map(|r| Item { applied: Applied::No, ..Item::retryable(*r, "") })
                            .collect()
                    },
                )
                .await;
            let (single_at, bulk_at) = (single_calls.times(), bulk_calls.times());
            assert!(!single_at.is_empty(), "{name}: {}", single.message);
            assert_eq!(
                single_at, bulk_at,
                "{name}: attempts and their instants\n{}\n{}",
                single.message, bulk.message
            );
            let reason = bulk.items[0].reason.as_deref().unwrap_or_default();
            assert!(
                !reason.is_empty() && single.message.starts_with(reason),
                "{name}: the item says {reason:?}, the single call {:?}",
                single.message
            );
            assert_eq!(single.outcome, bulk.items[0].outcome, "{name}");
            assert_eq!(single.effect_applied, bulk.effect_applied, "{name}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_async_escalation_sink_gets_the_escalation_and_a_hung_one_is_left_behind() {
    let spec = spec("post_reminder", EffectKind::Send);
    let unresolved = |_: tool_contract::Call| async { Err::<u64, Class>(Class::unknown("connection reset")) };
    // A sink that takes a while (a ticketing API): the call waits for it.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = Task::new("escalate-async", "agent", Duration::from_secs(30)).escalate_to(
        move |escalation: tool_contract::task::Escalation| {
            let tx = tx.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                let _ = tx.send(escalation);
            }
        },
    );
    let key = task.key(&spec, &"user-7", None);
    let report =
        engine::run(&task, &spec, key, unresolved, |_| async { Probe::<u64>::Failed("down".into()) }).await;
    assert_eq!(report.outcome, Outcome::Unknown);
    assert!(report.message.contains("; escalated;"), "{}", report.message);
    assert!(report.message.ends_with("this same call again checks before it acts"), "{}", report.message);
    let escalation = rx.try_recv().expect("handed over before the call returned");
    assert_eq!((escalation.call.as_str(), escalation.key), ("post_reminder", key));

    // A sink that never answers: the report comes back after 5 s, saying it was not escalated.
    let task = Task::new("escalate-hung", "agent", Duration::from_secs(30))
        .escalate_to(|_: tool_contract::task::Escalation| std::future::pending::<()>());
    let key = task.key(&spec, &"user-8", None);
    let began = Instant::now();
    let report =
        engine::run(&task, &spec, key, unresolved, |_| async { Probe::<u64>::Failed("down".into()) }).await;
    assert_eq!(began.elapsed(), tool_contract::task::ESCALATION_WAIT);
    assert!(report.message.ends_with("did not take it within 5.0s: not escalated"), "{}", report.message);
}

/// Issue 23, item 5: a paged read whose page 4 hangs until the budget runs out reports pages 1-3 read
/// (their rows in `value`, their items `ok`), and only pages 4 and 5 retryable; the message counts
/// right, so a caller that retries what the items call missing reads no page twice.
#[tokio::test(start_paused = true)]
async fn a_paged_read_cut_by_the_budget_keeps_the_pages_it_read() {
    let spec = spec("list_orders", EffectKind::Read);
    let task = task(3);
    let key = task.key(&spec, &"customer-9", None);
    let reads = std::sync::Mutex::new(Vec::new());
    let report = engine::run_pages(&task, &spec, key, vec![1u32, 2, 3, 4, 5], |_call, page: &u32| {
        let page = *page;
        reads.lock().unwrap().push(page);
        async move {
            if page == 4 {
                std::future::pending::<()>().await;
            }
            Ok::<_, Class>(vec![format!("order-{page}a"), format!("order-{page}b")])
        }
    })
    .await;
    assert_eq!(report.outcome, Outcome::Retryable, "{}", report.message);
    assert_eq!(report.value.as_ref().map(Vec::len), Some(6), "{}", report.message);
    let done: Vec<_> = report.items.iter().map(|i| (i.id.as_str(), i.outcome)).collect();
    assert_eq!(
        done,
        [
            ("1", Outcome::Ok),
            ("2", Outcome::Ok),
            ("3", Outcome::Ok),
            ("4", Outcome::Retryable),
            ("5", Outcome::Retryable)
        ]
    );
    assert!(report.message.starts_with("list_orders: 3 of 5 pages read"), "{}", report.message);
    assert_eq!(*reads.lock().unwrap(), [1, 2, 3, 4], "no page read twice");
}

/// The same for bulk work cut mid-batch: what the attempt reported before the cut keeps its result.
#[tokio::test(start_paused = true)]
async fn bulk_work_cut_mid_batch_keeps_what_it_reported() {
    let spec = spec("index_docs", EffectKind::Read).max_attempts(2);
    let task = task(3);
    let key = task.key(&spec, &"shelf", None);
    let sent = std::sync::Mutex::new(Vec::new());
    let report = engine::run_bulk(
        &task,
        &spec,
        key,
        vec!["a".to_owned(), "b".to_owned(), "c".to_owned()],
        |call, docs: Vec<String>| {
            sent.lock().unwrap().push(docs.clone());
            async move {
                for doc in &docs {
                    if doc == "c" {
                        std::future::pending::<()>().await;
                    }
                    call.report_item(Item::ok(doc.clone()));
                }
                Ok::<_, Class>(docs.into_iter().map(Item::ok).collect())
            }
        },
        NoProbe,
    )
    .await;
    let done: Vec<_> = report.items.iter().map(|i| (i.id.as_str(), i.outcome)).collect();
    assert_eq!(
        done,
        [("a", Outcome::Ok), ("b", Outcome::Ok), ("c", Outcome::Retryable)],
        "{}",
        report.message
    );
    assert!(report.message.contains("2 of 3 items done"), "{}", report.message);
    assert_eq!(sent.lock().unwrap().len(), 1, "the budget held one attempt");
}

/// Issue 22, item 1: a bulk call whose attempts run out says so, as a single call does, and its reason
/// says which rule stopped it.
#[tokio::test(start_paused = true)]
async fn bulk_work_that_runs_out_of_attempts_says_it_gave_up() {
    let spec = spec("index_docs", EffectKind::Read).max_attempts(2);
    let task = task(30);
    let key = task.key(&spec, &"shelf", None);
    let report = engine::run_bulk(
        &task,
        &spec,
        key,
        vec!["a".to_owned(), "b".to_owned()],
        |_, docs: Vec<String>| async move {
            Ok::<_, Class>(docs.into_iter().map(|doc| Item::retryable(doc, "503 from the index")).collect())
        },
        NoProbe,
    )
    .await;
    assert_eq!(report.outcome, Outcome::Retryable, "{}", report.message);
    assert!(report.message.ends_with("gave up after 2 attempts"), "{}", report.message);
    assert_eq!(report.reason, tool_contract::Reason::GaveUp);
}

/// An item a side effect's attempt leaves to do but may have applied (the tool says `retryable` with
/// its effect not `no`, for the item or for the batch as a whole) is in doubt: it is not sent again
/// until the probe answers for it, as an item reported `unknown` is not.
#[tokio::test(start_paused = true)]
async fn bulk_never_resends_an_item_that_may_have_applied_before_its_probe_answers_for_it() {
    let item = |applied| Ok(vec![Item::ok("1"), Item { applied, ..Item::retryable("2", "reply cut") }]);
    let answers: [(&str, Result<Vec<Item>, Class>); 4] = [
        ("item, effect unknown", item(Applied::Unknown)),
        ("item, effect yes", item(Applied::Yes)),
        ("item, effect partial", item(Applied::Partial)),
        ("the batch, effect partial", Err(Class::retryable("reply cut").with_effect(Applied::Partial))),
    ];
    for (name, answer) in answers {
        let spec = spec("send_rows", EffectKind::Send);
        let task = task(30);
        let key = task.key(&spec, &"sheet", None);
        let (sent, probed) = (std::sync::Mutex::new(Vec::new()), std::sync::Mutex::new(Vec::new()));
        let report = engine::run_bulk(
            &task,
            &spec,
            key,
            vec![1u32, 2],
            |_, rows: Vec<u32>| {
                sent.lock().unwrap().push(rows.clone());
                let answer = answer.clone();
                async move { answer }
            },
            // The probe answers for no row.
            |_, rows: Vec<u32>| {
                probed.lock().unwrap().push(rows);
                async move { Vec::<Item>::new() }
            },
        )
        .await;
        assert_eq!(sent.lock().unwrap().len(), 1, "{name}: sent again with its probe silent");
        assert!(!probed.lock().unwrap().is_empty(), "{name}: never probed");
        assert_eq!(report.outcome, Outcome::Unknown, "{name}: {}", report.message);
    }
}

/// A batch that names one item twice is refused before anything is sent: each item's result, its
/// probe's verdict and its record are found by its id, and the second of the two would be left without
/// them, to be sent again after a restart.
#[tokio::test(start_paused = true)]
async fn a_batch_that_names_an_item_twice_is_refused_before_anything_is_sent() {
    let spec = spec("send_rows", EffectKind::Send);
    let task = task(30);
    let key = task.key(&spec, &"sheet", None);
    let sent = AtomicU32::new(0);
    let report = engine::run_bulk(
        &task,
        &spec,
        key,
        vec![1u32, 2, 1],
        |_, rows: Vec<u32>| {
            sent.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, Class>(rows.iter().map(|r| Item::ok(r.to_string())).collect()) }
        },
        NoProbe,
    )
    .await;
    assert_eq!(sent.load(Ordering::SeqCst), 0, "nothing is sent");
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Permanent, Applied::No));
    assert_eq!(report.reason, tool_contract::Reason::BadArguments);
    assert!(report.message.contains("two items are named `1`"), "{}", report.message);
    assert_eq!(report.items.len(), 3, "every item is listed: {:?}", report.items);
    assert!(report.items.iter().all(|item| item.outcome == Outcome::Permanent), "{:?}", report.items);
}
