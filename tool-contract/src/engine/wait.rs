//! The budget's rules: how long an attempt may run, whether one may start, whether the wait before
//! the next fits (backoff and `Retry-After`), and a wait an earlier run was asked for.

use std::time::Duration;

use super::guard::secs;
use super::state::Run;
use super::stop::Stop;
use crate::classify::Class;
use crate::policy::Room;
use crate::report::{Applied, Outcome, Reason};

/// The instant a wait ends, as the log writes it: RFC 3339, rounded up to the second.
pub(crate) fn retry_stamp(wait: Duration) -> String {
    crate::rules::stamp_up(crate::journal::wall_clock() + wait)
}

/// A wait an earlier run was asked for (`retry_at` on its last record) that has not yet passed.
pub(crate) struct ResumeWait {
    until: String,
    left: Duration,
}

impl ResumeWait {
    /// Boxed: a wait few calls carry, and the call's future keeps room for it through every attempt.
    pub(crate) fn of(last: &crate::journal::Record) -> Option<Box<ResumeWait>> {
        let until = last.retry_at.as_deref()?;
        let left = crate::journal::parse_rfc3339(until)?.duration_since(crate::journal::wall_clock()).ok()?;
        Some(Box::new(ResumeWait { until: until.to_owned(), left }))
    }
}

/// A call's budget, as its rules read it.
impl Run<'_> {
    /// The time an attempt gets of `left`: all of it, but for a side effect with a probe, what the
    /// probe needs is kept back (the reserve; without one, the floor; without a floor, a quarter of
    /// `left`), so an attempt that times out can still be resolved inside the budget.
    pub(crate) fn attempt_limit(&self, left: Duration, has_probe: bool) -> Duration {
        let spec = self.spec();
        if !spec.effect().has_side_effect() || !has_probe {
            return left;
        }
        let reserve = match spec.get_probe_reserve() {
            Duration::ZERO => left / 4,
            reserve => reserve,
        };
        left.saturating_sub(reserve).max(spec.get_deadline_floor()).min(left)
    }

    /// Whether an attempt may start with `left` of the budget: never on an empty budget, floor or
    /// none (it could land and never be resolved), never below the floor.
    pub(crate) fn may_start(&self, left: Duration) -> Result<(), Stop> {
        if crate::rules::may_start(left, self.spec().get_deadline_floor()) {
            Ok(())
        } else {
            Err(self.refusal(left))
        }
    }

    /// Why an attempt may not start with `left` of the budget.
    fn refusal(&self, left: Duration) -> Stop {
        let spec = self.spec();
        let message = if left.is_zero() {
            format!("budget spent: nothing left for {}; not started", spec.name())
        } else {
            format!(
                "budget spent: {} left, {} needs at least {} to start; not started",
                secs(left),
                spec.name(),
                secs(spec.get_deadline_floor())
            )
        };
        Stop::new(Outcome::Retryable, Applied::No, message, None, Reason::BudgetSpent)
    }

    /// Whether the budget left can hold the wait before the next attempt (backoff, or the service's
    /// `Retry-After` when longer) and the tool's floor; the wait when it can. A call resumed from the
    /// log (`made == 0`) has no earlier attempt of its own to back off from.
    pub(crate) fn room(&self, class: &Class, made: u32) -> (Room, Duration) {
        if made == 0 {
            return (Room::Enough, Duration::ZERO);
        }
        let left = self.task().remaining();
        let floor = self.spec().get_deadline_floor();
        if let Some(asked) = class.wait()
            && asked.saturating_add(floor) > left
        {
            return (Room::AskedTooLong, asked);
        }
        let key = self.key();
        let seed = u64::from_le_bytes(key.as_bytes()[..8].try_into().unwrap_or([0; 8]));
        let backoff = self.spec().get_backoff().wait(self.now().number().max(1), seed);
        let wait = class.wait().map_or(backoff, |asked| asked.max(backoff));
        if wait.saturating_add(floor) > left || left < floor {
            return (Room::TooShort, wait);
        }
        (Room::Enough, wait)
    }

    /// Why the budget cannot hold another attempt, as [`Run::room`] found.
    pub(crate) fn out_of_budget(&self, class: &Class, room: Room, asked: Duration) -> Stop {
        let left = self.task().remaining();
        if room == Room::AskedTooLong {
            let why = format!(
                "the service asked to wait {}, longer than the {} left: not retried",
                secs(asked),
                secs(left)
            );
            return Stop::after(class, &why, Some(asked), Reason::AskedToWait);
        }
        let why = format!("not retried: {} left cannot hold the next wait and attempt", secs(left));
        Stop::after(class, &why, class.wait(), Reason::BudgetSpent)
    }

    /// Honour, in a restarted process, the wait the service asked of an earlier one.
    pub(crate) async fn wait_as_asked_before(&self, wait: Box<ResumeWait>) -> Result<(), Stop> {
        let left = self.task().remaining();
        if wait.left.saturating_add(self.spec().get_deadline_floor()) > left {
            let message = format!(
                "the service asked an earlier run to wait until {}, longer than the {} left: not started",
                wait.until,
                secs(left)
            );
            return Err(Stop::new(
                Outcome::Retryable,
                Applied::No,
                message,
                Some(wait.left),
                Reason::AskedToWait,
            ));
        }
        tokio::time::sleep(wait.left).await;
        Ok(())
    }
}
