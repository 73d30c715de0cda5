//! Settlement: a person's verdict on an intent the code could not resolve, kept in the attempt log.
//!
//! An intent is *in doubt* when its last attempt started and never ended, or ended with its effect
//! unknown (an escalated call ends so). Only such an intent can be settled, and each attempt at most
//! once: [`settle`] claims the intent as any call would, checks what the store holds, and writes a
//! `settled` record under the claim.
//!
//! A settlement names the attempt the person examined, and is recorded only on that attempt: when
//! another attempt has started since (the agent probed, found nothing, and tried again), it is refused
//! with [`SettleError::OtherAttempt`], naming the newer attempt and its state, so a verdict about
//! attempt 1 never lands on attempt 2. An answer to an approval is bound the same way
//! ([`answer_approval`](crate::answer_approval)), by the same rule. What the engine does with it:
//!
//! - [`Verdict::Landed`]: every later call of the intent answers `ok`, effect `yes`, with the settled
//!   value (or none), and makes no attempt and no probe.
//! - [`Verdict::NotLanded`]: the intent is open again; its next call makes the next attempt, after the
//!   approver for a `money` tool, without probing or waiting the settle window again.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tool_contract::{Class, Journal, MemoryJournal, Outcome, Settle, Task, Verdict, settle, tool};
//!
//! /// Post a notice; its probe cannot tell (the thread's API is down).
//! #[tool(effect = "send", target = thread, probe = check_thread)]
//! async fn post_notice(thread: &str) -> Result<u64, Class> {
//!     Err(Class::unknown("connection reset after the request was sent"))
//! }
//! async fn check_thread(_thread: &&str, _key: tool_contract::IntentKey) -> tool_contract::Probe<u64> {
//!     tool_contract::Probe::Failed("the thread's API is down".into())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let log = Arc::new(MemoryJournal::new());
//! let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
//! let first = post_notice(&task, "thread-9").await;
//! assert_eq!(first.outcome, Outcome::Unknown);
//!
//! // A person looks at the thread, finds notice 4411, and says so.
//! let found = Settle::new(Verdict::Landed, "alice", "notice 4411 is in thread-9").value(4411);
//! settle(&*log, &first.idempotency_key, 1, &found).await.unwrap();
//!
//! let again = post_notice(&task, "thread-9").await;
//! assert_eq!((again.outcome, again.value), (Outcome::Ok, Some(4411)));
//! assert!(again.message.contains("settled landed by alice"), "{}", again.message);
//! # }
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Claimed, Durability, Journal, JournalError, Owner, Phase, Recall, Record};
use crate::key::IntentKey;
use crate::report::{Applied, Outcome};

/// The most evidence a settlement holds: 1 KiB of UTF-8.
pub const MAX_EVIDENCE_BYTES: usize = 1024;

/// The longest a person's name may be in a record (a settler's, an approver's), in bytes: a name
/// longer than this is refused when a settlement or an approval is written, so a tool that takes a
/// name up front (the operator console's `--by`, its operators) checks it against this at start.
pub const MAX_BY_BYTES: usize = 200;

/// How long [`settle`] waits while another settler (or a call) holds the intent before it gives up.
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// The lease a settler takes: time to check and write one record. Short, so a settler that stops
/// before its release reaches a store across the network blocks the intent only that long; a write
/// that comes after it is refused by the fence, and nothing is settled.
const LEASE: Duration = Duration::from_secs(5);

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
    /// The operating-system user that wrote the request the settlement came in by (`uid 1000
    /// (alice)`), when it came through the file log's request directory: beside `by`, which the
    /// request only claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_user: Option<String>,
}

impl Settlement {
    /// What is wrong with the account, if anything: no settler, no evidence or too much of it.
    pub fn problem(&self) -> Option<String> {
        problem_of(&self.by, &self.evidence)
    }
}

