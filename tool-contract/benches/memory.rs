//! Rows 4 and 5 (memory) of BENCHMARKS.md, measured with a counting global allocator: criterion's
//! measurement here is bytes, not time.
//!
//! `cargo bench -p tool-contract --bench memory`
//!
//! - `row4_in_flight_10k`: bytes allocated and still live while 10,000 calls are parked mid-attempt
//!   (each awaits a semaphore), per call: bare futures doing the same await, against the
//!   `#[tool(effect = "read")]` wrapper with the in-memory log and the `#[tool(effect = "send")]` wrapper
//!   with the file log (its start record synced). The tasks the calls belong to exist before counting
//!   starts; each call's spawned tokio task (its future) is counted.
//! - `row5_recovery_memory`: per attempt, the size of a log of 1,000,000 attempts and what its open
//!   `FileJournal` keeps live (the index); the peak while opening is printed beside it.
//!
//! Under `cargo test --benches` each runs once, on 100 calls and a log of 1,000 attempts.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use tokio::sync::Semaphore;
use tool_contract::journal::{CompactMemoryJournal, Journal};
use tool_contract::{Class, FileJournal, Outcome, Probe, Task, tool};

/// Counts the bytes the program holds, and the most it held since the last [`reset_peak`].
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes as isize, Ordering::Relaxed) + bytes as isize;
    PEAK.fetch_max(live, Ordering::Relaxed);
    ALLOCATED.fetch_add(bytes, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn reset_peak() {
    PEAK.store(live(), Ordering::Relaxed);
}

/// Criterion's measurement for this bench: a number of bytes, which the benchmarks report per call
/// (or per attempt) through `iter_custom`.
struct Bytes;

impl Measurement for Bytes {
    type Intermediate = isize;
    type Value = f64;

    fn start(&self) -> isize {
        live()
    }

    fn end(&self, before: isize) -> f64 {
        (live() - before) as f64
    }

    fn add(&self, a: &f64, b: &f64) -> f64 {
        a + b
    }

    fn zero(&self) -> f64 {
        0.0
    }

    fn to_f64(&self, value: &f64) -> f64 {
        *value
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &BytesFormatter
    }
}

struct BytesFormatter;

impl ValueFormatter for BytesFormatter {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        "B"
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        _throughput: &Throughput,
        _values: &mut [f64],
    ) -> &'static str {
        "B"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "B"
    }
}

/// Every parked call waits here; the bench lets them all go at once.
static GATE: Semaphore = Semaphore::const_new(0);
/// How many calls reached the gate.
static PARKED: AtomicU64 = AtomicU64::new(0);

async fn park() {
    PARKED.fetch_add(1, Ordering::Relaxed);
    if let Ok(permit) = GATE.acquire().await {
        permit.forget();
    }
}

/// A read that parks mid-attempt.
#[tool(effect = "read", target = n)]
async fn read_parked(n: u64) -> Result<u64, Class> {
    park().await;
    Ok(n)
}

async fn not_landed(_n: &u64, _key: tool_contract::IntentKey) -> Probe<u64> {
    Probe::NotLanded
}

/// A send that parks mid-attempt, after its start record is synced.
#[tool(effect = "send", probe = not_landed, target = n)]
async fn send_parked(n: u64) -> Result<u64, Class> {
    park().await;
    Ok(n)
}

#[derive(Clone, Copy)]
enum Calls {
    Bare,
    Read,
    Send,
}

/// Park `calls` calls, and return the bytes live per call while they are parked.
async fn in_flight(calls: u64, kind: Calls, tasks: &[Arc<Task>]) -> f64 {
    PARKED.store(0, Ordering::Relaxed);
    let mut running = Vec::with_capacity(calls as usize);
    let before = live();
    for (n, task) in tasks.iter().enumerate().take(calls as usize) {
        let task = Arc::clone(task);
        let n = n as u64;
        // One spawn per kind: a task's allocation is sized by its own future, so the bare one is bare.
        running.push(match kind {
            Calls::Bare => tokio::spawn(async move {
                park().await;
                black_box(n);
            }),
            Calls::Read => {
                tokio::spawn(async move { assert_eq!(read_parked(&task, n).await.outcome, Outcome::Ok) })
            }
            Calls::Send => {
                tokio::spawn(async move { assert_eq!(send_parked(&task, n).await.outcome, Outcome::Ok) })
            }
        });
    }
    while PARKED.load(Ordering::Relaxed) < calls {
        tokio::time::sleep(Duration::from_micros(100)).await;
    }
    let parked = live() - before;
    GATE.add_permits(calls as usize);
    for call in running {
        call.await.expect("a call that finishes");
    }
    parked as f64 / calls as f64
}

fn row4(c: &mut Criterion<Bytes>) {
    let calls: u64 = if common::bench_mode() { 10_000 } else { 100 };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let mut group = c.benchmark_group("row4_in_flight_10k");
    group.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_millis(500));
    let variants = [
        ("bare_futures", Calls::Bare),
        ("tool_wrapper_read_memory_journal", Calls::Read),
        ("tool_wrapper_send_file_journal", Calls::Send),
    ];
    for (name, kind) in variants {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter_custom(|iters| async move {
                // A fresh log and fresh tasks per sample, made before counting starts.
                let path = std::env::temp_dir().join(format!("tc-bench-memory-{}.log", std::process::id()));
                let _ = std::fs::remove_file(&path);
                let journal: Arc<dyn Journal> = match kind {
                    Calls::Send => Arc::new(FileJournal::open(&path).expect("a fresh log")),
                    _ => Arc::new(CompactMemoryJournal::new()),
                };
                let tasks: Vec<Arc<Task>> = (0..calls)
                    .map(|n| {
                        Arc::new(
                            Task::new(format!("ord-{n}"), "agent", Duration::from_secs(600))
                                .journal(Arc::clone(&journal)),
                        )
                    })
                    .collect();
                let per_call = in_flight(calls, kind, &tasks).await;
                drop(tasks);
                drop(journal);
                let _ = std::fs::remove_file(&path);
                per_call * iters as f64
            })
        });
    }
    group.finish();
}

fn row5(c: &mut Criterion<Bytes>) {
    let attempts = if common::bench_mode() { 1_000_000 } else { 1_000 };
    let (path, _lines) = common::large_log(attempts);
    let size = std::fs::metadata(&path).expect("the log").len() as f64;
    let mut group = c.benchmark_group("row5_recovery_memory");
    group.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_millis(500));
    group.bench_function("log_file_size", |b| b.iter_custom(|iters| size / attempts as f64 * iters as f64));
    let mut peak_seen = 0.0f64;
    group.bench_function("file_journal_open_live", |b| {
        b.iter_custom(|iters| {
            let before = live();
            reset_peak();
            let log = FileJournal::open(&path).expect("the log");
            let kept = (live() - before) as f64;
            peak_seen = peak_seen.max((PEAK.load(Ordering::Relaxed) - before) as f64);
            drop(log);
            kept / attempts as f64 * iters as f64
        })
    });
    group.finish();
    println!(
        "row5_recovery_memory: peak while opening {:.0} MiB for a {:.0} MiB log of {attempts} attempts \
         ({:.0} B per attempt)",
        peak_seen / (1 << 20) as f64,
        size / (1 << 20) as f64,
        peak_seen / attempts as f64
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(Bytes);
    targets = row4, row5
}
criterion_main!(benches);
