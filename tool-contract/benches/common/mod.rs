//! What the recovery and memory benches share: a large attempt log, written once per size.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use tool_contract::journal::{Phase, Record};
use tool_contract::key::Intent;
use tool_contract::{Applied, Outcome};

/// `true` under `cargo bench` (full sizes), `false` under `cargo test --benches` (a quick check).
pub fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
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
        outcome: end.then_some(Outcome::Ok),
        effect_applied: end.then_some(Applied::Yes),
        probe: None,
        message: end.then(|| format!("post_notice done on attempt {attempt}")),
        retry_at: None,
        sent_by: None,
        args: None,
        value: end.then(|| serde_json::json!(4411)),
        settled: None,
        approval: None,
    }
}

/// A log of `attempts` attempts as the engine writes them: two attempts per intent (the first ended
/// `retryable` with nothing applied, the second `ok` with its value), each a start and an end line.
/// Written once into the temporary directory and synced, then reused. Returns the path and its lines.
pub fn large_log(attempts: usize) -> (PathBuf, u64) {
    let path = std::env::temp_dir().join(format!("tc-bench-log-{attempts}-attempts-format1.log"));
    let lines = (attempts / 2 * 4) as u64;
    let complete = path.with_extension("done");
    if complete.exists() && path.exists() {
        return (path, lines);
    }
    let mut out = BufWriter::with_capacity(1 << 20, fs::File::create(&path).expect("a log file"));
    out.write_all(tool_contract::journal::HEADER.as_bytes()).expect("the header");
    out.write_all(b"\n").expect("the header");
    for n in 0..attempts / 2 {
        for attempt in 1..=2 {
            let mut end = record(n, Phase::End, attempt);
            if attempt == 1 {
                end.outcome = Some(Outcome::Retryable);
                end.effect_applied = Some(Applied::No);
                end.message = Some("503 from /notices; no response body".into());
                end.value = None;
            }
            for r in [record(n, Phase::Start, attempt), end] {
                serde_json::to_writer(&mut out, &r).expect("a line");
                out.write_all(b"\n").expect("a line");
            }
        }
    }
    // On disk before any clock starts, so the kernel's writeback does not compete with the reading.
    out.into_inner().expect("a flushed log").sync_all().expect("a synced log");
    fs::write(&complete, b"").expect("a marker");
    (path, lines)
}
