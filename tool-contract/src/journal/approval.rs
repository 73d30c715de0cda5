//! Approval through the attempt log: see [`LogApprover`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::settle::{MAX_BY_BYTES, one_line};
use super::{Durability, Journal, JournalError, Phase, Record};
use super::{rfc3339, wall_clock};
use crate::journal::BoxFuture;
use crate::key::IntentKey;
use crate::task::{Approval, ApprovalRequest, Approve};

/// The longest reason an approval record keeps, in bytes.
pub const MAX_WHY_BYTES: usize = 1024;

/// How long before the engine stops waiting (the task's budget left) a [`LogApprover`] closes its
/// question: time to record the denial.
const CLOSE_MARGIN: Duration = Duration::from_secs(1);

/// The longest a [`LogApprover`] waits, whatever it is told: a century.
const LONGEST_WAIT: Duration = Duration::from_secs(100 * 365 * 86_400);

/// How often a [`LogApprover`] looks for the answer.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// The engine asked a person before the next attempt, and waits.
    Asked,
    /// The person said yes: the next attempt may start.
    Approved,
    /// The person said no (or nobody answered in time): no attempt.
    Denied,
}

impl Step {
    /// `asked`, `approved` or `denied`, as the log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Asked => "asked",
            Step::Approved => "approved",
            Step::Denied => "denied",
        }
    }
}

/// An `approval` record's account: the step, who, why, when, and (on a question) until when the
/// asker waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalNote {
    /// Asked, approved or denied.
    pub step: Step,
    /// On a question, who is asked; on an answer, who answered.
    pub by: String,
    /// On a question, what the attempts so far left; on an answer, the reason given.
    pub why: String,
    /// When the record was written, RFC 3339 UTC.
    pub at: String,
    /// On a question: when the asker stops waiting, RFC 3339 UTC. Absent on an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// On an answer that came through the file log's request directory: the operating-system user
    /// that wrote the request (`uid 1000 (alice)`), beside the `by` it claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_user: Option<String>,
}

impl ApprovalNote {
    /// What is wrong with the account, if anything: no name, no reason or too long a one, a deadline
    /// on an answer or none on a question.
    pub fn problem(&self) -> Option<String> {
        if self.by.trim().is_empty() {
            return Some("an approval record names who (`by`)".into());
        }
        if self.by.len() > MAX_BY_BYTES {
            return Some(format!("`by` is {} bytes; at most {MAX_BY_BYTES}", self.by.len()));
        }
        if self.why.trim().is_empty() {
            return Some("an approval record says why (`why`)".into());
        }
        if self.why.len() > MAX_WHY_BYTES {
            return Some(format!("`why` is {} bytes; at most {MAX_WHY_BYTES}", self.why.len()));
        }
        match (self.step, &self.until) {
            (Step::Asked, None) => Some("a question (`asked`) says until when it waits (`until`)".into()),
            (Step::Approved | Step::Denied, Some(_)) => Some("only a question (`asked`) has `until`".into()),
            _ => None,
        }
    }
}

/// A person's answer to a question [`LogApprover`] asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    approve: bool,
    by: String,
    why: String,
    /// Set by the holder of a file log from the request file's owner, never read from a request.
    #[serde(skip)]
    os_user: Option<String>,
}

impl Decision {
    /// Yes to the next attempt, by `by`, for the reason `why`.
    pub fn approve(by: impl Into<String>, why: impl Into<String>) -> Decision {
        Decision { approve: true, by: by.into(), why: why.into(), os_user: None }
    }

    /// No to the next attempt, by `by`, for the reason `why`.
    pub fn deny(by: impl Into<String>, why: impl Into<String>) -> Decision {
        Decision { approve: false, by: by.into(), why: why.into(), os_user: None }
    }

    /// Whether it says yes.
    pub fn approves(&self) -> bool {
        self.approve
    }

    /// Who answered.
    pub fn by(&self) -> &str {
        &self.by
    }

    /// The reason given.
    pub fn why(&self) -> &str {
        &self.why
    }

    /// The operating-system user that wrote the request this answer came in by.
    pub(crate) fn os_user(mut self, user: String) -> Decision {
        self.os_user = Some(user);
        self
    }

