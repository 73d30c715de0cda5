//! Settlements honoured by the engine: a person's `landed` answers every later call with no attempt
//! and no probe; `not_landed` opens the intent for exactly one next attempt, after the approver for
//! `money`, without probing or waiting again once the attempt's landing horizon has passed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tool_contract::effect::EffectKind;
use tool_contract::journal::{Journal, Verdict};
use tool_contract::journal::{Owner, Phase};
use tool_contract::person::{Approval, ApprovalRequest, Settle, SettleError, settle};
use tool_contract::spec::ToolSpec;
use tool_contract::{Applied, Class, IntentKey, MemoryJournal, Outcome, Probe, Reason, Task, engine};

/// A send whose requests may stay in flight for a minute: a probe's "not landed" is trusted only after.
const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send).horizon(Duration::from_secs(60));
const REFUND: ToolSpec = ToolSpec::new("refund", EffectKind::Money);

/// Counts of what the service saw.
#[derive(Default)]
struct Seen {
    attempts: AtomicU32,
    probes: AtomicU32,
}

/// One call of `spec` through `task`: the attempt's reply is lost while `lose` (the effect may have
/// landed), and the probe cannot tell.
async fn call(task: &Task, spec: &ToolSpec, seen: &Seen, lose: bool) -> tool_contract::Report<u64> {
    let key = task.key(spec, &"thread-9", None);
    engine::run(
        task,
        spec,
        key,
        |_| {
            seen.attempts.fetch_add(1, Ordering::SeqCst);
            async move {
                if lose {
                    Err(Class::unknown("connection reset after the request was sent"))
                } else {
                    Ok(4411u64)
                }
            }
        },
        |_| {
            seen.probes.fetch_add(1, Ordering::SeqCst);
            async { Probe::<u64>::Failed("the thread's API is down".into()) }
        },
    )
    .await
}

/// How long after a call that started with `budget_s` a person must look for their "not landed" to
/// count: its attempt may land until its budget ran out (the log knows no sooner when its request
/// left), read from two stamps rounded down to the second (two seconds) written by a clock that may
/// stand a second apart ([`tool_contract::rules::CLOCK_SKEW`]), plus the tool's landing horizon; and
/// when the person looked is read as a second earlier still, from a stamp rounded down (two seconds).
fn could_land_until(spec: &ToolSpec, budget_s: u64) -> Duration {
    Duration::from_secs(budget_s + 2 + 1 + 2) + spec.get_horizon()
}

/// A person's "not landed" seen while the attempt could still land is looked at again: the next call
/// waits out the horizon and probes, and with the probe down it reports `unknown`, sending nothing.
#[tokio::test(start_paused = true)]
async fn not_landed_seen_while_the_attempt_could_still_land_is_probed_again() {
    let (log, task, key) = in_doubt(&SEND);
    let seen = Seen::default();
    call(&task, &SEND, &seen, true).await;
    let (attempts, probes) = (seen.attempts.load(Ordering::SeqCst), seen.probes.load(Ordering::SeqCst));
    settle(&*log, &key, 1, &Settle::new(Verdict::NotLanded, "alice", "not in thread-9")).await.unwrap();
    let report = call(&task, &SEND, &seen, false).await;
    assert_eq!(
        (report.outcome, report.effect_applied),
        (Outcome::Unknown, Applied::Unknown),
        "{}",
        report.message
    );
    assert!(report.message.contains("seen before attempt"), "{}", report.message);
    assert_eq!(seen.attempts.load(Ordering::SeqCst), attempts, "nothing sent on a word seen too early");
    assert_eq!(seen.probes.load(Ordering::SeqCst), probes + 1, "looked at again");
}

fn in_doubt(spec: &ToolSpec) -> (Arc<MemoryJournal>, Task, IntentKey) {
    let log = Arc::new(MemoryJournal::new());
    let task = Task::new("ord-7741", "agent", Duration::from_secs(300)).journal(log.clone());
    let key = task.key(spec, &"thread-9", None);
    (log, task, key)
}

