//! Waiting between attempts: backoff and `Retry-After` within the budget, a wait an earlier run was
//! asked for, and the approver of a second `money` attempt.

use std::time::Duration;

use super::*;
use crate::journal::rfc3339;
use crate::policy::Room;
use crate::report::Reason;
use crate::task::{Approval, ApprovalRequest};

/// The instant a wait ends, as the log writes it: RFC 3339, rounded up to the second.
pub(crate) fn retry_stamp(wait: Duration) -> String {
    let at = crate::journal::wall_clock() + wait;
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
        let left = crate::journal::parse_rfc3339(until)?.duration_since(crate::journal::wall_clock()).ok()?;
        Some(ResumeWait { until: until.to_owned(), left })
    }
}

impl Run<'_> {
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
            return Stop::from_class(class, message, Some(asked), Reason::AskedToWait);
        }
        let message = format!(
            "{}; not retried: {} left cannot hold the next wait and attempt",
            class.message(),
            secs(left)
        );
        Stop::from_class(class, message, class.wait(), Reason::BudgetSpent)
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
            return Err(Stop {
                outcome,
                applied,
                message,
                wait: Some(wait.left),
                reason: Reason::AskedToWait,
            });
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
        Stop {
            outcome: class.outcome(),
            applied: class.effect(),
            message,
            wait: class.wait(),
            reason: Reason::NoApprover,
        }
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
        crate::observe::approval_asked(request.next_attempt);
        let answer = approver.approve(&request).await;
        crate::observe::approval_answered(answer == Approval::Approved);
        match answer {
            Approval::Approved => Ok(()),
            Approval::Denied(why) => Err(Stop {
                reason: Reason::Denied,
                outcome: Outcome::Permanent,
                applied: Applied::No,
                message: format!("{}; the approver refused a second attempt: {why}", class.message()),
                wait: None,
            }),
        }
    }
}