    fn step(&self) -> Step {
        if self.approve { Step::Approved } else { Step::Denied }
    }
}

/// Why an answer was not recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// Nothing asks about this attempt of this intent (never asked, asked of a newer attempt, or the
    /// asker's process is gone and took its question with it).
    #[error("no approval of attempt {attempt} of intent {key} is waiting: {why}")]
    NotAsked {
        /// The intent.
        key: IntentKey,
        /// The attempt the answer was for.
        attempt: u32,
        /// What the store holds instead.
        why: String,
    },
    /// The question was answered already; the record that answered it.
    #[error("approval of attempt {} of intent {} was answered already: {}", .record.attempt + 1, .record.intent_key, answered(.record))]
    AlreadyAnswered {
        /// The answer that counts.
        record: Box<Record>,
    },
    /// The answer itself is not one: no name, no reason, or too long.
    #[error("not an answer: {0}")]
    Invalid(String),
    /// The store could not be asked, or refused the record.
    #[error(transparent)]
    Store(#[from] JournalError),
}

fn answered(record: &Record) -> String {
    match &record.approval {
        Some(note) => format!("{} by {} at {}: {}", note.step.as_str(), note.by, note.at, note.why),
        None => "answered".into(),
    }
}

/// The record of an approval step about the attempt after `last`'s (the intent's last record).
fn record_of(last: &Record, note: ApprovalNote) -> Record {
    let next = last.attempt.saturating_add(1);
    let message = match note.step {
        Step::Asked => format!("approval of attempt {next} asked of {}: {}", note.by, one_line(&note.why)),
        step => format!("attempt {next} {} by {}: {}", step.as_str(), note.by, one_line(&note.why)),
    };
    Record { message: Some(message), approval: Some(note), ..last.about(Phase::Approval) }
}

/// Answer the question asked about attempt `attempt` of intent `key` (the attempt that would start):
/// the record written, or why none was. At most one answer counts per question; a question past its
/// `until`, or whose asker is gone, takes none.
pub async fn answer_approval(
    journal: &dyn Journal,
    key: &IntentKey,
    attempt: u32,
    decision: &Decision,
) -> Result<Record, ApprovalError> {
    let note = ApprovalNote {
        step: decision.step(),
        by: decision.by.trim().to_owned(),
        why: decision.why.trim().to_owned(),
        at: rfc3339(wall_clock()),
        until: None,
        os_user: decision.os_user.clone(),
    };
    if let Some(problem) = note.problem() {
        return Err(ApprovalError::Invalid(problem));
    }
    let not_asked = |why: String| ApprovalError::NotAsked { key: *key, attempt, why };
    if attempt == 0 {
        return Err(not_asked("attempts are numbered from 1".into()));
    }
    // Bound to what the person examined, by the rule settlements follow: the attempt before the one
    // asked about is still the intent's last.
    let recall = journal.recall(key).await?;
    if let Some(now) = recall.as_ref().and_then(|recall| crate::rules::answer_bound(attempt - 1, recall)) {
        return Err(not_asked(now));
    }
    let Some(asked) = journal.approval(key).await? else {
        let why =
            "nothing waits for an answer (no question was asked, or the process that asked it has stopped)";
        return Err(not_asked(why.into()));
    };
    let Some(question) = asked.approval.as_ref() else { return Err(not_asked("nothing was asked".into())) };
    let about = asked.attempt.saturating_add(1);
    if about != attempt {
        return Err(not_asked(format!("the last question was about attempt {about}")));
    }
    if question.step != Step::Asked {
        return Err(ApprovalError::AlreadyAnswered { record: Box::new(asked) });
    }
    if let Some(until) = question.until.as_deref().filter(|until| *until < note.at.as_str()) {
        return Err(not_asked(format!("the question waited until {until} and is closed")));
    }
    // The one rule of a waiting question, as the console shows it; the checks above say why not.
    let attempts = recall.as_ref().map_or(asked.attempt, |recall| recall.attempts);
    if crate::rules::waiting_question(Some(&asked), attempts, &note.at).is_none() {
        return Err(not_asked("no question about this attempt waits".into()));
    }
    let record = record_of(&asked, note);
    if journal.approval_step(record.as_record_ref()).await? {
        return Ok(record);
    }
    // Someone answered (or asked again) between the read and the write: say what stands.
    match journal.approval(key).await? {
        Some(last)
            if last.attempt == asked.attempt
                && last.approval.as_ref().is_some_and(|n| n.step != Step::Asked) =>
        {
            Err(ApprovalError::AlreadyAnswered { record: Box::new(last) })
        }
        _ => Err(not_asked("the question changed as it was answered".into())),
    }
}