#[tokio::test(start_paused = true)]
async fn landed_answers_every_later_call_with_no_attempt_and_no_probe() {
    let (log, task, key) = in_doubt(&SEND);
    let seen = Seen::default();
    let first = call(&task, &SEND, &seen, true).await;
    assert_eq!((first.outcome, first.reason), (Outcome::Unknown, Reason::ProbeFailed), "{}", first.message);
    let (attempts, probes) = (seen.attempts.load(Ordering::SeqCst), seen.probes.load(Ordering::SeqCst));

    let found = Settle::new(Verdict::Landed, "alice", "notice 4411 is in thread-9 at 05:12").value(4411);
    settle(&*log, &key, 1, &found).await.unwrap();
    for _ in 0..3 {
        let report = call(&task, &SEND, &seen, true).await;
        assert_eq!(
            (report.outcome, report.effect_applied, report.value, report.reason),
            (Outcome::Ok, Applied::Yes, Some(4411), Reason::Settled),
            "{}",
            report.message
        );
        assert!(report.message.contains("settled landed by alice via operator"), "{}", report.message);
        assert!(report.message.contains("notice 4411 is in thread-9"), "{}", report.message);
        assert_eq!(report.attempt_id, first.attempt_id, "the report speaks for the attempt settled");
    }
    assert_eq!(seen.attempts.load(Ordering::SeqCst), attempts, "no attempt after the settlement");
    assert_eq!(seen.probes.load(Ordering::SeqCst), probes, "no probe after the settlement");
    assert!(log.unresolved_now().is_empty(), "a settled intent is not in doubt");
}

#[tokio::test(start_paused = true)]
async fn landed_with_no_value_or_a_value_of_another_type_answers_ok_with_none() {
    for (value, says) in
        [(None, None), (Some(serde_json::json!("not a number")), Some("not of the tool's value type"))]
    {
        let (log, task, key) = in_doubt(&SEND);
        let seen = Seen::default();
        call(&task, &SEND, &seen, true).await;
        let found = Settle::new(Verdict::Landed, "alice", "seen in the thread").json_value(value);
        settle(&*log, &key, 1, &found).await.unwrap();
        let report = call(&task, &SEND, &seen, true).await;
        assert_eq!((report.outcome, report.effect_applied, report.value), (Outcome::Ok, Applied::Yes, None));
        if let Some(says) = says {
            assert!(report.message.contains(says), "{}", report.message);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn not_landed_makes_exactly_one_next_attempt_without_probe_or_settle_wait() {
    let (log, task, key) = in_doubt(&SEND);
    let seen = Seen::default();
    let first = call(&task, &SEND, &seen, true).await;
    assert_eq!(first.outcome, Outcome::Unknown, "{}", first.message);
    let (attempts, probes) = (seen.attempts.load(Ordering::SeqCst), seen.probes.load(Ordering::SeqCst));
    assert_eq!(attempts, 1);

    // The person looks once the attempt can no longer land (its start, plus the budget it started with,
    // plus its landing horizon): their "not landed" counts at once, as a probe's would.
    tokio::time::sleep(could_land_until(&SEND, 300)).await;
    settle(&*log, &key, 1, &Settle::new(Verdict::NotLanded, "alice", "not in thread-9")).await.unwrap();
    // The next call, in a new process: the first task's budget is spent.
    let task = Task::new("ord-7741", "agent", Duration::from_secs(300)).journal(log.clone());
    let began = Instant::now();
    let report = call(&task, &SEND, &seen, false).await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(4411)), "{}", report.message);
    assert!(report.attempt_id.ends_with("-a2"), "numbered after the highest: {}", report.attempt_id);
    assert_eq!(seen.attempts.load(Ordering::SeqCst), attempts + 1, "exactly one new attempt");
    assert_eq!(seen.probes.load(Ordering::SeqCst), probes, "the settlement stands for the probe");
    assert!(began.elapsed() < Duration::from_secs(1), "no landing horizon waited: {:?}", began.elapsed());
    // And the intent is done: a later call replays, with no attempt.
    let again = call(&task, &SEND, &seen, false).await;
    assert_eq!((again.outcome, again.reason), (Outcome::Ok, Reason::Replayed));
    assert_eq!(seen.attempts.load(Ordering::SeqCst), attempts + 1);
}

/// An approver that answers as told and counts the requests.
fn approver(answer: Approval, asked: Arc<AtomicU32>) -> impl tool_contract::person::Approve + 'static {
    move |_request: ApprovalRequest| {
        asked.fetch_add(1, Ordering::SeqCst);
        let answer = answer.clone();
        async move { answer }
    }
}

