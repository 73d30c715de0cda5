//! Recovery: recognising a log by its header, and indexing it in pieces, line by line.

use super::*;

/// The first line of every attempt log this crate creates: what the file is, and the version of its
/// format. [`FileJournal::open`] appends only to a file that begins with a header (or to an empty one,
/// which it gives one), so nothing else is ever taken for a log and written to.
///
/// The rule for what a header may carry, so a later version can add to it: a header is a JSON object
/// with `"tool_contract": "attempt-log"` and `"format"`, a whole number. Its `format` alone decides
/// whether a log can be read: anything that changes how its lines must be read takes a new format
/// number. Other fields are information (who wrote the log, when) and are ignored, as unknown fields
/// of a record are. A log of another format is refused, named by the format it says.
pub const HEADER: &str = r#"{"tool_contract":"attempt-log","format":1}"#;

/// The format of the logs this version reads and writes.
pub(super) const FORMAT: u64 = 1;

/// How a file begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Beginning {
    /// Nothing yet, or the header cut short by a crash at creation: a new log.
    Empty,
    /// The header, then the records from this byte on.
    Header(usize),
    /// No header: a log written before format 1, or not a log.
    Headless,
}

pub(super) fn beginning(bytes: &[u8]) -> Result<Beginning, String> {
    let header = HEADER.as_bytes();
    if bytes.len() <= header.len() && header.starts_with(bytes) {
        return Ok(Beginning::Empty);
    }
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    if first == header {
        return Ok(Beginning::Header(header.len() + 1));
    }
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        tool_contract: &'a str,
        format: serde_json::Value,
    }
    let head = match serde_json::from_slice::<Head<'_>>(first) {
        Ok(head) if head.tool_contract == "attempt-log" => head,
        _ => return Ok(Beginning::Headless),
    };
    match head.format.as_u64() {
        Some(FORMAT) => Ok(Beginning::Header(first.len() + 1)),
        Some(newer) if newer > FORMAT => Err(format!(
            "its header says format {newer}, newer than the format {FORMAT} this version reads: \
             read it with the version of tool-contract that wrote it, or a later one"
        )),
        Some(older) => Err(format!(
            "its header says format {older}, which no version of tool-contract wrote (the first is {FORMAT})"
        )),
        None => Err(format!(
            "its header's format is {}, not a whole number",
            shorten(&head.format.to_string(), 20, 0)
        )),
    }
}

impl Entry {
    pub(super) fn new(attempt: u32, phase: Phase, open: bool, line: &[u8]) -> Entry {
        Entry { attempts: attempt, phase, open, line: line.to_vec() }
    }

    /// Fold the intent's next record in, by the rule of
    /// [`index_record`](crate::journal::index::index_record).
    pub(super) fn update(
        &mut self,
        attempt: u32,
        phase: Phase,
        probe: Option<ProbeMark>,
        open: bool,
        line: &[u8],
    ) {
        if supersedes(phase, probe, attempt, self.attempts, self.phase) {
            (self.phase, self.open) = (phase, open);
            self.line.clear();
            self.line.extend_from_slice(line);
        }
        if crate::rules::counts_as_attempt(phase) {
            self.attempts = self.attempts.max(attempt);
        }
    }

    /// [`Recall::is_unresolved`], without decoding the record.
    pub(super) fn is_unresolved(&self) -> bool {
        self.open
    }

    pub(super) fn recall(&self, key: IntentKey) -> Recall {
        let last = serde_json::from_slice::<Record>(&self.line).unwrap_or_else(|err| {
            // Unreachable: the line was checked when read, or written from a record. Should it happen,
            // the intent reads as unfinished, so the engine probes before anything else.
            Record {
                phase: Phase::Start,
                task: String::new(),
                call: String::new(),
                intent_key: key,
                attempt: self.attempts,
                attempt_id: String::new(),
                started: String::new(),
                budget_left_s: 0,
                outcome: None,
                effect_applied: None,
                probe: None,
                message: Some(format!("the index could not decode this intent's last record: {err}")),
                retry_at: None,
                sent_by: None,
                args: None,
                value: None,
                settled: None,
                approval: None,
            }
        });
        Recall { attempts: self.attempts, last }
    }
}

