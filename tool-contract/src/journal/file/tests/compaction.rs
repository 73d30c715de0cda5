//! Compaction: what it keeps, a compaction cut short, and a log of an earlier version migrated by one.

use super::*;
use crate::journal::file::compact::compaction_path;

#[test]
fn a_log_of_an_earlier_version_is_migrated_by_a_compaction() {
    let dir = Scratch::new("migrate");
    let text: String = mixed_log().iter().map(line).collect();
    fs::write(dir.log(), &text).unwrap();
    let err = FileJournal::open(dir.log()).unwrap_err();
    assert!(err.to_string().contains("`tool-contract compact PATH` rewrites it with one"), "{err}");
    assert_eq!(read_log(dir.log()).unwrap().records, mixed_log(), "still readable as it is");
    FileJournal::compact(dir.log()).unwrap();
    assert!(fs::read_to_string(dir.log()).unwrap().starts_with(&logged("")));
    let log = FileJournal::open(dir.log()).unwrap();
    assert_eq!(log.recall_now(&key("d")).unwrap().attempts, 3);
}

fn mixed_log() -> Vec<Record> {
    let mut probe_end = record("c", Phase::End, 1, Some(Outcome::Unknown));
    probe_end.probe = Some(ProbeMark::Failed);
    vec![
        record("a", Phase::Start, 1, None),
        record("a", Phase::End, 1, Some(Outcome::Retryable)),
        record("b", Phase::Start, 1, None),
        record("a", Phase::Start, 2, None),
        record("c", Phase::Start, 1, None),
        record("c", Phase::End, 1, Some(Outcome::Unknown)),
        record("a", Phase::End, 2, Some(Outcome::Ok)),
        probe_end,
        record("d", Phase::Start, 1, None),
        record("d", Phase::End, 1, Some(Outcome::Retryable)),
        record("d", Phase::Start, 2, None),
        record("d", Phase::End, 2, Some(Outcome::Retryable)),
        record("d", Phase::Start, 3, None),
    ]
}

fn index_of(path: &Path) -> Vec<(IntentKey, u32, Record)> {
    let log = FileJournal::open(path).unwrap();
    let state = log.shared.lock();
    let mut all: Vec<_> = state.index.iter().map(|(k, e)| (*k, e.recall(*k))).collect();
    all.sort_by_key(|(k, _)| *k);
    all.into_iter().map(|(k, r)| (k, r.attempts, r.last)).collect()
}

#[cfg(unix)]
#[test]
fn compaction_keeps_each_intents_latest_attempt_and_the_same_index() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("compact");
    let records = mixed_log();
    let text: String = records.iter().map(line).collect();
    fs::write(dir.log(), logged(text + "torn{\"phase\"")).unwrap();
    let before = index_of(&dir.log());
    let unresolved_before = FileJournal::open(dir.log()).unwrap().unresolved_now();

    let done = FileJournal::compact(dir.log()).unwrap();
    assert_eq!((done.records_before, done.records_after, done.intents), (13, 7, 4));
    assert_eq!(done.dropped.len(), 1);
    assert_eq!(done.dropped[0].line, 15, "the header is line 1");
    assert!(done.bytes_after < done.bytes_before);
    assert_eq!(fs::metadata(dir.log()).unwrap().len(), done.bytes_after);
    assert_eq!(fs::metadata(dir.log()).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(!compaction_path(&dir.log()).exists());

    let read = read_log(dir.log()).unwrap();
    assert!(read.warnings.is_empty());
    let kept: Vec<(IntentKey, u32, Phase)> =
        read.records.iter().map(|r| (r.intent_key, r.attempt, r.phase)).collect();
    assert_eq!(
        kept,
        [
            (key("b"), 1, Phase::Start),
            (key("a"), 2, Phase::Start),
            (key("c"), 1, Phase::Start),
            (key("c"), 1, Phase::End),
            (key("a"), 2, Phase::End),
            (key("c"), 1, Phase::End),
            (key("d"), 3, Phase::Start),
        ]
    );
    assert_eq!(index_of(&dir.log()), before);
    assert_eq!(FileJournal::open(dir.log()).unwrap().unresolved_now(), unresolved_before);
    // Compacting again changes nothing.
    let again = FileJournal::compact(dir.log()).unwrap();
    assert_eq!((again.records_before, again.records_after), (7, 7));
}

#[test]
fn a_compaction_cut_short_leaves_the_log_whole_and_its_leftover_unread() {
    let dir = Scratch::new("compact-crash");
    let text = logged(mixed_log().iter().map(line).collect::<String>());
    fs::write(dir.log(), &text).unwrap();
    // What a crash in the middle of a compaction leaves: the new file half written, not renamed.
    let leftover = compaction_path(&dir.log());
    let new: String = mixed_log()[6..].iter().map(line).collect();
    fs::write(&leftover, &new[..new.len() / 2]).unwrap();

    let log = FileJournal::open(dir.log()).unwrap();
    assert!(log.warnings().is_empty());
    assert_eq!(log.stats().records_read, 13);
    assert_eq!(log.recall_now(&key("d")).unwrap().attempts, 3);
    drop(log);
    assert_eq!(fs::read_to_string(dir.log()).unwrap(), text);

    // The next compaction replaces the leftover and completes.
    let done = FileJournal::compact(dir.log()).unwrap();
    assert_eq!(done.records_after, 7);
    assert!(!leftover.exists());
    assert_eq!(read_log(dir.log()).unwrap().records.len(), 7);
}

/// An MCP task's records survive a restart (read back at open, in order, as written) and a compaction
/// (kept though they are about an attempt older than the intent's latest), and they stay out of the
/// index: its attempts and last word are those of the attempt records alone.
#[tokio::test]
async fn mcp_task_records_are_read_back_at_open_and_kept_by_compaction() {
    let dir = Scratch::new("mcp-tasks");
    let task = |step: &str| Record {
        message: Some(format!("MCP task {step}")),
        value: Some(serde_json::json!({ "id": "t1", "step": step })),
        ..record("a", Phase::McpTask, 1, None)
    };
    let (created, ended) = (task("created"), task("ended"));
    let log = FileJournal::open(dir.log()).unwrap();
    for written in [record("a", Phase::Start, 1, None), created.clone()] {
        log.append(written.as_record_ref(), Durability::Synced).await.unwrap();
    }
    for written in [record("a", Phase::Start, 2, None), ended.clone()] {
        log.append(written.as_record_ref(), Durability::Synced).await.unwrap();
    }
    let records = |log: &FileJournal| {
        crate::journal::McpTasks::mcp_task_records(log, &key("a")).known().ok().unwrap().unwrap()
    };
    assert_eq!(records(&log), [created.clone(), ended.clone()]);
    drop(log);

    let log = FileJournal::open(dir.log()).unwrap();
    assert!(log.warnings().is_empty(), "{:?}", log.warnings());
    assert_eq!(records(&log), [created.clone(), ended.clone()]);
    let recall = log.recall_now(&key("a")).unwrap();
    assert_eq!((recall.attempts, recall.last.phase), (2, Phase::Start));
    drop(log);

    let done = FileJournal::compact(dir.log()).unwrap();
    assert_eq!((done.records_before, done.records_after), (4, 3), "attempt 1's start goes, the task stays");
    let log = FileJournal::open(dir.log()).unwrap();
    assert_eq!(records(&log), [created, ended]);
}