#[tokio::test(start_paused = true)]
async fn not_landed_money_still_asks_the_approver_first() {
    for (answer, attempts_after) in [(Approval::Denied("not today".into()), 0), (Approval::Approved, 1)] {
        let asked = Arc::new(AtomicU32::new(0));
        let log = Arc::new(MemoryJournal::new());
        let task = Task::new("ord-7741", "agent", Duration::from_secs(300))
            .journal(log.clone())
            .approver(approver(answer.clone(), asked.clone()));
        let key = task.key(&REFUND, &"thread-9", None);
        let seen = Seen::default();
        let first = call(&task, &REFUND, &seen, true).await;
        assert_eq!(first.outcome, Outcome::Unknown, "{}", first.message);
        let before = seen.attempts.load(Ordering::SeqCst);
        let asked_before = asked.load(Ordering::SeqCst);
        // The person looks once the attempt can no longer land (a person's word counts no sooner).
        tokio::time::sleep(could_land_until(&REFUND, 300)).await;
        settle(&*log, &key, 1, &Settle::new(Verdict::NotLanded, "alice", "no refund on the card"))
            .await
            .unwrap();
        let task = Task::new("ord-7741", "agent", Duration::from_secs(300))
            .journal(log.clone())
            .approver(approver(answer.clone(), asked.clone()));
        let report = call(&task, &REFUND, &seen, false).await;
        assert_eq!(asked.load(Ordering::SeqCst), asked_before + 1, "{answer:?}: the approver is asked once");
        assert_eq!(
            seen.attempts.load(Ordering::SeqCst) - before,
            attempts_after,
            "{answer:?}: {}",
            report.message
        );
        // The approval is journaled with the one attempt it allows: on that attempt's start record.
        let approved: Vec<_> = log
            .records()
            .into_iter()
            .filter(|r| {
                r.phase == Phase::Start && r.message.as_deref().is_some_and(|m| m.starts_with("approved by"))
            })
            .map(|r| (r.attempt, r.message.unwrap_or_default()))
            .collect();
        match answer {
            Approval::Approved => {
                assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
                assert_eq!(approved, [(2, "approved by the task's approver before attempt 2".to_owned())]);
            }
            _ => {
                assert_eq!(
                    (report.reason, report.effect_applied),
                    (Reason::Denied, Applied::No),
                    "{}",
                    report.message
                );
                assert!(approved.is_empty(), "{approved:?}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_intent_a_call_holds_is_not_settled() {
    let (log, task, key) = in_doubt(&SEND);
    call(&task, &SEND, &Seen::default(), true).await;
    // A worker holds the intent (an attempt in flight).
    let worker = Owner::new("worker-7");
    log.claim(&key, &worker, Duration::from_secs(120)).await.unwrap();
    let began = Instant::now();
    match settle(&*log, &key, 1, &Settle::new(Verdict::Landed, "alice", "seen")).await {
        Err(e @ SettleError::Busy { .. }) => assert!(e.to_string().contains("worker-7"), "{e}"),
        other => panic!("settled an intent a call holds: {other:?}"),
    }
    assert!(began.elapsed() <= Duration::from_secs(6), "it waits a few seconds, not the lease");
    log.release(&key, &worker);
    settle(&*log, &key, 1, &Settle::new(Verdict::Landed, "alice", "seen")).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_settlement_without_evidence_or_with_too_much_is_refused_and_nothing_is_written() {
    let (log, task, key) = in_doubt(&SEND);
    call(&task, &SEND, &Seen::default(), true).await;
    let too_long = "x".repeat(tool_contract::journal::MAX_EVIDENCE_BYTES + 1);
    let bad = [
        (Settle::new(Verdict::Landed, "alice", "  "), "evidence"),
        (Settle::new(Verdict::Landed, "alice", too_long), "at most 1024"),
        (Settle::new(Verdict::Landed, "", "seen"), "who settled it"),
        (Settle::new(Verdict::NotLanded, "alice", "not seen").value(7), "no value"),
    ];
    for (request, says) in bad {
        match settle(&*log, &key, 1, &request).await {
            Err(e @ SettleError::Invalid(_)) => assert!(e.to_string().contains(says), "{e}"),
            other => panic!("{request:?} was not refused: {other:?}"),
        }
    }
    let recall = log.recall_now(&key).unwrap();
    assert_ne!(recall.last.phase, Phase::Settled, "nothing was written");
    assert!(recall.is_unresolved());
}

/// A person who answers as scripted: settles an intent in doubt, and approves.
struct Person {
    found: Option<Result<Verdict, String>>,
    approves: bool,
    asked: AtomicU32,
    approvals: AtomicU32,
}

impl Person {
    fn new(found: Option<Result<Verdict, String>>, approves: bool) -> Person {
        Person { found, approves, asked: AtomicU32::new(0), approvals: AtomicU32::new(0) }
    }
}

/// The task's approver: the person, shared with the test.
struct Asks(Arc<Person>);

impl tool_contract::person::Approve for Asks {
    fn approve<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> tool_contract::journal::BoxFuture<'a, Approval> {
        self.0.approvals.fetch_add(1, Ordering::SeqCst);
        let answer = if self.0.approves { Approval::Approved } else { Approval::Denied("no".into()) };
        Box::pin(async move { answer })
    }

    fn reach(&self, _asks: tool_contract::journal::Asks, _attempt: u32) -> Result<(), Option<String>> {
        // A person who is never asked: nobody, and nothing is recorded.
        if self.0.found.is_some() { Ok(()) } else { Err(None) }
    }

    fn settle<'a>(
        &'a self,
        question: &'a tool_contract::person::InDoubt,
    ) -> tool_contract::journal::BoxFuture<'a, tool_contract::person::Found> {
        use tool_contract::person::Found;
        self.0.asked.fetch_add(1, Ordering::SeqCst);
        let answer = match self.0.found.clone() {
            Some(Ok(verdict)) => {
                let settle = Settle::new(verdict, &question.actor, format!("looked at {}", question.call))
                    .via(tool_contract::journal::Via::Client);
                Found::Settled(if verdict == Verdict::Landed { settle.value(4411) } else { settle })
            }
            Some(Err(why)) => Found::CantTell(why),
            None => Found::Unanswered("nobody to ask".into()),
        };
        Box::pin(async move { answer })
    }
}

/// A call that left `spec`'s intent in doubt (the person is not asked then: the call made an attempt),
/// then the next call, whose probe still fails: its report and what the person and the service saw.
async fn next_call_asks(
    spec: &ToolSpec,
    person: Person,
) -> (tool_contract::Report<u64>, Arc<Person>, Arc<MemoryJournal>, u32) {
    let person = Arc::new(person);
    let log = Arc::new(MemoryJournal::new());
    let task = Task::new("ord-7741", "agent:desk", Duration::from_secs(300))
        .journal(log.clone())
        .approver(Asks(person.clone()));
    let seen = Seen::default();
    let first = call(&task, spec, &seen, true).await;
    assert_eq!(first.outcome, Outcome::Unknown, "{}", first.message);
    assert_eq!(person.asked.load(Ordering::SeqCst), 0, "the call that made the attempt does not ask");
    let before = seen.attempts.load(Ordering::SeqCst);
    // The next call comes once the attempt's landing horizon has passed: a person is asked no sooner,
    // so that their "not landed" counts.
    tokio::time::sleep(spec.get_horizon()).await;
    let report = call(&task, spec, &seen, false).await;
    (report, person, log, seen.attempts.load(Ordering::SeqCst) - before)
}

#[tokio::test(start_paused = true)]
async fn the_next_call_asks_the_person_and_honours_landed() {
    let (report, person, log, attempts) =
        next_call_asks(&SEND, Person::new(Some(Ok(Verdict::Landed)), true)).await;
    assert_eq!(
        (report.outcome, report.value, report.reason),
        (Outcome::Ok, Some(4411), Reason::Settled),
        "{}",
        report.message
    );
    assert_eq!((person.asked.load(Ordering::SeqCst), attempts), (1, 0));
    assert!(report.message.contains("settled landed by agent:desk via client"), "{}", report.message);
    let recall = log.recall_now(&report.idempotency_key).unwrap();
    assert_eq!(recall.settlement().map(|s| s.via), Some(tool_contract::journal::Via::Client));
}

#[tokio::test(start_paused = true)]
async fn the_next_call_asks_the_person_and_after_not_landed_makes_one_attempt() {
    let (report, person, _, attempts) =
        next_call_asks(&SEND, Person::new(Some(Ok(Verdict::NotLanded)), true)).await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(4411)), "{}", report.message);
    assert_eq!((person.asked.load(Ordering::SeqCst), attempts), (1, 1));
    assert!(report.attempt_id.ends_with("-a2"), "{}", report.attempt_id);
    // Money: the approver still says yes or no first.
    for (approves, expected) in [(true, 1), (false, 0)] {
        let (report, person, _, attempts) =
            next_call_asks(&REFUND, Person::new(Some(Ok(Verdict::NotLanded)), approves)).await;
        assert_eq!((person.approvals.load(Ordering::SeqCst), attempts), (1, expected), "{}", report.message);
    }
}

