use super::*;
use crate::journal::ApprovalNote;
use crate::journal::word::question::Question;
use crate::journal::{Asks, Durability, Journal, MAX_WHY_BYTES, MemoryJournal, Phase};
use crate::person::{ApprovalError, Decision, answer_approval};
use crate::report::{Applied, Outcome};

fn request(next_attempt: u32) -> ApprovalRequest {
    ApprovalRequest::new(
        "t",
        "refund",
        crate::key::Intent::new("t", "a", "refund", "order-9").key(),
        next_attempt,
        "503",
        Duration::from_secs(60),
    )
}

/// A log holding attempt 1 of the intent, ended `retryable` with nothing paid.
async fn after_attempt_1(log: &dyn Journal) -> Record {
    let key = request(2).key;
    let record = Record {
        phase: Phase::End,
        task: "t".into(),
        call: "refund".into(),
        intent_key: key,
        attempt: 1,
        attempt_id: "t-a1".into(),
        started: "2026-12-01T00:00:00Z".into(),
        budget_left_s: 60,
        outcome: Some(Outcome::Retryable),
        effect_applied: Some(Applied::No),
        probe: None,
        message: Some("503".into()),
        retry_at: None,
        sent_by: None,
        args: None,
        value: None,
        settled: None,
        approval: None,
    };
    log.append(record.as_record_ref(), Durability::Synced).await.unwrap();
    record
}

/// The engine's question about the attempt after `last`, id `id`, open for `open`: recorded in `log`.
async fn asked(log: &dyn Approvals, last: &Record, id: &str, open: Duration) -> Record {
    let arguments = crate::call::Arguments::default();
    let question = Question {
        about: last.clone(),
        asks: Asks::Approval,
        id: id.to_owned(),
        by: "an operator (the console)".into(),
        why: "503".into(),
        open,
        asked_in: "the attempt log (its console, or its request directory)".into(),
        arguments: &arguments,
    }
    .record();
    assert!(log.approval_step(question.as_record_ref()).await.unwrap());
    question
}

