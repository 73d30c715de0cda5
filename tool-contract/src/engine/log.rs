//! What a call writes to its attempt log: the start record ahead of each attempt, the end record after
//! it, and a read's start record held back until the read is done or has to wait.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::claim::Claim;
use super::guard::ready_or_within;
use super::machine::{Action, Event, Write};
use super::state::{Attempts, Run};
use super::stop::Stop;
use crate::journal::{Durability, Phase, RecordRef, with_stamp};
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome, Reason};
use crate::task::Task;

/// An end record's parts, as [`Log::end_now`] takes them.
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
    answer: crate::journal::BoxFuture<'a, Result<(), crate::journal::JournalError>>,
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

/// What a call writes to its log: the records of its attempts, the read's start record it holds back,
/// and a person's settlement. One job of the call's state, lent as a view of it by [`Run::log`].
#[derive(Clone, Copy)]
pub(crate) struct Log<'r, 'a> {
    run: &'r Run<'a>,
}

impl<'a> Run<'a> {
    /// What the call writes to its log.
    pub(crate) fn log(&self) -> Log<'_, 'a> {
        Log { run: self }
    }
}

impl<'r, 'a> Log<'r, 'a> {
    /// Whether the call's records are kept: in the task's log, or, for a side effect with no log, in
    /// memory for the calls of the same intent waiting their turn.
    pub(crate) fn keeps_records(self) -> bool {
        self.run.task().journal_ref().is_some() || self.run.claim.is_some()
    }

    /// Record a person's settlement of the attempt in doubt, under the call's claim, synced: the record
    /// written, or why it was not.
    pub(crate) async fn settle(
        self,
        settle: &crate::person::Settle,
    ) -> Result<crate::journal::Record, String> {
        let key = self.run.key();
        let claim = self.run.claim;
        let last = match self.run.task().journal_ref() {
            Some(journal) => journal.recall(&key).await.map_err(|e| e.to_string())?,
            None => claim.and_then(Claim::word),
        };
        let last = last.ok_or("the log holds no record of the intent")?.last;
        let record = settle.record_for(&last, crate::journal::rfc3339(crate::journal::wall_clock()));
        if let Some(problem) = record.problem() {
            return Err(problem);
        }
        match (self.run.task().journal_ref(), claim.and_then(Claim::owner)) {
            (Some(journal), Some(owner)) => {
                journal
                    .end(owner, record.as_record_ref(), Durability::Synced)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            (Some(journal), None) => {
                journal
                    .append(record.as_record_ref(), Durability::Synced)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            (None, _) => {
                if let Some(claim) = claim {
                    claim.remember(record.as_record_ref());
                }
            }
        }
        Ok(record)
    }

    /// Hand a read's held start record to the log once the read has to wait: a hung read is visible.
    pub(crate) fn flush_held_start(self) {
        if let Some(journal) = self.run.task().journal_ref() {
            // A read's record: a failure here only loses attempt numbering, which the next append reports.
            if self.run.held.take()
                && let Some((started, left)) = self.run.now.stamp()
            {
                let _ = with_stamp(started, |stamp| {
                    journal.append(self.record(Phase::Start, left, stamp), Durability::Lazy).ready()
                });
            }
            let _ = journal.flush();
        }
    }

    /// The highest attempt number the log holds for the intent, without reading its last record, when
    /// the store knows it at once; else its answer to wait for.
    pub(crate) fn attempts_now(self) -> Result<Attempts, crate::journal::BoxFuture<'a, Attempts>> {
        match self.run.task().journal_ref() {
            Some(journal) => journal.attempts(&self.run.key()).known(),
            None => Ok(Ok(None)),
        }
    }

    /// A record of the current attempt, stamped `started`, its fields after the phase still empty.
    pub(crate) fn record<'s>(self, phase: Phase, left: Duration, started: &'s str) -> RecordRef<'s>
    where
        'r: 's,
    {
        RecordRef {
            phase,
            task: self.run.task().id(),
            call: self.run.spec().name(),
            intent_key: self.run.key(),
            attempt: self.run.now.number(),
            attempt_id: self.run.now.id(),
            started,
            budget_left_s: left.as_secs(),
            outcome: None,
            effect_applied: None,
            probe: None,
            message: None,
            retry_at: None,
            sent_by: None,
            args: self.run.arguments().digest.as_deref(),
            value: None,
            settled: None,
            approval: None,
        }
    }