#[tokio::test(start_paused = true)]
async fn a_person_who_cannot_tell_leaves_it_unknown_and_says_so() {
    let (report, person, log, attempts) =
        next_call_asks(&SEND, Person::new(Some(Err("the thread is not loading".into())), true)).await;
    assert_eq!((report.outcome, attempts, person.asked.load(Ordering::SeqCst)), (Outcome::Unknown, 0, 1));
    assert!(report.message.contains("could not tell: the thread is not loading"), "{}", report.message);
    assert!(log.recall_now(&report.idempotency_key).unwrap().is_unresolved());
    // An approver that asks nobody (the default) changes nothing.
    let (report, _, _, attempts) = next_call_asks(&SEND, Person::new(None, true)).await;
    assert_eq!((report.outcome, report.reason, attempts), (Outcome::Unknown, Reason::ProbeFailed, 0));
}

#[tokio::test(start_paused = true)]
async fn money_asks_the_approver_before_a_second_attempt_in_a_later_call_too() {
    let asked = Arc::new(AtomicU32::new(0));
    let log = Arc::new(MemoryJournal::new());
    let task = Task::new("ord-7741", "agent", Duration::from_secs(300))
        .journal(log.clone())
        .approver(approver(Approval::Denied("ask me tomorrow".into()), asked.clone()));
    let key = task.key(&REFUND, &"thread-9", None);
    let attempts = AtomicU32::new(0);
    let refund = || {
        engine::run(
            &task,
            &REFUND,
            key,
            |_| {
                attempts.fetch_add(1, Ordering::SeqCst);
                async { Err::<u64, _>(Class::retryable("503 from the bank")) }
            },
            |_| async { Probe::<u64>::NotLanded },
        )
    };
    let first = refund().await;
    assert_eq!(
        (first.reason, attempts.load(Ordering::SeqCst), asked.load(Ordering::SeqCst)),
        (Reason::Denied, 1, 1)
    );
    // The next call of the intent: attempt 2 would be a second attempt, so the approver is asked again.
    let second = refund().await;
    assert_eq!(
        (second.reason, attempts.load(Ordering::SeqCst), asked.load(Ordering::SeqCst)),
        (Reason::Denied, 1, 2)
    );
}

