//! The state of one call, shared by the single and the bulk engine: its claim, attempts, log records
//! and reports.

use std::future::Future;
use std::task::{Poll, Waker};
use std::time::{Duration, SystemTime};

use super::claim::{Claim, Refused};
use super::guard::{guarded, secs};
use crate::call::Call;
use crate::classify::Class;
use crate::journal::{Durability, LogValue, Phase, Recall, RecordRef, rfc3339};
use crate::key::IntentKey;
use crate::policy::{Room, Settle};
use crate::probe::{Probe, ProbeMark, Prober};
use crate::report::{Applied, Item, Outcome, Report};
use crate::spec::ToolSpec;
use crate::task::{Approval, ApprovalRequest, Escalation, Task};

/// Take the intent's turn in this process and, with a log, its claim in the store: what is known of
/// the intent, or why the call may not start.
pub(crate) async fn take_claim<'a>(
    task: &'a Task,
    spec: &ToolSpec,
    key: IntentKey,
) -> Result<(Claim<'a>, Option<Recall>), Stop> {
    let mut claim = Claim::turn(task.turns(), key).await;
    let Some(store) = task.journal_ref() else {
        let word = claim.word();
        return Ok((claim, word));
    };
    match claim.in_store(store, || task.remaining(), spec.floor()).await {
        Ok(recall) => Ok((claim, recall)),
        Err(Refused::Store(e)) => Err(Stop {
            outcome: Outcome::Retryable,
            applied: Applied::No,
            message: format!("{e}; the intent could not be claimed, so nothing was started"),
            wait: None,
        }),
        Err(Refused::Busy { holder, left }) => Err(Stop {
            outcome: Outcome::Retryable,
            applied: Applied::Unknown,
            message: format!(
                "another worker ({holder}) is running this intent for up to {} more, longer than the {} left: \
                 not started; call again after it, and the log will say what it did",
                secs(left),
                secs(task.remaining())
            ),
            wait: Some(left),
        }),
    }
}

/// The instant a wait ends, as the log writes it: RFC 3339, rounded up to the second.
pub(crate) fn retry_stamp(wait: Duration) -> String {
    let at = SystemTime::now() + wait;
    let rounded = match at.duration_since(std::time::UNIX_EPOCH) {
        Ok(since) if since.subsec_nanos() > 0 => {
            at + Duration::from_nanos(u64::from(1_000_000_000 - since.subsec_nanos()))
        }
        _ => at,
    };
    rfc3339(rounded)
}

/// A wait an earlier run was asked for (`retry_at` on its last record) that has not yet passed.
pub(crate) struct ResumeWait {
    until: String,
    left: Duration,
}

impl ResumeWait {
    pub(crate) fn of(last: &crate::journal::Record) -> Option<ResumeWait> {
        let until = last.retry_at.as_deref()?;
        let left = crate::journal::parse_rfc3339(until)?.duration_since(SystemTime::now()).ok()?;
        Some(ResumeWait { until: until.to_owned(), left })
    }
}

/// Why the engine stopped before another attempt.
pub(crate) struct Stop {
    pub(crate) outcome: Outcome,
    pub(crate) applied: Applied,
    pub(crate) message: String,
    pub(crate) wait: Option<Duration>,
}

impl Stop {
    /// A stop that keeps the last attempt's outcome and effect.
    pub(crate) fn from_class(class: &Class, message: String, wait: Option<Duration>) -> Stop {
        Stop { outcome: class.outcome(), applied: class.effect(), message, wait }
    }
}

/// The state of one call, shared by the single and the bulk engine.
pub(crate) struct Run<'a> {
    pub(crate) task: &'a Task,
    pub(crate) spec: &'a ToolSpec,
    pub(crate) key: IntentKey,
    pub(crate) attempt: u32,
    pub(crate) attempt_id: String,
    /// An earlier attempt of this call may have applied its effect and no probe has said otherwise;
    /// a later attempt that applied nothing does not make the call's effect `no`.
    pub(crate) maybe_applied: bool,
    /// The earliest instant for the next attempt the service asked for (RFC 3339), written on the end
    /// records of the attempt that was told to wait, so a restarted process waits too.
    pub(crate) retry_at: Option<String>,
    /// The side effect's claim on its intent; `None` for a read.
    pub(crate) claim: Option<&'a Claim<'a>>,
    /// When the last attempt may have reached the service, for the settle window.
    pub(crate) reached: Option<tokio::time::Instant>,
}