fn problem_of(by: &str, evidence: &str) -> Option<String> {
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

/// A settlement to make: the verdict, who, on what evidence, and (with [`Verdict::Landed`]) the value
/// later calls answer with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settle {
    verdict: Verdict,
    by: String,
    via: Via,
    evidence: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<serde_json::Value>,
    /// Set by the holder of a file log from the request file's owner, never read from a request.
    #[serde(skip)]
    os_user: Option<String>,
}

impl Settle {
    /// A settlement by an operator.
    pub fn new(verdict: Verdict, by: impl Into<String>, evidence: impl Into<String>) -> Settle {
        Settle {
            verdict,
            by: by.into(),
            via: Via::Operator,
            evidence: evidence.into(),
            value: None,
            os_user: None,
        }
    }

    /// Brought in another way (the MCP client's person).
    pub fn via(mut self, via: Via) -> Settle {
        self.via = via;
        self
    }

    /// The value later calls answer with, as the tool would have returned it (only with
    /// [`Verdict::Landed`]; a value that does not serialise is left out).
    pub fn value(self, value: impl Serialize) -> Settle {
        self.json_value(serde_json::to_value(value).ok())
    }

    /// The value as JSON, or none.
    pub fn json_value(mut self, value: Option<serde_json::Value>) -> Settle {
        self.value = value.filter(|v| !v.is_null());
        self
    }

    /// The verdict.
    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// The value given, if any.
    pub fn value_given(&self) -> Option<&serde_json::Value> {
        self.value.as_ref()
    }

    /// The operating-system user that wrote the request this settlement came in by.
    pub(crate) fn os_user(mut self, user: String) -> Settle {
        self.os_user = Some(user);
        self
    }

    /// The settlement record for the intent's last record `last`, stamped `at`.
    pub fn record_for(&self, last: &Record, at: String) -> Record {
        let (outcome, effect) = match self.verdict {
            Verdict::Landed => (Outcome::Ok, Applied::Yes),
            Verdict::NotLanded => (Outcome::Retryable, Applied::No),
        };
        let message = format!(
            "settled {} by {} via {}: {}",
            self.verdict,
            self.by,
            self.via.as_str(),
            one_line(&self.evidence)
        );
        Record {
            outcome: Some(outcome),
            effect_applied: Some(effect),
            message: Some(message),
            value: self.value.clone().filter(|_| self.verdict == Verdict::Landed),
            settled: Some(Settlement {
                verdict: self.verdict,
                by: self.by.clone(),
                via: self.via,
                evidence: self.evidence.clone(),
                at,
                os_user: self.os_user.clone(),
            }),
            ..last.about(Phase::Settled)
        }
    }
}

/// Why a settlement was not recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettleError {
    /// The settlement itself is not acceptable (no evidence, too much, a value with `not_landed`).
    #[error("settlement refused: {0}")]
    Invalid(String),
    /// The store holds no record of the intent.
    #[error("intent {key} has no record in the attempt log: nothing to settle (check the key)")]
    NotFound {
        /// The intent.
        key: IntentKey,
    },
    /// The intent is not in doubt.
    #[error(
        "intent {key} is not in doubt: {state}; only an intent whose last attempt never ended or ended unknown can be settled"
    )]
    NotInDoubt {
        /// The intent.
        key: IntentKey,
        /// Its state, in words (`attempt ord-7741-dc01d768-a2 ended ok`).
        state: String,
    },
    /// The settlement names another attempt than the intent's last: one has started since the person
    /// looked (or the attempt named never was). Nothing is recorded; look at the newer attempt.
    #[error(
        "intent {key}: nothing settled: the settlement is about attempt {attempt}, but {now}; look at that attempt and settle it by its number"
    )]
    OtherAttempt {
        /// The intent.
        key: IntentKey,
        /// The attempt the settlement named.
        attempt: u32,
        /// The intent's last attempt, in words (`attempt 2 (ord-7741-dc01d768-a2) has started since
        /// and never ended`).
        now: String,
        /// The intent's last record.
        last: Box<Record>,
    },
    /// The request carrying the settlement expired before the process holding the log took it
    /// (`tool_contract::journal::file::REQUEST_LIFETIME`): nothing was applied.
    #[error("intent {key}: nothing settled: {why}")]
    Expired {
        /// The intent.
        key: IntentKey,
        /// When it expired, and what to do.
        why: String,
    },
    /// The intent's last attempt was settled already; the first settlement stands.
    #[error("intent {key}: {}", settled_already(.record))]
    AlreadySettled {
        /// The intent.
        key: IntentKey,
        /// The settlement that stands.
        record: Box<Record>,
    },
    /// A call (or another settler) holds the intent now.
    #[error(
        "intent {key} is claimed by {holder} for {left:.1?} more (an attempt in flight, or another settler): settle it once that ends"
    )]
    Busy {
        /// The intent.
        key: IntentKey,
        /// Who holds it.
        holder: Owner,
        /// How long its claim still runs.
        left: Duration,
    },
    /// The store could not be asked, or refused the record.
    #[error("settlement not recorded: {0}")]
    Store(#[from] JournalError),
}

