//! People in the loop: a person's verdict on an intent in doubt ([`settle`]), a person's yes or no to a
//! second attempt of a `money` call ([`Approve`], [`LogApprover`], [`answer_approval`]).
//!
//! The records these write are data of the attempt log ([`Settlement`](crate::journal::Settlement),
//! [`ApprovalNote`](crate::journal::ApprovalNote)); this module is the work of making them. A file log
//! held by another process takes both through its request directory
//! ([`journal::file::request_settlement`](crate::journal::file::request_settlement)), which calls in here.

use std::time::Duration;

use crate::journal::BoxFuture;
use crate::key::IntentKey;

mod approval;
#[cfg(feature = "cli")]
pub(crate) mod command;
mod settle;

pub use approval::{ApprovalError, Decision, LogApprover, answer_approval};
pub(crate) use settle::settle_now;
pub use settle::{Settle, SettleError, early_note, settle};

/// The longest a request to the holder of a file log is good for after it was written: 10 minutes. A
/// settler waits at most this long for the holder; a request older than this (or than its settler's
/// wait) is answered `expired`.
pub const REQUEST_LIFETIME: Duration = Duration::from_secs(600);

/// What an approver is asked before a second attempt of a `money` call.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

/// What a person is asked when a call resumes an intent left in doubt and its probe still cannot tell
/// whether the attempt landed ([`Approve::settle`]).
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead with the second attempt.
    Approved,
    /// Do not; the reason is reported.
    Denied(String),
}

/// Says yes or no to a second attempt of a `money` call.
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

    /// Asked when a call resumes an intent left in doubt and its probe still cannot tell: what a
    /// person found, as a settlement the engine records under the call's claim and honours at once
    /// (`landed`: the call answers `ok` from it; `not_landed`: the next attempt, after
    /// [`Approve::approve`] for `money`). `Some(Err(why))` when the person could not tell or could not
    /// be asked; `None`, the default, when this approver asks nobody.
    fn settle<'a>(&'a self, question: &'a InDoubt) -> BoxFuture<'a, Option<Result<Settle, String>>> {
        let _ = question;
        Box::pin(std::future::ready(None))
    }

    /// Who says yes, as the start record of an approved attempt names them (`approved by ...`).
    fn who(&self) -> String {
        "the task's approver".to_owned()
    }

    /// Who said yes to `request`, as the start record of the approved attempt names them: asked once,
    /// right after [`Approve::approve`] approved it. The default is [`Approve::who`]; an approver whose
    /// answer comes from a person it learns of per request (such as [`LogApprover`]) names them.
    fn who_approved(&self, request: &ApprovalRequest) -> String {
        let _ = request;
        self.who()
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