impl<'a> Run<'a> {
    pub(crate) fn new(task: &'a Task, spec: &'a ToolSpec, key: IntentKey) -> Self {
        Run {
            task,
            spec,
            key,
            attempt: 0,
            attempt_id: String::new(),
            maybe_applied: false,
            retry_at: None,
            claim: None,
            reached: None,
        }
    }

    /// Number the next attempt: `{task}-{first 8 hex of the key}-a{n}`, unique across the task's intents.
    pub(crate) fn next_attempt(&mut self) {
        self.attempt += 1;
        self.retry_at = None;
        self.attempt_id = attempt_id(self.task.id(), &self.key, self.attempt);
    }

    /// Take the attempt an earlier run recorded as the one that may have reached the service, by the
    /// wall-clock stamp it logged.
    pub(crate) fn reached_at(&mut self, started: &str) {
        let since = crate::journal::parse_rfc3339(started)
            .and_then(|at| SystemTime::now().duration_since(at).ok())
            .unwrap_or_default();
        let now = tokio::time::Instant::now();
        self.reached = Some(now.checked_sub(since).unwrap_or(now));
    }

    /// How much longer the last attempt's request may be held by the service (its settle window).
    pub(crate) fn unsettled_for(&self) -> Duration {
        match self.reached {
            Some(at) => {
                (at + self.spec.settle_window()).saturating_duration_since(tokio::time::Instant::now())
            }
            None => Duration::ZERO,
        }
    }

    /// Whether a probe that found nothing of an attempt with this outcome can be trusted yet.
    pub(crate) fn settle(&self, class: &Class) -> Settle {
        let unsettled = self.unsettled_for();
        if class.effect() == Applied::No || unsettled.is_zero() {
            Settle::Settled
        } else if unsettled >= self.task.remaining() {
            Settle::TooLong
        } else {
            Settle::Wait
        }
    }

    /// The report of a call whose probe found nothing while the service may still hold the request.
    pub(crate) fn unsettled<T>(&self, class: &Class) -> Report<T> {
        let wait = self.unsettled_for();
        let message = format!(
            "{}; the probe found nothing, but {} requests may stay in flight at the service for {}: \
             {} more, longer than the {} left",
            class.message(),
            self.spec.name(),
            secs(self.spec.settle_window()),
            secs(wait),
            secs(self.task.remaining())
        );
        self.report(Outcome::Unknown, Applied::Unknown, message, Some(wait))
    }

    /// Whether the call's records are kept: in the task's log, or, for a side effect with no log, in
    /// memory for the calls of the same intent waiting their turn.
    pub(crate) fn keeps_records(&self) -> bool {
        self.task.journal_ref().is_some() || self.claim.is_some()
    }

    /// Hand a read's held start record to the log once the read has to wait: a hung read is visible.
    pub(crate) fn flush(&self) {
        if let Some(journal) = self.task.journal_ref() {
            // A read's record: a failure here only loses attempt numbering, which the next append reports.
            let _ = journal.flush();
        }
    }

    /// The highest attempt number the log holds for the intent, without reading its last record.
    pub(crate) async fn logged_attempts(&self) -> Option<u32> {
        match self.task.journal_ref() {
            Some(journal) => journal.attempts(&self.key).await,
            None => None,
        }
    }

    /// The attempt's call context; from now on its request may reach the service.
    pub(crate) fn call(&mut self, limit: Duration) -> Call {
        let now = tokio::time::Instant::now();
        self.reached = Some(now);
        Call {
            task_id: self.task.id_arc(),
            key: self.key,
            attempt: self.attempt,
            attempt_id: self.attempt_id.as_str().into(),
            deadline: now.checked_add(limit).unwrap_or(now),
        }
    }