fn settled_already(record: &Record) -> String {
    match &record.settled {
        Some(s) => format!(
            "attempt {} was settled {} by {} via {} at {}: {}",
            record.attempt_id,
            s.verdict,
            s.by,
            s.via.as_str(),
            s.at,
            s.evidence
        ),
        None => format!("attempt {} was settled already", record.attempt_id),
    }
}

/// Settle attempt `attempt` of the intent `key` in `journal`: claim the intent, check that the attempt
/// is still its last, that it is in doubt and not settled yet, and write the settlement (synced)
/// under the claim. The record written, or why nothing was.
///
/// `attempt` is the attempt the person examined (the number after `-a` in its attempt id). Another
/// attempt started since is [`SettleError::OtherAttempt`]: the verdict is not carried over to an
/// attempt nobody looked at. Two settlers racing on one intent: exactly one writes; the other is told
/// who settled it, when and how ([`SettleError::AlreadySettled`]). An intent a call holds right now is
/// not settled ([`SettleError::Busy`]): its attempt may yet end.
pub async fn settle(
    journal: &dyn Journal,
    key: &IntentKey,
    attempt: u32,
    settle: &Settle,
) -> Result<Record, SettleError> {
    settle_within(journal, key, attempt, settle, BUSY_WAIT).await
}

/// [`settle`] without waiting on a holder: an intent someone holds is [`SettleError::Busy`] at once.
/// What a thread with no async runtime runs (the file log's holder answering a request).
pub(crate) async fn settle_now(
    journal: &dyn Journal,
    key: &IntentKey,
    attempt: u32,
    settle: &Settle,
) -> Result<Record, SettleError> {
    settle_within(journal, key, attempt, settle, Duration::ZERO).await
}

async fn settle_within(
    journal: &dyn Journal,
    key: &IntentKey,
    attempt: u32,
    settle: &Settle,
    busy_wait: Duration,
) -> Result<Record, SettleError> {
    if let Some(problem) = problem_of(&settle.by, &settle.evidence) {
        return Err(SettleError::Invalid(problem));
    }
    if settle.verdict == Verdict::NotLanded && settle.value.is_some() {
        return Err(SettleError::Invalid("a `not_landed` settlement has no value".into()));
    }
    let owner = Owner::new(format!("settle:{}:{}", one_line(&settle.by), Owner::unique()));
    let recall = claim(journal, key, &owner, busy_wait).await?;
    let outcome = write(journal, key, attempt, settle, &owner, recall).await;
    if outcome.is_err() {
        journal.release(key, &owner);
    }
    outcome
}

/// Claim `key` for the settler, waiting a little while someone else holds it.
async fn claim(
    journal: &dyn Journal,
    key: &IntentKey,
    owner: &Owner,
    busy_wait: Duration,
) -> Result<Option<Recall>, SettleError> {
    let mut waited = Duration::ZERO;
    let mut nap = Duration::from_millis(20);
    loop {
        match journal.claim(key, owner, LEASE).await? {
            Claimed::Held(recall) => return Ok(recall),
            Claimed::Busy { holder, left } => {
                waited += nap;
                if waited > busy_wait {
                    return Err(SettleError::Busy { key: *key, holder, left });
                }
                tokio::time::sleep(nap.min(left)).await;
                nap = (nap * 2).min(Duration::from_millis(500));
            }
        }
    }
}

