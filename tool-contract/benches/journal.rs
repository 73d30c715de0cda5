//! Figures of the attempt log: `cargo bench -p tool-contract --bench journal`.
//!
//! Without `--bench` (as `cargo test --all-targets` runs it) it only checks itself on small sizes.
//! No benchmark framework: each figure is one timed run on this machine's disk, printed as a line.
//!
//! - the cost of one unsynced line (a read's start, an end record), one task after another and many at
//!   once;
//! - the cost of one side-effecting call (start record synced, end record buffered) through the engine
//!   under 1,000 and 10,000 concurrent tasks, with the number of syncs they shared;
//! - the time to open (read and index) a log of 1,000,000 attempts.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tool_contract::journal::{Durability, Phase, Record};
use tool_contract::{Class, EffectKind, FileJournal, Intent, Journal, Probe, Task, ToolSpec, engine};

const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = args.iter().any(|a| a == "--bench");
    // `cargo bench --bench journal -- index` runs only the figures whose name holds `index`.
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()));
    let scale = |n: usize| if full { n } else { (n / 1000).max(10) };
    let dir = std::env::temp_dir().join(format!("tc-bench-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();

    if wanted("unsynced") {
        runtime.block_on(unsynced_lines(&dir, scale(200_000)));
    }
    if wanted("calls") {
        for tasks in [1_000, 10_000] {
            runtime.block_on(calls_with_group_commit(&dir, scale(tasks), scale(tasks) * 5));
        }
    }
    if wanted("index") {
        index_a_large_log(&dir, scale(1_000_000));
    }
    fs::remove_dir_all(&dir).unwrap();
}

fn record(n: usize, phase: Phase, attempt: u32) -> Record {
    let target = n.to_string();
    let end = phase == Phase::End;
    Record {
        phase,
        task: format!("ord-{}", n % 100_000),
        call: "post_notice".into(),
        intent_key: Intent::new("bench", "agent:support", "post_notice", &target).key(),
        attempt,
        attempt_id: format!("ord-{n}-a{attempt}"),
        started: "2026-11-30T05:12:04Z".into(),
        budget_left_s: 42,
        outcome: end.then_some(tool_contract::Outcome::Ok),
        effect_applied: end.then_some(tool_contract::Applied::Yes),
        probe: None,
        message: end.then(|| format!("post_notice done on attempt {attempt}")),
        value: end.then(|| serde_json::json!(4411)),
    }
}

fn fresh(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let _ = fs::remove_file(&path);
    path
}

fn per(total: Duration, n: usize) -> String {
    let each = total.as_secs_f64() / n as f64;
    if each >= 1e-3 { format!("{:.2} ms", each * 1e3) } else { format!("{:.2} µs", each * 1e6) }
}

async fn unsynced_lines(dir: &Path, n: usize) {
    let log = Arc::new(FileJournal::open(fresh(dir, "unsynced.log")).unwrap());
    let records: Vec<Record> = (0..n).map(|i| record(i, Phase::End, 1)).collect();
    let started = Instant::now();
    for r in &records {
        log.append(r, Durability::Buffered).await.unwrap();
    }
    let one_by_one = started.elapsed();
    println!("unsynced line, one task: {} per line ({n} lines)", per(one_by_one, n));

    let log = Arc::new(FileJournal::open(fresh(dir, "unsynced-many.log")).unwrap());
    let records = Arc::new(records);
    let tasks = 1_000.min(n);
    let started = Instant::now();
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (log, records) = (log.clone(), records.clone());
        handles.push(tokio::spawn(async move {
            for r in records.iter().skip(t).step_by(tasks) {
                log.append(r, Durability::Buffered).await.unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let many = started.elapsed();
    let stats = log.stats();
    println!(
        "unsynced line, {tasks} tasks at once: {} per line ({n} lines in {} writes)",
        per(many, n),
        stats.writes
    );
}

async fn calls_with_group_commit(dir: &Path, tasks: usize, calls: usize) {
    let log: Arc<FileJournal> = Arc::new(FileJournal::open(fresh(dir, "calls.log")).unwrap());
    let started = Instant::now();
    let mut handles = Vec::new();
    for t in 0..tasks {
        let log = log.clone();
        handles.push(tokio::spawn(async move {
            for c in (t..calls).step_by(tasks) {
                let task = Task::new(format!("ord-{c}"), "agent", Duration::from_secs(60))
                    .journal(log.clone() as Arc<dyn Journal>);
                let key = task.key(&SEND, &"thread-9", None);
                let report = engine::run(
                    &task,
                    &SEND,
                    key,
                    |_| async { Ok::<u64, Class>(4411) },
                    |_| async { Probe::<u64>::NotLanded },
                )
                .await;
                assert_eq!(report.outcome, tool_contract::Outcome::Ok);
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let elapsed = started.elapsed();
    let stats = log.stats();
    println!(
        "side-effecting call, {tasks} tasks at once: {} per call, {:.0} calls/s ({calls} calls, {} syncs, {:.1} calls per sync)",
        per(elapsed, calls),
        calls as f64 / elapsed.as_secs_f64(),
        stats.syncs,
        calls as f64 / stats.syncs.max(1) as f64
    );
}

fn index_a_large_log(dir: &Path, attempts: usize) {
    let path = fresh(dir, "large.log");
    // Two attempts per intent (the first ended `retryable`), each a start and an end line.
    let mut out = BufWriter::new(fs::File::create(&path).unwrap());
    for n in 0..attempts / 2 {
        for attempt in 1..=2 {
            let mut end = record(n, Phase::End, attempt);
            if attempt == 1 {
                end.outcome = Some(tool_contract::Outcome::Retryable);
                end.effect_applied = Some(tool_contract::Applied::No);
                end.value = None;
            }
            for r in [record(n, Phase::Start, attempt), end] {
                serde_json::to_writer(&mut out, &r).unwrap();
                out.write_all(b"\n").unwrap();
            }
        }
    }
    // On disk before the clock starts, so the kernel's writeback does not compete with the reading.
    out.into_inner().unwrap().sync_all().unwrap();
    let bytes = fs::metadata(&path).unwrap().len();
    let lines = (attempts / 2 * 4) as f64;
    for run in 1..=3 {
        let started = Instant::now();
        let log = FileJournal::open(&path).unwrap();
        let elapsed = started.elapsed();
        assert_eq!(log.stats().records_read as f64, lines);
        assert_eq!(log.unresolved().len(), 0);
        println!(
            "open and index a log of {attempts} attempts ({lines} lines, {:.0} MB), run {run}: {:.2} s, {:.2} M lines/s",
            bytes as f64 / 1e6,
            elapsed.as_secs_f64(),
            lines / elapsed.as_secs_f64() / 1e6
        );
    }
}