    pub(crate) fn record<'r>(&'r self, phase: Phase, left: Duration, started: &'r str) -> RecordRef<'r> {
        RecordRef {
            phase,
            task: self.task.id(),
            call: self.spec.name(),
            intent_key: self.key,
            attempt: self.attempt,
            attempt_id: &self.attempt_id,
            started,
            budget_left_s: left.as_secs(),
            outcome: None,
            effect_applied: None,
            probe: None,
            message: None,
            retry_at: None,
            value: None,
        }
    }

    /// Write the start record ahead of the attempt; `value` carries what a bulk call knew of its items.
    /// A side effect's start is fenced by its claim and on stable storage before this returns.
    pub(crate) async fn log_start(
        &self,
        left: Duration,
        started: SystemTime,
        value: Option<serde_json::Value>,
    ) -> Result<(), crate::JournalError> {
        let stamp = rfc3339(started);
        let mut record = self.record(Phase::Start, left, &stamp);
        record.value = value.as_ref();
        let Some(journal) = self.task.journal_ref() else {
            if let Some(claim) = self.claim {
                claim.remember(record);
            }
            return Ok(());
        };
        let appended = match self.claim.and_then(Claim::owner) {
            Some(owner) => journal.start(owner, record, Durability::Synced),
            None => journal.append_ref(record, Durability::Lazy),
        };
        let mut appended = std::pin::pin!(appended);
        // Most appends are done when first polled (a buffered record is written at once): no timer then.
        if let Poll::Ready(done) = appended.as_mut().poll(&mut std::task::Context::from_waker(Waker::noop()))
        {
            return done;
        }
        // A store that hangs (a stuck disk) must not hold the call past its deadline; a start record that
        // lands late reads as unfinished and is probed next time.
        match tokio::time::timeout(left, appended).await {
            Ok(appended) => appended,
            Err(_) => Err(crate::JournalError::Io {
                context: "attempt log: the start record was not stored within the budget".to_owned(),
                source: std::io::ErrorKind::TimedOut.into(),
            }),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn log_end(
        &self,
        left: Duration,
        started: SystemTime,
        outcome: Outcome,
        applied: Applied,
        probe: Option<ProbeMark>,
        message: &str,
        value: Option<serde_json::Value>,
    ) {
        let stamp = rfc3339(started);
        let mut record = self.record(Phase::End, left, &stamp);
        record.outcome = Some(outcome);
        record.effect_applied = Some(applied);
        record.probe = probe;
        record.message = Some(message);
        record.retry_at = self.retry_at.as_deref();
        record.value = value.as_ref();
        let Some(journal) = self.task.journal_ref() else {
            if let Some(claim) = self.claim {
                claim.remember(record);
            }
            return;
        };
        // Losing an end record is safe: the attempt then reads as unfinished and is probed next time.
        let appended = journal.append_ref(record, Durability::Buffered);
        let _ = appended.await;
    }

    /// The call's effect given this attempt's: never `no` while an earlier attempt may have landed.
    pub(crate) fn call_effect(&self, attempt: Applied) -> Applied {
        if self.maybe_applied && attempt == Applied::No { Applied::Unknown } else { attempt }
    }

    pub(crate) fn report<T>(
        &self,
        outcome: Outcome,
        applied: Applied,
        message: String,
        wait: Option<Duration>,
    ) -> Report<T> {
        let mut message = message;
        if outcome == Outcome::Unknown {
            message = self.escalate(message);
        }
        let call_effect = self.call_effect(applied);
        if call_effect != applied {
            message.push_str("; an earlier attempt may have landed");
        }
        let applied = call_effect;
        Report {
            outcome,
            effect_applied: applied,
            attempt_id: self.attempt_id.clone(),
            idempotency_key: self.key,
            retry_after_s: wait.map(ceil_secs),
            deadline_left_s: self.task.remaining().as_secs(),
            message,
            value: None,
            items: Vec::new(),
        }
    }

    /// Hand the call to the task's escalation sink; the message says where it went.
    pub(crate) fn escalate(&self, message: String) -> String {
        match self.task.escalation() {
            Some(sink) => {
                sink.escalate(Escalation {
                    task: self.task.id().to_owned(),
                    call: self.spec.name().to_owned(),
                    key: self.key,
                    attempt_id: self.attempt_id.clone(),
                    reason: message.clone(),
                });
                format!("{message}; escalated")
            }
            None => format!("{message}; no escalation sink is configured: resolve it by reading the world"),
        }
    }

    pub(crate) fn ok<T>(&self, value: T, applied: Applied, message: String) -> Report<T> {
        Report {
            outcome: Outcome::Ok,
            effect_applied: applied,
            attempt_id: self.attempt_id.clone(),
            idempotency_key: self.key,
            retry_after_s: None,
            deadline_left_s: self.task.remaining().as_secs(),
            message,
            value: Some(value),
            items: Vec::new(),
        }
    }

    pub(crate) fn applied_on_ok(&self) -> Applied {
        if self.spec.effect().has_side_effect() { Applied::Yes } else { Applied::No }
    }

    pub(crate) async fn succeeded<T: LogValue>(
        &self,
        value: T,
        left: Duration,
        started: SystemTime,
    ) -> Report<T> {
        let mut message = String::with_capacity(self.spec.name().len() + 28);
        message.push_str(self.spec.name());
        message.push_str(" done on attempt ");
        push_decimal(&mut message, u64::from(self.attempt));
        if self.keeps_records() {
            let json = value.to_log().ok();
            self.log_end(left, started, Outcome::Ok, self.applied_on_ok(), None, &message, json).await;
        }
        self.ok(value, self.applied_on_ok(), message)
    }

    pub(crate) fn replayed<T>(&self, value: T) -> Report<T> {
        let message = format!(
            "{} already done by attempt {} (recorded in the attempt log); not repeated",
            self.spec.name(),
            self.attempt_id
        );
        self.ok(value, self.applied_on_ok(), message)
    }

    /// Write the attempt's start record, then check the budget again: a side effect whose start record
    /// cannot be stored, or whose storing left less than the attempt may start with, is not started.
    /// When the start record may still land (a store slower than the budget), an end record follows
    /// it saying the attempt was not started, so the log says what the report says. `Ok` with the
    /// budget left for the attempt.
    pub(crate) async fn start_attempt(
        &self,
        left: Duration,
        started: SystemTime,
        value: Option<serde_json::Value>,
    ) -> Result<Duration, Stop> {
        let side = self.spec.effect().has_side_effect();
        // `logged`: the start record is, or may yet be, in the log, so it gets an end record.
        let (stop, logged) = match self.log_start(left, started, value.clone()).await {
            Err(err) if side => {
                let late = matches!(&err, crate::JournalError::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::TimedOut);
                let message = format!("{err}; the attempt was not started");
                (Stop { outcome: Outcome::Retryable, applied: Applied::No, message, wait: None }, late)
            }
            _ => {
                let now = self.task.remaining();
                match self.may_start(now) {
                    Err(stop) if side => (stop, true),
                    _ => return Ok(now),
                }
            }
        };
        if logged {
            let applied = self.call_effect(Applied::No);
            self.log_end(left, started, Outcome::Retryable, applied, None, &stop.message, value).await;
        }
        Err(stop)
    }

    /// The time an attempt gets of `left`: all of it, but for a side effect with a probe, what the probe
    /// needs is kept back (the reserve; without one, the floor; without a floor, a quarter of `left`),
    /// so an attempt that times out can still be resolved inside the budget.
    pub(crate) fn limit(&self, left: Duration, has_probe: bool) -> Duration {
        if !self.spec.effect().has_side_effect() || !has_probe {
            return left;
        }
        let reserve = match self.spec.reserve() {
            Duration::ZERO => left / 4,
            reserve => reserve,
        };
        left.saturating_sub(reserve).max(self.spec.floor()).min(left)
    }

    /// Whether an attempt may start with `left` of the budget: never on an empty budget, floor or none
    /// (it could land and never be resolved), never below the floor.
    pub(crate) fn may_start(&self, left: Duration) -> Result<(), Stop> {
        if left.is_zero() || left < self.spec.floor() { Err(self.refusal(left)) } else { Ok(()) }
    }

    /// Why an attempt may not start with `left` of the budget.
    pub(crate) fn refusal(&self, left: Duration) -> Stop {
        let message = if left.is_zero() {
            format!("budget spent: nothing left for {}; not started", self.spec.name())
        } else {
            format!(
                "budget spent: {} left, {} needs at least {} to start; not started",
                secs(left),
                self.spec.name(),
                secs(self.spec.floor())
            )
        };
        Stop { outcome: Outcome::Retryable, applied: Applied::No, message, wait: None }
    }

    pub(crate) fn landed<T>(&self, value: T, class: &Class) -> Report<T> {
        let message = format!(
            "{}; the probe found attempt {} landed, so it was not repeated",
            class.message(),
            self.attempt_id
        );
        self.ok(value, Applied::Yes, message)
    }

    pub(crate) fn without_probe<T>(&self, class: Class) -> Report<T> {
        if class.effect() == Applied::No {
            let msg =
                format!("{}; not retried: {} has no probe to check first", class.message(), self.spec.name());
            self.report(class.outcome(), Applied::No, msg, class.wait())
        } else {
            self.unresolved(&format!("{}; {} has no probe to resolve it", class.message(), self.spec.name()))
        }
    }

    pub(crate) fn probe_failed<T>(&self, class: Class, why: &str) -> Report<T> {
        if class.effect() == Applied::No {
            let msg =
                format!("{}; not retried: the probe before a second attempt failed ({why})", class.message());
            self.report(class.outcome(), Applied::No, msg, class.wait())
        } else {
            self.unresolved(&format!("{}; the probe could not tell ({why})", class.message()))
        }
    }

    pub(crate) fn unresolved<T>(&self, why: &str) -> Report<T> {
        self.report(Outcome::Unknown, Applied::Unknown, why.to_owned(), None)
    }

    /// Run the probe under the budget left and log its verdict against the attempt it resolves.
    pub(crate) async fn probe<T: LogValue, P: Prober<T>>(&self, probe: &mut P) -> Probe<T> {
        let left = self.task.remaining();
        let started = SystemTime::now();
        let verdict = if left.is_zero() {
            Probe::Failed("no budget left to run it".to_owned())
        } else {
            match tokio::time::timeout(left, guarded(|| probe.probe(self.key))).await {
                Ok(Ok(verdict)) => verdict,
                Ok(Err(panic)) => Probe::Failed(format!("the probe panicked: {panic}")),
                Err(_) => Probe::Failed(format!("the probe timed out after {}", secs(left))),
            }
        };
        let (outcome, applied, msg, value) = match &verdict {
            Probe::Landed(v) => (Outcome::Ok, Applied::Yes, "probe: landed".to_owned(), v.to_log().ok()),
            Probe::NotLanded => (Outcome::Retryable, Applied::No, "probe: not landed".to_owned(), None),
            Probe::Failed(why) => (Outcome::Unknown, Applied::Unknown, format!("probe failed: {why}"), None),
        };
        self.log_end(left, started, outcome, applied, Some(verdict.mark()), &msg, value).await;
        verdict
    }

    /// Whether the budget left can hold the wait before the next attempt (backoff, or the service's
    /// `Retry-After` when longer) and the tool's floor; the wait when it can. A call resumed from the
    /// log (`made == 0`) has no earlier attempt of its own to back off from.
    pub(crate) fn room(&self, class: &Class, made: u32) -> (Room, Duration) {
        if made == 0 {
            return (Room::Enough, Duration::ZERO);
        }
        let left = self.task.remaining();
        let floor = self.spec.floor();
        if let Some(asked) = class.wait()
            && asked.saturating_add(floor) > left
        {
            return (Room::AskedTooLong, asked);
        }
        let seed = u64::from_le_bytes(self.key.as_bytes()[..8].try_into().unwrap_or([0; 8]));
        let backoff = self.spec.waits().wait(self.attempt.max(1), seed);
        let wait = class.wait().map_or(backoff, |asked| asked.max(backoff));
        if wait.saturating_add(floor) > left || left < floor {
            return (Room::TooShort, wait);
        }
        (Room::Enough, wait)
    }

    /// Why the budget cannot hold another attempt, as [`Run::room`] found.
    pub(crate) fn out_of_budget(&self, class: &Class, room: Room, asked: Duration) -> Stop {
        let left = self.task.remaining();
        if room == Room::AskedTooLong {
            let message = format!(
                "{}; the service asked to wait {}, longer than the {} left: not retried",
                class.message(),
                secs(asked),
                secs(left)
            );
            return Stop::from_class(class, message, Some(asked));
        }
        let message = format!(
            "{}; not retried: {} left cannot hold the next wait and attempt",
            class.message(),
            secs(left)
        );
        Stop::from_class(class, message, class.wait())
    }

    /// Honour, in a restarted process, the wait the service asked of an earlier one.
    pub(crate) async fn wait_as_asked_before(&self, wait: ResumeWait) -> Result<(), Stop> {
        let left = self.task.remaining();
        if wait.left.saturating_add(self.spec.floor()) > left {
            let message = format!(
                "the service asked an earlier run to wait until {}, longer than the {} left: not started",
                wait.until,
                secs(left)
            );
            let (outcome, applied) = (Outcome::Retryable, Applied::No);
            return Err(Stop { outcome, applied, message, wait: Some(wait.left) });
        }
        tokio::time::sleep(wait.left).await;
        Ok(())
    }

    /// The stop of a second attempt of a `money` call with no approver to ask.
    pub(crate) fn no_approver(&self, class: &Class) -> Stop {
        let message = self.escalate(format!(
            "{}; a second attempt of a money call needs an approver and none is configured",
            class.message()
        ));
        Stop { outcome: class.outcome(), applied: class.effect(), message, wait: class.wait() }
    }

    /// Ask the approver before a second attempt of a `money` call: `Ok` on yes, the stop on no.
    pub(crate) async fn approve(&self, class: &Class) -> Result<(), Stop> {
        let Some(approver) = self.task.approver_ref() else { return Err(self.no_approver(class)) };
        let request = ApprovalRequest {
            task: self.task.id().to_owned(),
            call: self.spec.name().to_owned(),
            key: self.key,
            next_attempt: self.attempt + 1,
            history: class.message().to_owned(),
        };
        match approver.approve(&request).await {
            Approval::Approved => Ok(()),
            Approval::Denied(why) => Err(Stop {
                outcome: Outcome::Permanent,
                applied: Applied::No,
                message: format!("{}; the approver refused a second attempt: {why}", class.message()),
                wait: None,
            }),
        }
    }

    /// The report of a call the engine stopped before another attempt.
    /// `deadline_left_s` is the budget left, as in every report: the caller stops when it is `0` or
    /// when `retry_after_s` is larger.
    pub(crate) fn stopped<T>(&self, stop: Stop) -> Report<T> {
        self.report(stop.outcome, stop.applied, stop.message, stop.wait)
    }

    pub(crate) fn bulk_report(&self, items: Vec<Item>, noun: &str) -> Report<()> {
        crate::bulk::summarise(self, items, noun)
    }
}

/// `{task}-{first 8 hex of the key}-a{n}`.
pub(crate) fn attempt_id(task: &str, key: &IntentKey, attempt: u32) -> String {
    let hex = key.hex();
    let mut id = String::with_capacity(task.len() + 12 + 10);
    id.push_str(task);
    id.push('-');
    // The digits are ASCII by construction.
    id.push_str(std::str::from_utf8(&hex[..8]).unwrap_or_default());
    id.push_str("-a");
    push_decimal(&mut id, u64::from(attempt));
    id
}

/// Append `n` in decimal, without the formatting machinery.
pub(crate) fn push_decimal(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    // The digits are ASCII by construction.
    out.push_str(std::str::from_utf8(decimal(n, &mut digits)).unwrap_or_default());
}

/// `n` in decimal, written at the end of `digits`: the shared number writer of attempt ids, messages and
/// log records.
pub(crate) fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &digits[at..]
}

/// Whole seconds, rounded up: a wait is never reported shorter than it is.
pub(crate) fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}
