//! How a call ends: its report, escalated when it is unknown, for every way the engine stops.

use std::time::{Duration, SystemTime};

use super::log::{EndRecord, Pending};
use super::state::{Run, ceil_secs};
use super::stop::Stop;
use crate::classify::Class;
use crate::journal::LogValue;
use crate::report::{Applied, Outcome, Reason, Report};
use crate::task::Escalation;
use crate::text::push_decimal;

/// The last words of every `unknown` report: what the model must not do, and what is safe.
pub(crate) const IN_DOUBT: &str = "; the effect may have landed: do not redo it another way (other arguments make \
     a new act); this same call again checks before it acts";

/// The reports of a call, built from where it stands.
impl Run<'_> {
    /// The report of a call that ends `outcome`: escalated when it is unknown, and never saying `no`
    /// while an earlier attempt may have landed.
    pub(crate) fn report<T>(
        &self,
        outcome: Outcome,
        applied: Applied,
        message: String,
        wait: Option<Duration>,
        reason: Reason,
    ) -> Report<T> {
        let mut message = message;
        if outcome == Outcome::Unknown {
            message = self.escalate(message);
            // What a model reads, whatever its framework makes of the outcome (docs/agent-surface.md,
            // "Each framework's words").
            message.push_str(IN_DOUBT);
        }
        let call_effect = self.machine.call_effect(applied);
        if call_effect != applied {
            message.push_str("; an earlier attempt may have landed");
        }
        Report {
            outcome,
            effect_applied: call_effect,
            attempt_id: self.now.id().to_owned(),
            idempotency_key: self.key(),
            retry_after_s: wait.map(ceil_secs),
            deadline_left_s: self.task().remaining().as_secs(),
            message,
            value: None,
            items: Vec::new(),
            reason,
        }
    }

    /// Hand the call to the task's escalation sink (once the report is ready: see
    /// `attempts::hand_over`); the message says where it goes.
    pub(crate) fn escalate(&self, message: String) -> String {
        let (task, spec) = (self.task(), self.spec());
        crate::observe::escalated(spec, task.escalation().is_some());
        match task.escalation() {
            Some(_) => {
                let escalation = Escalation {
                    task: task.id().to_owned(),
                    call: spec.name().to_owned(),
                    key: self.key(),
                    attempt_id: self.now.id().to_owned(),
                    reason: message.clone(),
                };
                *self.escalation.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(escalation));
                format!("{message}; escalated")
            }
            None => format!("{message}; no escalation sink is configured: resolve it by reading the world"),
        }
    }

    /// An `ok` report with `value`, speaking for `attempt_id`.
    fn report_ok<T>(
        &self,
        value: T,
        applied: Applied,
        message: String,
        attempt_id: String,
        reason: Reason,
    ) -> Report<T> {
        Report {
            outcome: Outcome::Ok,
            effect_applied: applied,
            attempt_id,
            idempotency_key: self.key(),
            retry_after_s: None,
            deadline_left_s: self.task().remaining().as_secs(),
            message,
            value: Some(value),
            items: Vec::new(),
            reason,
        }
    }

    /// The report of a side effect the log already holds as done: its recorded value, not repeated.
    pub(crate) fn report_replayed<T>(&self, value: T) -> Report<T> {
        crate::observe::replayed(self.spec());
        let message = format!(
            "{} already done by attempt {} (recorded in the attempt log); not repeated: the value is that \
             attempt's, whatever this call's arguments",
            self.spec().name(),
            self.now.id()
        );
        self.report_ok(
            value,
            applied_on_ok(self.spec().effect()),
            message,
            self.now.id().to_owned(),
            Reason::Replayed,
        )
    }

    /// The report of a call a person settled as landed (`settled`, the intent's last record): the
    /// settled value, if one was given and it is of the tool's type.
    pub(crate) fn report_settled<T: LogValue>(&self, settled: &crate::journal::Record) -> Report<T> {
        crate::observe::replayed(self.spec());
        let mut message = format!(
            "{}: attempt {} {}; not repeated",
            self.spec().name(),
            settled.attempt_id,
            settled.message.as_deref().unwrap_or("settled landed")
        );
        let value = match settled.value.as_ref().map(T::from_log) {
            Some(Ok(value)) => Some(value),
            Some(Err(e)) => {
                message.push_str(&format!("; the settled value is not of the tool's value type ({e})"));
                None
            }
            None => None,
        };
        Report {
            outcome: Outcome::Ok,
            effect_applied: Applied::Yes,
            attempt_id: settled.attempt_id.clone(),
            idempotency_key: self.key(),
            retry_after_s: None,
            deadline_left_s: self.task().remaining().as_secs(),
            message,
            value,
            items: Vec::new(),
            reason: Reason::Settled,
        }
    }

    /// The report of a call whose probe found that the attempt that ended as `class` landed.
    pub(crate) fn report_landed<T>(&self, value: T, class: &Class) -> Report<T> {
        let message = format!(
            "{}; the probe found attempt {} landed, so it was not repeated",
            class.message(),
            self.now.id()
        );
        self.report_ok(value, Applied::Yes, message, self.now.id().to_owned(), Reason::Landed)
    }

    /// The report of a call the engine stopped.
    /// `deadline_left_s` is the budget left, as in every report: the caller stops when it is `0` or
    /// when `retry_after_s` is larger.
    pub(crate) fn report_stop<T>(&self, stop: Stop) -> Report<T> {
        self.report(stop.outcome, stop.applied, stop.message, stop.wait, stop.reason)
    }
}

/// What an attempt that answered applied: `yes` for a side effect, `no` for a read.
pub(crate) fn applied_on_ok(effect: crate::effect::EffectKind) -> Applied {
    if effect.has_side_effect() { Applied::Yes } else { Applied::No }
}

/// The report of an attempt that answered, its end record handed to the store: the store's answer
/// to wait for when it did not take the record at once.
pub(crate) fn succeeded<'a, T: LogValue>(
    run: &mut Run<'a>,
    value: T,
    left: Duration,
    started: SystemTime,
) -> (Report<T>, Option<Pending<'a>>) {
    let name = run.spec().name();
    let mut message = String::with_capacity(name.len() + 28);
    message.push_str(name);
    message.push_str(" done on attempt ");
    push_decimal(&mut message, u64::from(run.now.number()));
    let mut pending = None;
    let applied = applied_on_ok(run.spec().effect());
    if run.log().keeps_records() {
        let json = value.to_log().ok();
        let end = EndRecord {
            left,
            started,
            outcome: Outcome::Ok,
            applied,
            probe: None,
            message: &message,
            value: json.as_ref(),
            last: true,
        };
        pending = run.log().end_now(end);
    }
    // The call ends here: its report takes the attempt id rather than a copy of it.
    let attempt_id = run.now.take_id();
    (run.report_ok(value, applied, message, attempt_id, Reason::Done), pending)
}
