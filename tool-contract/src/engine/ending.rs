//! How a call ends: its report, escalated when it is unknown, for every way the engine stops.

use std::time::{Duration, SystemTime};

use super::*;
use crate::report::{Item, Reason};
use crate::task::Escalation;
use crate::text::push_decimal;

impl<'a> Run<'a> {
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
        self.report(Outcome::Unknown, Applied::Unknown, message, Some(wait), Reason::Unsettled)
    }

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
            reason,
        }
    }

    /// Hand the call to the task's escalation sink (once the report is ready: see
    /// `attempts::hand_over`); the message says where it goes.
    pub(crate) fn escalate(&self, message: String) -> String {
        crate::observe::escalated(self.spec, self.task.escalation().is_some());
        match self.task.escalation() {
            Some(_) => {
                let escalation = Escalation {
                    task: self.task.id().to_owned(),
                    call: self.spec.name().to_owned(),
                    key: self.key,
                    attempt_id: self.attempt_id.clone(),
                    reason: message.clone(),
                };
                *self.escalation.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(escalation));
                format!("{message}; escalated")
            }
            None => format!("{message}; no escalation sink is configured: resolve it by reading the world"),
        }
    }

    pub(crate) fn ok<T>(&self, value: T, applied: Applied, message: String, reason: Reason) -> Report<T> {
        self.ok_as(value, applied, message, self.attempt_id.clone(), reason)
    }

    /// [`Run::ok`] speaking for `attempt_id`.
    fn ok_as<T>(
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
            idempotency_key: self.key,
            retry_after_s: None,
            deadline_left_s: self.task.remaining().as_secs(),
            message,
            value: Some(value),
            items: Vec::new(),
            reason,
        }
    }

    pub(crate) fn applied_on_ok(&self) -> Applied {
        if self.spec.effect().has_side_effect() { Applied::Yes } else { Applied::No }
    }

    /// The report of an attempt that answered, its end record handed to the store: the store's answer
    /// to wait for when it did not take the record at once.
    pub(crate) fn succeeded<T: LogValue>(
        &mut self,
        value: T,
        left: Duration,
        started: SystemTime,
    ) -> (Report<T>, Option<super::state::Pending<'a>>) {
        let mut message = String::with_capacity(self.spec.name().len() + 28);
        message.push_str(self.spec.name());
        message.push_str(" done on attempt ");
        push_decimal(&mut message, u64::from(self.attempt));
        let mut pending = None;
        if self.keeps_records() {
            let json = value.to_log().ok();
            let end = super::state::EndRecord {
                left,
                started,
                outcome: Outcome::Ok,
                applied: self.applied_on_ok(),
                probe: None,
                message: &message,
                value: json.as_ref(),
                last: true,
            };
            pending = self.end_now(end);
        }
        // The call ends here: its report takes the attempt id rather than a copy of it.
        let attempt_id = std::mem::take(&mut self.attempt_id);
        (self.ok_as(value, self.applied_on_ok(), message, attempt_id, Reason::Done), pending)
    }

    pub(crate) fn replayed<T>(&self, value: T) -> Report<T> {
        crate::observe::replayed(self.spec);
        let message = format!(
            "{} already done by attempt {} (recorded in the attempt log); not repeated: the value is that \
             attempt's, whatever this call's arguments",
            self.spec.name(),
            self.attempt_id
        );
        self.ok(value, self.applied_on_ok(), message, Reason::Replayed)
    }

    pub(crate) fn landed<T>(&self, value: T, class: &Class) -> Report<T> {
        let message = format!(
            "{}; the probe found attempt {} landed, so it was not repeated",
            class.message(),
            self.attempt_id
        );
        self.ok(value, Applied::Yes, message, Reason::Landed)
    }

    pub(crate) fn without_probe<T>(&self, class: Class) -> Report<T> {
        if class.effect() == Applied::No {
            let msg =
                format!("{}; not retried: {} has no probe to check first", class.message(), self.spec.name());
            self.report(class.outcome(), Applied::No, msg, class.wait(), Reason::NoProbe)
        } else {
            let why = format!("{}; {} has no probe to resolve it", class.message(), self.spec.name());
            self.report(Outcome::Unknown, Applied::Unknown, why, None, Reason::NoProbe)
        }
    }

    pub(crate) fn probe_failed<T>(&self, class: Class, why: &str) -> Report<T> {
        if let (outcome, Applied::No) = self.after_failed_probe(&class) {
            let msg =
                format!("{}; not retried: the probe before a second attempt failed ({why})", class.message());
            self.report(outcome, Applied::No, msg, class.wait(), Reason::ProbeFailed)
        } else {
            let why = format!("{}; the probe could not tell ({why})", class.message());
            self.report(Outcome::Unknown, Applied::Unknown, why, None, Reason::ProbeFailed)
        }
    }

    pub(crate) fn unresolved<T>(&self, why: &str) -> Report<T> {
        self.report(Outcome::Unknown, Applied::Unknown, why.to_owned(), None, Reason::InDoubt)
    }

    /// The report of a call the engine stopped before another attempt.
    /// `deadline_left_s` is the budget left, as in every report: the caller stops when it is `0` or
    /// when `retry_after_s` is larger.
    pub(crate) fn stopped<T>(&self, stop: Stop) -> Report<T> {
        self.report(stop.outcome, stop.applied, stop.message, stop.wait, stop.reason)
    }

    pub(crate) fn bulk_report(&self, items: Vec<Item>, words: super::bulk::Words) -> Report<()> {
        super::bulk::summarise(self, items, words)
    }
}
