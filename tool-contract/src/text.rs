//! Small text writers shared by the attempt log, the engine and the reports, without the formatting
//! machinery on the per-call path.

/// Append `n` in decimal, without the formatting machinery.
pub(crate) fn push_decimal(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    // The digits are ASCII by construction.
    out.push_str(std::str::from_utf8(decimal(n, &mut digits)).unwrap_or_default());
}

/// `n` in decimal, written at the end of `digits`: the shared number writer of attempt ids, messages and
/// log records.
pub(crate) fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &digits[at..]
}
