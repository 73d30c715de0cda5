//! Approval through the attempt log ([`LogApprover`]): the engine's question before a second `money`
//! attempt is a record, a person in another process answers it with [`answer_approval`], and the call
//! goes on (or stops) by that answer alone; a question nobody answers is denied by the asker, and a late
//! answer changes nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tool_contract::effect::EffectKind;
use tool_contract::journal::Approvals;
use tool_contract::person::{Decision, LogApprover, answer_approval};
use tool_contract::spec::ToolSpec;
use tool_contract::{
    Applied, Class, FileJournal, IntentKey, MemoryJournal, Outcome, Probe, Reason, Report, Task, engine,
};
use tool_contract::{
    journal::{ApprovalStep, Phase, Record},
    person::ApprovalError,
};

const REFUND: ToolSpec = ToolSpec::new("refund", EffectKind::Money);

/// A refund whose first attempt the bank refuses with a 503 (nothing charged), and whose later
/// attempts succeed.
async fn refund(task: &Task, attempts: &AtomicU32) -> Report<u64> {
    let key = task.key(&REFUND, &"order-9", None);
    engine::run(
        task,
        &REFUND,
        key,
        |_| {
            let n = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            async move { if n == 1 { Err(Class::retryable("503 from the bank")) } else { Ok(7700u64) } }
        },
        |_| async { Probe::<u64>::NotLanded },
    )
    .await
}

fn task_on(log: Arc<dyn Approvals>, wait: Duration) -> (Task, IntentKey) {
    let task = Task::new("ord-7741", "agent", Duration::from_secs(900))
        .journal(log.clone())
        .approver(LogApprover::new(log).wait(wait));
    let key = task.key(&REFUND, &"order-9", None);
    (task, key)
}

