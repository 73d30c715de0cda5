//! Crash tests of the attempt log: a child process (`journal_crash_child.rs`) runs one `send` with a
//! `FileJournal`, is killed with SIGKILL at a chosen point, and is run again on the same log against
//! the same service.
#![cfg(unix)]

use std::fs;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tool_contract::journal::{Phase, Record, read_log};
use tool_contract::key::Intent;
use tool_contract::probe::ProbeMark;
use tool_contract::{Applied, IntentKey, Outcome};

const CHILD: &str = env!("CARGO_BIN_EXE_journal-crash-child");
/// Bounds every wait on the child; the child reaches its stop point in milliseconds.
const PATIENCE: Duration = Duration::from_secs(60);

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tc-crash-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn log(&self) -> PathBuf {
        self.0.join("attempts.log")
    }

    fn records(&self) -> Vec<Record> {
        read_log(self.log()).unwrap().records
    }

    /// How many notices the service posted for the intent.
    fn effects(&self) -> usize {
        let effects = fs::read_to_string(self.0.join("service.effects")).unwrap_or_default();
        effects.lines().filter(|l| l.starts_with(&key().to_string())).count()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Kills the child if the test fails while it runs.
struct Running(Child);

impl Running {
    /// What the child printed; call it once it has exited.
    fn output(&mut self) -> (String, String) {
        let (mut out, mut err) = (String::new(), String::new());
        if let Some(mut pipe) = self.0.stdout.take() {
            pipe.read_to_string(&mut out).unwrap();
        }
        if let Some(mut pipe) = self.0.stderr.take() {
            pipe.read_to_string(&mut err).unwrap();
        }
        (out, err)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn key() -> IntentKey {
    Intent::new("ord-7741", "agent:support", "post_notice", "thread-9").key()
}

fn spawn(dir: &Path, stop: &str) -> Running {
    let child = Command::new(CHILD)
        .arg(dir)
        .arg(stop)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Running(child)
}

/// Run the child until it stops at `stop`, then kill it with SIGKILL.
fn kill_at(dir: &Scratch, stop: &str) {
    let marker = dir.0.join("stopped");
    let _ = fs::remove_file(&marker);
    let mut child = spawn(&dir.0, stop);
    let since = Instant::now();
    while !marker.exists() {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("the child exited ({status}) before `{stop}`: {}", child.output().1);
        }
        assert!(since.elapsed() < PATIENCE, "the child did not reach `{stop}`");
        std::thread::sleep(Duration::from_millis(2));
    }
    child.0.kill().unwrap(); // SIGKILL on Unix: no destructor, no flush, no clean shutdown
    let status = child.0.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "{status}");
}

/// Run the child to its end; what it printed.
fn run_to_end(dir: &Scratch) -> Value {
    let mut child = spawn(&dir.0, "none");
    let since = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(since.elapsed() < PATIENCE, "the child did not finish");
        std::thread::sleep(Duration::from_millis(2));
    };
    let (stdout, stderr) = child.output();
    assert!(status.success(), "{status}: {stderr}");
    serde_json::from_str(&stdout).unwrap()
}

fn phases(records: &[Record]) -> Vec<(Phase, u32, Option<ProbeMark>, Option<Outcome>)> {
    records.iter().map(|r| (r.phase, r.attempt, r.probe, r.outcome)).collect()
}

#[test]
fn killed_between_the_start_record_and_the_effect_twice_then_probed_and_posted_once() {
    let dir = Scratch::new("before-effect");
    kill_at(&dir, "before-effect");
    assert_eq!(phases(&dir.records()), [(Phase::Start, 1, None, None)], "the start record is on disk");
    assert_eq!(dir.effects(), 0);

    // The second run probes the unfinished attempt 1, finds nothing, starts attempt 2, and dies too.
    kill_at(&dir, "before-effect");
    assert_eq!(
        phases(&dir.records()),
        [
            (Phase::Start, 1, None, None),
            (Phase::End, 1, Some(ProbeMark::NotLanded), Some(Outcome::Retryable)),
            (Phase::Start, 2, None, None),
        ]
    );

    let out = run_to_end(&dir);
    assert_eq!(out["report"]["outcome"], "ok", "{out}");
    assert_eq!(out["report"]["effect_applied"], "yes");
    assert_eq!((out["probes"].as_u64(), out["attempts"].as_u64()), (Some(1), Some(1)), "{out}");
    assert!(out["report"]["attempt_id"].as_str().unwrap().ends_with("-a3"), "{out}");
    assert_eq!(dir.effects(), 1, "one notice at the service in total");
    let records = dir.records();
    assert_eq!(
        phases(&records[3..]),
        [
            (Phase::End, 2, Some(ProbeMark::NotLanded), Some(Outcome::Retryable)),
            (Phase::Start, 3, None, None),
            (Phase::End, 3, None, Some(Outcome::Ok)),
        ],
        "the probe's verdict is logged before the new attempt"
    );
    assert_eq!(records[5].value, Some(out["report"]["value"].clone()));
}

