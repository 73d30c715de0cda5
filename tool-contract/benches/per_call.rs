//! Rows 1 and 2 of BENCHMARKS.md: what the contract costs per call of an `ok` read.
//!
//! `cargo bench -p tool-contract --bench per_call`
//!
//! - `row1_read_call_memory_log`: a bare awaited call of the tool's body; the same work assembled by
//!   hand from sha2 (the intent key and its hex), backon (a retry), `tokio::time::timeout` and serde_json
//!   (a 6-field report); the `#[tool(effect = "read")]` wrapper without a log (the same work as by hand);
//!   and the wrapper with the in-memory log.
//! - `row2_read_call_file_log`: the bare call and the wrapper with the file log (a read's records are
//!   written unsynced).
//!
//! Every sample starts a fresh log (`iter_custom`), so a long run neither fills the disk nor the memory.
//! Under `cargo test --benches` each benchmark runs once, as a check.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tool_contract::journal::{CompactMemoryJournal, Journal};
use tool_contract::{Class, FileJournal, MemoryJournal, Outcome, Task, tool};

#[path = "common/by_hand.rs"]
mod by_hand;
use by_hand::{price, read_price_bare, read_price_by_hand};

const TASK: &str = "ord-7741";
const ACTOR: &str = "agent:pricing";
const SKU: &str = "sku-1";
const BUDGET: Duration = Duration::from_secs(3600);

/// Read a price: the measured wrapper.
#[tool(effect = "read", target = sku)]
async fn read_price(sku: &str) -> Result<u64, Class> {
    Ok(price(sku))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a tokio runtime")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir.join(name)
}

/// `iters` calls through the wrapper, on a fresh log (or none), timed.
async fn wrapper_calls(iters: u64, journal: Option<Arc<dyn Journal>>) -> Duration {
    let task = Task::new(TASK, ACTOR, BUDGET);
    let task = match journal {
        Some(journal) => task.journal(journal),
        None => task,
    };
    let started = Instant::now();
    for _ in 0..iters {
        let report = read_price(black_box(&task), black_box(SKU)).await;
        debug_assert_eq!(report.outcome, Outcome::Ok);
        black_box(report);
    }
    started.elapsed()
}

fn row1(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("row1_read_call_memory_log");
    group.bench_function("bare_call", |b| {
        b.to_async(&rt).iter(|| async { black_box(read_price_bare(black_box(SKU)).await) })
    });
    group.bench_function("by_hand_sha2_backon_timeout_serde_json", |b| {
        b.to_async(&rt).iter(|| async {
            let deadline = tokio::time::Instant::now() + BUDGET;
            black_box(read_price_by_hand(black_box(TASK), black_box(ACTOR), black_box(SKU), deadline).await)
        })
    });
    // The same work as by hand: no attempt log.
    group.bench_function("tool_wrapper_no_journal", |b| {
        b.to_async(&rt).iter_custom(|iters| wrapper_calls(iters, None))
    });
    // The in-memory log kept compact (opt-in): the row's figure, as measured before the plain store.
    group.bench_function("tool_wrapper_memory_journal", |b| {
        b.to_async(&rt).iter_custom(|iters| wrapper_calls(iters, Some(Arc::new(CompactMemoryJournal::new()))))
    });
    // The default in-memory log, plain: every record kept as a `Record`.
    group.bench_function("tool_wrapper_plain_memory_journal", |b| {
        b.to_async(&rt).iter_custom(|iters| wrapper_calls(iters, Some(Arc::new(MemoryJournal::new()))))
    });
    group.finish();
}

fn row2(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("row2_read_call_file_log");
    group.bench_function("bare_call", |b| {
        b.to_async(&rt).iter(|| async { black_box(read_price_bare(black_box(SKU)).await) })
    });
    group.bench_function("tool_wrapper_file_journal", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let path = scratch("per-call-read.log");
            let _ = std::fs::remove_file(&path);
            let journal = Arc::new(FileJournal::open(&path).expect("a fresh log"));
            let elapsed = wrapper_calls(iters, Some(journal)).await;
            let _ = std::fs::remove_file(&path);
            elapsed
        })
    });
    group.finish();
}

criterion_group!(benches, row1, row2);
criterion_main!(benches);