pub(crate) use crate::rules::may_follow;

/// Approval through the attempt log: a second `money` attempt asked of a person who answers from
/// another process (the operator console, or code of one's own), with both the question and the
/// answer kept as records.
///
/// [`LogApprover`] is an [`Approve`](crate::Approve) that writes an `approval` record with step
/// `asked` (what the first attempt left, and until when it waits), then waits for the record that
/// answers it: [`answer_approval`] writes `approved` or `denied` with who and why. A store keeps at
/// most one answer to one question ([`Journal::approval_step`]): two people answering at once, exactly
/// one answer counts and the other is told whose. A question nobody answers in time is denied by the
/// asker, through the same rule, so a late answer cannot approve an attempt nobody waits for.
///
/// An `approval` record names the attempt it follows (`attempt`); the attempt it asks about is the
/// next one. It is never an intent's last word: stores fold it aside.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use tool_contract::{Call, Class, Decision, Intent, IntentKey, Journal, LogApprover, MemoryJournal, Outcome};
/// use tool_contract::{Probe, Task, answer_approval, tool};
///
/// /// Refund an order; the bank refuses the first attempt, paying nothing.
/// #[tool(effect = "money", target = order, probe = find_refund)]
/// async fn refund(call: &Call, order: &str) -> Result<u64, Class> {
///     if call.attempt() == 1 { Err(Class::retryable("503: nothing paid")) } else { Ok(7700) }
/// }
/// async fn find_refund(_order: &&str, _key: IntentKey) -> Probe<u64> {
///     Probe::NotLanded
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let log: Arc<dyn Journal> = Arc::new(MemoryJournal::new());
/// let task = Task::new("ord-7741", "agent", Duration::from_secs(600))
///     .journal(log.clone())
///     .approver(LogApprover::new(log.clone()).wait(Duration::from_secs(300)));
/// let call = tokio::spawn({
///     let task = task.clone();
///     async move { refund(&task, "order-9").await }
/// });
///
/// // Elsewhere (the operator console does this): the question is in the log, and a person answers.
/// let key = Intent::new("ord-7741", "agent", "refund", "order-9").key();
/// while log.approval(&key).await.unwrap().is_none() {
///     tokio::time::sleep(Duration::from_millis(50)).await;
/// }
/// answer_approval(&*log, &key, 2, &Decision::approve("alice", "the bank shows no charge")).await.unwrap();
///
/// let report = call.await.unwrap();
/// assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(7700)));
/// assert_eq!(report.idempotency_key, key);
/// # }
/// ```
///
/// A question nobody answers within [`LogApprover::wait`] (5 minutes unless set), or within the task's
/// budget if that is shorter, is denied by the approver itself, recorded as `denied` by `nobody`.
pub struct LogApprover {
    journal: Arc<dyn Journal>,
    wait: Duration,
    asked_of: String,
    who: Mutex<HashMap<(IntentKey, u32), String>>,
}

impl LogApprover {
    /// An approver that asks in `journal`: give it the journal the task writes to.
    pub fn new(journal: Arc<dyn Journal>) -> LogApprover {
        LogApprover {
            journal,
            wait: Duration::from_secs(300),
            asked_of: "an operator (the console)".into(),
            who: Mutex::new(HashMap::new()),
        }
    }

    /// How long a question waits for its answer (5 minutes unless set).
    pub fn wait(mut self, wait: Duration) -> LogApprover {
        self.wait = wait;
        self
    }

