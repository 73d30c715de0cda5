//! The state of one call, shared by the single and the bulk engine: its claim, attempts, log records
//! and reports.

use std::time::{Duration, SystemTime};

use super::claim::{Claim, Refused};
use super::guard::{guarded, ready_or_within, secs};
use crate::call::Call;
use crate::classify::Class;
use crate::journal::{Durability, LogValue, Phase, Recall, RecordRef, with_stamp};
use crate::key::IntentKey;
use crate::policy::{Facts, Room, Settle};
use crate::probe::{Probe, ProbeMark, Prober};
use crate::report::{Applied, Outcome, Reason};
use crate::spec::ToolSpec;
use crate::task::Task;

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
    match claim
        .in_store(store, || task.remaining(), spec.floor(), spec.settle_window(), task.worker_name())
        .await
    {
        Ok(recall) => Ok((claim, recall)),
        // Nothing was started, and what an earlier attempt did is in a log that could not be read.
        Err(Refused::Store(e)) => Err(Stop {
            reason: Reason::StoreFailed,
            outcome: Outcome::Retryable,
            applied: Applied::Unknown,
            message: format!(
                "{e}; the intent could not be claimed, so nothing was started; whether an earlier attempt \
                 landed is in the log"
            ),
            wait: None,
        }),
        Err(Refused::Busy { holder, left }) => Err(Stop {
            reason: Reason::Busy,
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

/// What a store says of an intent's highest attempt: `Ok(None)` for none recorded.
pub(crate) type Attempts = Result<Option<u32>, crate::JournalError>;

/// Why the engine stopped before another attempt.
pub(crate) struct Stop {
    pub(crate) outcome: Outcome,
    pub(crate) applied: Applied,
    pub(crate) message: String,
    pub(crate) wait: Option<Duration>,
    pub(crate) reason: Reason,
}

impl Stop {
    /// A stop that keeps the last attempt's outcome and effect.
    pub(crate) fn from_class(class: &Class, message: String, wait: Option<Duration>, reason: Reason) -> Stop {
        Stop { outcome: class.outcome(), applied: class.effect(), message, wait, reason }
    }
}

/// An end record's parts, as [`Run::end_now`] takes them.
pub(crate) struct EndRecord<'r> {
    pub(crate) left: Duration,
    pub(crate) started: SystemTime,
    pub(crate) outcome: Outcome,
    pub(crate) applied: Applied,
    pub(crate) probe: Option<ProbeMark>,
    pub(crate) message: &'r str,
    pub(crate) value: Option<&'r serde_json::Value>,
    /// The call stops after it: a side effect's claim is given up with it.
    pub(crate) last: bool,
}

/// An end record the store has not taken yet.
pub(crate) struct Pending<'a> {
    answer: crate::journal::BoxFuture<'a, Result<(), crate::JournalError>>,
    finishing: Option<&'a Claim<'a>>,
}

impl Pending<'_> {
    /// Wait for the store, no longer than the task's budget: losing an end record is safe (the attempt
    /// then reads as unfinished and is probed next time), an end record that holds the call past its
    /// budget is not.
    pub(crate) async fn wait(self, task: &Task) {
        // Boxed: a call whose store answers at once does not carry room for the wait.
        Box::pin(async move {
            if ready_or_within(self.answer, || task.remaining()).await.is_some()
                && let Some(claim) = self.finishing
            {
                claim.finished();
            }
        })
        .await
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
    /// Where an escalation the report announces waits to be handed to the sink once the call is over.
    pub(crate) escalation: &'a std::sync::Mutex<Option<Box<crate::task::Escalation>>>,
    /// A read's start record is held here, not yet in the log, while the read has not had to wait:
    /// the budget and time it started with. It goes to the log with the read's end record
    /// ([`crate::Journal::append_attempt`]), or alone the moment the read has to wait ([`Run::flush`]).
    held_start: (Duration, SystemTime),
    /// Whether `held_start` is still held (set by the start, taken by the flush or the end record).
    holding: std::sync::atomic::AtomicBool,
}

impl<'a> Run<'a> {
    pub(crate) fn new(
        task: &'a Task,
        spec: &'a ToolSpec,
        key: IntentKey,
        escalation: &'a std::sync::Mutex<Option<Box<crate::task::Escalation>>>,
    ) -> Self {
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
            escalation,
            held_start: (Duration::ZERO, SystemTime::UNIX_EPOCH),
            holding: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Number the next attempt: `{task}-{first 8 hex of the key}-a{n}`, unique across the task's intents.
    pub(crate) fn next_attempt(&mut self) {
        self.attempt += 1;
        self.retry_at = None;
        self.attempt_id = crate::call::attempt_id(self.task.id(), &self.key, self.attempt);
    }

    /// Continue from what the log knows of the intent: its attempt numbers, the attempt that may have
    /// reached the service, and a wait the service asked an earlier run for.
    pub(crate) fn resume(&mut self, recall: &Recall) -> Option<super::ResumeWait> {
        self.attempt = recall.attempts;
        self.attempt_id = recall.last.attempt_id.clone();
        self.reached_at(&recall.last.started);
        let wait = super::ResumeWait::of(&recall.last);
        // A wait the service asked for binds every later attempt until it passes: the records this
        // call writes before it (a probe's verdict) carry it on, so the next call waits too.
        if wait.is_some() {
            self.retry_at.clone_from(&recall.last.retry_at);
        }
        wait
    }

    /// What the policy is told after an attempt that ended as `class`, before any probe or approval.
    pub(crate) fn facts(&self, class: &Class, has_probe: bool, made: u32) -> Facts {
        Facts {
            kind: self.spec.effect(),
            dedupe: self.spec.deduplication(),
            has_probe,
            has_approver: self.task.approver_ref().is_some(),
            outcome: class.outcome(),
            effect: class.effect(),
            probe: None,
            approved: None,
            made,
            max_attempts: self.spec.attempts(),
            room: Room::Enough,
            settle: Settle::Settled,
            retry_budget: self.task.budgets().room(self.spec.service_name()).is_ok(),
        }
    }

    /// Take a retry from the service's retry budget, or say why the call stops without it.
    pub(crate) fn take_retry(&self, class: &Class) -> Result<(), Stop> {
        match self.task.budgets().retry(self.spec.service_name()) {
            Ok(()) => Ok(()),
            Err(spent) => Err(self.retry_budget_spent(class, spent.wait)),
        }
    }

    /// The stop of a call whose retry the service's retry budget refuses.
    pub(crate) fn retry_budget_spent(&self, class: &Class, wait: Option<Duration>) -> Stop {
        crate::observe::retry_budget_spent(self.spec);
        let message = format!(
            "{}; not retried: retry budget spent for {} (too many retries of it across tasks lately)",
            class.message(),
            self.spec.service_name()
        );
        Stop::from_class(class, message, wait, Reason::RetryBudgetSpent)
    }

    /// Take the attempt an earlier run recorded as the one that may have reached the service, by the
    /// wall-clock stamp it logged.
    fn reached_at(&mut self, started: &str) {
        let since = crate::journal::parse_rfc3339(started)
            .and_then(|at| crate::journal::wall_clock().duration_since(at).ok())
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

    /// Whether the call's records are kept: in the task's log, or, for a side effect with no log, in
    /// memory for the calls of the same intent waiting their turn.
    pub(crate) fn keeps_records(&self) -> bool {
        self.task.journal_ref().is_some() || self.claim.is_some()
    }

    /// Hand a read's held start record to the log once the read has to wait: a hung read is visible.
    pub(crate) fn flush(&self) {
        if let Some(journal) = self.task.journal_ref() {
            // A read's record: a failure here only loses attempt numbering, which the next append reports.
            if let Some((left, started)) = self.take_held_start() {
                let _ = with_stamp(started, |stamp| {
                    journal.append_ref(self.record(Phase::Start, left, stamp), Durability::Lazy).ready()
                });
            }
            let _ = journal.flush();
        }
    }

    /// The read's start record still held, taken.
    fn take_held_start(&self) -> Option<(Duration, SystemTime)> {
        use std::sync::atomic::Ordering::Relaxed;
        // Only the call's own future touches it, one poll at a time: no read-modify-write needed.
        if self.holding.load(Relaxed) {
            self.holding.store(false, Relaxed);
            Some(self.held_start)
        } else {
            None
        }
    }

    /// The highest attempt number the log holds for the intent, without reading its last record, when
    /// the store knows it at once; else its answer to wait for.
    pub(crate) fn logged_attempts_now(&self) -> Result<Attempts, crate::journal::BoxFuture<'a, Attempts>> {
        match self.task.journal_ref() {
            Some(journal) => journal.attempts(&self.key).known(),
            None => Ok(Ok(None)),
        }
    }

    /// The stop of a read whose attempt numbers the store could not give: nothing was started, and
    /// the read is not numbered as if the intent were new.
    pub(crate) fn unreadable_log(&self, error: &crate::JournalError) -> Stop {
        Stop {
            outcome: Outcome::Retryable,
            applied: Applied::No,
            message: format!("{error}; the attempt log could not be read, so nothing was started"),
            wait: None,
            reason: Reason::StoreFailed,
        }
    }

    /// A read's start, when nothing needs waiting for: its record is held (see `held_start`), or not
    /// kept at all without a log. `Some` with the budget left for the attempt; `None` for any other
    /// start, which [`Run::start_attempt`] makes.
    pub(crate) fn start_read(&mut self, left: Duration, started: SystemTime) -> Option<Duration> {
        if self.spec.effect().has_side_effect() || self.claim.is_some() {
            return None;
        }
        if self.task.journal_ref().is_some() {
            self.held_start = (left, started);
            self.holding.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Some(left)
    }

    /// The attempt's call context; from now on its request may reach the service.
    /// `left` is the budget the limit was taken from, just now.
    pub(crate) fn call(&mut self, limit: Duration, left: Duration) -> Call {
        let deadline = if limit >= left && !self.spec.effect().has_side_effect() {
            // A read given all that is left ends with the task's budget: no clock to read.
            self.task.deadline()
        } else {
            let now = tokio::time::Instant::now();
            if self.spec.effect().has_side_effect() {
                self.reached = Some(now);
            }
            now.checked_add(limit).unwrap_or(now)
        };
        Call::of(self.task.id(), &self.attempt_id, self.key, self.attempt, deadline)
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
        if !self.keeps_records() {
            return Ok(());
        }
        // A read whose start carries nothing has its record held instead ([`Run::start_read`]).
        let owner = self.claim.and_then(Claim::owner);
        // The record is taken by the store before it answers: the stamp's text is only lent to it.
        let appended = with_stamp(started, |stamp| {
            let mut record = self.record(Phase::Start, left, stamp);
            record.value = value.as_ref();
            let Some(journal) = self.task.journal_ref() else {
                if let Some(claim) = self.claim {
                    claim.remember(record);
                }
                return None;
            };
            Some(match owner {
                Some(owner) => journal.start(owner, record, Durability::Synced),
                None => journal.append_ref(record, Durability::Lazy),
            })
        });
        let Some(appended) = appended else { return Ok(()) };
        let appended = match appended.known() {
            Ok(appended) => return appended,
            Err(appended) => appended,
        };
        // A read's start record: losing it loses nothing a read needs, so a read never waits on it. A
        // store that hangs (a stuck disk) must not hold a side effect past its deadline; a start record
        // that lands late reads as unfinished and is probed next time. Boxed: a store that answers at
        // once leaves the call's future no room for the wait.
        let wait = if owner.is_some() { left } else { Duration::ZERO };
        match Box::pin(ready_or_within(appended, || wait)).await {
            Some(appended) => appended,
            None if owner.is_none() => Ok(()),
            None => Err(crate::JournalError::Io {
                context: "attempt log: the start record was not stored within the budget".to_owned(),
                source: std::io::ErrorKind::TimedOut.into(),
            }),
        }
    }

    /// Write an end record that is not the call's last, waiting for a store that does not take it at
    /// once no longer than the budget.
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
        let end =
            EndRecord { left, started, outcome, applied, probe, message, value: value.as_ref(), last: false };
        if let Some(pending) = self.end_now(end) {
            pending.wait(self.task).await;
        }
    }

    /// Hand the end record to the store: `None` once it is taken (an embedded store answers at once),
    /// or the store's answer to wait for.
    pub(crate) fn end_now(&self, end: EndRecord<'_>) -> Option<Pending<'a>> {
        if !self.keeps_records() {
            return None;
        }
        let journal = self.task.journal_ref();
        let held = if journal.is_some() { self.take_held_start() } else { None };
        // The records are taken by the store before it answers: the stamp's text is only lent to them.
        let (answer, finishing) = with_stamp(end.started, |stamp| {
            let mut record = self.record(Phase::End, end.left, stamp);
            record.outcome = Some(end.outcome);
            record.effect_applied = Some(end.applied);
            record.probe = end.probe;
            record.message = Some(end.message);
            record.retry_at = self.retry_at.as_deref();
            record.value = end.value;
            let Some(journal) = journal else {
                if let Some(claim) = self.claim {
                    claim.remember(record);
                }
                return None;
            };
            let owner = self.claim.and_then(|claim| Some(claim).zip(claim.owner()));
            Some(match (owner, held) {
                (Some((claim, owner)), _) if end.last => {
                    (journal.finish(owner, record, Durability::Buffered), Some(claim))
                }
                (_, Some((held_left, held_started))) => {
                    // A read's start and end are stamped with the attempt's start: one lent text.
                    let paired = |held_stamp: &str| {
                        let start = self.record(Phase::Start, held_left, held_stamp);
                        journal.append_attempt(start, record, Durability::Buffered)
                    };
                    let answer = if held_started == end.started {
                        paired(stamp)
                    } else {
                        with_stamp(held_started, paired)
                    };
                    (answer, None)
                }
                // A side effect's end is fenced: only its starter, or the holder's probe, writes it.
                (Some((_, owner)), _) => (journal.end(owner, record, Durability::Buffered), None),
                _ => (journal.append_ref(record, Durability::Buffered), None),
            })
        })?;
        match answer.known() {
            Ok(_) => {
                if let Some(claim) = finishing {
                    claim.finished();
                }
                None
            }
            Err(answer) => Some(Pending { answer, finishing }),
        }
    }

    /// What the call knows after an attempt that ended as `class` and a probe that could not tell:
    /// the one rule the log's record of the probe and the call's report both follow. A call that
    /// applied nothing for sure stays as its attempt ended; any other is in doubt.
    pub(crate) fn after_failed_probe(&self, class: &Class) -> (Outcome, Applied) {
        match self.call_effect(class.effect()) {
            Applied::No => (class.outcome(), Applied::No),
            _ => (Outcome::Unknown, Applied::Unknown),
        }
    }

    /// The call's effect given this attempt's: never `no` while an earlier attempt may have landed.
    pub(crate) fn call_effect(&self, attempt: Applied) -> Applied {
        if self.maybe_applied && attempt == Applied::No { Applied::Unknown } else { attempt }
    }

    /// Write the attempt's start record, then check the budget again: a side effect whose start record
    /// cannot be stored, or whose storing left less than the attempt may start with, is not started.
    /// A start the store did not confirm (refused, failed, or not answered within the budget) makes no
    /// attempt: nothing is written under its number, and the call speaks for the attempt before it
    /// (its id is never given to a request that was not sent). A start that was stored and then found
    /// the budget too short gets its end record, so the log says what the report says. `Ok` with the
    /// budget left for the attempt.
    pub(crate) async fn start_attempt(
        &mut self,
        left: Duration,
        started: SystemTime,
        value: Option<serde_json::Value>,
    ) -> Result<Duration, Stop> {
        let side = self.spec.effect().has_side_effect();
        let stop = match self.log_start(left, started, value.clone()).await {
            Err(err) if side => {
                // Refused by the fence: another owner took the intent over (or started it first), and
                // what it did is its own; this call sent nothing, the intent's effect is not known here.
                let (applied, message, reason) = match &err {
                    crate::JournalError::Conflict { .. } => (
                        Applied::Unknown,
                        format!(
                            "{err}; the attempt was not started, and another worker runs this intent: what it \
                             did is in the log"
                        ),
                        Reason::Busy,
                    ),
                    _ => (
                        self.call_effect(Applied::No),
                        format!("{err}; the attempt was not started"),
                        Reason::StoreFailed,
                    ),
                };
                self.unnumber_attempt();
                return Err(Stop { outcome: Outcome::Retryable, applied, message, wait: None, reason });
            }
            // Nothing was stored, or a read's start record, which never waits: `left` still holds.
            Ok(()) if !self.keeps_records() || !side => return Ok(left),
            _ => {
                let now = self.task.remaining();
                match self.may_start(now) {
                    Err(stop) => stop,
                    Ok(()) => return Ok(now),
                }
            }
        };
        let applied = self.call_effect(Applied::No);
        Box::pin(self.log_end(left, started, Outcome::Retryable, applied, None, &stop.message, value)).await;
        Err(stop)
    }

    /// Take back the number given to an attempt that was never started: the call speaks for the
    /// attempt before it, if any.
    fn unnumber_attempt(&mut self) {
        self.attempt = self.attempt.saturating_sub(1);
        self.attempt_id = match self.attempt {
            0 => String::new(),
            n => crate::call::attempt_id(self.task.id(), &self.key, n),
        };
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
        Stop {
            outcome: Outcome::Retryable,
            applied: Applied::No,
            message,
            wait: None,
            reason: Reason::BudgetSpent,
        }
    }

    /// Run the probe under the budget left and log its verdict against the attempt it resolves. A "not
    /// landed" about an attempt that may have landed is logged as settled only once the tool's settle
    /// window has passed: before that, the service may still hold the request, and the log says so.
    pub(crate) async fn probe<T: LogValue, P: Prober<T>>(&self, probe: &mut P, of: &Class) -> Probe<T> {
        let left = self.task.remaining();
        let started = crate::journal::wall_clock();
        let span = crate::observe::probe_span(self.spec);
        let verdict = if left.is_zero() {
            Probe::Failed("no budget left to run it".to_owned())
        } else {
            let probed = tokio::time::timeout(left, guarded(|| probe.probe(self.key)));
            match crate::observe::within_span(&span, probed).await {
                Ok(Ok(verdict)) => verdict,
                Ok(Err(panic)) => Probe::Failed(format!("the probe panicked: {panic}")),
                Err(_) => Probe::Failed(format!("the probe timed out after {}", secs(left))),
            }
        };
        span.verdict(self.spec, verdict.mark());
        let (outcome, applied, msg, value) = match &verdict {
            Probe::Landed(v) => (Outcome::Ok, Applied::Yes, "probe: landed".to_owned(), v.to_log().ok()),
            Probe::NotLanded if self.settle(of) != Settle::Settled => (
                Outcome::Unknown,
                Applied::Unknown,
                format!("probe: not landed yet; the service may hold it {} more", secs(self.unsettled_for())),
                None,
            ),
            Probe::NotLanded => (Outcome::Retryable, Applied::No, "probe: not landed".to_owned(), None),
            Probe::Failed(why) => {
                let (outcome, applied) = self.after_failed_probe(of);
                (outcome, applied, format!("probe failed: {why}"), None)
            }
        };
        self.log_end(left, started, outcome, applied, Some(verdict.mark()), &msg, value).await;
        verdict
    }
}

/// Whole seconds, rounded up: a wait is never reported shorter than it is.
pub(crate) fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}
