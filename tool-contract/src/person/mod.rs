//! People in the loop: a person's verdict on an intent in doubt ([`settle`]), a person's yes or no to a
//! second attempt of a `money` call ([`Approve`], [`LogApprover`], [`answer_approval`]).
//!
//! The records these write are data of the attempt log ([`Settlement`](crate::journal::Settlement),
//! [`ApprovalNote`](crate::journal::ApprovalNote)); this module is the work of making them. A file log
//! held by another process takes both through its request directory
//! ([`journal::file::request_settlement`](crate::journal::file::request_settlement)), which calls in here.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::journal::BoxFuture;
use crate::key::IntentKey;

mod approval;
#[cfg(feature = "cli")]
pub(crate) mod command;

pub use crate::journal::word::{
    ApprovalError, Decision, REQUEST_LIFETIME, Settle, SettleError, answer_approval, early_note, settle,
};
pub use approval::LogApprover;

/// What an approver is asked before a second attempt of a `money` call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The task's id.
    pub task: String,
    /// The tool's name.
    pub call: String,
    /// The intent at stake.
    pub key: IntentKey,
    /// The attempt about to start.
    pub next_attempt: u32,
    /// What happened so far, in one line.
    pub history: String,
    /// The task's budget left when asked: the engine waits for the answer that long at most, so an
    /// approver that records its question closes it before then.
    pub left: Duration,
    /// The question's id, issued once: the log records the question under it before the approver is
    /// asked, and the answer that counts is the one recorded to it.
    pub question: String,
    /// The arguments the question shows, by name, as JSON text cut to 240 bytes: those the tool names
    /// with `#[tool(shows = [..])]` (for `money`, the amount and the target), when the call came by
    /// name.
    pub shows: BTreeMap<String, String>,
}

impl ApprovalRequest {
    /// A request to approve attempt `next_attempt` of `call`'s intent `key` in task `task`, with `left`
    /// of the budget, as question `question`: what an approver is given (tests and adapters build one
    /// by hand).
    pub fn new(
        task: impl Into<String>,
        call: impl Into<String>,
        key: IntentKey,
        next_attempt: u32,
        history: impl Into<String>,
        left: Duration,
    ) -> ApprovalRequest {
        ApprovalRequest {
            task: task.into(),
            call: call.into(),
            key,
            next_attempt,
            history: history.into(),
            left,
            question: String::new(),
            shows: BTreeMap::new(),
        }
    }

    /// The arguments a question shows, in one line: `cents = 1250, order = "ord-7741"`; empty when it
    /// shows none.
    pub fn shown(&self) -> String {
        shown(&self.shows)
    }
}

/// `shows` in one line, as a question's text gives them.
pub(crate) fn shown(shows: &BTreeMap<String, String>) -> String {
    shows.iter().map(|(name, value)| format!("{name} = {value}")).collect::<Vec<_>>().join(", ")
}

/// What a person is asked when a call resumes an intent left in doubt and its probe still cannot tell
/// whether the attempt landed ([`Approve::settle`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InDoubt {
    /// The task's id.
    pub task: String,
    /// Who the task acts for: the settlement's `by` when the asker has no better name.
    pub actor: String,
    /// The tool's name.
    pub call: String,
    /// The intent in doubt.
    pub key: IntentKey,
    /// The attempt in doubt.
    pub attempt_id: String,
    /// What the log and the probe said, in one line.
    pub history: String,
    /// The question's id, issued once ([`ApprovalRequest::question`]).
    pub question: String,
    /// The arguments the question shows ([`ApprovalRequest::shows`]).
    pub shows: BTreeMap<String, String>,
}

impl InDoubt {
    /// A question whether attempt `attempt_id` of `call`'s intent `key` landed: what an approver's
    /// [`Approve::settle`] is given (tests and adapters build one by hand).
    pub fn new(
        task: impl Into<String>,
        actor: impl Into<String>,
        call: impl Into<String>,
        key: IntentKey,
        attempt_id: impl Into<String>,
        history: impl Into<String>,
    ) -> InDoubt {
        InDoubt {
            task: task.into(),
            actor: actor.into(),
            call: call.into(),
            key,
            attempt_id: attempt_id.into(),
            history: history.into(),
            question: String::new(),
            shows: BTreeMap::new(),
        }
    }

    /// The arguments the question shows, in one line ([`ApprovalRequest::shown`]).
    pub fn shown(&self) -> String {
        shown(&self.shows)
    }
}

