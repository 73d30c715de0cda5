//! Following a file log from outside the process that holds it: [`FileReader`].

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::recovery::{Beginning, beginning, scan_piece};
use super::writer::identity;
use super::{Identity, io_error, not_a_log};
use crate::journal::inspect::Stored;
use crate::journal::reader::{Batch, LogReader};
use crate::journal::{Answer, JournalError, Record};
use crate::key::{IntentKey, KeyHashing};

/// How much of the log one look reads at most.
const CHUNK: usize = 1 << 20;

/// A [`LogReader`] of a file log: reads what was appended since its last look, by the log's own
/// reading rules (its header, blank, torn and unreadable lines skipped), without opening the log for
/// appends or taking its lock, so an agent may hold the log meanwhile. A file at the path that is not
/// the one read before (a compaction's rename, a restore), or shorter than what was read, is read
/// again from its start ([`Batch::restarted`]). It remembers where each intent's lines are, to read
/// them again for [`LogReader::intent_records`].
#[derive(Debug)]
pub struct FileReader {
    path: PathBuf,
    state: Mutex<Followed>,
}

#[derive(Debug, Default)]
struct Followed {
    /// Where the next look starts: the start of the first line not yet whole.
    offset: u64,
    identity: Option<Identity>,
    /// Each intent's lines: offset and length.
    lines: HashMap<IntentKey, Vec<(u64, u32)>, KeyHashing>,
}

impl FileReader {
    /// A reader of the log at `path`, which has read nothing yet.
    pub fn new(path: impl AsRef<Path>) -> FileReader {
        FileReader { path: path.as_ref().to_path_buf(), state: Mutex::default() }
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self, limit: usize) -> Result<Batch, JournalError> {
        let cannot = |e| io_error(format!("cannot read {}", self.path.display()), e);
        let mut file = File::open(&self.path).map_err(cannot)?;
        let metadata = file.metadata().map_err(cannot)?;
        let identity = identity(&metadata);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut batch = Batch::default();
        if metadata.len() < state.offset || identity != state.identity {
            batch.restarted = state.offset > 0 || !state.lines.is_empty();
            *state = Followed { identity, ..Followed::default() };
        }
        if metadata.len() == state.offset {
            return Ok(batch);
        }
        let want = usize::try_from(metadata.len() - state.offset).unwrap_or(usize::MAX).min(CHUNK);
        let mut bytes = Vec::with_capacity(want);
        file.seek(SeekFrom::Start(state.offset)).map_err(cannot)?;
        file.take(want as u64).read_to_end(&mut bytes).map_err(cannot)?;
        let mut from = 0;
        if state.offset == 0 {
            match beginning(&bytes).map_err(|why| not_a_log(&self.path, why))? {
                // A header not yet whole: nothing to read yet.
                Beginning::Empty => return Ok(batch),
                Beginning::Header(skip) => from = skip,
                Beginning::Headless => {}
            }
        }
        // Whole lines only: a line without its newline yet is read whole at a later look.
        let Some(end) = bytes.iter().rposition(|&b| b == b'\n').map(|at| at + 1).filter(|&end| end > from)
        else {
            if bytes.len() == CHUNK {
                // One line longer than a look: no record is that long; skip it as unreadable.
                state.offset += CHUNK as u64;
                batch.unreadable += 1;
                batch.more = true;
            }
            return Ok(batch);
        };
        // At most `limit` lines.
        let end =
            match bytes[from..end].iter().enumerate().filter(|&(_, &b)| b == b'\n').nth(limit.max(1) - 1) {
                Some((at, _)) => from + at + 1,
                None => end,
            };
        let piece = &bytes[from..end];
        let base = state.offset + from as u64;
        let start = piece.as_ptr() as usize;
        let read = scan_piece(piece, false, Vec::new(), &|found: &mut Vec<(u64, u32, Record)>, line| {
            let record = serde_json::from_slice::<Record>(line)?;
            let at = base + (line.as_ptr() as usize - start) as u64;
            found.push((at, u32::try_from(line.len()).unwrap_or(u32::MAX), record));
            Ok(())
        });
        batch.unreadable += read.warnings.len() as u64;
        batch.records.reserve(read.found.len());
        for (at, len, record) in read.found {
            state.lines.entry(record.intent_key).or_default().push((at, len));
            batch.records.push((at, record));
        }
        state.offset += end as u64;
        batch.more = state.offset < metadata.len();
        Ok(batch)
    }

    fn records_of(&self, key: &IntentKey) -> Result<Vec<Stored>, JournalError> {
        let lines = self.state.lock().unwrap_or_else(|e| e.into_inner()).lines.get(key).cloned();
        let Some(lines) = lines else { return Ok(Vec::new()) };
        let cannot = |e| io_error(format!("cannot read {}", self.path.display()), e);
        let mut file = File::open(&self.path).map_err(cannot)?;
        let mut out = Vec::with_capacity(lines.len());
        let mut line = Vec::new();
        for (offset, len) in lines {
            line.resize(len as usize, 0);
            file.seek(SeekFrom::Start(offset)).map_err(cannot)?;
            file.read_exact(&mut line).map_err(cannot)?;
            if let Ok(record) = serde_json::from_slice::<Record>(&line) {
                out.push(Stored { record, owner: None, written_at: None });
            }
        }
        Ok(out)
    }
}

impl LogReader for FileReader {
    fn read_more(&self, limit: usize) -> Answer<'_, Result<Batch, JournalError>> {
        Answer::now(self.read(limit))
    }

    fn intent_records(&self, key: &IntentKey) -> Answer<'_, Result<Vec<Stored>, JournalError>> {
        Answer::now(self.records_of(key))
    }
}
