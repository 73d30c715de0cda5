//! `tool-contract settle`, run as a process: on a log no process holds (the settlement is a line of
//! the log when it returns), on a log an agent holds (the agent picks the request up), and refused.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use tool_contract::journal::{Phase, read_log};
use tool_contract::{Class, FileJournal, Outcome, Probe, Reason, Task, tool};

const BIN: &str = env!("CARGO_BIN_EXE_tool-contract");

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tc-settle-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn log(&self) -> PathBuf {
        self.0.join("attempts.log")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn cli(args: &[&str]) -> (i32, String, String) {
    let Output { status, stdout, stderr } = Command::new(BIN).args(args).output().unwrap();
    (status.code().unwrap_or(-1), String::from_utf8(stdout).unwrap(), String::from_utf8(stderr).unwrap())
}

static SENT: AtomicU32 = AtomicU32::new(0);

/// Post a notice; the reply is lost while `lose`, and the probe cannot tell.
// A person's word, given a few seconds after the attempt, is the story here: with no landing horizon
// to wait for, it counts at once (the log's stamps are whole seconds, written perhaps by a clock a
// second apart: a word seen within three seconds of the probe that found the attempt over is looked at
// again).
#[tool(effect = "send", target = thread, probe = check_thread, horizon = "0s")]
async fn post_notice(thread: &str, lose: bool) -> Result<u64, Class> {
    SENT.fetch_add(1, Ordering::SeqCst);
    if lose { Err(Class::unknown("connection reset after the request was sent")) } else { Ok(4411) }
}

async fn check_thread(_thread: &&str, _lose: &bool, _key: tool_contract::IntentKey) -> Probe<u64> {
    Probe::Failed("the thread's API is down".into())
}

/// A log holding one `send` in doubt on `thread`, by task `task`; its key.
async fn in_doubt(log: &Arc<FileJournal>, task: &str, thread: &str) -> String {
    let task = Task::new(task, "agent", Duration::from_secs(30)).journal(log.clone());
    let report = post_notice(&task, thread, true).await;
    assert_eq!(report.outcome, Outcome::Unknown, "{}", report.message);
    report.idempotency_key.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settles_a_log_no_process_holds_and_refuses_a_second_settlement() {
    let dir = Scratch::new("free");
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    let key = in_doubt(&log, "ord-1", "thread-1").await;
    drop(log);
    let path = dir.log().display().to_string();
    let settle = |by: &str, verdict: &str| {
        cli(&[
            "settle",
            &path,
            "--intent",
            &key,
            "--attempt",
            "1",
            verdict,
            "--evidence",
            "notice 4411 in thread-1",
            "--by",
            by,
            "--seen",
            "now",
        ])
    };
    let (code, out, err) = settle("alice", "--landed");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("settled landed by alice via operator: notice 4411 in thread-1"), "{out}");
    // A line of the log when the command returns.
    let last = read_log(dir.log()).unwrap().records.pop().unwrap();
    assert_eq!((last.phase, last.settled.map(|s| s.by)), (Phase::Settled, Some("alice".to_owned())));
    let (code, out, err) = settle("bob", "--not-landed");
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("was settled landed by alice via operator"), "{err}");
    // Compaction keeps it: it is of the intent's latest attempt.
    let (code, out, err) = cli(&["compact", &path]);
    assert_eq!(code, 0, "{out}{err}");
    let kept = read_log(dir.log()).unwrap().records;
    assert!(kept.iter().any(|r| r.phase == Phase::Settled), "{kept:?}");
    // The inspector shows it, and it is no longer in doubt.
    let (_, timeline, _) = cli(&["log", &path]);
    assert!(timeline.contains("settled -> ok, effect yes"), "{timeline}");
    let (_, unresolved, _) = cli(&["log", &path, "--unresolved"]);
    assert!(!unresolved.contains(&key), "{unresolved}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settles_through_the_agent_that_holds_the_log() {
    let dir = Scratch::new("held");
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    let key = in_doubt(&log, "ord-2", "thread-2").await;
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let path = dir.log().display().to_string();
    let args: Vec<String> = [
        "settle",
        &path,
        "--intent",
        &key,
        "--attempt",
        "1",
        "--not-landed",
        "--evidence",
        "not in thread-2",
        "--by",
        "alice",
        "--seen",
        "now",
        "--json",
    ]
    .map(String::from)
    .to_vec();
    let (code, out, err) = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cli(&args)
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{out}{err}");
    let answer: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["record"]["settled"]["verdict"], "not_landed", "{out}");
    // Given seconds after the attempt, the word is told when the attempt could still land by the
    // default horizon (this tool declares none, so its next call takes the word at once).
    let note = answer["note"].as_str().unwrap_or_default();
    assert!(note.starts_with("attempt 1 could still land until "), "{out}");
    assert!(note.contains("its request could leave until "), "{note}");
    // The holder wrote it: the next call of the intent makes exactly one new attempt.
    let task = Task::new("ord-2", "agent", Duration::from_secs(30)).journal(log.clone());
    let sent = SENT.load(Ordering::SeqCst);
    let report = post_notice(&task, "thread-2", false).await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(4411)), "{}", report.message);
    assert!(report.attempt_id.ends_with("-a2"), "{}", report.attempt_id);
    assert_eq!(SENT.load(Ordering::SeqCst), sent + 1);
    let again = post_notice(&task, "thread-2", false).await;
    assert_eq!(again.reason, Reason::Replayed);
    assert_eq!(fs::read_dir(tool_contract::journal::file::requests_dir(&dir.log())).unwrap().count(), 0);
}

