//! The stamps' rules: what a record's stamps bound, read as the latest (or earliest) instant each may
//! stand for. The engine's and the stores' alone: not public API (the protocol model calls them).

use std::time::{Duration, SystemTime};

use crate::records::{Phase, Record};

/// Until when an attempt an earlier call recorded may have reached the service, on any clock: the
/// earliest of its start plus the budget it started with (`ran`: a call sends nothing after its
/// deadline), when the call that made it ended (`sent`: the attempt's own record of it,
/// [`Record::sent_by`]), when a person's settlement of it was written (`settled`: made once nobody held
/// the intent) and `now` (whoever made it is gone). Its landing horizon runs from there
/// (`policy::landing`).
///
/// ```
/// assert_eq!(tool_contract::rules::reached_by(Some(9), Some(4), None, 12), 4);
/// assert_eq!(tool_contract::rules::reached_by(None, None, None, 12), 12);
/// ```
pub fn reached_by<T: Ord>(ran: Option<T>, sent: Option<T>, settled: Option<T>, now: T) -> T {
    [ran, sent, settled].into_iter().flatten().fold(now, std::cmp::min)
}

/// A stamp is whole seconds rounded down: the instant it stands for may be up to this much later.
pub const STAMP_ROUNDING: Duration = Duration::from_secs(1);

/// How far apart the clocks of two processes sharing a log may stand. A time another process stamped
/// is trusted only this far: read as this much later where it bounds an instant from above (until when
/// a request could leave), as this much earlier where it bounds one from below (when a person looked).
/// A claim's lease keeps the same margin past its caller's deadline (DESIGN.md §9, rule 4).
pub const CLOCK_SKEW: Duration = Duration::from_secs(1);

/// Until when the request of the attempt `record` is about may have left for the service, by the
/// record's own stamps, on the clock of the process that wrote it: its start plus the budget it was
/// logged with (both whole seconds rounded down, so two seconds more); `ran` of [`reached_by`] once
/// read as [`stamps`] reads it. `None` when its start cannot be read.
///
/// ```
/// use tool_contract::journal::Record;
///
/// let record: Record = serde_json::from_str(
///     r#"{"phase":"start","task":"t","call":"post","intent_key":"b56ee2ce5d70dc24aa8b3866ee8854a0",
///         "attempt":1,"attempt_id":"t-a1","started":"2026-12-01T06:00:00Z","budget_left_s":29}"#,
/// )
/// .unwrap();
/// let until = tool_contract::rules::ran_until(&record).unwrap();
/// let started = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_104_800);
/// assert_eq!(until.duration_since(started).unwrap().as_secs(), 31);
/// ```
pub fn ran_until(record: &Record) -> Option<SystemTime> {
    let ran = Duration::from_secs(record.budget_left_s).saturating_add(2 * STAMP_ROUNDING);
    crate::records::parse_rfc3339(&record.started)?.checked_add(ran)
}

/// What an intent's last record says, by its stamps, of the instants [`reached_by`] and
/// `policy::landing` judge an attempt by, read as the latest (or the earliest) instant each
/// stamp may stand for on this process's clock: see [`stamps`]. On the wall clock as read from the
/// record; [`Stamps::map`] puts them on another clock (the engine's monotonic one, the protocol
/// model's ticks).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamps<T = SystemTime> {
    /// The attempt's last possible send by its start and budget ([`ran_until`]), late by
    /// [`CLOCK_SKEW`].
    pub ran: Option<T>,
    /// When the call that made the attempt ended ([`Record::sent_by`], rounded up when written), late
    /// by [`CLOCK_SKEW`].
    pub sent: Option<T>,
    /// When a person's settlement of the attempt was written, when the record is one: nobody held the
    /// intent then, or its holder's attempt was over. Late by [`STAMP_ROUNDING`] and [`CLOCK_SKEW`].
    pub settled: Option<T>,
    /// When the person who settled it saw the attempt ([`Settlement::seen_at`]): what their word is
    /// judged by. Early by [`CLOCK_SKEW`] (a stamp rounded down is early already).
    ///
    /// [`Settlement::seen_at`]: crate::journal::Settlement::seen_at
    pub seen: Option<T>,
}