/// A batch sent whole whose answer was lost (`lose`), or answered item by item; the probe cannot tell.
const WRITE: ToolSpec = ToolSpec::new("write_rows", EffectKind::Send);

async fn batch(task: &Task, attempts: &AtomicU32, lose: bool) -> tool_contract::Report<()> {
    let key = task.key(&WRITE, &"sheet-1", None);
    let rows = vec!["row-1".to_owned(), "row-2".to_owned()];
    engine::run_bulk(
        task,
        &WRITE,
        key,
        rows,
        |_, rows: Vec<String>| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async move {
                if lose {
                    Err(Class::unknown("connection reset after the batch was sent"))
                } else {
                    Ok(rows.into_iter().map(tool_contract::Item::ok).collect())
                }
            }
        },
        |_, rows: Vec<String>| async move {
            rows.into_iter().map(|r| tool_contract::Item::unknown(r, "the sheet is not loading")).collect()
        },
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn a_settled_batch_is_done_whole_or_open_whole() {
    for (verdict, attempts_after) in [(Verdict::Landed, 0), (Verdict::NotLanded, 1)] {
        let log = Arc::new(MemoryJournal::new());
        let task = Task::new("ord-7741", "agent", Duration::from_secs(300)).journal(log.clone());
        let attempts = AtomicU32::new(0);
        let first = batch(&task, &attempts, true).await;
        assert_eq!(first.outcome, Outcome::Unknown, "{}", first.message);
        let before = attempts.load(Ordering::SeqCst);
        // The person looks once the batch could no longer land: a `not_landed` counts no sooner (a batch's
        // as a single call's: `a_batch_settled_not_landed_too_early_waits_for_its_horizon`).
        tokio::time::sleep(could_land_until(&WRITE, 300)).await;
        settle(
            &*log,
            &first.idempotency_key,
            1,
            &Settle::new(verdict, "alice", "both rows are in the sheet"),
        )
        .await
        .unwrap();
        // The next call, with a budget of its own: the first task's is spent.
        let task = Task::new("ord-7741", "agent", Duration::from_secs(300)).journal(log.clone());
        let report = batch(&task, &attempts, false).await;
        assert_eq!(report.outcome, Outcome::Ok, "{verdict:?}: {}", report.message);
        assert_eq!(report.items.len(), 2, "{verdict:?}");
        assert!(report.items.iter().all(|i| i.outcome == Outcome::Ok), "{verdict:?}: {:?}", report.items);
        assert_eq!(
            attempts.load(Ordering::SeqCst) - before,
            attempts_after,
            "{verdict:?}: {}",
            report.message
        );
        if verdict == Verdict::Landed {
            assert_eq!(report.reason, Reason::Settled, "{}", report.message);
            assert!(report.message.contains("settled landed by alice"), "{}", report.message);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_approver_that_does_not_answer_within_the_budget_has_not_approved() {
    let log = Arc::new(MemoryJournal::new());
    let task = Task::new("ord-7741", "agent", Duration::from_secs(20))
        .journal(log.clone())
        .approver(|_request: ApprovalRequest| std::future::pending::<Approval>());
    let seen = Seen::default();
    let first = call(&task, &REFUND, &seen, true).await;
    assert_eq!(first.outcome, Outcome::Unknown);
    // The next call: the settlement stands for the probe, and the approver never answers.
    let key = task.key(&REFUND, &"thread-9", None);
    tokio::time::sleep(could_land_until(&REFUND, 20)).await;
    settle(&*log, &key, 1, &Settle::new(Verdict::NotLanded, "alice", "no refund on the card")).await.unwrap();
    let task = Task::new("ord-7741", "agent", Duration::from_secs(20))
        .journal(log.clone())
        .approver(|_request: ApprovalRequest| std::future::pending::<Approval>());
    let began = Instant::now();
    let report = call(&task, &REFUND, &seen, false).await;
    assert_eq!(
        (report.reason, seen.attempts.load(Ordering::SeqCst)),
        (Reason::Denied, 1),
        "{}",
        report.message
    );
    assert!(report.message.contains("the task's approver did not answer in time"), "{}", report.message);
    assert!(began.elapsed() <= Duration::from_secs(21), "bounded by the budget: {:?}", began.elapsed());
}

#[tokio::test(start_paused = true)]
async fn an_intent_whose_last_end_left_its_effect_unknown_can_be_settled() {
    use tool_contract::journal::{Durability, Record};
    let log = MemoryJournal::new();
    let key = tool_contract::key::Intent::new("ord-7741", "agent", "refund", "ord-1").key();
    let owner = Owner::new("worker-1.1");
    let record = |phase, outcome: Option<Outcome>, effect: Option<Applied>| Record {
        phase,
        task: "ord-7741".into(),
        call: "refund".into(),
        intent_key: key,
        attempt: 1,
        attempt_id: "ord-7741-a1".into(),
        started: "2026-12-02T01:00:00Z".into(),
        budget_left_s: 30,
        outcome,
        effect_applied: effect,
        probe: None,
        message: outcome.map(|o| format!("ended {o}")),
        retry_at: None,
        sent_by: None,
        args: None,
        value: None,
        settled: None,
        approval: None,
    };
    log.claim(&key, &owner, Duration::from_secs(30)).await.unwrap();
    log.start(&owner, record(Phase::Start, None, None).as_record_ref(), Durability::Synced).await.unwrap();
    // Refused after it may have landed: retryable, the call's effect unknown.
    let end = record(Phase::End, Some(Outcome::Retryable), Some(Applied::Unknown));
    log.end(&owner, end.as_record_ref(), Durability::Buffered).await.unwrap();
    log.release(&key, &owner);
    let written = settle(&log, &key, 1, &Settle::new(Verdict::Landed, "alice", "on the statement")).await;
    assert!(written.is_ok(), "{written:?}");
}

/// A `money` batch: each attempt is refused whole (`503`, nothing paid) while `refuse`, else paid
/// item by item; the probe finds nothing paid.
async fn pay_batch(task: &Task, attempts: &AtomicU32, refuse: bool, lose: bool) -> tool_contract::Report<()> {
    const PAY: ToolSpec = ToolSpec::new("pay_invoices", EffectKind::Money);
    let key = task.key(&PAY, &"run-1", None);
    let invoices = vec!["inv-1".to_owned(), "inv-2".to_owned()];
    engine::run_bulk(
        task,
        &PAY,
        key,
        invoices,
        |_, invoices: Vec<String>| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async move {
                if lose {
                    Err(Class::unknown("connection reset after the batch was sent"))
                } else if refuse {
                    Err(Class::retryable("503 from the bank"))
                } else {
                    Ok(invoices.into_iter().map(tool_contract::Item::ok).collect())
                }
            }
        },
        move |_, invoices: Vec<String>| async move {
            invoices
                .into_iter()
                .map(|i| {
                    if lose {
                        tool_contract::Item::unknown(i, "the ledger is not loading")
                    } else {
                        tool_contract::Item::retryable(i, "not paid")
                    }
                })
                .collect()
        },
    )
    .await
}

/// A `money` batch's next attempt is a second attempt in whichever call it comes: after a batch
/// refused whole in an earlier call, and after a person settled a lost batch `not_landed`, the next
/// call asks the approver before it sends anything, and sends nothing on a no.
#[tokio::test(start_paused = true)]
async fn a_money_batch_asks_the_approver_before_its_second_attempt_in_a_later_call() {
    for settled in [false, true] {
        let asked = Arc::new(AtomicU32::new(0));
        let log = Arc::new(MemoryJournal::new());
        let task = Task::new("ord-7741", "agent", Duration::from_secs(300))
            .journal(log.clone())
            .approver(approver(Approval::Denied("ask me tomorrow".into()), asked.clone()));
        let attempts = AtomicU32::new(0);
        let first = pay_batch(&task, &attempts, !settled, settled).await;
        if settled {
            assert_eq!(first.outcome, Outcome::Unknown, "{}", first.message);
            let nothing = Settle::new(Verdict::NotLanded, "alice", "the ledger shows neither invoice paid");
            settle(&*log, &first.idempotency_key, 1, &nothing).await.unwrap();
        }
        let (made, asked_first) = (attempts.load(Ordering::SeqCst), asked.load(Ordering::SeqCst));
        assert_eq!(made, 1, "settled {settled}: {}", first.message);
        let next = pay_batch(&task, &attempts, false, false).await;
        assert_eq!(next.reason, Reason::Denied, "settled {settled}: {}", next.message);
        assert_eq!(attempts.load(Ordering::SeqCst), 1, "settled {settled}: nothing sent on a no");
        assert_eq!(
            asked.load(Ordering::SeqCst),
            asked_first + 1,
            "settled {settled}: the approver was asked"
        );
        // With a yes, the batch is paid once.
        let yes = Task::new("ord-7741", "agent", Duration::from_secs(300))
            .journal(log.clone())
            .approver(approver(Approval::Approved, asked.clone()));
        let paid = pay_batch(&yes, &attempts, false, false).await;
        assert_eq!((paid.outcome, attempts.load(Ordering::SeqCst)), (Outcome::Ok, 2), "{}", paid.message);
    }
}
