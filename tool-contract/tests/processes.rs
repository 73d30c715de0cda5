//! Ten processes started at once on one file log, each making one `send` call, as an MCP client that
//! starts a server per tool call does: each opens the log with [`FileJournal::open_waiting`], so they
//! take it in turn, and none is refused, lost or doubled.
//!
//! Each process is this test binary run again on [`one_call_entry`] alone, told what to do through the
//! environment.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tool_contract::journal::{Phase, read_log};
use tool_contract::{Class, FileJournal, Outcome, Probe, Task, tool};

/// The log a process is to open; unset in the test run itself.
const LOG: &str = "TC_ONE_CALL_LOG";
/// The thread a process posts to.
const THREAD: &str = "TC_ONE_CALL_THREAD";
/// The file each effect adds a line to, the count of what was sent.
const EFFECTS: &str = "TC_ONE_CALL_EFFECTS";

/// How many processes start at once.
const PROCESSES: usize = 10;

/// The processes of one test at a time: the two tests share the machine, and each times its ten.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tc-processes-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn log(&self) -> PathBuf {
        self.0.join("attempts.log")
    }

    fn effects(&self) -> PathBuf {
        self.0.join("effects")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Post a notice to `thread`: one line in the effects file.
#[tool(effect = "send", target = thread, probe = find_notice)]
async fn post_notice(thread: &str) -> Result<u64, Class> {
    let path = std::env::var(EFFECTS).map_err(|_| Class::permanent("no effects file"))?;
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Class::permanent(format!("cannot record the effect: {e}")))?;
    writeln!(file, "{thread} {}", std::process::id())
        .map_err(|e| Class::permanent(format!("cannot record the effect: {e}")))?;
    Ok(4411)
}

/// Whether a notice to `thread` is in the effects file (no call here leaves one in doubt).
async fn find_notice(thread: &&str, _key: tool_contract::IntentKey) -> Probe<u64> {
    let Ok(path) = std::env::var(EFFECTS) else { return Probe::Failed("no effects file".into()) };
    if effects(Path::new(&path)).iter().any(|sent| sent == thread) {
        Probe::Landed(4411)
    } else {
        Probe::NotLanded
    }
}

/// One process's work, when run as one: open the log (waiting for it), make one call, say its outcome
/// on stdout. In the test run itself it does nothing.
#[test]
fn one_call_entry() {
    let Ok(log) = std::env::var(LOG) else { return };
    let thread = std::env::var(THREAD).expect("a thread to post to");
    let journal = FileJournal::open_waiting(&log, Duration::from_secs(30), || {
        eprintln!("waiting up to 30 s for {log}, open by another process");
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a tokio runtime");
    let task = Task::new("ord-7741", "agent:support", Duration::from_secs(30)).journal(Arc::new(journal));
    let report = runtime.block_on(post_notice(&task, &thread));
    println!("outcome={:?}", report.outcome);
}

/// Start the processes at once, one per thread named; wait for them all; the wall time and outputs.
fn run_at_once(dir: &Scratch, threads: &[String]) -> (Duration, Vec<Output>) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let began = Instant::now();
    let children: Vec<_> = threads
        .iter()
        .map(|thread| {
            Command::new(&exe)
                .args(["--exact", "one_call_entry", "--nocapture", "--test-threads", "1"])
                .env(LOG, dir.log())
                .env(THREAD, thread)
                .env(EFFECTS, dir.effects())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("a process")
        })
        .collect();
    let outputs: Vec<Output> = children.into_iter().map(|child| child.wait_with_output().unwrap()).collect();
    (began.elapsed(), outputs)
}

/// Every process ended its call ok; how many said they waited.
fn all_ok(outputs: &[Output]) -> usize {
    let mut waited = 0;
    for out in outputs {
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(stdout.contains("outcome=Ok"), "{stdout}\n{stderr}");
        let said = stderr.matches("waiting up to 30 s for").count();
        assert!(said <= 1, "a process says once that it waits\n{stderr}");
        waited += said;
    }
    waited
}

fn effects(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|line| line.split(' ').next().unwrap().to_owned()).collect()
}

#[test]
fn ten_processes_on_one_log_each_send_once_in_turn() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Scratch::new("distinct");
    let threads: Vec<String> = (0..PROCESSES).map(|i| format!("thread-{i}")).collect();
    let (took, outputs) = run_at_once(&dir, &threads);
    let waited = all_ok(&outputs);
    eprintln!("{PROCESSES} processes, distinct targets: {took:?}, {waited} waited for the log");
    let mut sent = effects(&dir.effects());
    sent.sort();
    let mut expected = threads.clone();
    expected.sort();
    assert_eq!(sent, expected, "one effect per process, none lost, none doubled");
    // The log: ten intents, each with one attempt, started and ended ok.
    let contents = read_log(dir.log()).unwrap();
    assert!(contents.warnings.is_empty(), "{:?}", contents.warnings);
    let mut intents: HashMap<_, (u32, u32)> = HashMap::new();
    for record in &contents.records {
        let (starts, oks) = intents.entry(record.intent_key).or_default();
        assert_eq!(record.attempt, 1, "{record:?}");
        match record.phase {
            Phase::Start => *starts += 1,
            Phase::End if record.outcome == Some(Outcome::Ok) => *oks += 1,
            _ => panic!("unexpected record {record:?}"),
        }
    }
    assert_eq!(intents.len(), PROCESSES, "{intents:?}");
    assert!(intents.values().all(|&counts| counts == (1, 1)), "{intents:?}");
}

#[test]
fn ten_processes_making_the_same_call_on_one_log_send_it_once() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Scratch::new("same");
    let threads: Vec<String> = vec!["thread-1".to_owned(); PROCESSES];
    let (took, outputs) = run_at_once(&dir, &threads);
    let waited = all_ok(&outputs);
    eprintln!("{PROCESSES} processes, one intent: {took:?}, {waited} waited for the log");
    assert_eq!(effects(&dir.effects()), ["thread-1"], "one effect; the other nine replay it");
    let contents = read_log(dir.log()).unwrap();
    assert!(contents.warnings.is_empty(), "{:?}", contents.warnings);
    let starts: Vec<_> = contents.records.iter().filter(|r| r.phase == Phase::Start).collect();
    assert_eq!(starts.len(), 1, "one attempt: {starts:?}");
    let oks = contents.records.iter().filter(|r| r.phase == Phase::End && r.outcome == Some(Outcome::Ok));
    assert_eq!(oks.count(), 1);
}