    /// Who the question is for, as its record names them (`an operator (the console)` unless set).
    pub fn asked_of(mut self, who: impl Into<String>) -> LogApprover {
        self.asked_of = who.into();
        self
    }

    async fn ask(&self, request: &ApprovalRequest) -> Result<Approval, String> {
        let last = self
            .journal
            .recall(&request.key)
            .await
            .map_err(|e| format!("the log could not be read to ask: {e}"))?
            .ok_or("the log holds nothing of the intent")?
            .last;
        if last.attempt.saturating_add(1) != request.next_attempt {
            return Err(format!(
                "attempt {} was asked about, but the log's last attempt is {} (so the next is {})",
                request.next_attempt,
                last.attempt,
                last.attempt.saturating_add(1)
            ));
        }
        // Closed before the engine stops waiting (the budget left), so a question is never left open
        // with nobody waiting for its answer.
        // At most a century: a clock reading plus any longer wait may not be representable.
        let wait = self.wait.min(request.left.saturating_sub(CLOSE_MARGIN)).min(LONGEST_WAIT);
        let until = rfc3339(wall_clock() + wait);
        let question = record_of(
            &last,
            ApprovalNote {
                step: Step::Asked,
                by: self.asked_of.clone(),
                why: one_line(&request.history).chars().take(MAX_WHY_BYTES / 4).collect(),
                at: rfc3339(wall_clock()),
                until: Some(until),
                os_user: None,
            },
        );
        if !self.journal.approval_step(question.as_record_ref()).await.map_err(|e| e.to_string())? {
            return Err("the question was not recorded".into());
        }
        let gave_up = tokio::time::Instant::now() + wait;
        loop {
            tokio::time::sleep(
                LOOK_EVERY.min(gave_up.saturating_duration_since(tokio::time::Instant::now())),
            )
            .await;
            let answer = match self.journal.approval(&request.key).await {
                Ok(answer) => answer,
                // A store that cannot be asked now may answer at the next look.
                Err(_) if tokio::time::Instant::now() < gave_up => continue,
                Err(e) => return Err(format!("the log could not be read for the answer: {e}")),
            };
            if let Some(decided) = self.decided(answer.as_ref(), question.attempt) {
                return Ok(decided);
            }
            if tokio::time::Instant::now() >= gave_up {
                return self.close(&question, wait).await;
            }
        }
    }

    /// What `answer` (the intent's last approval record) says of the question about the attempt after
    /// `attempt`, if it answers it.
    fn decided(&self, answer: Option<&Record>, attempt: u32) -> Option<Approval> {
        let record = answer.filter(|r| r.attempt == attempt)?;
        let note = record.approval.as_ref()?;
        match note.step {
            Step::Asked => None,
            Step::Approved => {
                let who = format!("{} ({})", note.by, one_line(&note.why));
                self.who
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert((record.intent_key, attempt + 1), who);
                Some(Approval::Approved)
            }
            Step::Denied => Some(Approval::Denied(format!("{} said no: {}", note.by, note.why))),
        }
    }

    /// Nobody answered in time: record the denial, unless an answer came first (then it counts).
    async fn close(&self, question: &Record, wait: Duration) -> Result<Approval, String> {
        let note = ApprovalNote {
            step: Step::Denied,
            by: "nobody".into(),
            why: format!("no answer within {}s", wait.as_secs()),
            at: rfc3339(wall_clock()),
            until: None,
            os_user: None,
        };
        let denial = record_of(question, note);
        match self.journal.approval_step(denial.as_record_ref()).await {
            Ok(true) => Ok(Approval::Denied(format!("nobody answered within {}s", wait.as_secs()))),
            // An answer came first: it counts.
            Ok(false) => {
                let last = self.journal.approval(&question.intent_key).await.map_err(|e| e.to_string())?;
                Ok(self
                    .decided(last.as_ref(), question.attempt)
                    .unwrap_or_else(|| Approval::Denied("the question was closed".into())))
            }
            Err(e) => Err(format!("nobody answered, and the denial was not recorded: {e}")),
        }
    }
}

