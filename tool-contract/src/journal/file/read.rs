//! Reading a log whole without holding it: for inspection, and for a log shipped elsewhere.

use std::fmt;
use std::path::Path;

use super::{not_a_log, parse_all, read_path};
use crate::journal::{JournalError, Record};

/// A line of a log that is not a record: it was skipped, and the rest of the log is used. Line 0 is
/// about the log as a whole (its request directory cannot be used).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The line's number, from 1; 0 for the log as a whole.
    pub line: u64,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => f.write_str(&self.message),
            line => write!(f, "line {line}: {}", self.message),
        }
    }
}

/// A log read whole, for inspection.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogContents {
    /// Every readable record, in log order.
    pub records: Vec<Record>,
    /// The lines that were skipped.
    pub warnings: Vec<Warning>,
}

/// Read a log whole without opening it for appends (the file is neither created nor changed).
///
/// Fails on a missing or unreadable file, and with [`JournalError::NotALog`] on a file that holds
/// something else.
pub fn read_log(path: impl AsRef<Path>) -> Result<LogContents, JournalError> {
    let path = path.as_ref();
    let bytes = read_path(path)?;
    let (records, scan) = parse_all(&bytes).map_err(|why| not_a_log(path, why))?;
    Ok(LogContents { records, warnings: scan.warnings })
}

/// Parse a log's bytes as [`read_log`] parses a file's; `name` stands for the log in errors. For a log
/// shipped elsewhere (a backup, an upload) and for tests.
///
/// ```
/// use tool_contract::journal::parse_log;
///
/// let contents = parse_log("upload", b"").unwrap();
/// assert!(contents.records.is_empty());
/// assert!(parse_log("upload", b"\x7fELF\x02\x01").is_err());
/// ```
pub fn parse_log(name: &str, bytes: &[u8]) -> Result<LogContents, JournalError> {
    let (records, scan) =
        parse_all(bytes).map_err(|why| JournalError::NotALog { log: name.to_owned(), why })?;
    Ok(LogContents { records, warnings: scan.warnings })
}
