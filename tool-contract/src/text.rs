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

/// The most of a quoted value or argument a report or an error repeats: what a caller wrote is echoed
/// back this far, and its length is said past it.
pub const MAX_ECHO: usize = 240;

/// `text` as a report or an error quotes it: whole up to 240 bytes (`MAX_ECHO`), else its first 240
/// bytes (at a character boundary), an ellipsis and how long it was.
pub fn cut(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_ECHO {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = MAX_ECHO;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}… ({} bytes in all)", &text[..end], text.len()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_echo_is_cut_and_says_its_length() {
        assert_eq!(super::cut("short"), "short");
        let long = "é".repeat(1000);
        let cut = super::cut(&long);
        assert!(cut.len() < 300, "{}", cut.len());
        assert!(cut.ends_with("… (2000 bytes in all)"), "{cut}");
        assert!(cut.starts_with("éé"));
    }
}
