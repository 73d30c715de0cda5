//! What a person's word on an attempt records, as data: a settlement ([`Settlement`]) and an approval
//! note ([`ApprovalNote`]). Making them is [`crate::person`]'s work.

use serde::{Deserialize, Serialize};

/// The most evidence a settlement holds: 1 KiB of UTF-8.
pub const MAX_EVIDENCE_BYTES: usize = 1024;

/// The longest a person's name may be in a record (a settler's, an approver's), in bytes: a name
/// longer than this is refused when a settlement or an approval is written, so a tool that takes a
/// name up front (the operator console's `--by`, its operators) checks it against this at start.
pub const MAX_BY_BYTES: usize = 200;

/// What a person found the attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The effect is in the world: later calls answer with it and do nothing.
    Landed,
    /// The effect is not in the world: the intent is open again.
    NotLanded,
}

impl Verdict {
    /// `landed` or `not_landed`, as the log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Landed => "landed",
            Verdict::NotLanded => "not_landed",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Landed => "landed",
            Verdict::NotLanded => "not landed",
        })
    }
}

/// Who brought the verdict in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// An operator: the `tool-contract settle` command, the console, or code of one's own.
    Operator,
    /// The person at the MCP client, asked through it (elicitation).
    Client,
}

impl Via {
    /// `operator` or `client`.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Operator => "operator",
            Via::Client => "client",
        }
    }
}

/// A settlement record's account: the verdict, who gave it, how, on what evidence, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settlement {
    /// What the person found.
    pub verdict: Verdict,
    /// Who settled it (a name, an email, the request's actor).
    pub by: String,
    /// How the verdict came in.
    pub via: Via,
    /// What the person saw, in their words: required, at most [`MAX_EVIDENCE_BYTES`].
    pub evidence: String,
    /// When it was settled, RFC 3339 UTC.
    pub at: String,
    /// When the person saw the attempt they settle (they looked at the world, or at the form that
    /// asked them), RFC 3339 UTC, no later than `at`: what their word is judged by. A `not_landed`
    /// counts only if seen once the attempt could no longer land. Absent, `at` stands for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
    /// The operating-system user that wrote the request the settlement came in by (`uid 1000
    /// (alice)`), when it came through the file log's request directory: beside `by`, which the
    /// request only claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_user: Option<String>,
}

impl Settlement {
    /// What is wrong with the account, if anything: no settler, no evidence or too much of it, or a
    /// `seen` that is not a time no later than `at`.
    pub fn problem(&self) -> Option<String> {
        if let Some(problem) = problem_of(&self.by, &self.evidence) {
            return Some(problem);
        }
        let seen = self.seen.as_deref()?;
        match (super::parse_rfc3339(seen), super::parse_rfc3339(&self.at)) {
            (Some(seen), Some(at)) if seen <= at => None,
            (Some(_), Some(_)) => Some("a settlement's `seen` is no later than its `at`".into()),
            _ => Some("a settlement's `seen` and `at` are RFC 3339 times".into()),
        }
    }

    /// When the person saw the attempt: `seen`, or `at` without it (RFC 3339 UTC).
    pub fn seen_at(&self) -> &str {
        self.seen.as_deref().unwrap_or(&self.at)
    }
}

pub(crate) fn problem_of(by: &str, evidence: &str) -> Option<String> {
    if by.trim().is_empty() {
        return Some("a settlement names who settled it (`by`)".into());
    }
    if by.len() > MAX_BY_BYTES {
        return Some(format!("`by` is {} bytes; at most {MAX_BY_BYTES}", by.len()));
    }
    if evidence.trim().is_empty() {
        return Some("a settlement gives its evidence: what was seen, and where".into());
    }
    if evidence.len() > MAX_EVIDENCE_BYTES {
        return Some(format!(
            "the evidence is {} bytes; at most {MAX_EVIDENCE_BYTES}: say where the rest can be found",
            evidence.len()
        ));
    }
    None
}

/// The longest reason an approval record keeps, in bytes.
pub const MAX_WHY_BYTES: usize = 1024;

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
