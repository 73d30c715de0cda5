//! The one duration grammar of `#[tool]`: a whole number and a unit, like `"250ms"`, `"2s"`, `"1m"` or
//! `"1h"`. Kept free of dependencies so the fuzz targets can include this file as it is.

/// The units, as an error message lists them.
pub const UNITS: &str = "`ms`, `s`, `m` or `h`";

/// `"250ms"`, `"2s"`, `"1m"`, `"1h"` in milliseconds; `None` for anything else (a fraction, a space, a
/// sign, a missing or unknown unit, a value past `u64` milliseconds).
pub fn millis(text: &str) -> Option<u64> {
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    if number.is_empty() {
        return None;
    }
    let number: u64 = number.parse().ok()?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    number.checked_mul(scale)
}

/// `"200ms..5s"`: the first wait and the longest, in milliseconds. `Err` says what is wrong.
pub fn range(text: &str) -> Result<(u64, u64), RangeError> {
    let Some((first, cap)) = text.split_once("..") else {
        return Err(RangeError::NoCap);
    };
    let first = millis(first).ok_or(RangeError::First)?;
    let cap = millis(cap).ok_or(RangeError::Cap)?;
    if first > cap {
        return Err(RangeError::Reversed);
    }
    Ok((first, cap))
}

/// What keeps a backoff range from parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeError {
    /// No `..`.
    NoCap,
    /// The part before `..` is not a duration.
    First,
    /// The part after `..` is not a duration.
    Cap,
    /// The first wait is longer than the cap.
    Reversed,
}
