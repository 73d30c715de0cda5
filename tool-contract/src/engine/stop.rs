//! Why a call went no further: the outcome, effect, message and wait it ends with.

use std::time::Duration;

use crate::classify::Class;
use crate::report::{Applied, Outcome, Reason};

/// Why the engine stopped before another attempt.
pub(crate) struct Stop {
    pub(crate) outcome: Outcome,
    pub(crate) applied: Applied,
    pub(crate) message: String,
    pub(crate) wait: Option<Duration>,
    pub(crate) reason: Reason,
    /// How many bytes of `message` say how the last attempt ended (with the `; ` after them).
    said: usize,
}

impl Stop {
    /// A stop whose message is all its own.
    pub(crate) fn new(
        outcome: Outcome,
        applied: Applied,
        message: String,
        wait: Option<Duration>,
        reason: Reason,
    ) -> Stop {
        Stop { outcome, applied, message, wait, reason, said: 0 }
    }

    /// A stop that keeps the last attempt's outcome and effect: its message says how the attempt ended,
    /// then `why` the call goes no further (when there is more to say).
    pub(crate) fn after(class: &Class, why: &str, wait: Option<Duration>, reason: Reason) -> Stop {
        Stop::said(class.outcome(), class.effect(), class, why, wait, reason)
    }

    /// [`Stop::after`] with the outcome and effect the call ends with.
    pub(crate) fn said(
        outcome: Outcome,
        applied: Applied,
        class: &Class,
        why: &str,
        wait: Option<Duration>,
        reason: Reason,
    ) -> Stop {
        let (message, said) = match why {
            "" => (class.message().to_owned(), class.message().len()),
            why => (format!("{}; {why}", class.message()), class.message().len() + 2),
        };
        Stop { outcome, applied, message, wait, reason, said }
    }

    /// Why the call went no further, without how its last attempt ended: what a call in parts adds to
    /// the count of its parts, which say how each ended.
    pub(crate) fn why(&self) -> &str {
        self.message.get(self.said..).unwrap_or_default()
    }
}
