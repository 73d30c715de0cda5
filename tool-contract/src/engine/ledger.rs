//! The attempt in hand as the records about it tell it ([`Ledger`]): no I/O and no clock, the stamps
//! are arguments.

use std::time::Duration;

use crate::report::Outcome;

/// The attempt in hand as the records about it tell it: its number, its start's stamp with the budget
/// it started with (on the clock the records are stamped by, `S`), and when its call ended (`E`, as
/// the records keep it). Every record about the attempt (its start, its end, a probe's verdict, a
/// question to a person about it) carries these, so a later call can bound when the attempt's request
/// could last have left. The engine keeps a `Ledger<SystemTime, Box<str>>`, the protocol model a
/// `Ledger<u8, u8>` on its ticks: one type, so what each record carries is decided once.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::Outcome;
/// use tool_contract::unstable::machine::Ledger;
///
/// let mut attempt = Ledger::<u8, u8>::default();
/// // The log held two attempts; the last started at second 4 with 9 s of budget and ended by 6.
/// attempt.resume(2, Some((4, Duration::from_secs(9))), Some(6));
/// assert_eq!(attempt.next_attempt(), 3);
/// // A new attempt carries nothing of the one before until it starts.
/// assert_eq!(attempt.stamp(), None);
/// attempt.started(12, Duration::from_secs(5));
/// // Its start was never confirmed: the number goes back.
/// assert_eq!(attempt.give_back(), 2);
/// assert_eq!(attempt.next_attempt(), 3);
/// attempt.started(13, Duration::from_secs(4));
/// attempt.over(15);
/// // An `ok` says nothing of when the call ended; any other end does.
/// assert_eq!(attempt.sent_by(Outcome::Ok), None);
/// assert_eq!(attempt.sent_by(Outcome::Unknown), Some(&15));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ledger<S, E> {
    number: u32,
    stamp: Option<(S, Duration)>,
    sent_by: Option<E>,
}

impl<S, E> Default for Ledger<S, E> {
    fn default() -> Self {
        Ledger { number: 0, stamp: None, sent_by: None }
    }
}

impl<S: Copy, E> Ledger<S, E> {
    /// The attempt's number, from 1 (`0` before the first).
    pub fn number(&self) -> u32 {
        self.number
    }

    /// Continue from what the log holds: `attempts` made, the last one started at `stamp` with its
    /// budget, and its call ended by `sent_by` (as the last record says; `None` for what it does not).
    pub fn resume(&mut self, attempts: u32, stamp: Option<(S, Duration)>, sent_by: Option<E>) {
        (self.number, self.stamp, self.sent_by) = (attempts, stamp, sent_by);
    }

    /// Number the next attempt: one past the last. It carries no stamp until it starts.
    pub fn next_attempt(&mut self) -> u32 {
        self.number = self.number.saturating_add(1);
        (self.stamp, self.sent_by) = (None, None);
        self.number
    }

    /// The attempt started at `at` with `left` of the budget: every record about it carries both.
    pub fn started(&mut self, at: S, left: Duration) {
        self.stamp = Some((at, left));
    }

    /// The attempt's call is over (answered, failed, timed out) by `by`: its request reached the service
    /// no later, and the records that do not say `ok` carry it.
    pub fn over(&mut self, by: E) {
        self.sent_by = Some(by);
    }

    /// The attempt's start was never confirmed: the number goes back, and the call speaks for the
    /// attempt before it. The number left.
    pub fn give_back(&mut self) -> u32 {
        self.number = self.number.saturating_sub(1);
        self.number
    }

    /// The attempt's start stamp and budget, once it started (or was resumed): what its records carry.
    pub fn stamp(&self) -> Option<(S, Duration)> {
        self.stamp
    }

    /// When the attempt's call ended, as a record about it that says `outcome` carries it: an `ok`
    /// needs none (nothing is left in flight).
    pub fn sent_by(&self, outcome: Outcome) -> Option<&E> {
        if outcome == Outcome::Ok { None } else { self.sent_by.as_ref() }
    }
}