/// An approver's answer to a question before a second attempt of a `money` call. Only
/// [`Approval::Approved`] lets the attempt start; every answer is recorded in the attempt log before
/// the engine acts on it, the no's included.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Approval {
    /// Go ahead with the second attempt.
    Approved,
    /// Do not; the reason is reported.
    Denied(String),
    /// The person declined to answer (closed or refused the form): a no.
    Declined(String),
    /// The person, or their client, cancelled the question: a no.
    Cancelled(String),
    /// No answer in time: a no.
    Unanswered(String),
    /// Asked; the answer comes with a later call of the same intent (a client that answers over rounds
    /// of input): nothing is recorded as the answer yet, and this call goes no further.
    Later,
}

/// What a person said when asked whether an attempt in doubt landed ([`Approve::settle`]). Every
/// answer is recorded in the attempt log before the engine acts on it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Found {
    /// They found it landed, or not: their settlement, recorded and honoured at once.
    Settled(Settle),
    /// They cannot tell: the intent stays in doubt.
    CantTell(String),
    /// They declined to answer.
    Declined(String),
    /// They, or their client, cancelled the question.
    Cancelled(String),
    /// No answer in time.
    Unanswered(String),
    /// Asked; the answer comes with a later call of the same intent.
    Later,
}

/// Says yes or no to a second attempt of a `money` call, and, when it can reach a person, settles an
/// attempt in doubt whose probe cannot tell.
///
/// The engine records every question in the attempt log before it asks (an id issued once, what it
/// asks, the arguments it binds, where it is asked) and every answer before it acts on it: a question
/// is answered once, and a second answer to it, whatever it says, is refused naming the first
/// ([`rules::answer_refused`](crate::rules::answer_refused)).
///
/// An async closure of the request does, as does any type implementing the trait:
///
/// ```
/// use std::time::Duration;
/// use tool_contract::person::{Approval, ApprovalRequest};
/// use tool_contract::Task;
///
/// let task = Task::new("ord-1", "agent", Duration::from_secs(30)).approver(|request: ApprovalRequest| async move {
///     if request.next_attempt <= 2 { Approval::Approved } else { Approval::Denied("one retry at most".into()) }
/// });
/// # let _ = task;
/// ```
pub trait Approve: Send + Sync {
    /// Decide on one request.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval>;

    /// Asked when a call resumes an intent left in doubt and its probe still cannot tell, if
    /// [`Approve::reach`] says a person can be asked: what they found. A settlement is recorded under
    /// the call's claim and honoured at once (`landed`: the call answers `ok` from it; `not_landed`:
    /// the next attempt, after [`Approve::approve`] for `money`, once the attempt could no longer land).
    /// The default asks nobody.
    fn settle<'a>(&'a self, question: &'a InDoubt) -> BoxFuture<'a, Found> {
        let _ = question;
        Box::pin(std::future::ready(Found::Unanswered("this approver asks nobody".to_owned())))
    }

    /// Who says yes, as the records of their answers name them.
    fn who(&self) -> String {
        "the task's approver".to_owned()
    }

    /// Whether a person can be asked a question that `asks` about attempt `attempt` (the one they would
    /// examine): `Err(Some(why))` when nobody can be, or may be asked again in this call;
    /// `Err(None)` when this approver asks nobody such a question. No question is recorded then. The
    /// default asks approvals and nothing else.
    fn reach(&self, asks: crate::journal::Asks, attempt: u32) -> Result<(), Option<String>> {
        let _ = attempt;
        match asks {
            crate::journal::Asks::Approval => Ok(()),
            crate::journal::Asks::Settlement => Err(None),
        }
    }

    /// Where this approver asks, as the log records it with each question (`the task's approver`, `MCP
    /// session 3f2a...`): an answer that arrives from elsewhere than where its question was asked is
    /// refused.
    fn asked_in(&self) -> String {
        "the task's approver".to_owned()
    }

    /// How long a question this approver asks stays open, given `left` of the call's budget: as long as
    /// the call waits for the answer (the default), or longer for one answered in a later call.
    fn open_for(&self, left: Duration) -> Duration {
        left
    }

    /// The id of the question an answer this approver brings from an earlier call is for, if it
    /// brings one for a question that `asks` (a client answering over rounds of input sends the answer
    /// with the next call): the engine then asks nothing new and takes that answer, if that question
    /// is still open, about this call's attempt, asked here, and about these arguments.
    fn carries(&self, asks: crate::journal::Asks) -> Option<String> {
        let _ = asks;
        None
    }
}

impl<F, Fut> Approve for F
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync,
    Fut: std::future::Future<Output = Approval> + Send + 'static,
{
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(self(request.clone()))
    }
}