/// Below this size a log is read by one thread; above it, by one thread per this many bytes, at most one
/// per core (up to 8).
pub(super) const PARALLEL_FROM: usize = 256 << 10;

/// Read a log's bytes: every non-blank line goes to `record`, which parses it as a record and keeps
/// what it needs in its piece's `T`, or says why it is not one. Large logs are cut at line boundaries
/// into pieces of at least [`PARALLEL_FROM`] bytes, at most one per core, read at once; the pieces come
/// back in log order. `Err` says why the bytes are not a log: they have content, and no line is a
/// record or looks like the start of one.
pub(super) fn scan<'a, T: Send>(
    bytes: &'a [u8],
    start: impl Fn() -> T + Sync,
    record: impl Fn(&mut T, &'a [u8]) -> Result<(), serde_json::Error> + Sync,
) -> Result<(Vec<T>, Scan), String> {
    let (bytes, first_line, header) = match beginning(bytes)? {
        Beginning::Empty => (&bytes[..0], 1, true),
        Beginning::Header(skip) => (&bytes[skip..], 2, true),
        Beginning::Headless => (bytes, 1, false),
    };
    scan_from(bytes, first_line, header, start, record)
}

/// [`scan`] of the records from line `first_line` on, the header already read (`header`) or absent.
pub(super) fn scan_from<'a, T: Send>(
    bytes: &'a [u8],
    first_line: u64,
    header: bool,
    start: impl Fn() -> T + Sync,
    record: impl Fn(&mut T, &'a [u8]) -> Result<(), serde_json::Error> + Sync,
) -> Result<(Vec<T>, Scan), String> {
    let torn_tail = !bytes.is_empty() && !bytes.ends_with(b"\n");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let pieces = (bytes.len() / PARALLEL_FROM).clamp(1, cores);
    // Cut right after a newline, so each piece holds whole lines. Each piece numbers its lines from 1 as
    // it splits them, and the numbers are shifted once the pieces are back: no byte is read twice.
    let mut cuts = vec![0usize];
    for i in 1..pieces {
        let from = cuts[cuts.len() - 1];
        let aim = (bytes.len() / pieces * i).max(from);
        if let Some(nl) = find_newline(&bytes[aim..]) {
            let at = aim + nl + 1;
            if at < bytes.len() {
                cuts.push(at);
            }
        }
    }
    let ends: Vec<usize> = cuts.iter().skip(1).copied().chain([bytes.len()]).collect();
    let read = |(&from, &to): (&usize, &usize)| {
        let last = to == bytes.len();
        scan_piece(&bytes[from..to], last && torn_tail, start(), &record)
    };
    // The first piece is read on this thread, the others each on a thread of its own.
    let pieces: Vec<Piece<T>> = std::thread::scope(|s| {
        let running: Vec<_> = cuts.iter().zip(&ends).skip(1).map(|cut| s.spawn(move || read(cut))).collect();
        let first = read((&cuts[0], &ends[0]));
        std::iter::once(first)
            .chain(
                running
                    .into_iter()
                    .map(|r| r.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))),
            )
            .collect()
    });
    let mut scan = Scan { warnings: Vec::new(), torn_tail, records: 0, header, lines: 0 };
    let (mut looks_like_a_log, mut first_error) = (false, None);
    let mut found = Vec::with_capacity(pieces.len());
    for piece in pieces {
        // The piece's line 1 is the line after those of the pieces before it.
        let shift = first_line - 1 + scan.lines;
        scan.warnings.extend(piece.warnings.into_iter().map(|w| Warning { line: w.line + shift, ..w }));
        first_error = first_error.or(piece.first_error.map(|(line, why)| (line + shift, why)));
        scan.records += piece.records;
        scan.lines += piece.lines;
        looks_like_a_log |= piece.looks_like_a_log;
        found.push(piece.found);
    }
    // A file with the header is a log whatever its lines hold; one without is taken for one only when
    // a line reads as a record (a log of an earlier version, read by the inspector).
    match first_error {
        Some((line, err)) if !header && scan.records == 0 && !looks_like_a_log => {
            Err(format!("line {line} is not an attempt record: {err}"))
        }
        _ => Ok((found, scan)),
    }
}