    /// A record of `phase` about the current attempt (its intent, number, id, stamp and budget), saying
    /// nothing else yet: what a question to a person about it starts from.
    pub(crate) fn attempt_record(self, phase: Phase) -> crate::journal::Record {
        let (started, left) =
            self.run.now.stamp().unwrap_or((crate::journal::wall_clock(), self.run.task().remaining()));
        let mut record = with_stamp(started, |stamp| self.record(phase, left, stamp).to_record());
        record.args = None;
        record
    }

    /// Write the start record ahead of the attempt; `value` carries what a bulk call knew of its items.
    /// A side effect's start is fenced by its claim and on stable storage before this returns.
    pub(crate) async fn start(
        self,
        left: Duration,
        started: SystemTime,
        value: Option<&serde_json::Value>,
    ) -> Result<(), crate::journal::JournalError> {
        if !self.keeps_records() {
            return Ok(());
        }
        // A read whose start carries nothing has its record held instead ([`Run::start_read`], [`HeldStart`](super::state::HeldStart)).
        let claim = self.run.claim;
        let owner = claim.and_then(Claim::owner);
        // The record is taken by the store before it answers: the stamp's text is only lent to it.
        let appended = with_stamp(started, |stamp| {
            let mut record = self.record(Phase::Start, left, stamp);
            record.value = value;
            // The approval this attempt consumes, journaled with it.
            let approval = self.run.now.approval_note();
            record.message = approval.as_deref();
            let Some(journal) = self.run.task().journal_ref() else {
                if let Some(claim) = claim {
                    claim.remember(record);
                }
                return None;
            };
            Some(match owner {
                Some(owner) => journal.start(owner, record, Durability::Synced),
                None => journal.append(record, Durability::Lazy),
            })
        });
        let Some(appended) = appended else { return Ok(()) };
        let appended = match appended.known() {
            Ok(appended) => return appended,
            Err(appended) => appended,
        };
        // A read's start record: losing it loses nothing a read needs, so a read never waits on it. A
        // store that hangs (a stuck disk) must not hold a side effect past its deadline; a start record
        // that lands late is followed by the end [`start_attempt`] writes after it. Boxed: a store that answers at
        // once leaves the call's future no room for the wait.
        let wait = if owner.is_some() { left } else { Duration::ZERO };
        match Box::pin(ready_or_within(appended, || wait)).await {
            Some(appended) => appended,
            None if owner.is_none() => Ok(()),
            None => Err(crate::journal::JournalError::Io {
                context: "attempt log: the start record was not stored within the budget".to_owned(),
                source: std::io::ErrorKind::TimedOut.into(),
            }),
        }
    }

    /// Write an end record that is not the call's last, waiting for a store that does not take it at
    /// once no longer than the budget.
    pub(crate) async fn end(self, end: EndRecord<'_>) {
        if let Some(pending) = self.end_now(end) {
            pending.wait(self.run.task()).await;
        }
    }