/// The question, once the call has asked it.
async fn asked(log: &dyn Approvals, key: &IntentKey) -> Record {
    for _ in 0..400 {
        if let Some(record) = log.approval(key).await.unwrap() {
            return record;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the call never asked");
}

#[tokio::test(start_paused = true)]
async fn an_operator_approves_through_the_log_and_the_start_record_names_them() {
    let log: Arc<MemoryJournal> = Arc::new(MemoryJournal::new());
    let (task, key) = task_on(log.clone(), Duration::from_secs(300));
    let attempts = AtomicU32::new(0);
    let operator = async {
        let question = asked(&*log, &key).await;
        let note = question.approval.clone().unwrap();
        assert_eq!((question.phase, question.attempt, note.step), (Phase::Approval, 1, ApprovalStep::Asked));
        assert!(
            note.why.contains("503 from the bank"),
            "the question says what attempt 1 left: {}",
            note.why
        );
        assert!(note.until.is_some());
        // While it waits, the intent is in no one's queue of doubt and its last word is attempt 1's end.
        assert!(log.unresolved_now().is_empty());
        assert_eq!(log.recall_now(&key).unwrap().last.phase, Phase::End);
        answer_approval(&*log, &key, 2, &Decision::approve("alice", "the bank shows no charge"))
            .await
            .unwrap()
    };
    let (report, answer) = tokio::join!(refund(&task, &attempts), operator);
    assert_eq!(
        (report.outcome, report.effect_applied, report.value),
        (Outcome::Ok, Applied::Yes, Some(7700))
    );
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    let records = log.records();
    let start = records.iter().find(|r| r.phase == Phase::Start && r.attempt == 2).unwrap();
    assert_eq!(
        start.message.as_deref(),
        Some("approved by alice (the bank shows no charge) before attempt 2"),
        "the approved attempt's start record names who approved it, and why"
    );
    assert!(records.contains(&answer), "the answer is a record of the log");
    let steps: Vec<_> = records.iter().filter_map(|r| r.approval.as_ref().map(|n| n.step)).collect();
    assert_eq!(steps, [ApprovalStep::Asked, ApprovalStep::Approved]);
    assert_eq!(log.recall_now(&key).unwrap().attempts, 2);
}

#[tokio::test(start_paused = true)]
async fn a_denial_stops_the_call_and_a_second_answer_is_told_whose_counts() {
    let log: Arc<MemoryJournal> = Arc::new(MemoryJournal::new());
    let (task, key) = task_on(log.clone(), Duration::from_secs(300));
    let attempts = AtomicU32::new(0);
    let operator = async {
        asked(&*log, &key).await;
        answer_approval(&*log, &key, 2, &Decision::deny("bob", "refunded by hand")).await.unwrap();
        answer_approval(&*log, &key, 2, &Decision::approve("carol", "looks fine")).await
    };
    let (report, late) = tokio::join!(refund(&task, &attempts), operator);
    assert_eq!((report.outcome, report.reason), (Outcome::Permanent, Reason::Denied));
    assert!(report.message.contains("bob said no: refunded by hand"), "{}", report.message);
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "a denied attempt is never made");
    match late {
        Err(e @ ApprovalError::AlreadyAnswered { .. }) => {
            assert!(e.to_string().contains("denied by bob"), "{e}")
        }
        other => panic!("a second answer is refused, naming the first: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_question_nobody_answers_is_recorded_unanswered_and_a_late_answer_changes_nothing() {
    let log: Arc<MemoryJournal> = Arc::new(MemoryJournal::new());
    let (task, key) = task_on(log.clone(), Duration::from_secs(60));
    let attempts = AtomicU32::new(0);
    let began = tokio::time::Instant::now();
    let report = refund(&task, &attempts).await;
    let waited = began.elapsed();
    assert_eq!(report.reason, Reason::Denied);
    assert!(report.message.contains("nobody answered within 60s"), "{}", report.message);
    assert!((Duration::from_secs(60)..Duration::from_secs(62)).contains(&waited), "waited {waited:?}");
    let closed = log.approval(&key).await.unwrap().unwrap();
    let note = closed.approval.unwrap();
    assert_eq!((note.step, note.by.as_str()), (ApprovalStep::Unanswered, "an operator (the console)"));
    let late = answer_approval(&*log, &key, 2, &Decision::approve("alice", "sorry, was at lunch")).await;
    assert!(matches!(late, Err(ApprovalError::AlreadyAnswered { .. })), "{late:?}");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn the_budget_bounds_the_wait_for_an_answer() {
    let log: Arc<MemoryJournal> = Arc::new(MemoryJournal::new());
    let task = Task::new("ord-7741", "agent", Duration::from_secs(20))
        .journal(log.clone())
        .approver(LogApprover::new(log.clone()).wait(Duration::from_secs(300)));
    let attempts = AtomicU32::new(0);
    let began = tokio::time::Instant::now();
    let report = refund(&task, &attempts).await;
    assert_eq!((report.reason, attempts.load(Ordering::SeqCst)), (Reason::Denied, 1), "{}", report.message);
    assert!(report.message.contains("nobody answered within 19s"), "{}", report.message);
    assert!(began.elapsed() < Duration::from_secs(20), "waited {:?}", began.elapsed());
    // The question is closed before the engine stops waiting: no question is left open with nobody
    // waiting for its answer.
    let key = task.key(&REFUND, &"order-9", None);
    let closed = log.approval(&key).await.unwrap().unwrap().approval.unwrap();
    assert_eq!((closed.step, closed.by.as_str()), (ApprovalStep::Unanswered, "an operator (the console)"));
}

#[tokio::test(start_paused = true)]
async fn answers_that_are_not_answers_are_refused_with_nothing_written() {
    let log = MemoryJournal::new();
    let key = tool_contract::key::Intent::new("ord-7741", "agent", "refund", "order-9").key();
    let nothing = answer_approval(&log, &key, 2, &Decision::approve("alice", "ok")).await;
    assert!(matches!(nothing, Err(ApprovalError::NotAsked { .. })), "{nothing:?}");
    let no_reason = answer_approval(&log, &key, 2, &Decision::approve("alice", "  ")).await;
    assert!(matches!(&no_reason, Err(ApprovalError::Invalid(why)) if why.contains("why")), "{no_reason:?}");
    let nobody = answer_approval(&log, &key, 2, &Decision::deny("", "no")).await;
    assert!(matches!(nobody, Err(ApprovalError::Invalid(_))), "{nobody:?}");
    assert!(log.records().is_empty());
}

/// The file log (the embedded default) on the real clock: the question is a line of the file, and the
/// answer given through the same journal lets the call go on.
#[tokio::test]
async fn the_file_log_keeps_the_question_and_the_answer_as_lines() {
    let dir = std::env::temp_dir().join(format!("tc-approval-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("attempts.log");
    let log: Arc<FileJournal> = Arc::new(FileJournal::open(&path).unwrap());
    let (task, key) = task_on(log.clone(), Duration::from_secs(30));
    let attempts = AtomicU32::new(0);
    let operator = async {
        asked(&*log, &key).await;
        answer_approval(&*log, &key, 2, &Decision::approve("alice", "no charge seen")).await.unwrap()
    };
    let (report, _) = tokio::join!(refund(&task, &attempts), operator);
    assert_eq!((report.outcome, attempts.load(Ordering::SeqCst)), (Outcome::Ok, 2));
    drop(task);
    drop(log);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches(r#""phase":"approval""#).count(), 2, "{text}");
    let contents = tool_contract::journal::read_log(&path).unwrap();
    assert!(contents.warnings.is_empty(), "every line reads back: {:?}", contents.warnings);
    // Reopened, the intent's last word is attempt 2's end.
    let reopened = FileJournal::open(&path).unwrap();
    let recall = reopened.recall_now(&key).unwrap();
    assert_eq!((recall.attempts, recall.last.outcome), (2, Some(Outcome::Ok)));
    drop(reopened);
    let _ = std::fs::remove_dir_all(&dir);
}
