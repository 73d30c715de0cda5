//! Text from tools, services and people, made safe to print on an operator's terminal.
//!
//! A tool's message, a thread's name, a store's error or an evidence line can hold control characters:
//! ESC and the C1 controls start terminal sequences (a new window title, a cleared screen, keys
//! remapped on some terminals), BEL rings, a newline forges a line of output, and the bidirectional
//! overrides reorder what is shown. Every printer of such text goes through this module:
//!
//! - [`escape`] writes each of them as a visible escape, for a field printed inside a line;
//! - [`Terminal`] wraps a whole output stream and escapes every one of them but the newline, so a
//!   printer that forgets a field still sends no control sequence to the terminal.
//!
//! The escapes are JSON's own (`\n`, `\r`, `\t`, `\u001b`, `\u009b`, `\u202e`), so [`escape`] applied to
//! a JSON document gives the same document, still valid and with the same values, with no raw control
//! character left: `serde_json` escapes the C0 controls inside strings but leaves DEL, the C1 controls
//! and the bidirectional overrides raw. A backslash is left as it is.
//!
//! ```
//! use tool_contract::journal::terminal::escape;
//! assert_eq!(escape("done\x1b[2J\u{7}\u{9b}\nnext"), r"done\u001b[2J\u0007\u009b\nnext");
//! assert_eq!(escape("plain text, ünïcode"), "plain text, ünïcode");
//! let json = serde_json::json!({ "message": "a\u{9b}b" }).to_string();
//! assert_eq!(escape(&json), r#"{"message":"a\u009bb"}"#);
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

/// Whether `c` is written as an escape: the C0 controls, DEL, the C1 controls (U+0080 to U+009F), the
/// line and paragraph separators, and the bidirectional embeddings, overrides and isolates (U+202A to
/// U+202E, U+2066 to U+2069).
pub fn is_escaped(c: char) -> bool {
    matches!(c, '\0'..='\x1f' | '\x7f'..='\u{9f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character [`is_escaped`] says written as JSON writes it in a string: `\n`, `\r`,
/// `\t`, else `\u` and four hex digits. Borrowed when there is nothing to escape.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    push_escaped(&mut out, text, false);
    Cow::Owned(out)
}

/// Append `text` to `out`, escaped as [`escape`] does, newlines kept when `keep_newlines`.
fn push_escaped(out: &mut String, text: &str, keep_newlines: bool) {
    for c in text.chars() {
        match c {
            '\n' if keep_newlines => out.push('\n'),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_escaped(c) => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
}

/// An output stream that escapes, as [`escape`] does, every character [`is_escaped`] says except the
/// newline: what a command writes to standard output or standard error goes through one, so no text
/// it prints sends a control sequence to the terminal. Bytes that are not UTF-8 are written as `\xNN`;
/// a character cut between two writes is escaped whole, and one never completed is written as bytes
/// by [`flush`](Write::flush) or [`into_inner`](Terminal::into_inner) (dropped without either, it is
/// lost).
///
/// ```
/// use std::io::Write;
/// use tool_contract::journal::terminal::Terminal;
/// let mut out = Terminal::new(Vec::new());
/// writeln!(out, "title\x1b]0;owned\x07").unwrap();
/// assert_eq!(out.into_inner().unwrap(), b"title\\u001b]0;owned\\u0007\n");
/// ```
pub struct Terminal<W: Write> {
    inner: W,
    /// The first bytes of a character whose rest has not been written yet.
    cut: Vec<u8>,
}

impl<W: Write> Terminal<W> {
    /// A stream writing to `inner`.
    pub fn new(inner: W) -> Terminal<W> {
        Terminal { inner, cut: Vec::new() }
    }

    /// The stream written to, once what was cut short is written (escaped) to it.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.write_cut()?;
        Ok(self.inner)
    }

    /// Write the bytes of a character that was never completed, escaped.
    fn write_cut(&mut self) -> io::Result<()> {
        if self.cut.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for byte in std::mem::take(&mut self.cut) {
            let _ = write!(text, "\\x{byte:02x}");
        }
        self.inner.write_all(text.as_bytes())
    }
}

impl<W: Write> Write for Terminal<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let joined;
        let mut rest = if self.cut.is_empty() {
            buf
        } else {
            joined = [std::mem::take(&mut self.cut).as_slice(), buf].concat();
            &joined[..]
        };
        let mut text = String::with_capacity(rest.len());
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    push_escaped(&mut text, valid, true);
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // Checked by `from_utf8` just now: the prefix up to `valid_up_to` is UTF-8.
                    push_escaped(&mut text, std::str::from_utf8(valid).unwrap_or_default(), true);
                    match e.error_len() {
                        Some(bad) => {
                            for byte in &after[..bad] {
                                let _ = write!(text, "\\x{byte:02x}");
                            }
                            rest = &after[bad..];
                        }
                        None => {
                            self.cut = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        self.inner.write_all(text.as_bytes())?;
        Ok(buf.len())
    }

    /// Flushes `inner`, after writing (escaped) the bytes of a character cut short: called at the end of
    /// the output, it has nothing more to wait for.
    fn flush(&mut self) -> io::Result<()> {
        self.write_cut()?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_character_is_escaped_and_nothing_else() {
        let escaped: Vec<u32> =
            (0..=0x3000).filter_map(char::from_u32).filter(|c| is_escaped(*c)).map(u32::from).collect();
        let expected: Vec<u32> =
            (0..0x20).chain(0x7f..0xa0).chain(0x2028..0x202f).chain(0x2066..0x206a).collect();
        assert_eq!(escaped, expected);
        assert_eq!(escape("tab\there\r\n"), r"tab\there\r\n");
        assert_eq!(escape("\u{202e}evil\u{2069}"), r"\u202eevil\u2069");
        assert_eq!(escape("\u{7f}"), r"\u007f");
        assert!(matches!(escape("C:\\path é"), Cow::Borrowed("C:\\path é")));
    }

    #[test]
    fn escaped_json_is_the_same_json() {
        let value = serde_json::json!({ "m": "a\u{1b}[2J\u{7}\u{9b}\n\u{202e}\\ b\u{7f}" });
        let text = value.to_string();
        let safe = escape(&text);
        assert!(safe.chars().all(|c| !is_escaped(c)), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), value);
    }

    #[test]
    fn the_stream_keeps_newlines_and_escapes_characters_cut_between_writes() {
        let mut out = Terminal::new(Vec::new());
        let csi = "\u{9b}".as_bytes();
        out.write_all(b"a\x1b[2J\n").unwrap();
        out.write_all(&csi[..1]).unwrap();
        out.write_all(&csi[1..]).unwrap();
        out.write_all(b"\xff\n\xc2").unwrap();
        assert_eq!(String::from_utf8(out.into_inner().unwrap()).unwrap(), "a\\u001b[2J\n\\u009b\\xff\n\\xc2");
    }
}