    /// Hand the end record to the store: `None` once it is taken (an embedded store answers at once),
    /// or the store's answer to wait for.
    pub(crate) fn end_now(self, end: EndRecord<'_>) -> Option<Pending<'a>> {
        if !self.keeps_records() {
            return None;
        }
        let journal = self.run.task().journal_ref();
        let held = if journal.is_some() && self.run.held.take() { self.run.now.stamp() } else { None };
        let held = held.map(|(started, left)| (left, started));
        let claim = self.run.claim;
        // The records are taken by the store before it answers: the stamp's text is only lent to them.
        let (answer, finishing) = with_stamp(end.started, |stamp| {
            let mut record = self.record(Phase::End, end.left, stamp);
            record.outcome = Some(end.outcome);
            record.effect_applied = Some(end.applied);
            record.probe = end.probe;
            record.message = Some(end.message);
            record.retry_at = self.run.now.retry_at();
            // When the attempt's call ended, for a later call's landing horizon: an `ok` needs none.
            record.sent_by = self.run.now.sent_by(end.outcome);
            record.value = end.value;
            let Some(journal) = journal else {
                if let Some(claim) = claim {
                    claim.remember(record);
                }
                return None;
            };
            let owner = claim.and_then(|claim| Some(claim).zip(claim.owner()));
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
                _ => (journal.append(record, Durability::Buffered), None),
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
}

/// Write the attempt's start record the call's machine named ([`Write::Start`]), started at `now` with
/// `left` of the budget, and tell the machine what the store said: it then names the request, with the
/// last instant it may leave, or the end record of an attempt not sent ([`Write::End`]) and the stop.
/// A side effect whose start record cannot be stored, or whose storing left less than the attempt may
/// start with, is not started. A start the store did not confirm (refused, failed, or not answered
/// within the budget) makes no attempt: the call speaks for the attempt before it (its id is never given
/// to a request that was not sent). A start the store failed or did not answer may still be stored
/// after the call gave up on it (a synced write that outlives its wait on a stalled disk): the call hands
/// the store an end record saying the attempt was not started, fenced like every record about an
/// attempt, so it is taken only after this owner's start of that attempt and the log never shows a call
/// that sent nothing as one in doubt. A start that was stored and then found the budget too short gets
/// its end record too, so the log says what the report says. `Ok` with the instant the request may
/// leave from, the budget left then, and the instant it may no longer leave at.
pub(crate) async fn start_attempt(
    run: &mut Run<'_>,
    (now, left): (Instant, Duration),
    started: SystemTime,
    value: Option<serde_json::Value>,
) -> Result<(Instant, Duration, Instant), Stop> {
    let side = run.spec().effect().has_side_effect();
    let written = run.log().start(left, started, value.as_ref()).await;
    // The approval, if any, was for this attempt: used, whatever the store said.
    run.now.approval_used();
    let refused = written.err().filter(|_| side);
    let fenced = matches!(refused, Some(crate::journal::JournalError::Conflict { .. }));
    run.machine.on(if refused.is_some() { Event::Unwritten { fenced } } else { Event::Written });
    // Nothing was stored, or a read's start record, which never waits: the budget is as it was at the
    // start. Otherwise the machine checks it again, once the write is done.
    let (now, after) = if refused.is_none() && (!run.log().keeps_records() || !side) {
        (now, left)
    } else {
        let now = Instant::now();
        (now, run.machine.budget().left(now))
    };
    let pacing = run.pace().starting();
    // Not sent: the end record that says so, unless the fence refused the start (another owner's
    // business: an end of this call's would be refused the same way), then the stop.
    let (said, ends) = match run.machine.next(now, pacing) {
        Some(Action::Send { not_after }) => return Ok((now, after, not_after)),
        Some(Action::Record(Write::End { outcome, effect })) => ((outcome, effect), true),
        Some(Action::Stop(end)) => (run.machine.ending(end, (Outcome::Retryable, Applied::Unknown)), false),
        _ => ((Outcome::Retryable, Applied::Unknown), false),
    };
    let stop = match &refused {
        Some(err) => unstarted(err, said),
        None => run.pace().refusal(after),
    };
    if ends {
        let end = EndRecord {
            left,
            started,
            outcome: said.0,
            applied: said.1,
            probe: None,
            message: &stop.message,
            value: value.as_ref(),
            last: false,
        };
        Box::pin(run.log().end(end)).await;
        run.machine.on(Event::Written);
    }
    if refused.is_some() {
        let (task, key) = (run.task(), run.key());
        run.now.unnumber(task, &key);
    }
    Err(stop)
}

/// The stop of a side effect whose start record the store did not take, reporting the outcome and
/// effect the machine says (its [`Write::End`], or
/// [`Machine::ending`](super::machine::Machine::ending) of the stop it names). Refused by the fence: another
/// owner took the intent over (or started it first), and what it did is its own; this call sent
/// nothing, the intent's effect is not known here.
fn unstarted(err: &crate::journal::JournalError, (outcome, applied): (Outcome, Applied)) -> Stop {
    match err {
        crate::journal::JournalError::Conflict { .. } => Stop::new(
            outcome,
            applied,
            format!(
                "{err}; the attempt was not started, and another worker runs this intent: what it did is \
                 in the log"
            ),
            None,
            Reason::Busy,
        ),
        _ => Stop::new(
            outcome,
            applied,
            format!("{err}; the attempt was not started"),
            None,
            Reason::StoreFailed,
        ),
    }
}

/// The stop of a read whose attempt numbers the store could not give: nothing was started, and the
/// read is not numbered as if the intent were new.
pub(crate) fn unreadable(error: &crate::journal::JournalError) -> Stop {
    Stop::new(
        Outcome::Retryable,
        Applied::No,
        format!("{error}; the attempt log could not be read, so nothing was started"),
        None,
        Reason::StoreFailed,
    )
}

/// An end record that carries a probe's verdict or a call's items: `EndRecord` for the usual case.
pub(crate) fn end_record<'r>(
    left: Duration,
    started: SystemTime,
    (outcome, applied): (Outcome, Applied),
    probe: Option<ProbeMark>,
    message: &'r str,
    value: Option<&'r serde_json::Value>,
) -> EndRecord<'r> {
    EndRecord { left, started, outcome, applied, probe, message, value, last: false }
}
