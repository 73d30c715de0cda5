//! Compaction: the log rewritten with each intent's latest attempt, atomically.

use super::*;

impl FileJournal {
    /// Rewrite the log at `path` keeping the latest state of each intent: the records of its latest
    /// attempt (and so its attempt count and its last word) and its MCP task records, in log order.
    ///
    /// The new log is written beside the old one (`<log>.compacting`), synced, renamed over it, and the
    /// directory synced: a crash at any point leaves either the old log or the new one, whole. A
    /// `.compacting` file left by a crash is never read as the log, and the next compaction replaces it.
    /// It takes the log's lock, so it is refused with [`JournalError::InUse`] while an agent has the log
    /// open.
    pub fn compact(path: impl AsRef<Path>) -> Result<Compaction, JournalError> {
        let path = path.as_ref();
        // Held until the new log is renamed over the old: no agent opens the old one meanwhile.
        let mut held =
            File::open(path).map_err(|e| io_error(format!("cannot open {}", path.display()), e))?;
        lock(&held, path)?;
        let bytes =
            read_whole(&mut held).map_err(|e| io_error(format!("cannot read {}", path.display()), e))?;
        let (records, scan) = parse_all(&bytes).map_err(|why| not_a_log(path, why))?;
        // A log without the header is rewritten with one only when every line is a record (a log of
        // an earlier version); anything else is left as it is.
        let garbled = scan.warnings.len() > usize::from(scan.torn_tail);
        if !scan.header && (garbled || records.is_empty()) {
            return Err(not_a_log(path, headless(&bytes)));
        }
        let mut latest: HashMap<IntentKey, u32> = HashMap::new();
        for record in &records {
            let attempt = latest.entry(record.intent_key).or_insert(record.attempt);
            *attempt = (*attempt).max(record.attempt);
        }
        // An MCP task's records are kept whatever attempt they were written at: a client may still poll
        // the task.
        let kept: Vec<&Record> = records
            .iter()
            .filter(|r| r.phase == Phase::McpTask || latest.get(&r.intent_key) == Some(&r.attempt))
            .collect();

        let temp = compaction_path(path);
        let bytes_after = write_new_log(&temp, &kept)
            .map_err(|e| io_error(format!("cannot write {}", temp.display()), e))?;
        let unchanged = fs::metadata(path).map(|m| m.len() == bytes.len() as u64).unwrap_or(false);
        if !unchanged {
            let _ = fs::remove_file(&temp);
            return Err(JournalError::Failed {
                log: path.display().to_string(),
                why:
                    "the log changed during compaction (is a process appending to it?); it was left as it was"
                        .to_owned(),
            });
        }
        fs::rename(&temp, path)
            .map_err(|e| io_error(format!("cannot rename {} over {}", temp.display(), path.display()), e))?;
        sync_dir(path)?;
        drop(held);
        Ok(Compaction {
            records_before: records.len(),
            records_after: kept.len(),
            intents: latest.len(),
            bytes_before: bytes.len() as u64,
            bytes_after,
            dropped: scan.warnings,
        })
    }
}

/// Sync the directory holding `path`, so a created or renamed entry survives a crash.
pub(super) fn sync_dir(path: &Path) -> Result<(), JournalError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(format!("cannot sync the directory {}", dir.display()), e))
}

pub(super) fn compaction_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".compacting");
    path.with_file_name(name)
}

/// Write `records` as a new log at `path` (mode `0600`) and sync it; the new file's size.
pub(super) fn write_new_log(path: &Path, records: &[&Record]) -> io::Result<u64> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut out = BufWriter::with_capacity(1 << 16, options.open(path)?);
    out.write_all(HEADER.as_bytes())?;
    out.write_all(b"\n")?;
    for record in records {
        serde_json::to_writer(&mut out, record)?;
        out.write_all(b"\n")?;
    }
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    Ok(file.metadata()?.len())
}
