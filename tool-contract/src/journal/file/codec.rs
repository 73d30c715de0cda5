//! The record codec: writing a record as the line serde would write, and checking a line fast.

use super::*;

/// Append `record` as one JSON line without its newline: the bytes `serde_json::to_writer` writes, made
/// without serde's machinery for the fixed fields (the value still goes through serde_json).
pub(super) fn encode(out: &mut Vec<u8>, record: RecordRef<'_>) -> serde_json::Result<()> {
    out.extend_from_slice(match record.phase {
        Phase::Start => br#"{"phase":"start","task":"#,
        Phase::End => br#"{"phase":"end","task":"#,
        Phase::Settled => br#"{"phase":"settled","task":"#,
        Phase::Approval => br#"{"phase":"approval","task":"#,
        Phase::McpTask => br#"{"phase":"mcp_task","task":"#,
    });
    text(out, record.task)?;
    out.extend_from_slice(br#","call":"#);
    text(out, record.call)?;
    out.extend_from_slice(br#","intent_key":""#);
    out.extend_from_slice(&record.intent_key.hex());
    out.extend_from_slice(br#"","attempt":"#);
    number(out, u64::from(record.attempt));
    out.extend_from_slice(br#","attempt_id":"#);
    text(out, record.attempt_id)?;
    out.extend_from_slice(br#","started":"#);
    text(out, record.started)?;
    out.extend_from_slice(br#","budget_left_s":"#);
    number(out, record.budget_left_s);
    out.extend_from_slice(br#","outcome":"#);
    word(out, record.outcome.map(Outcome::as_str));
    out.extend_from_slice(br#","effect_applied":"#);
    word(out, record.effect_applied.map(crate::report::Applied::as_str));
    out.extend_from_slice(br#","probe":"#);
    word(
        out,
        record.probe.map(|mark| match mark {
            crate::probe::ProbeMark::Landed => "landed",
            crate::probe::ProbeMark::NotLanded => "not_landed",
            crate::probe::ProbeMark::Failed => "failed",
        }),
    );
    out.extend_from_slice(br#","message":"#);
    match record.message {
        Some(message) => text(out, message)?,
        None => out.extend_from_slice(b"null"),
    }
    if let Some(at) = record.retry_at {
        out.extend_from_slice(br#","retry_at":"#);
        text(out, at)?;
    }
    if let Some(at) = record.sent_by {
        out.extend_from_slice(br#","sent_by":"#);
        text(out, at)?;
    }
    if let Some(args) = record.args {
        out.extend_from_slice(br#","args":"#);
        text(out, args)?;
    }
    if let Some(value) = record.value {
        out.extend_from_slice(br#","value":"#);
        serde_json::to_writer(&mut *out, value)?;
    }
    if let Some(settled) = record.settled {
        out.extend_from_slice(br#","settled":"#);
        serde_json::to_writer(&mut *out, settled)?;
    }
    if let Some(approval) = record.approval {
        out.extend_from_slice(br#","approval":"#);
        serde_json::to_writer(&mut *out, approval)?;
    }
    out.push(b'}');
    Ok(())
}

/// A JSON string: as it is when it needs no escape, else through serde_json.
fn text(out: &mut Vec<u8>, s: &str) -> serde_json::Result<()> {
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        return serde_json::to_writer(&mut *out, s);
    }
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
    Ok(())
}

/// An unsigned JSON integer.
fn number(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(crate::text::decimal(n, &mut [0u8; 20]));
}

/// A word of the contract's vocabulary, quoted, or `null`.
fn word(out: &mut Vec<u8>, name: Option<&str>) {
    match name {
        Some(name) => {
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.push(b'"');
        }
        None => out.extend_from_slice(b"null"),
    }
}

/// Every record of a log serialises to a line starting with this.
pub(super) const RECORD_HEAD: &[u8] = br#"{"phase":"#;

/// What indexing needs of a line: its intent key, attempt, phase, probe's verdict, and whether it leaves
/// the intent in doubt ([`crate::rules::in_doubt`]).
pub(super) type Checked = (IntentKey, u32, Phase, Option<ProbeMark>, bool);

/// The fast path of recovery: a line in the form this crate writes (the fields of [`Record`] in order, no
/// whitespace, no `\u` escape), checked and read in one pass without serde. `None` when the line is in
/// any other form, and the schema itself ([`Record`]'s deserialisation) decides: whatever this accepts,
/// `Record` accepts with the same reading; it only declines lines it cannot tell apart quickly.
pub(super) fn quick_check(line: &[u8]) -> Option<Checked> {
    // Outside strings every byte is compared with ASCII; strings check their own UTF-8.
    let mut at = Cursor { line, at: 0 };
    at.expect(br#"{"phase":""#)?;
    let phase = if at.expect(br#"start""#).is_some() {
        Phase::Start
    } else {
        at.expect(br#"end""#)?;
        Phase::End
    };
    at.expect(br#","task":"#)?;
    at.string()?;
    at.expect(br#","call":"#)?;
    at.string()?;
    at.expect(br#","intent_key":""#)?;
    let key = IntentKey::from_hex(line.get(at.at..at.at + 32)?)?;
    at.at += 32;
    at.expect(br#"","attempt":"#)?;
    let attempt = u32::try_from(at.integer()?).ok()?;
    at.expect(br#","attempt_id":"#)?;
    at.string()?;
    at.expect(br#","started":"#)?;
    at.string()?;
    at.expect(br#","budget_left_s":"#)?;
    at.integer()?;
    at.expect(br#","outcome":"#)?;
    let outcome = match at.word(&["null", "ok", "retryable", "permanent", "unknown"])? {
        0 => None,
        1 => Some(Outcome::Ok),
        2 => Some(Outcome::Retryable),
        3 => Some(Outcome::Permanent),
        _ => Some(Outcome::Unknown),
    };
    at.expect(br#","effect_applied":"#)?;
    let effect = match at.word(&["null", "yes", "no", "unknown", "partial"])? {
        3 => Some(crate::report::Applied::Unknown),
        _ => None,
    };
    at.expect(br#","probe":"#)?;
    let probe = match at.word(&["null", "landed", "not_landed", "failed"])? {
        0 => None,
        1 => Some(ProbeMark::Landed),
        2 => Some(ProbeMark::NotLanded),
        _ => Some(ProbeMark::Failed),
    };
    at.expect(br#","message":"#)?;
    if at.expect(b"null").is_none() {
        at.string()?;
    }
    if at.expect(br#","retry_at":"#).is_some() {
        at.string()?;
    }
    if at.expect(br#","sent_by":"#).is_some() {
        at.string()?;
    }
    if at.expect(br#","args":"#).is_some() {
        at.string()?;
    }
    if at.expect(br#","value":"#).is_some() {
        at.value(0)?;
    }
    at.expect(b"}")?;
    let open = crate::rules::in_doubt(phase, outcome, effect);
    (at.at == line.len()).then_some((key, attempt, phase, probe, open))
}

/// A position in a line, for [`quick_check`]: each step consumes what it accepts or says `None`.
pub(super) struct Cursor<'a> {
    line: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// The next byte, if any.
    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.line.get(self.at).copied()
    }

    /// `text` next, consumed. Always inlined: each caller's text is a literal, and the comparison of a
    /// known length compiles to a few loads instead of a call to `memcmp`.
    #[inline(always)]
    pub(super) fn expect(&mut self, text: &[u8]) -> Option<()> {
        if self.line[self.at..].starts_with(text) {
            self.at += text.len();
            Some(())
        } else {
            None
        }
    }

    /// A JSON string without control characters or `\u` escapes, in valid UTF-8.
    pub(super) fn string(&mut self) -> Option<()> {
        self.expect(b"\"")?;
        let (start, mut ascii) = (self.at, true);
        loop {
            self.at += find_string_stop(&self.line[self.at..])?;
            match self.line[self.at] {
                b'"' => {
                    if !ascii {
                        std::str::from_utf8(&self.line[start..self.at]).ok()?;
                    }
                    self.at += 1;
                    return Some(());
                }
                b'\\' => match self.line.get(self.at + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 2,
                    _ => return None,
                },
                0x80.. => {
                    ascii = false;
                    self.at += 1;
                }
                _ => return None,
            }
        }
    }

    /// An unsigned JSON integer with no leading zero, that fits in a `u64`.
    pub(super) fn integer(&mut self) -> Option<u64> {
        let digits = self.line[self.at..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 1 && self.line[self.at] == b'0' {
            return None;
        }
        let mut n = 0u64;
        for &digit in &self.line[self.at..self.at + digits] {
            n = n.checked_mul(10)?.checked_add(u64::from(digit - b'0'))?;
        }
        self.at += digits;
        // What follows a number in a record is never part of one.
        matches!(self.peek(), Some(b',' | b'}')).then_some(n)
    }

    /// `null` or one of the quoted `names`: its index in `["null", names..]`.
    pub(super) fn word(&mut self, words: &[&str]) -> Option<usize> {
        if self.expect(b"null").is_some() {
            return Some(0);
        }
        self.expect(b"\"")?;
        let i = words.iter().skip(1).position(|w| self.line[self.at..].starts_with(w.as_bytes()))? + 1;
        self.at += words[i].len();
        self.expect(b"\"")?;
        Some(i)
    }

    /// Any JSON value in the compact form, nested at most 32 deep.
    pub(super) fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(),
            b'n' => self.expect(b"null"),
            b't' => self.expect(b"true"),
            b'f' => self.expect(b"false"),
            b'-' | b'0'..=b'9' => self.number(),
            open @ (b'[' | b'{') if depth < 32 => {
                let close = if open == b'[' { b']' } else { b'}' };
                self.at += 1;
                if self.expect(&[close]).is_some() {
                    return Some(());
                }
                loop {
                    if open == b'{' {
                        self.string()?;
                        self.expect(b":")?;
                    }
                    self.value(depth + 1)?;
                    if self.expect(&[close]).is_some() {
                        return Some(());
                    }
                    self.expect(b",")?;
                }
            }
            _ => None,
        }
    }

    /// A JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, that the schema can
    /// hold: one whose value is too large for a float (`4e411`, or 400 digits) is not a record's value.
    pub(super) fn number(&mut self) -> Option<()> {
        let digits = |c: &mut Self| {
            let n = c.line[c.at..].iter().take_while(|b| b.is_ascii_digit()).count();
            c.at += n;
            n
        };
        let start = self.at;
        let _ = self.expect(b"-");
        let first = self.peek()?;
        let n = digits(self);
        if n == 0 || n > 1 && first == b'0' {
            return None;
        }
        if self.expect(b".").is_some() && digits(self) == 0 {
            return None;
        }
        let mut large = n > 300;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return None;
            }
            large = true;
        }
        if large {
            // Read as the schema reads it: a value out of a float's range is refused there.
            let text = std::str::from_utf8(&self.line[start..self.at]).ok()?;
            text.parse::<f64>().ok().filter(|f| f.is_finite())?;
        }
        Some(())
    }
}

/// `byte` in every byte of a word.
const fn splat(byte: u8) -> u64 {
    0x0101_0101_0101_0101 * byte as u64
}

/// The high bit of every byte of `word` below `n` (at most `0x80`). Borrows can flag bytes above a true
/// one, never below: the lowest flag is exact, which is all [`find_in_words`] reads.
const fn below(word: u64, n: u8) -> u64 {
    word.wrapping_sub(splat(n)) & !word & splat(0x80)
}

/// The high bit of every byte of `word` equal to `byte`, exact for the lowest as [`below`].
const fn equal(word: u64, byte: u8) -> u64 {
    below(word ^ splat(byte), 1)
}

/// Where the first byte of `bytes` that `flags` marks in its word (the bytes in memory order, little
/// endian) and `stop` accepts on its own is: eight bytes at a time, the last few one by one.
#[inline]
fn find_in_words(bytes: &[u8], flags: impl Fn(u64) -> u64, stop: impl Fn(u8) -> bool) -> Option<usize> {
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let found = flags(u64::from_le_bytes(word.try_into().ok()?));
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    words.remainder().iter().position(|&b| stop(b)).map(|i| at + i)
}

/// The first newline in `bytes`.
pub(super) fn find_newline(bytes: &[u8]) -> Option<usize> {
    find_in_words(bytes, |word| equal(word, b'\n'), |b| b == b'\n')
}

/// The first byte in `bytes` that ends a plain run of a JSON string's contents: a quote, a backslash,
/// a control character, or a byte of a non-ASCII character.
pub(super) fn find_string_stop(bytes: &[u8]) -> Option<usize> {
    find_in_words(
        bytes,
        |word| equal(word, b'"') | equal(word, b'\\') | below(word, 0x20) | word & splat(0x80),
        |b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b),
    )
}

/// A parse error of one line, placed by column (serde's "line 1" would mislead: it counts in the line).
/// serde quotes the offending value whole, so the text is shortened in the middle: a 10 MB line in a
/// log says what is wrong in one line, not by echoing itself.
pub(super) fn describe(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let place = format!(" at line {} column {}", err.line(), err.column());
    let (what, column) = match text.strip_suffix(&place) {
        Some(what) if err.column() > 0 => (what, Some(err.column())),
        Some(what) => (what, None),
        None => (text.as_str(), None),
    };
    let what = shorten(what, 120, 80);
    match column {
        Some(column) => format!("{what} at column {column}"),
        None => what,
    }
}

/// `text` itself when short; else its first `head` and last `tail` bytes (on character boundaries)
/// around the number of bytes left out.
pub(super) fn shorten(text: &str, head: usize, tail: usize) -> String {
    if text.len() <= head + tail + 32 {
        return text.to_owned();
    }
    let mut start = head;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = text.len() - tail;
    while !text.is_char_boundary(end) {
        end += 1;
    }
    format!("{}…({} bytes)…{}", &text[..start], end - start, &text[end..])
}
