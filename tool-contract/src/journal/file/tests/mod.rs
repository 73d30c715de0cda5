#[tokio::test]
async fn a_second_opener_is_refused_naming_the_path_and_loses_nothing() {
    let dir = Scratch::new("second-opener");
    let first = FileJournal::open(dir.log()).unwrap();
    first.append(record("a", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await.unwrap();
    let Err(second) = FileJournal::open(dir.log()) else { panic!("a second opener got the log") };
    assert!(matches!(second, JournalError::InUse { .. }), "{second:?}");
    assert!(second.to_string().contains(&dir.log().display().to_string()), "{second}");
    // The first keeps appending; the inspector still reads without the lock.
    first
        .append(record("a", Phase::End, 1, Some(Outcome::Ok)).as_record_ref(), Durability::Buffered)
        .await
        .unwrap();
    written(&dir.log(), |text| text.lines().count() == 3);
    assert_eq!(read_log(dir.log()).unwrap().records.len(), 2);
    drop(first);
    let reopened = FileJournal::open(dir.log()).expect("free once the first is dropped");
    assert_eq!(reopened.stats().records_read, 2);
}

#[tokio::test]
async fn a_waiting_opener_gets_the_log_once_the_holder_lets_go_and_says_it_waits_once() {
    let dir = Scratch::new("waiting-opener");
    let first = FileJournal::open(dir.log()).unwrap();
    first.append(record("a", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await.unwrap();
    let holder = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        drop(first);
    });
    let said = std::cell::Cell::new(0);
    let began = std::time::Instant::now();
    let second = FileJournal::open_waiting(dir.log(), Duration::from_secs(10), || said.set(said.get() + 1))
        .expect("the log once the first lets go");
    let took = began.elapsed();
    holder.join().unwrap();
    assert_eq!(said.get(), 1, "it says once that it waits");
    assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(5), "{took:?}");
    assert_eq!(second.stats().records_read, 1);
}

#[tokio::test]
async fn a_waiting_opener_gives_up_after_its_bound_naming_how_long_it_waited() {
    let dir = Scratch::new("waiting-gives-up");
    let _first = FileJournal::open(dir.log()).unwrap();
    let said = std::cell::Cell::new(0);
    let began = std::time::Instant::now();
    let Err(refused) =
        FileJournal::open_waiting(dir.log(), Duration::from_millis(200), || said.set(said.get() + 1))
    else {
        panic!("a second opener got the log")
    };
    let took = began.elapsed();
    assert_eq!(said.get(), 1);
    let JournalError::InUse { waited, .. } = &refused else { panic!("{refused:?}") };
    assert!(*waited >= Duration::from_millis(200) && *waited <= took, "{waited:?} of {took:?}");
    assert!(refused.to_string().contains("(waited 0."), "{refused}");
    // A plain open does not wait, and says nothing of waiting.
    let Err(plain) = FileJournal::open(dir.log()) else { panic!("a second opener got the log") };
    assert!(!plain.to_string().contains("waited"), "{plain}");
}

#[tokio::test]
async fn compaction_is_refused_while_an_agent_has_the_log_open() {
    let dir = Scratch::new("compact-in-use");
    let agent = FileJournal::open(dir.log()).unwrap();
    agent.append(record("a", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await.unwrap();
    let before = fs::read(dir.log()).unwrap();
    let Err(refused) = FileJournal::compact(dir.log()) else { panic!("compacted a log in use") };
    assert!(matches!(refused, JournalError::InUse { .. }), "{refused:?}");
    assert_eq!(fs::read(dir.log()).unwrap(), before, "left untouched");
    // The agent's log is still the file at the path, and takes side effects.
    agent.append(record("b", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await.unwrap();
    drop(agent);
    assert_eq!(FileJournal::compact(dir.log()).unwrap().records_after, 2);
}

#[tokio::test]
async fn a_log_deleted_under_the_agent_refuses_the_next_side_effect() {
    let dir = Scratch::new("deleted");
    let agent = FileJournal::open(dir.log()).unwrap();
    agent.append(record("a", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await.unwrap();
    fs::remove_file(dir.log()).unwrap();
    let refused = agent.append(record("b", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await;
    let Err(error) = refused else { panic!("a side effect was logged in a deleted file") };
    assert!(error.to_string().contains("deleted"), "{error}");
    // Out of service from then on, for every record.
    assert!(
        agent.append(record("c", Phase::End, 1, None).as_record_ref(), Durability::Buffered).await.is_err()
    );
}

#[tokio::test]
async fn a_log_replaced_under_the_agent_refuses_the_next_side_effect() {
    let dir = Scratch::new("replaced");
    let agent = FileJournal::open(dir.log()).unwrap();
    agent.append(record("a", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await.unwrap();
    // A restore from a backup: another file renamed over the path.
    let other = dir.0.join("restored.log");
    fs::write(&other, b"").unwrap();
    fs::rename(&other, dir.log()).unwrap();
    let Err(error) =
        agent.append(record("b", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await
    else {
        panic!("a side effect was logged in a file the path no longer names")
    };
    assert!(error.to_string().contains("another file"), "{error}");
    assert_eq!(fs::read(dir.log()).unwrap(), b"", "the new file was not written to");
}

#[test]
fn a_huge_bad_line_is_described_in_a_few_hundred_bytes() {
    // serde quotes an unknown variant whole.
    let line = format!("{{\"phase\":\"{}é\"}}\n", "x".repeat(1 << 20));
    let error = match parse_all(line.as_bytes()) {
        Err(error) => error,
        Ok((_, scan)) => scan.warnings[0].message.clone(),
    };
    assert!(error.len() < 400, "{} bytes: {}", error.len(), &error[..400.min(error.len())]);
    assert!(error.contains("bytes)"), "{error}");
    assert_eq!(shorten("short", 120, 80), "short");
    let mixed = "é".repeat(300);
    let cut = shorten(&mixed, 121, 81);
    assert!(cut.starts_with('é') && cut.ends_with('é'), "{cut}");
}

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::*;
use crate::classify::Class;
use crate::effect::EffectKind;
use crate::engine;
use crate::journal::{LastWord, Phase};
use crate::key::Intent;
use crate::probe::Probe;
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome};
use crate::spec::ToolSpec;
use crate::task::Task;

/// A directory of its own for one test, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tc-journal-{}-{n}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn log(&self) -> PathBuf {
        self.0.join("attempts.log")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn key(target: &str) -> IntentKey {
    Intent::new("ord-7741", "agent", "post_notice", target).key()
}

fn record(target: &str, phase: Phase, attempt: u32, outcome: Option<Outcome>) -> Record {
    Record {
        phase,
        task: "ord-7741".into(),
        call: "post_notice".into(),
        intent_key: key(target),
        attempt,
        attempt_id: format!("ord-7741-a{attempt}"),
        started: "2026-11-30T05:12:04Z".into(),
        budget_left_s: 42,
        outcome,
        effect_applied: outcome.map(|o| if o == Outcome::Ok { Applied::Yes } else { Applied::Unknown }),
        probe: None,
        message: outcome.map(|o| format!("ended {o}")),
        retry_at: None,
        sent_by: None,
        args: None,
        value: (outcome == Some(Outcome::Ok)).then(|| serde_json::json!(4411)),
        settled: None,
        approval: None,
    }
}

/// A log file's text: the header, then `records`.
fn logged(records: impl AsRef<str>) -> String {
    format!("{HEADER}\n{}", records.as_ref())
}

fn line(record: &Record) -> String {
    serde_json::to_string(record).unwrap() + "\n"
}

/// The log's text once the writer thread has written `expected` (or after five seconds, whatever it
/// holds then): the writer is another thread, so the test waits for it, not for a time.
fn written(path: &Path, expected: impl Fn(&str) -> bool) -> String {
    let give_up = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = fs::read_to_string(path).unwrap();
        if expected(&text) || std::time::Instant::now() > give_up {
            return text;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[tokio::test]
async fn a_lazy_record_rides_the_next_write_or_a_flush() {
    let dir = Scratch::new("lazy");
    let log = FileJournal::open(dir.log()).unwrap();
    // The writer thread writes a new log's header first.
    assert_eq!(written(&dir.log(), |text| text == logged("")), logged(""));
    let start = record("a", Phase::Start, 1, None);
    let end = record("a", Phase::End, 1, Some(Outcome::Ok));
    log.append(start.as_record_ref(), Durability::Lazy).await.unwrap();
    assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(""), "held in the process");
    assert_eq!(log.attempts(&key("a")).ready().map(Result::unwrap), Some(Some(1)), "but already indexed");
    log.append(end.as_record_ref(), Durability::Buffered).await.unwrap();
    let both = logged(line(&start) + &line(&end));
    assert_eq!(written(&dir.log(), |text| text == both), both);
    assert_eq!(log.stats().writes, 2, "the header's write, then one that carried both");

    let again = record("b", Phase::Start, 1, None);
    log.append(again.as_record_ref(), Durability::Lazy).await.unwrap();
    Journal::flush(&log).unwrap();
    assert!(written(&dir.log(), |text| text.ends_with(&line(&again))).ends_with(&line(&again)));
    let last = record("c", Phase::Start, 1, None);
    log.append(last.as_record_ref(), Durability::Lazy).await.unwrap();
    drop(log);
    assert!(fs::read_to_string(dir.log()).unwrap().ends_with(&line(&last)), "a clean close writes it");
}

#[tokio::test(start_paused = true)]
async fn a_stalled_disk_refuses_the_side_effect_within_its_budget_and_stalls_no_other_task() {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    let dir = Scratch::new("stalled");
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    log.stall(true);
    let task = Task::new("stalled-disk", "agent", Duration::from_secs(2)).journal(log.clone());
    const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
    let (sent, ticks) = (AtomicU32::new(0), AtomicU32::new(0));
    let began = tokio::time::Instant::now();
    let call = engine::run(
        &task,
        &SEND,
        task.key(&SEND, &"thread-9", None),
        |_| async {
            sent.fetch_add(1, SeqCst);
            Ok::<u64, Class>(4411)
        },
        |_| async { crate::probe::Probe::NotLanded },
    );
    // Another task of the same executor thread keeps running while the log's disk is stuck.
    let ticker = async {
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            ticks.fetch_add(1, SeqCst);
        }
    };
    let (report, ()) = tokio::join!(call, ticker);
    assert_eq!(sent.load(SeqCst), 0, "nothing sent without a durable start record");
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Retryable, Applied::No));
    assert!(report.message.contains("not stored within the budget"), "{}", report.message);
    assert_eq!(began.elapsed(), Duration::from_secs(2), "bounded by the budget, not by the disk");
    assert_eq!(ticks.load(SeqCst), 10);
    // The store never confirmed the start, so the call made no attempt: its report names none.
    assert_eq!(report.attempt_id, "", "{}", report.message);
    assert!(report.message.ends_with("the attempt was not started"), "{}", report.message);
    // The disk comes back: the start queued before the stall reaches the log, and after it the end
    // the call wrote under its claim, saying what the report said. Nobody is asked about the intent,
    // and its next call sends at once, with no probe: nothing was started.
    log.stall(false);
    log.sync().await.unwrap();
    assert_eq!(Journal::unresolved(&*log).await.unwrap(), [], "a call that sent nothing is not in doubt");
    // The first task's budget is spent: the same task's work, run again with a new budget, on the
    // real clock (a paused one would run the budget out while the writer thread syncs).
    tokio::time::resume();
    let probes = AtomicU32::new(0);
    let task_again = Task::new("stalled-disk", "agent", Duration::from_secs(2)).journal(log.clone());
    let again = engine::run(
        &task_again,
        &SEND,
        task_again.key(&SEND, &"thread-9", None),
        |_| async {
            sent.fetch_add(1, SeqCst);
            Ok::<u64, Class>(4411)
        },
        |_| async {
            probes.fetch_add(1, SeqCst);
            crate::probe::Probe::NotLanded
        },
    )
    .await;
    assert_eq!((again.outcome, again.effect_applied), (Outcome::Ok, Applied::Yes), "{}", again.message);
    assert_eq!((sent.load(SeqCst), probes.load(SeqCst)), (1, 0), "sent once, nothing probed");
    drop((task, task_again));
    drop(log);
    let records = read_log(dir.log()).unwrap().records;
    let said: Vec<_> = records.iter().map(|r| (r.phase, r.attempt, r.outcome, r.effect_applied)).collect();
    assert_eq!(
        said,
        [
            (Phase::Start, 1, None, None),
            (Phase::End, 1, Some(Outcome::Retryable), Some(Applied::No)),
            (Phase::Start, 2, None, None),
            (Phase::End, 2, Some(Outcome::Ok), Some(Applied::Yes)),
        ]
    );
    assert!(records[1].message.as_deref().is_some_and(|m| m.ends_with("not started")), "{:?}", records[1]);
}

#[tokio::test(start_paused = true)]
async fn a_read_that_waits_has_its_start_record_written() {
    let dir = Scratch::new("lazy-read");
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
    const READ: ToolSpec = ToolSpec::new("read_price", EffectKind::Read);
    let path = dir.log();
    let report = engine::run(
        &task,
        &READ,
        task.key(&READ, &"sku", None),
        |_| {
            let path = path.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                // The read waited once: its start record reaches the file while it runs.
                let seen = written(&path, |text| text.lines().count() > 1);
                Ok::<usize, Class>(seen.lines().count())
            }
        },
        crate::probe::NoProbe,
    )
    .await;
    assert_eq!(report.value, Some(2), "the header and the start record");
}

async fn append_all(log: &FileJournal, records: &[Record]) {
    for r in records {
        let durability = if r.phase == Phase::Start { Durability::Synced } else { Durability::Buffered };
        log.append(r.as_record_ref(), durability).await.unwrap();
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_new_log_has_mode_0600_and_its_index_survives_a_reopen() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("mode");
    let log = FileJournal::open(dir.log()).unwrap();
    let mode = fs::metadata(dir.log()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    append_all(
        &log,
        &[
            record("a", Phase::Start, 1, None),
            record("a", Phase::End, 1, Some(Outcome::Ok)),
            record("b", Phase::Start, 1, None),
        ],
    )
    .await;
    drop(log);
    let log = FileJournal::open(dir.log()).unwrap();
    assert!(log.warnings().is_empty());
    assert_eq!(log.stats().records_read, 3);
    let a = log.recall_now(&key("a")).unwrap();
    assert_eq!(a.last_word(), LastWord::Ok(Some(&serde_json::json!(4411))));
    assert_eq!(log.recall_now(&key("b")).unwrap().last_word(), LastWord::Unfinished);
    let open: Vec<IntentKey> = log.unresolved_now().iter().map(|r| r.last.intent_key).collect();
    assert_eq!(open, [key("b")]);
}

#[tokio::test]
async fn each_append_is_in_the_file_when_it_resolves() {
    let dir = Scratch::new("written");
    let log = FileJournal::open(dir.log()).unwrap();
    // The writer thread writes a new log's header first, on its own.
    assert_eq!(written(&dir.log(), |text| text == logged("")), logged(""));
    let start = record("a", Phase::Start, 1, None);
    log.append(start.as_record_ref(), Durability::Synced).await.unwrap();
    assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(line(&start)));
    let stats = log.stats();
    assert_eq!(
        (stats.appended, stats.writes, stats.syncs),
        (1, 2, 1),
        "the header's write, then the record's"
    );
    // A buffered record is handed to the writer thread, which writes it at once, but not synced.
    let end = record("a", Phase::End, 1, Some(Outcome::Ok));
    log.append(end.as_record_ref(), Durability::Buffered).await.unwrap();
    let both = logged(line(&start) + &line(&end));
    assert_eq!(written(&dir.log(), |text| text == both), both);
    assert_eq!(log.stats().syncs, 1);
    // It rides the next sync.
    log.sync().await.unwrap();
    assert_eq!(log.stats().syncs, 2);
    log.sync().await.unwrap();
    assert_eq!(log.stats().syncs, 2, "nothing new to sync");
}

#[tokio::test]
async fn synced_appends_queued_while_the_disk_is_busy_share_one_write_and_one_sync() {
    let dir = Scratch::new("group");
    let log = FileJournal::open(dir.log()).unwrap();
    // The new log's header, written first by the writer thread on its own.
    assert_eq!(written(&dir.log(), |text| text == logged("")), logged(""));
    let before = log.stats();
    // The writer is held (a disk busy with something else) while 500 tasks append synced records.
    log.stall(true);
    let records: Vec<Record> = (0..500).map(|i| record(&format!("t{i}"), Phase::Start, 1, None)).collect();
    let waits: Vec<_> = records.iter().map(|r| log.append(r.as_record_ref(), Durability::Synced)).collect();
    log.stall(false);
    for wait in waits {
        wait.await.unwrap();
    }
    let stats = log.stats();
    assert_eq!(stats.appended - before.appended, 500);
    // Group commit: everything queued when the writer wakes goes out in one write and one sync.
    assert_eq!((stats.writes - before.writes, stats.syncs - before.syncs), (1, 1), "{stats:?}");
    drop(log);
    let read = read_log(dir.log()).unwrap();
    assert_eq!(read.records, records);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_appending_at_once_leave_whole_lines_in_order_per_task() {
    let dir = Scratch::new("tasks");
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    let mut tasks = Vec::new();
    for t in 0..8 {
        let log = Arc::clone(&log);
        tasks.push(tokio::spawn(async move {
            for attempt in 1..=50 {
                let target = format!("t{t}");
                log.append(record(&target, Phase::Start, attempt, None).as_record_ref(), Durability::Synced)
                    .await
                    .unwrap();
                let end = record(&target, Phase::End, attempt, Some(Outcome::Retryable));
                log.append(end.as_record_ref(), Durability::Buffered).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    drop(log);
    let read = read_log(dir.log()).unwrap();
    assert!(read.warnings.is_empty());
    assert_eq!(read.records.len(), 800);
    for t in 0..8 {
        let target = key(&format!("t{t}"));
        let attempts: Vec<(u32, Phase)> =
            read.records.iter().filter(|r| r.intent_key == target).map(|r| (r.attempt, r.phase)).collect();
        let expected: Vec<(u32, Phase)> =
            (1..=50).flat_map(|a| [(a, Phase::Start), (a, Phase::End)]).collect();
        assert_eq!(attempts, expected);
    }
}

mod codec;
mod compaction;
mod recovery;

/// Issue 23, item 6: opening a new log on a disk whose writes and syncs hang returns at once: the
/// header is the writer thread's first line, not a write and a sync on the caller's thread; it is on
/// disk once the disk answers and the first synced record is.
#[tokio::test]
async fn opening_a_new_log_waits_on_no_write_or_sync() {
    let dir = Scratch::new("open-stalled");
    super::OPEN_STALLED.with(|stalled| stalled.set(true));
    let log = FileJournal::open(dir.log());
    super::OPEN_STALLED.with(|stalled| stalled.set(false));
    let log = log.unwrap();
    assert_eq!(fs::read(dir.log()).unwrap(), b"", "nothing written on the caller's thread");
    log.stall(false);
    log.append(record("a", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await.unwrap();
    let text = fs::read_to_string(dir.log()).unwrap();
    assert!(text.starts_with(HEADER), "{text}");
    assert_eq!(log.stats().syncs, 1, "header and record made durable by one sync");
    drop(log);
    assert_eq!(read_log(dir.log()).unwrap().records.len(), 1);
}

#[tokio::test]
async fn a_log_opened_off_the_runtime_is_the_same_log() {
    let dir = Scratch::new("open-async");
    let log = FileJournal::open_async(dir.log()).await.unwrap();
    log.append(record("a", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await.unwrap();
    drop(log);
    let again = FileJournal::open_async(dir.log()).await.unwrap();
    assert_eq!(again.recall_now(&record("a", Phase::Start, 1, None).intent_key).map(|r| r.attempts), Some(1));
    let busy = FileJournal::open_async(dir.log()).await.unwrap_err();
    assert!(matches!(busy, JournalError::InUse { .. }), "{busy}");
}
