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

use backon::{ExponentialBuilder, Retryable};
use criterion::{Criterion, criterion_group, criterion_main};
use serde::Serialize;
use sha2::{Digest, Sha256};
use tool_contract::{Class, FileJournal, Journal, MemoryJournal, Outcome, Task, tool};

const TASK: &str = "ord-7741";
const ACTOR: &str = "agent:pricing";
const SKU: &str = "sku-1";
const BUDGET: Duration = Duration::from_secs(3600);

/// The tool's body, shared by every variant.
fn price(sku: &str) -> u64 {
    black_box(sku).len() as u64 + 4406
}

/// Read a price: the measured wrapper.
#[tool(effect = "read", target = sku)]
async fn read_price(sku: &str) -> Result<u64, Class> {
    Ok(price(sku))
}

/// The same body, called bare.
async fn read_price_bare(sku: &'static str) -> Result<u64, Class> {
    Ok(price(sku))
}

/// The 6-field report the by-hand version serialises.
#[derive(Serialize)]
struct HandReport<'a> {
    outcome: &'static str,
    effect_applied: &'static str,
    attempt_id: &'a str,
    idempotency_key: &'a str,
    deadline_left_s: u64,
    message: &'a str,
}

/// What a careful author writes without the contract: the intent key with sha2, the call under
/// `tokio::time::timeout`, a backon retry, and a 6-field report serialised with serde_json.
async fn read_price_by_hand(
    task_id: &str,
    actor: &str,
    sku: &'static str,
    deadline: tokio::time::Instant,
) -> String {
    let mut hasher = Sha256::new();
    for part in [task_id, "|", actor, "|", "read_price", "|", sku, "|"] {
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    let mut hex = [0u8; 32];
    for (i, b) in digest[..16].iter().enumerate() {
        hex[2 * i] = b"0123456789abcdef"[usize::from(b >> 4)];
        hex[2 * i + 1] = b"0123456789abcdef"[usize::from(b & 0xf)];
    }
    let key = std::str::from_utf8(&hex).unwrap_or_default();
    let mut attempts = 0u32;
    let value = (|| {
        attempts += 1;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        async move {
            match tokio::time::timeout(left, read_price_bare(sku)).await {
                Ok(done) => done,
                Err(_) => Err(Class::retryable("timed out")),
            }
        }
    })
    .retry(ExponentialBuilder::default().with_jitter().with_max_times(2))
    .sleep(tokio::time::sleep)
    .when(|class: &Class| class.outcome() == Outcome::Retryable)
    .await;
    let attempt_id = format!("{task_id}-{}-a{attempts}", &key[..8]);
    let message = format!("read_price done on attempt {attempts}");
    let report = HandReport {
        outcome: if value.is_ok() { "ok" } else { "retryable" },
        effect_applied: "no",
        attempt_id: &attempt_id,
        idempotency_key: key,
        deadline_left_s: deadline.saturating_duration_since(tokio::time::Instant::now()).as_secs(),
        message: &message,
    };
    serde_json::to_string(&report).unwrap_or_default()
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
    group.bench_function("tool_wrapper_memory_journal", |b| {
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