#[test]
fn killed_between_the_effect_and_the_end_record_then_found_by_the_probe_and_never_repeated() {
    let dir = Scratch::new("after-effect");
    kill_at(&dir, "after-effect");
    assert_eq!(phases(&dir.records()), [(Phase::Start, 1, None, None)], "no end record");
    assert_eq!(dir.effects(), 1, "the notice was posted");

    let out = run_to_end(&dir);
    assert_eq!(out["report"]["outcome"], "ok", "{out}");
    assert_eq!(out["report"]["effect_applied"], serde_json::json!(Applied::Yes));
    assert_eq!(out["report"]["value"], 4411, "the value the probe found");
    assert_eq!((out["probes"].as_u64(), out["attempts"].as_u64()), (Some(1), Some(0)), "{out}");
    assert_eq!(dir.effects(), 1);
    let records = dir.records();
    assert_eq!(
        phases(&records),
        [(Phase::Start, 1, None, None), (Phase::End, 1, Some(ProbeMark::Landed), Some(Outcome::Ok))]
    );
    assert_eq!(records[1].value, Some(serde_json::json!(4411)));

    // A third run finds the recorded `ok` and returns it again: no probe, no attempt, no effect.
    let out = run_to_end(&dir);
    assert_eq!(out["report"]["outcome"], "ok", "{out}");
    assert_eq!(out["report"]["value"], 4411);
    assert_eq!((out["probes"].as_u64(), out["attempts"].as_u64()), (Some(0), Some(0)), "{out}");
    assert_eq!(dir.effects(), 1);
    assert_eq!(dir.records().len(), 2, "a replay writes nothing");
}

/// The half line is written by the child itself, exactly as a `write(2)` cut short by a crash leaves
/// it (no newline); the kill that follows is real. The journal's own writer is not interrupted
/// mid-line: one `write(2)` of a batch cannot be stopped at a chosen byte from outside.
#[test]
fn killed_with_a_line_half_written_then_recovered_with_a_warning() {
    let dir = Scratch::new("torn-line");
    kill_at(&dir, "before-effect");
    kill_at(&dir, "torn-line");
    let torn = read_log(dir.log()).unwrap();
    assert_eq!(torn.records.len(), 1);
    assert_eq!(torn.warnings.len(), 1);
    assert_eq!(torn.warnings[0].line, 3, "after the header and the first start record");

    let out = run_to_end(&dir);
    let warnings = out["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{out}");
    assert!(warnings[0].as_str().unwrap().starts_with("line 3: torn last line"), "{out}");
    assert_eq!(out["report"]["outcome"], "ok", "{out}");
    assert_eq!((out["probes"].as_u64(), out["attempts"].as_u64()), (Some(1), Some(1)), "{out}");
    assert_eq!(dir.effects(), 1);

    // The torn bytes stay as line 3, closed by a newline; every record after them is whole.
    let after = read_log(dir.log()).unwrap();
    assert_eq!(after.warnings.len(), 1);
    assert_eq!(after.warnings[0].line, 3);
    assert_eq!(
        phases(&after.records),
        [
            (Phase::Start, 1, None, None),
            (Phase::End, 1, Some(ProbeMark::NotLanded), Some(Outcome::Retryable)),
            (Phase::Start, 2, None, None),
            (Phase::End, 2, None, Some(Outcome::Ok)),
        ]
    );
    let text = fs::read_to_string(dir.log()).unwrap();
    assert!(text.ends_with('\n'));
    assert_eq!(text.lines().count(), 6, "the header, the torn line and four records");
}

/// A person settles what a killed run left, and the settling process is killed right after: the
/// settlement is on disk, and the next run honours it (an attempt only after `not_landed`, no attempt
/// and no probe after `landed`). The log knows no sooner than the settlement itself that the killed
/// attempt was over, and the person looked no later than that: their `not_landed` is looked at again by
/// the probe before the next attempt.
#[test]
fn killed_after_a_settlement_then_the_next_run_honours_it() {
    let dir = Scratch::new("settled-not-landed");
    kill_at(&dir, "before-effect");
    kill_at(&dir, "settle-not-landed");
    assert_eq!(dir.records().last().map(|r| r.phase), Some(Phase::Settled), "synced before it returned");
    let out = run_to_end(&dir);
    assert_eq!(out["report"]["outcome"], "ok", "{out}");
    assert_eq!((out["probes"].as_u64(), out["attempts"].as_u64()), (Some(1), Some(1)), "{out}");
    assert!(out["report"]["attempt_id"].as_str().unwrap().ends_with("-a2"), "{out}");
    assert_eq!(dir.effects(), 1, "exactly one notice");

    let dir = Scratch::new("settled-landed");
    kill_at(&dir, "after-effect");
    kill_at(&dir, "settle-landed");
    let out = run_to_end(&dir);
    assert_eq!(out["report"]["outcome"], "ok", "{out}");
    assert_eq!(out["report"]["value"], 4411, "the settled value");
    assert_eq!((out["probes"].as_u64(), out["attempts"].as_u64()), (Some(0), Some(0)), "{out}");
    assert_eq!(dir.effects(), 1, "never repeated");
}
