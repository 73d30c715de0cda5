//! A person's answer to a question the engine recorded: written to the log under the rules (a
//! question is answered once, [`rules::may_follow`](crate::rules::may_follow)), whoever relays it:
//! [`crate::person::LogApprover`]'s person, the `settle` command, the console, an MCP client.

use serde::{Deserialize, Serialize};

use crate::journal::{
    ApprovalNote, ApprovalStep as Step, Approvals, JournalError, Record, rfc3339, wall_clock,
};
use crate::key::IntentKey;

/// A person's answer to a question the engine asked ([`crate::person::LogApprover`]'s, or any).
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

/// Answer the question asked about attempt `attempt` of intent `key` (the attempt that would start):
/// the record written, or why none was. At most one answer counts per question; a question past its
/// `until`, or whose asker is gone, takes none.
pub async fn answer_approval(
    journal: &dyn Approvals,
    key: &IntentKey,
    attempt: u32,
    decision: &Decision,
) -> Result<Record, ApprovalError> {
    let mut note =
        ApprovalNote::new(decision.step(), decision.by.trim(), decision.why.trim(), rfc3339(wall_clock()));
    note.os_user.clone_from(&decision.os_user);
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
    // The one rule of a waiting question decides (the console shows the same questions); what follows
    // it only says why none waits. `answer_bound` above made attempt - 1 the intent's highest.
    let last = journal.approval(key).await?;
    let Some(asked) = crate::rules::waiting_approval(last.as_ref(), attempt - 1, &note.at).cloned() else {
        let Some(last) = last else {
            let why = "nothing waits for an answer (no question was asked, or the process that asked it has stopped)";
            return Err(not_asked(why.into()));
        };
        let Some(question) = last.approval.as_ref() else {
            return Err(not_asked("nothing was asked".into()));
        };
        let about = last.attempt.saturating_add(1);
        if about != attempt {
            return Err(not_asked(format!("the last question was about attempt {about}")));
        }
        if question.step != Step::Asked {
            return Err(ApprovalError::AlreadyAnswered { record: Box::new(last) });
        }
        let until = question.until.as_deref().unwrap_or("its deadline");
        return Err(not_asked(format!("the question waited until {until} and is closed")));
    };
    // The answer names the question it answers, and comes from where it was asked.
    let question = asked.approval.as_ref();
    note.question = question.and_then(|q| q.question.clone());
    note.asked_in = question.and_then(|q| q.asked_in.clone());
    let record = super::question::record_of(&asked, note);
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
