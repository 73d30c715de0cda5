//! The process the crash tests of the attempt log kill on purpose (`journal_crash.rs` beside this file).
//!
//! ```text
//! journal-crash-child DIR STOP
//! ```
//!
//! Runs one `send` (`post_notice` on `thread-9` in task `ord-7741`) through `tool_contract::engine::run`
//! with a `FileJournal` at `DIR/attempts.log`, against a "service" whose effects persist in
//! `DIR/service.effects` (one line per effect: `<intent key> <attempt id> <notice id>`, synced), so they
//! survive the kill. `STOP` says where it stops and waits to be killed:
//!
//! - `none`: run to the end and print one JSON line on stdout:
//!   `{"report": .., "probes": n, "attempts": n, "warnings": [..]}`.
//! - `before-effect`: inside the attempt, after the engine wrote and synced its start record, before
//!   the effect.
//! - `after-effect`: inside the attempt, after the effect landed at the service, before the engine can
//!   write the end record.
//! - `torn-line`: no engine run; append the first half of a start record to the log without its
//!   newline, as a `write(2)` cut short by a crash leaves it, then stop.
//!
//! - `settle-landed`, `settle-not-landed`: no engine run; settle the intent as a person would
//!   (`tool_contract::person::settle`, landed with the value the service holds, or not landed), then stop.
//!
//! Stopping creates `DIR/stopped` and blocks the thread (so the engine cannot go on, nor time out)
//! until the process is killed.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tool_contract::effect::EffectKind;
use tool_contract::journal::{Phase, Record};
use tool_contract::spec::ToolSpec;
use tool_contract::{Class, FileJournal, IntentKey, Probe, Task, engine};

// The log's recovery is the story here, each run killed at a chosen line: a restart's wait for the
// landing horizon (tests/crash_scenarios.rs and tests/engine/horizon.rs show it) would only add a probe
// and 5 s to every run.
const POST_NOTICE: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send).horizon(Duration::ZERO);

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);
static PROBES: AtomicU32 = AtomicU32::new(0);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, stop] = args.as_slice() else {
        eprintln!("usage: journal-crash-child DIR none|before-effect|after-effect|torn-line");
        std::process::exit(2);
    };
    let dir = PathBuf::from(dir);
    if stop == "torn-line" {
        tear_a_line(&dir);
        stop_here(&dir);
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    if let Some(verdict) = stop.strip_prefix("settle-") {
        runtime.block_on(settle_then_stop(&dir, verdict));
    }
    runtime.block_on(post(&dir, stop));
}

async fn post(dir: &Path, stop: &str) {
    let log = Arc::new(FileJournal::open(dir.join("attempts.log")).unwrap());
    let warnings: Vec<String> = log.warnings().iter().map(ToString::to_string).collect();
    let task = Task::new("ord-7741", "agent:support", Duration::from_secs(60)).journal(log.clone());
    let key = task.key(&POST_NOTICE, &"thread-9", None);
    let report = engine::run(
        &task,
        &POST_NOTICE,
        key,
        |call| {
            ATTEMPTS.fetch_add(1, Ordering::SeqCst);
            async move {
                if stop == "before-effect" {
                    stop_here(dir);
                }
                let notice = service_post(dir, key, call.attempt_id());
                if stop == "after-effect" {
                    stop_here(dir);
                }
                Ok::<u64, Class>(notice)
            }
        },
        |key| {
            PROBES.fetch_add(1, Ordering::SeqCst);
            async move {
                match service_find(dir, key) {
                    Some(notice) => Probe::Landed(notice),
                    None => Probe::NotLanded,
                }
            }
        },
    )
    .await;
    let out = serde_json::json!({
        "report": report,
        "probes": PROBES.load(Ordering::SeqCst),
        "attempts": ATTEMPTS.load(Ordering::SeqCst),
        "warnings": warnings,
    });
    println!("{out}");
}

/// Settle the intent as a person who looked at the thread, then stop: the process dies right after
/// the settlement was recorded.
async fn settle_then_stop(dir: &Path, verdict: &str) -> ! {
    use tool_contract::journal::Verdict;
    use tool_contract::person::Settle;
    let log = FileJournal::open(dir.join("attempts.log")).unwrap();
    let task = Task::new("ord-7741", "agent:support", Duration::from_secs(60));
    let key = task.key(&POST_NOTICE, &"thread-9", None);
    let settle = match verdict {
        "landed" => Settle::new(Verdict::Landed, "alice", "the notice is in thread-9")
            .json_value(service_find(dir, key).map(serde_json::Value::from)),
        _ => Settle::new(Verdict::NotLanded, "alice", "thread-9 holds no notice"),
    };
    tool_contract::person::settle(&log, &key, 1, &settle).await.unwrap();
    stop_here(dir);
}

/// The service posts the notice and commits it before answering.
fn service_post(dir: &Path, key: IntentKey, attempt_id: &str) -> u64 {
    let path = dir.join("service.effects");
    let count = fs::read_to_string(&path).map(|s| s.lines().count()).unwrap_or(0);
    let notice = 4411 + count as u64;
    let mut file = OpenOptions::new().create(true).append(true).open(&path).unwrap();
    writeln!(file, "{key} {attempt_id} {notice}").unwrap();
    file.sync_all().unwrap();
    notice
}

/// The probe: a read of the thread that finds a notice carrying the key.
fn service_find(dir: &Path, key: IntentKey) -> Option<u64> {
    let effects = fs::read_to_string(dir.join("service.effects")).unwrap_or_default();
    let key = key.to_string();
    effects.lines().find(|l| l.starts_with(&key)).and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

fn tear_a_line(dir: &Path) {
    let key = tool_contract::key::Intent::new("ord-7741", "agent:support", "post_notice", "thread-9").key();
    let record = Record {
        phase: Phase::Start,
        task: "ord-7741".into(),
        call: "post_notice".into(),
        intent_key: key,
        attempt: 2,
        attempt_id: "ord-7741-a2".into(),
        started: "2026-11-30T05:12:04Z".into(),
        budget_left_s: 60,
        outcome: None,
        effect_applied: None,
        probe: None,
        message: None,
        retry_at: None,
        sent_by: None,
        args: None,
        value: None,
        settled: None,
        approval: None,
    };
    let line = serde_json::to_string(&record).unwrap();
    let mut file = OpenOptions::new().append(true).open(dir.join("attempts.log")).unwrap();
    file.write_all(&line.as_bytes()[..line.len() / 2]).unwrap();
}

fn stop_here(dir: &Path) -> ! {
    fs::write(dir.join("stopped"), b"").unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