/// Check what the store holds under the claim and write the settlement.
async fn write(
    journal: &dyn Journal,
    key: &IntentKey,
    attempt: u32,
    settle: &Settle,
    owner: &Owner,
    recall: Option<Recall>,
) -> Result<Record, SettleError> {
    let Some(recall) = recall else { return Err(SettleError::NotFound { key: *key }) };
    if let Some(now) = crate::rules::answer_bound(attempt, &recall) {
        return Err(SettleError::OtherAttempt { key: *key, attempt, now, last: Box::new(recall.last) });
    }
    if recall.settlement().is_some() {
        return Err(SettleError::AlreadySettled { key: *key, record: Box::new(recall.last) });
    }
    if let Some(state) = crate::rules::not_in_doubt(&recall) {
        return Err(SettleError::NotInDoubt { key: *key, state });
    }
    let record = settle.record_for(&recall.last, super::rfc3339(super::wall_clock()));
    // The record and the release together: a settler that exits at once leaves no claim behind.
    match journal.finish(owner, record.as_record_ref(), Durability::Synced).await {
        Ok(()) => Ok(record),
        Err(e) => {
            // A store that keeps the first settlement of an attempt by a constraint of its own (one
            // shared by several processes) refuses the second: say whose stands.
            match journal.recall(key).await {
                Ok(Some(now)) if now.settlement().is_some() => {
                    Err(SettleError::AlreadySettled { key: *key, record: Box::new(now.last) })
                }
                _ => Err(SettleError::Store(e)),
            }
        }
    }
}

pub(crate) use crate::rules::one_line;

/// Not public API: the `settle` command line, read alike by `tool-contract settle` and
/// `tool-contract-postgres settle` (feature `cli`), and what the commands' usage errors say.
#[doc(hidden)]
#[cfg(feature = "cli")]
pub mod command {
    use std::time::Duration;

    use super::{Settle, SettleError, Verdict};
    use crate::journal::Record;
    use crate::key::IntentKey;

    /// What `settle` was asked.
    pub struct Args {
        /// The log's path or connection string.
        pub log: String,
        /// The intent.
        pub key: IntentKey,
        /// The attempt the person examined.
        pub attempt: u32,
        /// The settlement.
        pub settle: Settle,
        /// One JSON line out.
        pub json: bool,
        /// How long to wait for a process holding the log to take the request.
        pub wait: Duration,
    }

