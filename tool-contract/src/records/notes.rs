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
#[non_exhaustive]
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

/// What a question asks a person.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Asks {
    /// Yes or no to the next attempt of a `money` call: the record's attempt is the one before it.
    #[default]
    Approval,
    /// Whether the attempt in doubt landed: the record's attempt is that one.
    Settlement,
}

impl Asks {
    /// `approval` or `settlement`, as the log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Asks::Approval => "approval",
            Asks::Settlement => "settlement",
        }
    }

    fn is_approval(&self) -> bool {
        *self == Asks::Approval
    }
}

/// Where a question to a person stands: asked, or answered (and how). Every answer is recorded, the
/// no's included, before anything acts on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// A person is asked, and the asker waits (until the question's `until`).
    Asked,
    /// Yes to the next attempt of a `money` call.
    Approved,
    /// No to the next attempt.
    Denied,
    /// The person declined to answer (they closed or refused the form): no.
    Declined,
    /// The person, or their client, cancelled the question: no.
    Cancelled,
    /// No answer came while the asker waited: no.
    Unanswered,
    /// The attempt in doubt landed, the person says.
    Landed,
    /// The attempt in doubt did not land, the person says.
    NotLanded,
    /// The person cannot tell whether the attempt landed.
    CantTell,
}

impl Step {
    /// As the log writes it: `asked`, `approved`, `denied`, `declined`, `cancelled`, `unanswered`,
    /// `landed`, `not_landed` or `cant_tell`.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Asked => "asked",
            Step::Approved => "approved",
            Step::Denied => "denied",
            Step::Declined => "declined",
            Step::Cancelled => "cancelled",
            Step::Unanswered => "unanswered",
            Step::Landed => "landed",
            Step::NotLanded => "not_landed",
            Step::CantTell => "cant_tell",
        }
    }

    /// Whether this step answers a question that `asks`: an approval is answered approved or denied,
    /// a settlement landed, not landed or can't tell, and either declined, cancelled or unanswered.
    pub fn answers(self, asks: Asks) -> bool {
        match self {
            Step::Asked => false,
            Step::Declined | Step::Cancelled | Step::Unanswered => true,
            Step::Approved | Step::Denied => asks == Asks::Approval,
            Step::Landed | Step::NotLanded | Step::CantTell => asks == Asks::Settlement,
        }
    }
}

/// An `approval` record's account: a question to a person (before the next attempt of a `money` call,
/// or about an attempt in doubt) or its answer: the step, who, why, when, and on a question until when
/// the asker waits, what it binds (the call's arguments) and where it was asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalNote {
    /// Asked, or how it was answered.
    pub step: Step,
    /// On a question, who is asked; on an answer, who answered (as the client or the operator named
    /// them).
    pub by: String,
    /// On a question, what it asks (what the attempts so far left, and the arguments it shows); on an
    /// answer, the reason or the evidence given.
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
    /// The question's id, issued once when it is asked, on the question and on its answer: an answer
    /// is to one question. Absent on records of builds before ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// What the question asks (`approval` when absent).
    #[serde(default, skip_serializing_if = "Asks::is_approval")]
    pub asks: Asks,
    /// Where the question was asked (`MCP session 3f2a...`, `the operator console`); on an answer,
    /// where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_in: Option<String>,
    /// On a question: the digest of the call's arguments it binds ([`super::Record::args`]); an answer
    /// applies to a call with the same arguments only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    /// On a question: the arguments it shows the person, by name, as JSON text cut to 240 bytes (those
    /// the tool names with `#[tool(shows = [..])]`: for `money`, the amount and the target).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub shows: std::collections::BTreeMap<String, String>,
}

impl ApprovalNote {
    /// A question or an answer of `step`, by `by`, for the reason `why`, written at `at`, with nothing
    /// else said yet.
    pub fn new(step: Step, by: impl Into<String>, why: impl Into<String>, at: impl Into<String>) -> Self {
        ApprovalNote {
            step,
            by: by.into(),
            why: why.into(),
            at: at.into(),
            until: None,
            os_user: None,
            question: None,
            asks: Asks::Approval,
            asked_in: None,
            args: None,
            shows: std::collections::BTreeMap::new(),
        }
    }

    /// What is wrong with the account, if anything: no name, no reason or too long a one, a deadline
    /// on an answer or none on a question, an answer that does not answer what its question asks.
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
        if self.step != Step::Asked && !self.step.answers(self.asks) {
            return Some(format!(
                "`{}` does not answer a question that asks for {}",
                self.step.as_str(),
                self.asks.as_str()
            ));
        }
        match (self.step, &self.until) {
            (Step::Asked, None) => Some("a question (`asked`) says until when it waits (`until`)".into()),
            (Step::Asked, Some(_)) => None,
            (_, Some(_)) => Some("only a question (`asked`) has `until`".into()),
            (_, None) => None,
        }
    }
}
