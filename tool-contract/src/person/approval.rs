//! Approval through the attempt log: see [`LogApprover`].

use std::sync::Arc;
use std::time::Duration;

use super::{Approval, ApprovalRequest, Approve};
use crate::journal::{ApprovalStep as Step, Approvals, BoxFuture, Record};

/// How long before the engine stops waiting (the task's budget left) a [`LogApprover`]'s question
/// closes: time to record that nobody answered.
const CLOSE_MARGIN: Duration = Duration::from_secs(1);

/// The longest a [`LogApprover`] waits, whatever it is told: a century.
const LONGEST_WAIT: Duration = Duration::from_secs(100 * 365 * 86_400);

/// How often a [`LogApprover`] looks for the answer.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// Approval through the attempt log: a second `money` attempt asked of a person who answers from
/// another process (the operator console, or code of one's own), with both the question and the
/// answer kept as records.
///
/// The engine records the question (an `approval` record with step `asked`: what the first attempt
/// left, the arguments it shows, until when it waits); [`LogApprover`] then waits for the record that
/// answers it, which [`answer_approval`](super::answer_approval) writes (`approved` or `denied`, with who and why). A store
/// keeps at most one answer to one question ([`Approvals::approval_step`]): two people answering at
/// once, exactly one answer counts and the other is told whose. A question nobody answers in time is
/// answered `unanswered` by the engine, through the same rule, so a late answer cannot approve an
/// attempt nobody waits for, and an answer that came first counts.
///
/// An `approval` record names the attempt it follows (`attempt`); the attempt it asks about is the
/// next one. It is never an intent's last word: stores fold it aside.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use tool_contract::journal::Approvals;
/// use tool_contract::key::Intent;
/// use tool_contract::person::{Decision, LogApprover};
/// use tool_contract::{Call, Class, IntentKey, MemoryJournal, Outcome};
/// use tool_contract::person::answer_approval;
/// use tool_contract::{Probe, Task, tool};
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
/// let log: Arc<dyn Approvals> = Arc::new(MemoryJournal::new());
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
/// budget if that is shorter, is answered `unanswered`: a no.
pub struct LogApprover {
    journal: Arc<dyn Approvals>,
    wait: Duration,
    asked_of: String,
}

impl LogApprover {
    /// An approver that asks in `journal`: give it the journal the task writes to (a store that keeps
    /// approvals: one that does not is refused here, at compile time).
    pub fn new(journal: Arc<dyn Approvals>) -> LogApprover {
        LogApprover { journal, wait: Duration::from_secs(300), asked_of: "an operator (the console)".into() }
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

    /// Wait for the answer recorded to the question the engine recorded (`request.question`), looking
    /// every [`LOOK_EVERY`], until `open`: the answer, or that none came.
    async fn answer(&self, request: &ApprovalRequest, open: Duration) -> Approval {
        let gave_up = tokio::time::Instant::now() + open;
        loop {
            tokio::time::sleep(
                LOOK_EVERY.min(gave_up.saturating_duration_since(tokio::time::Instant::now())),
            )
            .await;
            // A store that cannot be asked now may answer at the next look.
            if let Ok(Some(last)) = self.journal.approval(&request.key).await
                && let Some(approval) = answer_to(&last, &request.question)
            {
                return approval;
            }
            if tokio::time::Instant::now() >= gave_up {
                return Approval::Unanswered(format!("nobody answered within {}s", open.as_secs()));
            }
        }
    }
}

/// What `last`, the intent's last approval record, says of question `id`, if it answers it. The engine
/// records this answer as its own, finds it there already, and acts on the recorded one.
fn answer_to(last: &Record, id: &str) -> Option<Approval> {
    let note = last.approval.as_ref()?;
    if note.question.as_deref() != Some(id) {
        return None;
    }
    let said = || format!("{} said no: {}", note.by, note.why);
    Some(match note.step {
        Step::Asked => return None,
        Step::Approved => Approval::Approved,
        Step::Declined => Approval::Declined(said()),
        Step::Cancelled => Approval::Cancelled(said()),
        Step::Unanswered => Approval::Unanswered(said()),
        _ => Approval::Denied(said()),
    })
}

impl Approve for LogApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move { self.answer(request, self.open_for(request.left)).await })
    }

    fn who(&self) -> String {
        self.asked_of.clone()
    }

    fn asked_in(&self) -> String {
        "the attempt log (its console, or its request directory)".to_owned()
    }

    /// Closed before the engine stops waiting (the budget left), so a question is never left open
    /// with nobody waiting for its answer.
    fn open_for(&self, left: Duration) -> Duration {
        self.wait.min(left.saturating_sub(CLOSE_MARGIN)).min(LONGEST_WAIT)
    }
}

#[cfg(test)]
mod tests;
