//! Row 5 of BENCHMARKS.md: opening and indexing a log of 1,000,000 attempts (2,000,000 lines).
//!
//! `cargo bench -p tool-contract --bench recovery`
//!
//! `row5_open_1m_attempts`, throughput in lines per second:
//! - `read_whole_file`: the floor, reading the file into memory and counting its lines;
//! - `serde_json_check_per_line`: the file read and every line checked by serde_json on one thread: the
//!   per-line floor of the open before its quick check (which spread the same parse over the cores);
//! - `file_journal_open`: `FileJournal::open`, reading and indexing.
//!
//! The memory it takes is measured by the `memory` bench (row 5 there). The log is written once into the
//! temporary directory and reused. Under `cargo test --benches` it runs once on 1,000 attempts.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use tool_contract::FileJournal;

/// A line checked as a record by serde_json, borrowing its strings: the full check of every line.
#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct Check<'a> {
    phase: &'a str,
    task: std::borrow::Cow<'a, str>,
    call: std::borrow::Cow<'a, str>,
    intent_key: std::borrow::Cow<'a, str>,
    attempt: u32,
    attempt_id: std::borrow::Cow<'a, str>,
    started: std::borrow::Cow<'a, str>,
    budget_left_s: u64,
    outcome: Option<&'a str>,
    effect_applied: Option<&'a str>,
    probe: Option<&'a str>,
    message: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    value: Option<serde::de::IgnoredAny>,
}

fn row5(c: &mut Criterion) {
    let attempts = if common::bench_mode() { 1_000_000 } else { 1_000 };
    let (path, lines) = common::large_log(attempts);
    let mut group = c.benchmark_group("row5_open_1m_attempts");
    group.throughput(Throughput::Elements(lines));
    group.sampling_mode(SamplingMode::Flat).sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("read_whole_file", |b| {
        b.iter(|| {
            let bytes = std::fs::read(&path).expect("the log");
            black_box(bytes.iter().filter(|&&b| b == b'\n').count())
        })
    });
    group.bench_function("serde_json_check_per_line", |b| {
        b.iter(|| {
            let bytes = std::fs::read(&path).expect("the log");
            let checked = bytes
                .split(|&b| b == b'\n')
                .filter(|line| !line.is_empty())
                .filter(|line| serde_json::from_slice::<Check<'_>>(line).is_ok())
                .count();
            assert_eq!(checked as u64, lines);
        })
    });
    group.bench_function("file_journal_open", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                let log = FileJournal::open(&path).expect("the log");
                spent += started.elapsed();
                assert_eq!(log.stats().records_read, lines);
                // Closing it (freeing the index) is not part of opening it.
                drop(log);
            }
            spent
        })
    });
    group.finish();
}

criterion_group!(benches, row5);
criterion_main!(benches);