impl<T> Stamps<T> {
    /// The four instants, in the order of the fields.
    pub const fn new(ran: Option<T>, sent: Option<T>, settled: Option<T>, seen: Option<T>) -> Stamps<T> {
        Stamps { ran, sent, settled, seen }
    }

    /// The same instants on another clock.
    pub fn map<U>(self, mut at: impl FnMut(T) -> U) -> Stamps<U> {
        Stamps {
            ran: self.ran.map(&mut at),
            sent: self.sent.map(&mut at),
            settled: self.settled.map(&mut at),
            seen: self.seen.map(&mut at),
        }
    }
}

/// The stamps of `last`, an intent's last record, as [`Stamps`] reads them: each that bounds an instant
/// from above read as the latest it may stand for (rounded down to the second when written, unless
/// written rounded up, and perhaps written by another process whose clock stands [`CLOCK_SKEW`]
/// apart), each that bounds one from below as the earliest. A stamp that cannot be read bounds nothing.
///
/// Every record about an attempt carries the attempt's own start and budget, and the instant its call
/// ended as the attempt's end record wrote it: a probe's verdict or a settlement written later, by
/// another process or a later call, repeats them as they stand and adds no slack of its own, so a
/// bound never drifts later from one reader to the next.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use tool_contract::journal::Record;
///
/// let probed: Record = serde_json::from_str(
///     r#"{"phase":"end","task":"t","call":"post","intent_key":"b56ee2ce5d70dc24aa8b3866ee8854a0",
///         "attempt":1,"attempt_id":"t-a1","started":"2026-12-01T06:00:00Z","budget_left_s":29,
///         "outcome":"unknown","effect_applied":"unknown","probe":"not_landed","message":"probe",
///         "sent_by":"2026-12-01T06:00:04Z"}"#,
/// )
/// .unwrap();
/// let stamps = tool_contract::rules::stamps(&probed);
/// let at = |s: u64| Some(UNIX_EPOCH + Duration::from_secs(1_796_104_800 + s));
/// // The attempt's call ended by 06:00:04 by that process's clock: by 06:00:05 by this one's.
/// assert_eq!(stamps.sent, at(5));
/// assert_eq!(stamps.ran, at(32));
/// assert_eq!((stamps.settled, stamps.seen), (None, None));
/// ```
pub fn stamps(last: &Record) -> Stamps {
    let stamp = |text: &str| crate::records::parse_rfc3339(text);
    let skewed = |at: SystemTime| at.checked_add(CLOCK_SKEW);
    let settled = last.settled.as_ref().filter(|_| last.phase == Phase::Settled);
    Stamps {
        ran: ran_until(last).and_then(skewed),
        sent: last.sent_by.as_deref().and_then(stamp).and_then(skewed),
        settled: settled
            .and_then(|s| stamp(&s.at))
            .and_then(|at| at.checked_add(STAMP_ROUNDING + CLOCK_SKEW)),
        seen: settled.and_then(|s| stamp(s.seen_at())).map(|at| at.checked_sub(CLOCK_SKEW).unwrap_or(at)),
    }
}

/// `at` as a record's stamp that bounds an instant from above: RFC 3339 UTC rounded up to the second,
/// so the stamp is never earlier than the instant ([`Record::sent_by`]).
pub fn stamp_up(at: SystemTime) -> String {
    let rounded = match at.duration_since(std::time::UNIX_EPOCH) {
        Ok(since) if since.subsec_nanos() > 0 => {
            at + Duration::from_nanos(u64::from(1_000_000_000 - since.subsec_nanos()))
        }
        _ => at,
    };
    crate::records::rfc3339(rounded)
}