/// Read one piece of whole lines (the last piece of a log may end in a torn line, `torn_tail`); its
/// lines, and the line numbers of its warnings, count from 1.
pub(super) fn scan_piece<'a, T>(
    piece: &'a [u8],
    torn_tail: bool,
    mut found: T,
    record: &impl Fn(&mut T, &'a [u8]) -> Result<(), serde_json::Error>,
) -> Piece<T> {
    let mut warnings = Vec::new();
    let (mut records, mut looks_like_a_log, mut first_error) = (0, false, None);
    let (mut rest, mut number) = (piece, 0);
    while !rest.is_empty() {
        number += 1;
        let line = match find_newline(rest) {
            Some(at) => {
                let line = &rest[..at];
                rest = &rest[at + 1..];
                line
            }
            None => std::mem::take(&mut rest),
        };
        let last = rest.is_empty();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.first().is_none_or(u8::is_ascii_whitespace) && line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match record(&mut found, line) {
            Ok(()) => records += 1,
            Err(err) => {
                let torn = last && torn_tail;
                // A torn line may be cut inside the head itself.
                let head = if torn { &RECORD_HEAD[..line.len().min(RECORD_HEAD.len())] } else { RECORD_HEAD };
                looks_like_a_log |= line.starts_with(head);
                let message = if torn {
                    format!(
                        "torn last line ({} bytes, no newline at the end: a write cut short), skipped",
                        line.len()
                    )
                } else {
                    format!("not a record ({}), skipped", describe(&err))
                };
                first_error.get_or_insert_with(|| (number, describe(&err)));
                warnings.push(Warning { line: number, message });
            }
        }
    }
    Piece { found, warnings, records, lines: number, looks_like_a_log, first_error }
}

/// Every record of a log, in order.
pub(super) fn parse_all(bytes: &[u8]) -> Result<(Vec<Record>, Scan), String> {
    let (pieces, scan) = scan(bytes, Vec::new, |records, line| {
        records.push(serde_json::from_slice::<Record>(line)?);
        Ok(())
    })?;
    Ok((pieces.into_iter().flatten().collect(), scan))
}

/// What the index keeps of an intent while a piece of the log is read: its highest attempt, and the
/// phase, whether it leaves the intent in doubt, and the line of that attempt's last record.
type Kept<'a> = (u32, Phase, Option<ProbeMark>, bool, &'a [u8]);

fn keep<'a>(last: &mut HashMap<IntentKey, Kept<'a>, KeyHashing>, key: IntentKey, kept: Kept<'a>) {
    last.entry(key)
        .and_modify(|was| {
            if supersedes(kept.1, kept.2, kept.0, was.0, was.1) {
                *was = kept;
            }
        })
        .or_insert(kept);
}

/// What one piece of a log folds to: per intent its highest attempt and the line of its last word,
/// borrowed, and the piece's MCP task records, in order.
type Folded<'a> = (HashMap<IntentKey, Kept<'a>, KeyHashing>, Vec<Record>);

/// Fold the records of `bytes` (from line `first_line`) by intent, borrowing their lines; the MCP task
/// records are kept whole, in log order.
fn fold_lines(bytes: &[u8], first_line: u64, header: bool) -> Result<(Folded<'_>, Scan), String> {
    let (pieces, scan) = scan_from(bytes, first_line, header, Folded::default, |(last, tasks), line| {
        let (key, attempt, phase, probe, open) = match quick_check(line) {
            Some(checked) => checked,
            None => {
                // Any other form: the schema itself reads it (allocating, as only such lines do).
                let record = serde_json::from_slice::<Record>(line)?;
                let open = crate::rules::in_doubt(record.phase, record.outcome, record.effect_applied);
                let checked = (record.intent_key, record.attempt, record.phase, record.probe, open);
                if record.phase == Phase::McpTask {
                    tasks.push(record);
                }
                checked
            }
        };
        keep(last, key, (attempt, phase, probe, open, line));
        Ok(())
    })?;
    let mut pieces = pieces.into_iter();
    let (mut last, mut tasks) = pieces.next().unwrap_or_default();
    for (piece, more) in pieces {
        for (key, kept) in piece {
            keep(&mut last, key, kept);
        }
        tasks.extend(more);
    }
    Ok(((last, tasks), scan))
}

