//! The log's timestamps: RFC 3339 UTC with whole seconds, written and read without a date library.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The wall-clock time the engine stamps records and waits with: the system's clock, moved by as
/// much as tokio's clock stands apart from the monotonic one.
///
/// Outside a paused runtime the two agree and this is the system's clock (as measured against the
/// monotonic one at most a second earlier, so it costs one clock read). Under tokio's paused clock
/// (`#[tokio::test(start_paused = true)]`), where time moves only as the test advances it, this moves
/// with it: a record's `started`, a `retry_at` and a wait a restarted process reads back are all on the
/// one clock the test controls. A test that builds records by hand takes its time from here too.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use std::time::Duration;
/// use tool_contract::unstable::wall_clock;
///
/// let before = wall_clock();
/// tokio::time::sleep(Duration::from_secs(3600)).await; // at once: the clock is paused
/// let moved = wall_clock().duration_since(before).unwrap();
/// // To within the time between two reads of the system's clocks: nanoseconds.
/// assert!(moved.abs_diff(Duration::from_secs(3600)) < Duration::from_millis(1), "{moved:?}");
/// # }
/// ```
pub fn wall_clock() -> SystemTime {
    wall_clock_at(tokio::time::Instant::now())
}

/// [`wall_clock`] at `now`, a reading of tokio's clock the caller already has: no clock read of its
/// own most of the time.
pub(crate) fn wall_clock_at(now: tokio::time::Instant) -> SystemTime {
    let now = now.into_std();
    // The system clock against the monotonic one, measured again once the clock has moved a second:
    // a step of the system clock (NTP, a resume from suspend) is seen within a second, and a call
    // reads one clock, as `SystemTime::now()` would.
    thread_local! {
        static ANCHOR: std::cell::Cell<Option<Anchor>> = const { std::cell::Cell::new(None) };
    }
    ANCHOR.with(|cell| {
        if let Some(anchor) = cell.get()
            && let Some(since) = now.checked_duration_since(anchor.at)
            && since < Duration::from_secs(1)
        {
            return anchor.system_at.checked_add(since).unwrap_or(anchor.system_at);
        }
        let anchor = Anchor::measure(now);
        cell.set(Some(anchor));
        anchor.system_at
    })
}

/// The system clock and the monotonic one, read together.
#[derive(Clone, Copy)]
struct Anchor {
    /// tokio's clock when this was measured (paused or not).
    at: std::time::Instant,
    /// The wall-clock time at `at`: the system's clock, moved by as much as tokio's clock stood apart
    /// from the monotonic one.
    system_at: SystemTime,
}

impl Anchor {
    /// Read both clocks as close together as the scheduler allows: a read interrupted between them
    /// (more than 100 µs) is taken again, twice at most.
    fn measure(at: std::time::Instant) -> Anchor {
        let mut reads = 0;
        loop {
            let mono = std::time::Instant::now();
            let system = SystemTime::now();
            let after = std::time::Instant::now();
            reads += 1;
            if after.duration_since(mono) < Duration::from_micros(100) || reads == 3 {
                let system_at = match at.checked_duration_since(mono) {
                    Some(ahead) => system.checked_add(ahead),
                    None => system.checked_sub(mono.duration_since(at)),
                };
                return Anchor { at, system_at: system_at.unwrap_or(system) };
            }
        }
    }
}

/// Format a wall-clock time as RFC 3339 UTC with whole seconds (`2026-11-30T05:12:04Z`).
pub fn rfc3339(at: SystemTime) -> String {
    with_stamp(at, str::to_owned)
}

/// Run `f` on `at` as the log writes it ([`rfc3339`]). Every attempt stamps its records, mostly within
/// the same second as the attempt before: the text of the last second stamped is kept per thread and
/// lent, so a stamp is most often two comparisons of times.
pub(crate) fn with_stamp<R>(at: SystemTime, f: impl FnOnce(&str) -> R) -> R {
    /// The second lent last: from, until (excluded), and its text.
    struct Lent(SystemTime, SystemTime, String);
    thread_local! {
        static LENT: std::cell::RefCell<Lent> =
            const { std::cell::RefCell::new(Lent(UNIX_EPOCH, UNIX_EPOCH, String::new())) };
    }
    let secs = || at.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    LENT.with(|lent| match lent.try_borrow_mut() {
        Ok(mut lent) => {
            if !(lent.0 <= at && at < lent.1) {
                let secs = secs();
                let from = UNIX_EPOCH.checked_add(Duration::from_secs(secs)).unwrap_or(at);
                let until = from.checked_add(Duration::from_secs(1)).unwrap_or(from);
                *lent = Lent(from, until, rfc3339_of(secs));
            }
            f(&lent.2)
        }
        // `f` stamps again (another time, inside this one's): its own text.
        Err(_) => f(&rfc3339_of(secs())),
    })
}

/// Read back a time written by [`rfc3339`] (`2026-11-30T05:12:04Z`); `None` for any other form.
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let b = text.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u64> {
        let digits = text.get(from..to)?;
        digits.bytes().all(|c| c.is_ascii_digit()).then(|| digits.parse().ok())?
    };
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, min, sec) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || h > 23 || min > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(i64::try_from(y).ok()?, m, d);
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + min * 60 + sec;
    UNIX_EPOCH.checked_add(std::time::Duration::from_secs(secs))
}

// A proleptic Gregorian date to days since 1970-01-01 (the inverse of `civil_from_days`).
fn days_from_civil(y: i64, m: u64, d: u64) -> i64 {
    let (m, d) = (i64::try_from(m).unwrap_or(1), i64::try_from(d).unwrap_or(1));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn rfc3339_of(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(0));
    let (h, min, sec) = (rem / 3600, rem % 3600 / 60, rem % 60);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{sec:02}Z")
}

// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's civil_from_days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn rfc3339_reads_back_what_it_writes() {
        for secs in [0u64, 951_782_400, 1_796_000_000, 4_102_444_799, 86_399, 86_400] {
            let at = UNIX_EPOCH + std::time::Duration::from_secs(secs);
            assert_eq!(parse_rfc3339(&rfc3339(at)), Some(at), "{secs}");
        }
        for garbage in [
            "",
            "soon",
            "2026-11-30 05:12:04Z",
            "2026-13-30T05:12:04Z",
            "2026-11-30T05:12:04",
            "２026-11-30T05:12:04Z",
        ] {
            assert_eq!(parse_rfc3339(garbage), None, "{garbage}");
        }
    }

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let at = httpdate::parse_http_date("Mon, 30 Nov 2026 05:12:04 GMT").unwrap();
        assert_eq!(rfc3339(at), "2026-11-30T05:12:04Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
        let late = UNIX_EPOCH + Duration::from_secs(253_402_300_799); // the last second of year 9999
        assert_eq!(rfc3339(late), "9999-12-31T23:59:59Z");
        assert_eq!(rfc3339(late + Duration::from_secs(1)), "10000-01-01T00:00:00Z");
    }
}
