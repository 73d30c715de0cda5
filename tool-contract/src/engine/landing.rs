//! Where a call's attempt stands against its landing horizon: until when its request may have reached
//! the service, and when a "not landed" about it was seen. The rules are `policy`'s (`landing`,
//! `landing_ends`); this holds what they are asked about, on the call's clock.

use std::time::Duration;

use tokio::time::Instant;

use crate::policy::{Horizon, landing, landing_ends};
use crate::report::Applied;

/// The landing horizon of the attempt in hand.
pub(crate) struct Landing {
    /// The tool's landing horizon.
    horizon: Duration,
    /// The task's deadline.
    deadline: Instant,
    /// Until when the last attempt's request may have reached the service: its landing horizon runs
    /// from here. `None` when no attempt's request can still land (none was sent, or the service's own
    /// answer said it applied nothing).
    reached: Option<Instant>,
    /// When a person's "not landed" about the attempt was seen (their settlement's `seen`, or when they
    /// were asked during this call): it counts only if seen once the attempt could no longer land.
    observed: Option<Instant>,
}

impl Landing {
    /// No attempt yet, for a tool whose horizon is `horizon`, in a task that ends at `deadline`.
    pub(crate) fn new(horizon: Duration, deadline: Instant) -> Landing {
        Landing { horizon, deadline, reached: None, observed: None }
    }

    /// The horizon is at least `horizon` from now on (a receiver that forgot the key deduplicates
    /// nothing, so a request it still holds would be a new effect).
    pub(crate) fn widen(&mut self, horizon: Duration) {
        self.horizon = self.horizon.max(horizon);
    }

    /// The attempt's request may reach the service until `at` (the attempt is running, or just ended).
    pub(crate) fn reach(&mut self, at: Instant) {
        self.reached = Some(at);
    }

    /// Continue from what an earlier call recorded: until when its attempt may have reached the
    /// service, and when a person's "not landed" about it was seen.
    pub(crate) fn resume(&mut self, reached: Option<Instant>, seen: Option<Instant>) {
        (self.reached, self.observed) = (reached, seen);
    }

    /// A person asked during the call saw the attempt at `at`.
    pub(crate) fn seen_at(&mut self, at: Instant) {
        self.observed = Some(at);
    }

    /// How much longer the service may still apply the last attempt's request, at `now`: the rest of
    /// its landing horizon (zero once passed).
    pub(crate) fn left(&self, now: Instant) -> Duration {
        self.ends().map_or(Duration::ZERO, |ends| ends.saturating_duration_since(now))
    }

    /// Whether a probe's "not landed" about an attempt the service answered with `answered` counts
    /// ([`landing`]): at once when the service's own answer said it applied nothing, else only if the
    /// probe looked (`looked`, the instant before it was asked; not when it answered) once the attempt
    /// could no longer land.
    pub(crate) fn judge(&self, answered: Applied, looked: Instant, now: Instant) -> Horizon {
        let ends = landing_ends(self.reached, answered, |at| self.plus_horizon(at));
        landing(ends, looked, now, self.deadline)
    }

    /// Whether a person's "not landed" counts at `now`: only if they saw the attempt once it could no
    /// longer land ([`landing`]), not when their word was written.
    pub(crate) fn judge_word(&self, now: Instant) -> Horizon {
        landing(self.ends(), self.observed.unwrap_or(now), now, self.deadline)
    }

    /// When the last attempt can no longer land; `None` when no request of it can be in flight.
    fn ends(&self) -> Option<Instant> {
        self.reached.map(|at| self.plus_horizon(at))
    }

    /// `at` plus the tool's landing horizon.
    fn plus_horizon(&self, at: Instant) -> Instant {
        at.checked_add(self.horizon).unwrap_or(at)
    }
}