    #[derive(Default)]
    struct Given<'a> {
        log: Option<&'a str>,
        intent: Option<&'a str>,
        attempt: Option<&'a str>,
        verdict: Option<Verdict>,
        value: Option<&'a str>,
        evidence: Option<&'a str>,
        by: Option<&'a str>,
        json: bool,
        wait: Option<Duration>,
    }

    /// The flags of `settle`, read alike by both commands. The checks that go beyond one flag (what
    /// is missing, what excludes what, what a value must look like) are made by [`Flags::check`], so
    /// each says what to give.
    #[derive(clap::Args, Debug)]
    pub struct Flags {
        /// The attempt log: a file's path, or a PostgreSQL connection string
        #[arg(value_name = "LOG")]
        pub log: Option<String>,
        /// The intent in doubt: its key, 32 hex characters (`log` shows it)
        #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
        pub intent: Option<String>,
        /// The attempt you examined: its number, or its attempt id as `log` shows it; refused,
        /// naming the newer one, if another attempt has started since
        #[arg(long, value_name = "N|ID", allow_hyphen_values = true)]
        pub attempt: Option<String>,
        /// The effect landed: later calls answer ok with the value, nothing repeated
        #[arg(long)]
        pub landed: bool,
        /// The effect did not land: the next call makes the next attempt
        #[arg(long)]
        pub not_landed: bool,
        /// With --landed: the call's value, as JSON (a string is quoted: '"text"')
        #[arg(long, value_name = "JSON", allow_hyphen_values = true)]
        pub value: Option<String>,
        /// What was seen, and where
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        pub evidence: Option<String>,
        /// Who settles it
        #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
        pub by: Option<String>,
        /// One JSON document on one line, for machines
        #[arg(long)]
        pub json: bool,
        /// A file log held by an agent: how long to wait for it to take the request, in seconds
        /// (default 10, at most 600)
        #[arg(long, value_name = "SECONDS")]
        pub wait: Option<String>,
    }

    impl Flags {
        /// The settlement asked for, or what is wrong with the command line.
        pub fn check(&self) -> Result<Args, String> {
            let verdict = match (self.landed, self.not_landed) {
                (true, true) => {
                    return Err("`--landed` and `--not-landed` exclude each other: say what was found".into());
                }
                (true, false) => Some(Verdict::Landed),
                (false, true) => Some(Verdict::NotLanded),
                (false, false) => None,
            };
            let given = Given {
                log: self.log.as_deref(),
                intent: self.intent.as_deref(),
                attempt: self.attempt.as_deref(),
                verdict,
                value: self.value.as_deref(),
                evidence: self.evidence.as_deref(),
                by: self.by.as_deref(),
                json: self.json,
                wait: self.wait.as_deref().map(wait).transpose()?,
            };
            complete(given)
        }
    }

    /// The layout of every command's help: the usage line first, as a usage error shows it.
    pub const HELP_TEMPLATE: &str = "usage: {usage}\n\n{about-with-newline}\n{all-args}{after-help}";

    /// What is wrong with a command line, in one line naming the flag: the message a usage error
    /// starts with (the command's help follows it).
    pub fn usage_error(err: &clap::Error) -> String {
        use clap::error::{ContextKind, ContextValue, ErrorKind};
        let flag = |kind| match err.get(kind) {
            Some(ContextValue::String(text)) => Some(text.clone()),
            Some(ContextValue::Strings(texts)) => texts.first().cloned(),
            _ => None,
        };
        // `--task <T>` names the flag `--task`.
        let name = |text: String| text.split(' ').next().unwrap_or_default().to_owned();
        let invalid = flag(ContextKind::InvalidArg).map(name);
        match (err.kind(), invalid) {
            (ErrorKind::UnknownArgument, Some(arg)) if arg.starts_with('-') => {
                format!("unknown flag `{arg}`")
            }
            (ErrorKind::UnknownArgument, Some(arg)) => format!("unexpected `{arg}`"),
            (ErrorKind::InvalidSubcommand, _) => match flag(ContextKind::InvalidSubcommand) {
                Some(command) => format!("unknown command `{command}`"),
                None => "unknown command".to_owned(),
            },
            (ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand, _) => {
                "missing command".to_owned()
            }
            (ErrorKind::MissingRequiredArgument, Some(arg)) => format!("missing `{arg}`"),
            (ErrorKind::ArgumentConflict, Some(arg))
                if flag(ContextKind::PriorArg).map(name) == Some(arg.clone()) =>
            {
                format!("`{arg}` given twice")
            }
            (ErrorKind::InvalidValue, Some(arg))
                if flag(ContextKind::InvalidValue).is_none_or(|v| v.is_empty()) =>
            {
                format!("`{arg}` needs a value")
            }
            _ => {
                // Any other: clap's own first line, without its `error: `.
                let text = err.render().to_string();
                let line = text.lines().next().unwrap_or_default();
                line.strip_prefix("error: ").unwrap_or(line).to_owned()
            }
        }
    }

    fn wait(secs: &str) -> Result<Duration, String> {
        secs.parse::<f64>()
            .ok()
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .filter(|w| *w <= crate::journal::file::REQUEST_LIFETIME)
            .ok_or_else(|| {
                let most = crate::journal::file::REQUEST_LIFETIME.as_secs();
                format!("`--wait {secs}`: a number of seconds from 0 to {most} (a request's lifetime)")
            })
    }

    fn complete(given: Given<'_>) -> Result<Args, String> {
        let log = given.log.ok_or("missing the log's path (or postgres:// URL)")?;
        let intent = given.intent.ok_or("missing `--intent KEY` (the intent key, 32 hex characters)")?;
        let key = IntentKey::parse(intent).map_err(|_| {
            format!(
                "`--intent {intent}`: an intent key is 32 hex characters (`tool-contract log` shows them)"
            )
        })?;
        let attempt = attempt(given.attempt, &key)?;
        let verdict = given.verdict.ok_or("say what was found: `--landed` or `--not-landed`")?;
        let evidence = given.evidence.ok_or("missing `--evidence TEXT`: what was seen, and where")?;
        let by = given.by.ok_or("missing `--by NAME`: who settles it")?;
        let value = match given.value {
            Some(_) if verdict == Verdict::NotLanded => {
                return Err(
                    "`--value` goes with `--landed` only: nothing landed, so there is no value".into()
                );
            }
            Some(text) => Some(serde_json::from_str::<serde_json::Value>(text).map_err(|e| {
                format!("`--value {text}` is not JSON ({e}); a string is quoted: --value '\"text\"'")
            })?),
            None => None,
        };
        let settle = Settle::new(verdict, by, evidence).json_value(value);
        Ok(Args {
            log: log.to_owned(),
            key,
            attempt,
            settle,
            json: given.json,
            wait: given.wait.unwrap_or(Duration::from_secs(10)),
        })
    }

    /// `--attempt N` or `--attempt ID`: the attempt the person examined, by its number or by its attempt
    /// id (`{task}-{first 8 hex of the key}-a{n}`, as `tool-contract log` shows it), which must be one
    /// of the intent's.
    fn attempt(given: Option<&str>, key: &IntentKey) -> Result<u32, String> {
        let text = given.ok_or(
            "missing `--attempt N`: the attempt you examined, by its number or its attempt id \
             (`tool-contract log` shows both); a settlement is recorded on that attempt only",
        )?;
        if let Ok(n) = text.parse::<u32>() {
            return if n == 0 { Err("`--attempt 0`: attempts are numbered from 1".into()) } else { Ok(n) };
        }
        let of_intent = format!("-{}-a", &key.to_string()[..8]);
        let number = text
            .rfind("-a")
            .filter(|at| text[..at + 2].ends_with(&of_intent))
            .and_then(|at| text[at + 2..].parse::<u32>().ok())
            .filter(|n| *n > 0);
        number.ok_or_else(|| {
            format!(
                "`--attempt {text}`: neither an attempt number nor an attempt id of intent {key} \
                 (its ids end `{of_intent}N`)"
            )
        })
    }

    /// The line to print for what a settlement came to, and the exit code: 0 when it was recorded,
    /// 1 when it was refused or not recorded. The text a person or the log gave (the evidence, an
    /// error naming the log) is escaped for the terminal ([`terminal`](crate::journal::terminal)),
    /// in JSON with JSON's own escapes.
    pub fn outcome(done: Result<Record, SettleError>, json: bool) -> (String, u8) {
        use crate::journal::terminal::escape;
        let (line, code) = match (done, json) {
            (Ok(record), true) => (serde_json::json!({ "settled": true, "record": record }).to_string(), 0),
            (Ok(record), false) => {
                let message = record.message.as_deref().unwrap_or_default();
                (format!("{} attempt {}: {message}", record.intent_key, record.attempt_id), 0)
            }
            (Err(e), true) => {
                (serde_json::json!({ "settled": false, "refused": e.to_string() }).to_string(), 1)
            }
            (Err(e), false) => (e.to_string(), 1),
        };
        // One line: every control character in it came from the log or a person.
        (escape(&line).into_owned(), code)
    }
}