/// The approver waits for the answer to its own question: an answer to another question (an earlier
/// one, answered by someone) answers nothing here, and nobody answering is `unanswered`.
#[tokio::test(start_paused = true)]
async fn the_approver_takes_only_the_answer_to_its_own_question() {
    let log = Arc::new(MemoryJournal::new());
    let last = after_attempt_1(&*log).await;
    let approver = LogApprover::new(log.clone()).wait(Duration::from_secs(10));
    asked(&*log, &last, "q-earlier", Duration::from_secs(10)).await;
    answer_approval(&*log, &last.intent_key, 2, &Decision::approve("alice", "fine")).await.unwrap();
    let mut request = request(2);
    request.question = "q-this-one".into();
    match approver.approve(&request).await {
        Approval::Unanswered(why) => assert!(why.contains("nobody answered within"), "{why}"),
        other => panic!("another question's yes approved this one: {other:?}"),
    }
    // Its own question, answered: the answer it brings is the one recorded.
    asked(&*log, &last, "q-this-one", Duration::from_secs(10)).await;
    let asking = tokio::spawn({
        let request = request.clone();
        async move { approver.approve(&request).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    answer_approval(&*log, &last.intent_key, 2, &Decision::deny("bob", "refunded by hand")).await.unwrap();
    assert_eq!(asking.await.unwrap(), Approval::Denied("bob said no: refunded by hand".into()));
}

/// An answer is bound to what the person examined, by the rule settlements follow: once another
/// attempt has started, an answer about the attempt before it is refused, naming the newer one.
#[tokio::test(start_paused = true)]
async fn an_answer_after_another_attempt_started_is_refused_naming_it() {
    let log = Arc::new(MemoryJournal::new());
    let last = after_attempt_1(&*log).await;
    let key = last.intent_key;
    let question = asked(&*log, &last, "q-1", Duration::from_secs(600)).await;
    let started = Record {
        phase: Phase::Start,
        attempt: 2,
        attempt_id: "t-a2".into(),
        outcome: None,
        effect_applied: None,
        message: None,
        ..question.clone()
    };
    let started = Record { approval: None, ..started };
    log.append(started.as_record_ref(), Durability::Synced).await.unwrap();
    match answer_approval(&*log, &key, 2, &Decision::approve("alice", "fine")).await {
        Err(e @ ApprovalError::NotAsked { .. }) => {
            assert!(e.to_string().contains("attempt 2 (t-a2) has started since"), "{e}");
            assert!(e.to_string().contains("never ended"), "{e}");
        }
        other => panic!("answered about attempt 2 after it started: {other:?}"),
    }
    assert_eq!(log.approval(&key).await.unwrap().unwrap().approval.unwrap().step, Step::Asked);
}

/// An answer given through the log names the question it answers and where it was asked: a second
/// answer to it, whatever it says, is refused naming the first.
#[tokio::test(start_paused = true)]
async fn a_question_answered_through_the_log_is_answered_once() {
    let log = Arc::new(MemoryJournal::new());
    let last = after_attempt_1(&*log).await;
    asked(&*log, &last, "q-once", Duration::from_secs(600)).await;
    let no =
        answer_approval(&*log, &last.intent_key, 2, &Decision::deny("alice", "not today")).await.unwrap();
    let note = no.approval.as_ref().unwrap();
    assert_eq!((note.question.as_deref(), note.step), (Some("q-once"), Step::Denied));
    assert_eq!(note.asked_in.as_deref(), Some("the attempt log (its console, or its request directory)"));
    match answer_approval(&*log, &last.intent_key, 2, &Decision::approve("mallory", "yes")).await {
        Err(ApprovalError::AlreadyAnswered { record }) => assert_eq!(*record, no),
        other => panic!("a second answer was taken: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_absurd_wait_is_a_century_and_no_panic() {
    let log = Arc::new(MemoryJournal::new());
    let last = after_attempt_1(&*log).await;
    let approver = LogApprover::new(log.clone()).wait(Duration::MAX);
    let open = approver.open_for(Duration::MAX);
    assert!(open >= Duration::from_secs(99 * 365 * 86_400), "{open:?}");
    let question = asked(&*log, &last, "q-long", open).await;
    let until = question.approval.as_ref().and_then(|n| n.until.clone()).unwrap_or_default();
    assert!(until.as_str() > "2100", "{until}");
    let mut absurd = request(2);
    (absurd.question, absurd.left) = ("q-long".into(), Duration::MAX);
    let asking = tokio::spawn(async move { approver.approve(&absurd).await });
    for _ in 0..1000 {
        if asking.is_finished() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(!asking.is_finished(), "the approver waits: {:?}", asking.await);
    answer_approval(&*log, &last.intent_key, 2, &Decision::deny("alice", "no")).await.unwrap();
    assert!(matches!(asking.await.unwrap(), Approval::Denied(_)));
}

#[test]
fn an_account_that_breaks_its_rule_is_named() {
    let note = |step, by: &str, why: &str, until: Option<&str>| {
        let mut note = ApprovalNote::new(step, by, why, "2026-12-01T00:00:00Z");
        note.until = until.map(str::to_owned);
        note
    };
    let until = Some("2026-12-01T00:05:00Z");
    assert_eq!(note(Step::Asked, "ops", "503", until).problem(), None);
    assert_eq!(note(Step::Approved, "alice", "fine", None).problem(), None);
    for step in [Step::Declined, Step::Cancelled, Step::Unanswered] {
        assert_eq!(note(step, "alice", "closed the form", None).problem(), None, "{step:?}");
    }
    let landed = ApprovalNote { asks: Asks::Settlement, ..note(Step::Landed, "alice", "seen", None) };
    assert_eq!(landed.problem(), None);
    for (bad, says) in [
        (note(Step::Asked, "ops", "503", None), "until"),
        (note(Step::Denied, "alice", "no", until), "only a question"),
        (note(Step::Approved, " ", "fine", None), "who"),
        (note(Step::Approved, "alice", "", None), "why"),
        (note(Step::Approved, "alice", &"x".repeat(MAX_WHY_BYTES + 1), None), "at most"),
        (note(Step::Approved, &"a".repeat(201), "fine", None), "at most"),
        (note(Step::Landed, "alice", "seen", None), "does not answer"),
        (
            ApprovalNote { asks: Asks::Settlement, ..note(Step::Approved, "alice", "fine", None) },
            "does not answer",
        ),
    ] {
        let problem = bad.problem().unwrap_or_default();
        assert!(problem.contains(says), "{bad:?}: {problem}");
    }
}
