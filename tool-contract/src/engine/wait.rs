//! The budget's rules put to a tool: how long an attempt may run, whether one may start, how the next
//! is paced (backoff and `Retry-After`), and a wait an earlier run was asked for. The rules are the
//! call machine's ([`Budget`](super::machine::Budget), [`room`](super::machine::room)); this gives
//! them the tool's settings and says in words why a call stops.

use std::time::Duration;

use super::guard::secs;
use super::machine::{Action, Machine, Pacing, Write};
use super::stop::Stop;
use crate::classify::Class;
use crate::key::IntentKey;
use crate::policy::Room;
use crate::report::{Applied, Outcome, Reason};
use crate::spec::ToolSpec;
use tokio::time::Instant;

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

/// The budget's rules for one call of a tool, on the tool's settings (its floor, probe reserve and
/// backoff) and the intent (the backoff's jitter): the machine decides, this gives it the figures and
/// words the refusals.
#[derive(Clone, Copy)]
pub(crate) struct Pace<'a> {
    spec: &'a ToolSpec,
    /// What the backoff's jitter is seeded with: the intent's key, so a restart waits alike.
    seed: u64,
}

impl<'a> Pace<'a> {
    /// The rules of `spec`'s budget for the intent `key`.
    pub(crate) fn of(spec: &'a ToolSpec, key: &IntentKey) -> Pace<'a> {
        let seed = u64::from_le_bytes(key.as_bytes()[..8].try_into().unwrap_or([0; 8]));
        Pace { spec, seed }
    }

    /// Whether the call's `machine` lets an attempt start now: its start record named
    /// ([`Write::Start`], by [`Budget::may_start`](super::machine::Budget::may_start)), with the instant
    /// and the budget left it starts with, or why not. A call with nothing open to decide has its
    /// attempt named first, with no wait.
    pub(crate) fn start(self, machine: &mut Machine<Instant>) -> Result<(Instant, Duration), Stop> {
        let (now, pacing) = (Instant::now(), self.starting());
        let mut action = machine.next(now, pacing);
        if let Some(Action::Attempt { .. }) = action {
            action = machine.next(now, pacing);
        }
        match action {
            Some(Action::Record(Write::Start { left })) => Ok((now, left)),
            _ => Err(self.refusal(machine.budget().left(now))),
        }
    }

    /// Why an attempt may not start with `left` of the budget.
    pub(crate) fn refusal(self, left: Duration) -> Stop {
        let spec = self.spec;
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

    /// How attempt `number + 1` is paced after an attempt that ended as `class`: the service's
    /// `Retry-After`, the tool's backoff (seeded by the intent, so a restart waits alike) and its floor.
    /// Whether the budget can hold them is the call machine's rule ([`room`](super::machine::room)),
    /// which its `next` runs for the engine and the protocol model alike.
    pub(crate) fn pacing(self, class: &Class, number: u32) -> Pacing {
        let backoff = self.spec.get_backoff().wait(number.max(1), self.seed);
        Pacing { asked: class.wait(), backoff, ..self.starting() }
    }

    /// How an attempt starts: the tool's floor, and the time it keeps back for its probe.
    pub(crate) fn starting(self) -> Pacing {
        let spec = self.spec;
        Pacing { floor: spec.get_deadline_floor(), reserve: spec.get_probe_reserve(), ..Pacing::default() }
    }

    /// Why `left` of the budget cannot hold another attempt, as the machine's [`room`](super::machine::room)
    /// found.
    pub(crate) fn out_of_budget(self, class: &Class, room: Room, asked: Duration, left: Duration) -> Stop {
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

    /// Whether a wait the service asked of an earlier run may be waited now, by the call `machine`'s
    /// rule ([`Budget::may_wait`](super::machine::Budget::may_wait)): how long to wait, or why the
    /// attempt is not started.
    pub(crate) fn asked_before(
        self,
        machine: &Machine<Instant>,
        wait: &ResumeWait,
    ) -> Result<Duration, Stop> {
        let now = Instant::now();
        if !machine.budget().may_wait(now, wait.left, self.spec.get_deadline_floor()) {
            let left = machine.budget().left(now);
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
        Ok(wait.left)
    }
}

#[cfg(test)]
mod tests {
    //! The budget's rules as a table: no clock, no runtime; the budget left is an argument.

    use std::time::Duration;

    use super::super::machine::room;
    use super::super::machine::{Action, Can, Machine, Setup, Write};
    use super::{Pace, ResumeWait};
    use crate::classify::Class;
    use crate::effect::EffectKind;
    use crate::key::IntentKey;
    use crate::policy::Room;
    use crate::report::{Outcome, Reason};
    use crate::spec::{Backoff, Jitter, ToolSpec};
    use tokio::time::Instant;

    const S: fn(u64) -> Duration = Duration::from_secs;
    const FIXED: Backoff =
        Backoff { base: Duration::from_secs(1), max: Duration::from_secs(8), jitter: Jitter::None };

    fn key(n: u8) -> IntentKey {
        IntentKey::derive("task", "agent", "verb", &n, None)
    }

    /// The start of a call's first attempt as its machine names it, with `left` of the budget: the time
    /// its request gets (until the last instant it may leave), or `None` when it is not started.
    #[tokio::test(start_paused = true)]
    async fn an_attempt_keeps_back_what_its_probe_needs_and_a_read_keeps_nothing() {
        let send = ToolSpec::new("post", EffectKind::Send);
        let read = ToolSpec::new("get", EffectKind::Read);
        let floor = send.deadline_floor(S(2));
        let reserve = send.deadline_floor(S(2)).probe_reserve(S(5));
        let rows = [
            (read, true, S(8), Some(S(8))),
            (send, false, S(8), Some(S(8))),
            (send, true, S(8), Some(S(6))),
            (floor, true, S(8), Some(S(6))),
            (floor, true, S(3), Some(S(2))),
            (floor, true, S(2), Some(S(2))),
            (reserve, true, S(8), Some(S(3))),
            (reserve, true, S(6), Some(S(2))),
            (reserve, true, S(1), None),
        ];
        for (spec, probe, left, limit) in rows {
            let mut call = machine(&spec, probe, left);
            let (now, pacing) = (Instant::now(), Pace::of(&spec, &key(0)).starting());
            let got = match call.next(now, pacing) {
                Some(Action::Attempt { after }) if after.is_zero() => match call.next(now, pacing) {
                    Some(Action::Record(Write::Start { left: recorded })) => {
                        assert_eq!(recorded, left);
                        call.on(super::super::machine::Event::Written);
                        match call.next(now, pacing) {
                            Some(Action::Send { not_after }) => Some(not_after - now),
                            other => panic!("{other:?} after the start record"),
                        }
                    }
                    Some(Action::Stop(crate::policy::End::NotStarted)) => None,
                    other => panic!("{other:?} to start"),
                },
                other => panic!("{other:?} with nothing to decide"),
            };
            assert_eq!(got, limit, "{} with {left:?} left, probe {probe}", spec.effect());
        }
    }

    #[test]
    fn a_start_refused_says_what_the_budget_lacks() {
        let spec = ToolSpec::new("post", EffectKind::Send).deadline_floor(S(2));
        let pace = Pace::of(&spec, &key(0));
        let below = pace.refusal(Duration::from_millis(1999));
        assert_eq!((below.outcome, below.reason), (Outcome::Retryable, Reason::BudgetSpent));
        assert!(below.message.contains("needs at least 2.0s"), "{}", below.message);
        let none = ToolSpec::new("get", EffectKind::Read);
        let empty = Pace::of(&none, &key(0)).refusal(Duration::ZERO);
        assert!(empty.message.contains("nothing left for get"), "{}", empty.message);
    }

    #[test]
    fn the_wait_before_the_next_attempt_fits_the_budget_or_says_which_wait_does_not() {
        let spec = ToolSpec::new("get", EffectKind::Read).deadline_floor(S(1)).backoff(FIXED);
        let pace = Pace::of(&spec, &key(0));
        let plain = Class::retryable("503");
        let asked = Class::retryable("429").retry_after(S(6));
        let room = |class: &Class, made, number, left| room(made, pace.pacing(class, number), left);
        // A call resumed from the log backs off from nothing of its own.
        assert_eq!(room(&asked, 0, 3, S(1)), (Room::Enough, Duration::ZERO));
        assert_eq!(room(&plain, 1, 1, S(10)), (Room::Enough, S(1)));
        assert_eq!(room(&plain, 3, 3, S(10)), (Room::Enough, S(4)));
        assert_eq!(room(&plain, 3, 3, S(4)), (Room::TooShort, S(4)));
        assert_eq!(room(&asked, 1, 1, S(10)), (Room::Enough, S(6)));
        assert_eq!(room(&asked, 1, 1, S(6)), (Room::AskedTooLong, S(6)));
        let stop = pace.out_of_budget(&asked, Room::AskedTooLong, S(6), S(6));
        assert_eq!((stop.reason, stop.wait), (Reason::AskedToWait, Some(S(6))));
        let stop = pace.out_of_budget(&plain, Room::TooShort, S(4), S(4));
        assert_eq!((stop.reason, stop.wait), (Reason::BudgetSpent, None));
        assert!(stop.message.contains("4.0s left"), "{}", stop.message);
    }

    #[test]
    fn the_jitter_is_drawn_from_the_intent_so_one_intent_waits_alike_every_time() {
        let spec = ToolSpec::new("get", EffectKind::Read).backoff(Backoff::DEFAULT);
        let class = Class::retryable("503");
        let wait = |k: u8| Pace::of(&spec, &key(k)).pacing(&class, 2).backoff;
        assert_eq!(wait(1), wait(1));
        let waits: std::collections::BTreeSet<Duration> = (0..16).map(wait).collect();
        assert!(waits.len() > 8, "sixteen intents drew {} waits: {waits:?}", waits.len());
        assert!(waits.iter().all(|w| *w <= Duration::from_millis(400)), "{waits:?}");
    }

    /// A call of `spec` with `left` of its budget, on the paused clock (`probe`: whether it has one).
    fn machine(spec: &ToolSpec, probe: bool, left: Duration) -> Machine<Instant> {
        let can = Can { probe, approver: false, person: false };
        Machine::new(Setup::of(spec, can, Instant::now() + left))
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_asked_of_an_earlier_run_is_honoured_or_refuses_the_start() {
        let spec = ToolSpec::new("post", EffectKind::Send).deadline_floor(S(2));
        let pace = Pace::of(&spec, &key(0));
        let wait = ResumeWait { until: "2026-12-05T06:00:00Z".to_owned(), left: S(5) };
        assert_eq!(pace.asked_before(&machine(&spec, true, S(7)), &wait).ok(), Some(S(5)));
        let stop = pace.asked_before(&machine(&spec, true, S(6)), &wait).unwrap_err();
        assert_eq!((stop.reason, stop.wait), (Reason::AskedToWait, Some(S(5))));
        assert!(stop.message.contains("until 2026-12-05T06:00:00Z"), "{}", stop.message);
    }
}
