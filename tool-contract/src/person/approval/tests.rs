use super::*;
use crate::journal::{Durability, Journal, MemoryJournal};
use crate::{Applied, Outcome};

fn request(next_attempt: u32) -> ApprovalRequest {
    ApprovalRequest {
        task: "t".into(),
        call: "refund".into(),
        key: crate::key::Intent::new("t", "a", "refund", "order-9").key(),
        next_attempt,
        history: "503".into(),
        left: Duration::from_secs(60),
    }
}

/// A log holding attempt 1 of the intent, ended `retryable` with nothing paid.
async fn after_attempt_1(log: &dyn Journal) {
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
}

#[tokio::test(start_paused = true)]
async fn a_request_about_another_attempt_is_denied_and_nothing_is_asked() {
    let log = Arc::new(MemoryJournal::new());
    after_attempt_1(&*log).await;
    let approver = LogApprover::new(log.clone());
    for next in [0, 1, 3, u32::MAX] {
        match approver.approve(&request(next)).await {
            Approval::Denied(why) => assert!(why.contains("the log's last attempt is 1"), "{why}"),
            Approval::Approved => panic!("attempt {next} approved"),
        }
    }
    assert_eq!(log.approval(&request(2).key).await.unwrap(), None, "nothing was asked");
    // An intent the log holds nothing of: denied, saying so.
    let empty = LogApprover::new(Arc::new(MemoryJournal::new()));
    let Approval::Denied(why) = empty.approve(&request(2)).await else { panic!("approved") };
    assert!(why.contains("holds nothing"), "{why}");
}

/// An answer is bound to what the person examined, by the rule settlements follow: once another
/// attempt has started, an answer about the attempt before it is refused, naming the newer one.
#[tokio::test(start_paused = true)]
async fn an_answer_after_another_attempt_started_is_refused_naming_it() {
    let log = Arc::new(MemoryJournal::new());
    after_attempt_1(&*log).await;
    let key = request(2).key;
    let question = record_of(
        &log.recall_now(&key).unwrap().last,
        ApprovalNote {
            step: Step::Asked,
            by: "ops".into(),
            why: "503".into(),
            at: rfc3339(wall_clock()),
            until: Some("2999-01-01T00:00:00Z".into()),
            os_user: None,
        },
    );
    assert!(log.approval_step(question.as_record_ref()).await.unwrap());
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

#[tokio::test(start_paused = true)]
async fn an_absurd_wait_is_a_century_and_no_panic() {
    let log = Arc::new(MemoryJournal::new());
    after_attempt_1(&*log).await;
    let approver = LogApprover::new(log.clone()).wait(Duration::MAX);
    let absurd = ApprovalRequest { left: Duration::MAX, ..request(2) };
    let key = absurd.key;
    let asking = tokio::spawn(async move { approver.approve(&absurd).await });
    for _ in 0..1000 {
        if asking.is_finished() || log.approval(&key).await.unwrap().is_some() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(!asking.is_finished(), "the approver waits: {:?}", asking.await);
    let asked = log.approval(&key).await.unwrap().unwrap().approval.unwrap();
    assert!(asked.until.as_deref().is_some_and(|until| until > "2100"), "{asked:?}");
    answer_approval(&*log, &key, 2, &Decision::deny("alice", "no")).await.unwrap();
    assert!(matches!(asking.await.unwrap(), Approval::Denied(_)));
}

#[test]
fn an_account_that_breaks_its_rule_is_named() {
    let note = |step, by: &str, why: &str, until: Option<&str>| ApprovalNote {
        step,
        by: by.into(),
        why: why.into(),
        at: "2026-12-01T00:00:00Z".into(),
        until: until.map(str::to_owned),
        os_user: None,
    };
    let until = Some("2026-12-01T00:05:00Z");
    assert_eq!(note(Step::Asked, "ops", "503", until).problem(), None);
    assert_eq!(note(Step::Approved, "alice", "fine", None).problem(), None);
    for (bad, says) in [
        (note(Step::Asked, "ops", "503", None), "until"),
        (note(Step::Denied, "alice", "no", until), "only a question"),
        (note(Step::Approved, " ", "fine", None), "who"),
        (note(Step::Approved, "alice", "", None), "why"),
        (note(Step::Approved, "alice", &"x".repeat(MAX_WHY_BYTES + 1), None), "at most"),
        (note(Step::Approved, &"a".repeat(201), "fine", None), "at most"),
    ] {
        let problem = bad.problem().unwrap_or_default();
        assert!(problem.contains(says), "{bad:?}: {problem}");
    }
}
