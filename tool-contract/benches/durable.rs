//! Row 3 of BENCHMARKS.md: durable side effects through the file log.
//!
//! `cargo bench -p tool-contract --bench durable`
//!
//! - `row3_send_10k_concurrent`: 10,000 tasks at once on a 2-worker runtime, each one `send` against an
//!   instant fake. The baseline calls the fake bare; the wrapper syncs each start record before the call
//!   (group commit: the records appended while one `fdatasync` runs share the next one). Throughput is
//!   in calls per second.
//! - `row3_send_one_task`: one task sending in sequence, each start record synced on its own, against a
//!   bare `write(2)` of a 200-byte line and `fdatasync(2)`.
//!
//! Every sample starts a fresh log. Under `cargo test --benches` each benchmark runs once, on 100 tasks.

use std::fs::{File, OpenOptions};
use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tool_contract::journal::Journal;
use tool_contract::{Class, FileJournal, Outcome, Probe, Task, tool};

/// The instant fake service: takes the notice, hands back its id.
async fn fake_post(thread: u64) -> Result<u64, Class> {
    Ok(black_box(thread) + 1)
}

/// Whether the fake holds a notice with this key: never asked when every call succeeds.
async fn notice_landed(_thread: &u64, _key: tool_contract::IntentKey) -> Probe<u64> {
    Probe::NotLanded
}

/// Post a notice: the measured wrapper.
#[tool(effect = "send", probe = notice_landed, target = thread)]
async fn post_notice(thread: u64) -> Result<u64, Class> {
    fake_post(thread).await
}

fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// Task ids never repeat across samples, so every call is a new intent.
static NEXT: AtomicU64 = AtomicU64::new(0);

async fn concurrent_sends(tasks: u64, journal: Option<Arc<FileJournal>>) {
    let first = NEXT.fetch_add(tasks, Ordering::Relaxed);
    let mut running = Vec::with_capacity(tasks as usize);
    for n in first..first + tasks {
        let journal = journal.clone();
        running.push(tokio::spawn(async move {
            match journal {
                None => {
                    black_box(fake_post(n).await.ok());
                }
                Some(journal) => {
                    let task = Task::new(format!("ord-{n}"), "agent:support", Duration::from_secs(60))
                        .journal(journal as Arc<dyn Journal>);
                    let report = post_notice(&task, n).await;
                    assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);
                }
            }
        }));
    }
    for task in running {
        task.await.expect("a task that finishes");
    }
}

fn row3_concurrent(c: &mut Criterion) {
    let tasks: u64 = if bench_mode() { 10_000 } else { 100 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut group = c.benchmark_group("row3_send_10k_concurrent");
    group.throughput(Throughput::Elements(tasks));
    group.sample_size(20).measurement_time(Duration::from_secs(10));
    group.bench_function("instant_fake_bare", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let started = Instant::now();
            for _ in 0..iters {
                concurrent_sends(tasks, None).await;
            }
            started.elapsed()
        })
    });
    group.bench_function("tool_wrapper_file_journal_synced_start", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let path = scratch("durable-concurrent.log");
            let journal = Arc::new(FileJournal::open(&path).expect("a fresh log"));
            let started = Instant::now();
            for _ in 0..iters {
                concurrent_sends(tasks, Some(journal.clone())).await;
            }
            let elapsed = started.elapsed();
            let stats = journal.stats();
            assert_eq!(stats.appended, 2 * tasks * iters, "a start and an end record per call");
            drop(journal);
            let _ = std::fs::remove_file(&path);
            elapsed
        })
    });
    group.finish();
}

fn row3_sequential(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let mut group = c.benchmark_group("row3_send_one_task");
    group.sample_size(20).measurement_time(Duration::from_secs(8));
    group.bench_function("bare_write_200B_and_fdatasync", |b| {
        b.iter_custom(|iters| {
            let path = scratch("durable-bare.log");
            let mut file: File =
                OpenOptions::new().create(true).append(true).open(&path).expect("a fresh file");
            let line = [b'x'; 199];
            let started = Instant::now();
            for _ in 0..iters {
                file.write_all(&line).expect("a write");
                file.write_all(b"\n").expect("a write");
                file.sync_data().expect("a sync");
            }
            let elapsed = started.elapsed();
            drop(file);
            let _ = std::fs::remove_file(&path);
            elapsed
        })
    });
    group.bench_function("tool_wrapper_file_journal_synced_start", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let path = scratch("durable-sequential.log");
            let journal = Arc::new(FileJournal::open(&path).expect("a fresh log"));
            let first = NEXT.fetch_add(iters, Ordering::Relaxed);
            let started = Instant::now();
            for n in first..first + iters {
                let task = Task::new(format!("ord-{n}"), "agent:support", Duration::from_secs(60))
                    .journal(journal.clone() as Arc<dyn Journal>);
                let report = post_notice(&task, n).await;
                debug_assert_eq!(report.outcome, Outcome::Ok);
                black_box(report);
            }
            let elapsed = started.elapsed();
            assert_eq!(journal.stats().syncs, iters, "one sync per call, none shared");
            drop(journal);
            let _ = std::fs::remove_file(&path);
            elapsed
        })
    });
    group.finish();
}

criterion_group!(benches, row3_concurrent, row3_sequential);
criterion_main!(benches);