impl Approve for LogApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move { self.ask(request).await.unwrap_or_else(Approval::Denied) })
    }

    fn who(&self) -> String {
        self.asked_of.clone()
    }

    fn who_approved(&self, request: &ApprovalRequest) -> String {
        self.who
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(request.key, request.next_attempt))
            .unwrap_or_else(|| self.who())
    }
}

/// What a store keeps of approvals: each intent's last approval record.
#[derive(Debug, Default)]
pub(crate) struct Approvals(HashMap<IntentKey, Record>);

impl Approvals {
    /// The intent's last approval record.
    pub(crate) fn last(&self, key: &IntentKey) -> Option<&Record> {
        self.0.get(key)
    }

    /// Keep `record` if it is an approval record (as the intent's last).
    pub(crate) fn note(&mut self, record: &super::RecordRef<'_>) {
        if record.phase == Phase::Approval {
            self.0.insert(record.intent_key, record.to_record());
        }
    }

    /// Whether `record` may follow what is kept ([`may_follow`]).
    pub(crate) fn may_take(&self, record: &super::RecordRef<'_>) -> bool {
        may_follow(record, self.0.get(&record.intent_key))
    }
}

/// How approval records are written: a question and its answer at once, and synced.
pub(crate) const DURABILITY: Durability = Durability::Synced;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Claimed, MemoryJournal, Owner, Recall, RecordRef};
    use crate::report::{Applied, Outcome};

    fn request(next_attempt: u32) -> ApprovalRequest {
        ApprovalRequest {
            task: "t".into(),
            call: "refund".into(),
            key: crate::Intent::new("t", "a", "refund", "order-9").key(),
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

    /// A store of one's own that keeps no approvals: the question cannot be asked, and the answer is
    /// no, naming why.
    struct Plain(MemoryJournal);

    impl Journal for Plain {
        fn claim(
            &self,
            key: &IntentKey,
            owner: &Owner,
            lease: Duration,
        ) -> crate::journal::Answer<'_, Result<Claimed, JournalError>> {
            self.0.claim(key, owner, lease)
        }
        fn release(&self, key: &IntentKey, owner: &Owner) {
            self.0.release(key, owner)
        }
        fn start(
            &self,
            owner: &Owner,
            record: RecordRef<'_>,
            d: Durability,
        ) -> crate::journal::Answer<'_, Result<(), JournalError>> {
            self.0.start(owner, record, d)
        }
        fn end(
            &self,
            owner: &Owner,
            record: RecordRef<'_>,
            d: Durability,
        ) -> crate::journal::Answer<'_, Result<(), JournalError>> {
            self.0.end(owner, record, d)
        }
        fn append(
            &self,
            record: RecordRef<'_>,
            d: Durability,
        ) -> crate::journal::Answer<'_, Result<(), JournalError>> {
            Journal::append(&self.0, record, d)
        }
        fn recall(
            &self,
            key: &IntentKey,
        ) -> crate::journal::Answer<'_, Result<Option<Recall>, JournalError>> {
            Journal::recall(&self.0, key)
        }
        fn unresolved(&self) -> crate::journal::Answer<'_, Result<Vec<Recall>, JournalError>> {
            Journal::unresolved(&self.0)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_that_keeps_no_approvals_denies_saying_so() {
        let log = Arc::new(Plain(MemoryJournal::new()));
        after_attempt_1(&*log).await;
        let Approval::Denied(why) = LogApprover::new(log.clone()).approve(&request(2)).await else {
            panic!("approved")
        };
        assert!(why.contains("does not keep approvals"), "{why}");
        let answered = answer_approval(&*log, &request(2).key, 2, &Decision::approve("alice", "ok")).await;
        assert!(
            matches!(&answered, Err(ApprovalError::Store(JournalError::Unsupported { .. }))),
            "{answered:?}"
        );
    }

    /// An answer is bound to what the person examined, by the rule settlements follow: once another
    /// attempt has started, an answer about the attempt before it is refused, naming the newer one.
    #[tokio::test(start_paused = true)]
    async fn an_answer_after_another_attempt_started_is_refused_naming_it() {
        let log = Arc::new(MemoryJournal::new());
        after_attempt_1(&*log).await;
        let key = request(2).key;
        let question = record_of(
            &log.recall(&key).unwrap().last,
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
}
