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
//! ([`answer_approval`](super::answer_approval)), by the same rule. What the engine does with it:
//!
//! - [`Verdict::Landed`]: every later call of the intent answers `ok`, effect `yes`, with the settled
//!   value (or none), and makes no attempt and no probe.
//! - [`Verdict::NotLanded`]: the intent is open again; its next call makes the next attempt, after the
//!   approver for a `money` tool, without probing again, if the settlement was made once the attempt
//!   could no longer land (its start, its budget and its landing horizon). One made sooner says nothing
//!   of a request the service still held: the next call probes the attempt again once that time has
//!   passed. [`early_note`] tells the person so when they settle.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tool_contract::journal::{Journal, Verdict};
//! use tool_contract::person::{Settle, settle};
//! use tool_contract::{Class, MemoryJournal, Outcome, Task, tool};
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

use crate::journal::{Claimed, Durability, Journal, JournalError, Owner, Phase, Recall, Record};
use crate::journal::{Settlement, Verdict, Via, rfc3339, wall_clock};
use crate::key::IntentKey;
use crate::records::notes::problem_of;
use crate::report::{Applied, Outcome};
use crate::rules::one_line;

/// How long [`settle`] waits while another settler (or a call) holds the intent before it gives up.
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// The lease a settler takes: time to check and write one record. Short, so a settler that stops
/// before its release reaches a store across the network blocks the intent only that long; a write
/// that comes after it is refused by the fence, and nothing is settled.
const LEASE: Duration = Duration::from_secs(5);

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
    /// When the person saw the attempt, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seen: Option<String>,
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
            seen: None,
            os_user: None,
        }
    }

    /// When the person saw the attempt they settle: when they looked at the world, or at the page or
    /// form that showed them the attempt. Their `not_landed` is judged by it: it counts only if seen
    /// once the attempt could no longer land. Without it, the settlement's own time stands for it,
    /// which is later and so trusts a `not_landed` sooner: give it whenever the person looked before.
    pub fn seen(mut self, at: std::time::SystemTime) -> Settle {
        self.seen = Some(rfc3339(at));
        self
    }

    /// When the person saw the attempt, as [`Settle::seen`] was given it (RFC 3339 UTC).
    pub fn seen_given(&self) -> Option<&str> {
        self.seen.as_deref()
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

    /// What the person saw, and where.
    pub fn evidence(&self) -> &str {
        &self.evidence
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
            // A probe's verdict the settlement follows stays with its stamp (`started`, copied from the
            // last record): the attempt was over when that probe looked.
            probe: last.probe,
            // When the attempt's call ended, and what it ran with, as the attempt's records say.
            sent_by: last.sent_by.clone(),
            args: last.args.clone(),
            settled: Some(Settlement {
                verdict: self.verdict,
                by: self.by.clone(),
                via: self.via,
                evidence: self.evidence.clone(),
                // Never later than the settlement itself.
                seen: self.seen.clone().filter(|seen| *seen < at),
                at,
                os_user: self.os_user.clone(),
            }),
            ..last.about(Phase::Settled)
        }
    }
}

/// What the person who recorded `settled` (a settlement, as [`settle`] returns it) should know when
/// their `not_landed` was given while the attempt could still land: until when it could, and that the
/// next call probes the attempt again once that has passed instead of taking the word as it stands.
/// `None` for a `landed` settlement, or a `not_landed` seen after that time.
///
/// The time is the engine's own: the attempt's last possible send as the log's stamps bound it (its
/// start and budget, and the settlement itself, each read as the latest instant it may stand for), plus
/// the default landing horizon, [`DEFAULT_HORIZON`](crate::effect::DEFAULT_HORIZON) (the log does not hold
/// the tool's own); and the word is judged by when the person saw the attempt.
///
/// ```
/// use tool_contract::journal::{Record, Verdict};
/// use tool_contract::person::{Settle, early_note};
///
/// let attempt: Record = serde_json::from_str(
///     r#"{"phase":"start","task":"t","call":"post","intent_key":"b56ee2ce5d70dc24aa8b3866ee8854a0",
///         "attempt":1,"attempt_id":"t-a1","started":"2026-12-01T06:00:00Z","budget_left_s":29}"#,
/// )
/// .unwrap();
/// let nothing = Settle::new(Verdict::NotLanded, "alice", "thread-9 holds nothing");
/// // Settled 10 s after the start: the request could leave until the settlement (read as up to 2 s
/// // later, 06:00:12), and land 5 s after that.
/// let early = nothing.record_for(&attempt, "2026-12-01T06:00:10Z".into());
/// let note = early_note(&early).unwrap();
/// assert!(note.contains("could still land until 2026-12-01T06:00:17Z"), "{note}");
/// // Settled a minute later, it counts as it stands.
/// assert_eq!(early_note(&nothing.record_for(&attempt, "2026-12-01T06:01:10Z".into())), None);
/// ```
pub fn early_note(settled: &Record) -> Option<String> {
    let said = settled.settled.as_ref()?;
    if said.verdict != Verdict::NotLanded {
        return None;
    }
    let stamps = crate::rules::stamps(settled);
    let now = stamps.settled?;
    let reached = crate::rules::reached_by(stamps.ran, stamps.sent, stamps.settled, now);
    let horizon = crate::effect::DEFAULT_HORIZON;
    // A person's word is not the service's: the attempt may still be in flight (`Applied::Unknown`).
    let until = crate::policy::landing_ends(Some(reached), Applied::Unknown, |at| {
        at.checked_add(horizon).unwrap_or(at)
    })?;
    // Whether the word counts as it stands is the rule every reader of a "not landed" follows.
    let seen = stamps.seen.unwrap_or(now);
    let counts = crate::policy::landing(Some(until), seen, now, until) == crate::policy::Horizon::Passed;
    (!counts).then(|| {
        format!(
            "attempt {} could still land until {} (its request could leave until {}, by the log's stamps read \
             to the latest they may stand for, plus the default landing horizon of {} s; a tool may declare \
             another, and with none this word counts at once): the next call does not take this not_landed \
             as it stands, but probes the attempt again once that time has passed",
            settled.attempt,
            rfc3339(until),
            rfc3339(reached),
            horizon.as_secs()
        )
    })
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
    if let Some(seen) = &settle.seen
        && crate::journal::parse_rfc3339(seen).is_none()
    {
        return Err(SettleError::Invalid(format!(
            "when the attempt was seen is an RFC 3339 time, not {}",
            crate::text::cut(seen)
        )));
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
    let record = settle.record_for(&recall.last, rfc3339(wall_clock()));
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