#[test]
fn a_holder_that_does_not_answer_leaves_nothing_settled() {
    let dir = Scratch::new("silent");
    let log = FileJournal::open(dir.log()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let key = rt.block_on(in_doubt(&Arc::new(log), "ord-3", "thread-3"));
    // Another process's lock, with nobody answering.
    let file = fs::File::open(dir.log()).unwrap();
    file.lock().unwrap();
    let path = dir.log().display().to_string();
    let (code, out, err) = cli(&[
        "settle",
        &path,
        "--intent",
        &key,
        "--attempt",
        "1",
        "--landed",
        "--evidence",
        "seen",
        "--by",
        "alice",
        "--wait",
        "0.3",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("did not take the settlement") && err.contains("nothing was settled"), "{err}");
    let requests = tool_contract::journal::file::requests_dir(&dir.log());
    assert_eq!(fs::read_dir(requests).unwrap().count(), 0, "the request was withdrawn");
    drop(file);
    assert!(read_log(dir.log()).unwrap().records.iter().all(|r| r.phase != Phase::Settled));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_what_cannot_be_settled_and_bad_command_lines() {
    let dir = Scratch::new("refused");
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    let task = Task::new("ord-4", "agent", Duration::from_secs(30)).journal(log.clone());
    let done = post_notice(&task, "thread-4", false).await;
    drop(task);
    drop(log);
    let (path, key) = (dir.log().display().to_string(), done.idempotency_key.to_string());
    let (code, _, err) = cli(&[
        "settle",
        &path,
        "--intent",
        &key,
        "--attempt",
        "1",
        "--landed",
        "--evidence",
        "seen",
        "--by",
        "al",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not in doubt") && err.contains("ended ok"), "{err}");
    let other = "0123456789abcdef0123456789abcdef";
    let (code, _, err) = cli(&[
        "settle",
        &path,
        "--intent",
        other,
        "--attempt",
        "1",
        "--landed",
        "--evidence",
        "seen",
        "--by",
        "al",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no record"), "{err}");
    let other_id = "ord-4-01234567-a1";
    let bad: [(&[&str], &str); 13] = [
        // A `not_landed` says when the person looked: it counts only if they looked late enough.
        (
            &["--intent", &key, "--attempt", "1", "--not-landed", "--evidence", "x", "--by", "al"],
            "missing `--seen WHEN`",
        ),
        (
            &[
                "--intent",
                &key,
                "--attempt",
                "1",
                "--not-landed",
                "--evidence",
                "x",
                "--by",
                "al",
                "--seen",
                "noon",
            ],
            "RFC 3339 UTC",
        ),
        (
            &[
                "--intent",
                &key,
                "--attempt",
                "1",
                "--not-landed",
                "--evidence",
                "x",
                "--by",
                "al",
                "--seen",
                "2999-01-01T00:00:00Z",
            ],
            "in the future",
        ),
        (&["--intent", &key, "--attempt", "1", "--landed", "--by", "al"], "--evidence"),
        (&["--intent", &key, "--attempt", "1", "--evidence", "x", "--by", "al"], "--landed"),
        (
            &[
                "--intent",
                &key,
                "--attempt",
                "1",
                "--landed",
                "--not-landed",
                "--evidence",
                "x",
                "--by",
                "al",
            ],
            "exclude",
        ),
        (
            &[
                "--intent",
                &key,
                "--attempt",
                "1",
                "--not-landed",
                "--value",
                "7",
                "--evidence",
                "x",
                "--by",
                "al",
            ],
            "`--landed` only",
        ),
        (
            &[
                "--intent",
                &key,
                "--attempt",
                "1",
                "--landed",
                "--value",
                "{oops",
                "--evidence",
                "x",
                "--by",
                "al",
            ],
            "not JSON",
        ),
        (
            &["--intent", "xyz", "--attempt", "1", "--landed", "--evidence", "x", "--by", "al"],
            "32 lowercase hex",
        ),
        // The attempt is always named: the one the person examined.
        (&["--intent", &key, "--landed", "--evidence", "x", "--by", "al"], "missing `--attempt N`"),
        (
            &["--intent", &key, "--attempt", "0", "--landed", "--evidence", "x", "--by", "al"],
            "numbered from 1",
        ),
        (&["--intent", &key, "--attempt", "a2", "--landed", "--evidence", "x", "--by", "al"], "neither"),
        (&["--intent", &key, "--attempt", other_id, "--landed", "--evidence", "x", "--by", "al"], "neither"),
    ];
    for (args, says) in bad {
        let mut line = vec!["settle", path.as_str()];
        line.extend_from_slice(args);
        let (code, _, err) = cli(&line);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let missing = dir.0.join("no-such.log").display().to_string();
    let (code, _, err) = cli(&[
        "settle",
        &missing,
        "--intent",
        &key,
        "--attempt",
        "1",
        "--landed",
        "--evidence",
        "x",
        "--by",
        "al",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no attempt log at"), "{err}");
    assert!(!dir.0.join("no-such.log").exists(), "no log is created by settling");
}

static REPLIES: AtomicU32 = AtomicU32::new(0);
static PROBE_FINDS_NOTHING: AtomicBool = AtomicBool::new(false);

/// Post a reply whose answer is always lost; its probe finds nothing once when told to, and otherwise
/// cannot tell.
// A person's word, given right after the attempt, is the story here: with no landing horizon to
// wait for, it counts at once.
#[tool(effect = "send", target = thread, probe = look_for_reply, horizon = "0s")]
async fn post_reply(thread: &str) -> Result<u64, Class> {
    REPLIES.fetch_add(1, Ordering::SeqCst);
    Err(Class::unknown("connection reset after the request was sent"))
}

async fn look_for_reply(_thread: &&str, _key: tool_contract::IntentKey) -> Probe<u64> {
    if PROBE_FINDS_NOTHING.swap(false, Ordering::SeqCst) {
        Probe::NotLanded
    } else {
        Probe::Failed("the thread's API is down".into())
    }
}

/// A person examines attempt 1; meanwhile the agent probes it (nothing found), makes attempt 2, and
/// that one ends in doubt too. The person's "not landed" about attempt 1 is refused, through the agent
/// holding the log, naming attempt 2; nothing is recorded, and no third attempt follows. Settling
/// attempt 2 by its attempt id then works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verdict_about_an_attempt_that_is_no_longer_the_last_is_refused_naming_the_newer_one() {
    let dir = Scratch::new("stale");
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    let task = Task::new("ord-5", "agent", Duration::from_secs(30)).journal(log.clone());
    let first = post_reply(&task, "thread-5").await;
    assert_eq!(first.outcome, Outcome::Unknown, "{}", first.message);
    assert!(first.attempt_id.ends_with("-a1"), "{}", first.attempt_id);
    // The person opens attempt 1's page. The agent calls again: the probe finds nothing, attempt 2.
    PROBE_FINDS_NOTHING.store(true, Ordering::SeqCst);
    let second = post_reply(&task, "thread-5").await;
    assert_eq!(second.outcome, Outcome::Unknown, "{}", second.message);
    assert!(second.attempt_id.ends_with("-a2"), "{}", second.attempt_id);
    let sent = REPLIES.load(Ordering::SeqCst);
    let (path, key) = (dir.log().display().to_string(), first.idempotency_key.to_string());
    let settle = move |attempt: String| {
        let (path, key) = (path.clone(), key.clone());
        tokio::task::spawn_blocking(move || {
            cli(&[
                "settle",
                &path,
                "--intent",
                &key,
                "--attempt",
                &attempt,
                "--not-landed",
                "--evidence",
                "no reply in thread-5",
                "--by",
                "alice",
                "--seen",
                "now",
            ])
        })
    };
    for named in ["1".to_owned(), first.attempt_id.clone()] {
        let (code, out, err) = settle(named.clone()).await.unwrap();
        assert_eq!(code, 1, "{named}: {out}{err}");
        assert!(err.contains("about attempt 1") && err.contains(&second.attempt_id), "{err}");
        assert!(err.contains("ended unknown"), "{err}");
    }
    assert!(log.recall_now(&first.idempotency_key).unwrap().last.phase != Phase::Settled, "nothing recorded");
    assert_eq!(REPLIES.load(Ordering::SeqCst), sent, "no attempt was made on the stale verdict");
    // Attempt 2, by its id: recorded on attempt 2.
    let (code, out, err) = settle(second.attempt_id.clone()).await.unwrap();
    assert_eq!(code, 0, "{out}{err}");
    let last = log.recall_now(&first.idempotency_key).unwrap().last;
    assert_eq!((last.phase, last.attempt), (Phase::Settled, 2));
}