/// Fold one piece's intents into the index, copying the lines kept.
fn merge(index: &mut HashMap<IntentKey, Entry, KeyHashing>, piece: HashMap<IntentKey, Kept<'_>, KeyHashing>) {
    for (key, (attempt, phase, probe, open, line)) in piece {
        match index.entry(key) {
            std::collections::hash_map::Entry::Occupied(entry) => {
                entry.into_mut().update(attempt, phase, probe, open, line);
            }
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(Entry::new(attempt, phase, open, line));
            }
        }
    }
}

/// The index of a log: per intent, its attempt count and last record.
pub(super) type Index = HashMap<IntentKey, Entry, KeyHashing>;

/// How much of a log [`index_file`] reads at a time: small enough that a chunk is still in the caches
/// when its lines are checked and the kept ones copied, large enough to be split between two threads.
pub(super) const CHUNK: usize = 1 << 20;

/// Index a log with the header by intent key, as [`index_record`](crate::journal::index::index_record)
/// folding every record in order would, streamed from `file` `chunk` bytes of whole lines at a time:
/// the memory it takes is the index and one chunk (or the longest line, when a line is longer), never
/// the whole file.
///
/// Every line this crate writes is checked without allocating ([`quick_check`]; any other form is read
/// as a [`Record`]); each piece of a
/// chunk keeps, per intent, its highest attempt and the last line of it, and the pieces are folded in
/// log order.
pub(super) fn index_file(
    file: &mut File,
    skip: usize,
    chunk: usize,
) -> io::Result<Result<(Index, crate::journal::index::McpTaskRecords, Scan), String>> {
    let mut index = HashMap::default();
    let mut tasks = crate::journal::index::McpTaskRecords::default();
    let mut total = Scan { warnings: Vec::new(), torn_tail: false, records: 0, header: true, lines: 0 };
    // Allocated once at its size and refilled in place: `filled` bytes hold data, of which the first
    // `searched` hold no newline (the start of a line the last chunk did not end). No larger than the
    // file (and a byte, to see its end in the first read), so a small log takes no whole chunk.
    let length = file.metadata().ok().and_then(|m| usize::try_from(m.len()).ok()).unwrap_or(usize::MAX);
    let size = chunk.min(length.saturating_add(1)).max(1);
    let mut buf = vec![0u8; size];
    let (mut filled, mut searched, mut line, mut skip, mut eof) = (0, 0, 2u64, skip, false);
    loop {
        while filled < buf.len() && !eof {
            match file.read(&mut buf[filled..]) {
                Ok(0) => eof = true,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let end = if eof {
            filled
        } else {
            match buf[searched..filled].iter().rposition(|&b| b == b'\n') {
                Some(at) => searched + at + 1,
                None => {
                    // One line longer than the buffer: it grows until the line fits.
                    searched = filled;
                    buf.resize(buf.len() * 2, 0);
                    continue;
                }
            }
        };
        let body = &buf[skip.min(end)..end];
        let ((piece, found), scan) = match fold_lines(body, line, true) {
            Ok(folded) => folded,
            Err(why) => return Ok(Err(why)),
        };
        merge(&mut index, piece);
        found.into_iter().for_each(|record| tasks.keep(record));
        total.warnings.extend(scan.warnings);
        total.records += scan.records;
        total.lines += scan.lines;
        if eof {
            total.torn_tail = scan.torn_tail;
            return Ok(Ok((index, tasks, total)));
        }
        // The body ends with a newline: it held exactly `scan.lines` lines.
        line += scan.lines;
        buf.copy_within(end..filled, 0);
        (filled, searched, skip) = (filled - end, filled - end, 0);
        if buf.len() > size.max(filled) {
            // Back to a chunk after a long line.
            buf.truncate(size.max(filled));
            buf.shrink_to_fit();
        }
    }
}
