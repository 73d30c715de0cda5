//! The file log's request directory, as a hostile or careless local user would use it: a request left
//! by a settler that was killed, a FIFO, a link, an oversized file, a directory others can write. The
//! holder (a `FileJournal` opened here) answers what it may and is never blocked, redirected or fooled.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tool_contract::journal::file::{REQUEST_LIFETIME, requests_dir};
use tool_contract::journal::{Phase, read_log};
use tool_contract::{Class, FileJournal, Outcome, Probe, Task, tool};

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tc-requests-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn log(&self) -> PathBuf {
        self.0.join("attempts.log")
    }

    fn requests(&self) -> PathBuf {
        requests_dir(&self.log())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Post a notice; the reply is lost, and the probe cannot tell.
#[tool(effect = "send", target = thread, probe = check_thread)]
async fn post_notice(thread: &str) -> Result<u64, Class> {
    Err(Class::unknown("connection reset after the request was sent"))
}

async fn check_thread(_thread: &&str, _key: tool_contract::IntentKey) -> Probe<u64> {
    Probe::Failed("the thread's API is down".into())
}

/// A log at `dir` holding one `send` in doubt (attempt 1), closed again; its key.
fn in_doubt(dir: &Scratch) -> String {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    let task = Task::new("ord-9", "agent", Duration::from_secs(30)).journal(log.clone());
    let report = rt.block_on(post_notice(&task, "thread-9"));
    assert_eq!(report.outcome, Outcome::Unknown, "{}", report.message);
    report.idempotency_key.to_string()
}

/// A settlement request as a settler writes it, good until `expires`.
fn request(key: &str, expires: &str) -> String {
    serde_json::json!({
        "intent_key": key,
        "attempt": 1,
        "expires": expires,
        "verdict": "landed",
        "by": "alice",
        "via": "client",
        "evidence": "seen in the thread",
        "value": 666,
    })
    .to_string()
}

/// Wait (real time: the holder's watcher is a thread) for `path` to appear; its text.
fn answer_at(path: &Path) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = fs::read_to_string(path)
            && !text.is_empty()
        {
            return text;
        }
        assert!(Instant::now() < until, "no answer at {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn settled(dir: &Scratch) -> usize {
    read_log(dir.log()).unwrap().records.iter().filter(|r| r.phase == Phase::Settled).count()
}

#[test]
fn the_holder_makes_the_request_directory_its_own() {
    let dir = Scratch::new("mode");
    let log = FileJournal::open(dir.log()).unwrap();
    let meta = fs::symlink_metadata(dir.requests()).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.mode() & 0o777, 0o700, "created 0700 when the log is opened");
    assert!(log.warnings().is_empty(), "{:?}", log.warnings());
}

#[test]
fn a_request_past_its_expiry_or_its_lifetime_is_answered_expired_and_never_applied() {
    let dir = Scratch::new("expired");
    let key = in_doubt(&dir);
    // Left by settlers that were killed: one whose wait ended, one whose file is older than any
    // request may be, whatever it says.
    fs::write(dir.requests().join("gone.request"), request(&key, "2026-01-01T00:00:00Z")).unwrap();
    let old = dir.requests().join("old.request");
    fs::write(&old, request(&key, "2999-01-01T00:00:00Z")).unwrap();
    let long_ago = SystemTime::now() - REQUEST_LIFETIME - Duration::from_secs(60);
    fs::File::options().write(true).open(&old).unwrap().set_modified(long_ago).unwrap();
    // The next holder opens the log, hours later.
    let log = FileJournal::open(dir.log()).unwrap();
    for name in ["gone", "old"] {
        let answer = answer_at(&dir.requests().join(format!("{name}.answer")));
        assert!(answer.contains("expired") && answer.contains("nothing was applied"), "{name}: {answer}");
    }
    drop(log);
    assert_eq!(settled(&dir), 0, "an expired request is never applied");
}

#[test]
fn a_fifo_a_link_and_an_oversized_file_neither_block_nor_redirect_the_holder() {
    let dir = Scratch::new("hostile");
    let key = in_doubt(&dir);
    let requests = dir.requests();
    let fifo = requests.join("x.request");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // A link where the holder writes its answer's temporary file, and one where it reads a request.
    let victim = dir.0.join("victim.txt");
    fs::write(&victim, "keep me").unwrap();
    std::os::unix::fs::symlink(&victim, requests.join("y.part")).unwrap();
    std::os::unix::fs::symlink(&victim, requests.join("z.request")).unwrap();
    fs::write(requests.join("big.request"), vec![b' '; 1 << 20]).unwrap();
    let log = FileJournal::open(dir.log()).unwrap();
    for name in ["x", "z", "big"] {
        let answer = answer_at(&requests.join(format!("{name}.answer")));
        assert!(answer.contains("could not be read"), "{name}: {answer}");
    }
    // And the holder still answers a good request after them.
    let good = request(&key, "2999-01-01T00:00:00Z");
    fs::write(requests.join("y.request"), good).unwrap();
    let answer = answer_at(&requests.join("y.answer"));
    assert!(answer.contains("settled landed by alice"), "{answer}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me", "nothing written through a link");
    for name in ["x", "y", "big"] {
        let meta = fs::symlink_metadata(requests.join(format!("{name}.answer"))).unwrap();
        assert!(meta.is_file(), "{name}");
        assert_eq!(meta.mode() & 0o777, 0o600, "{name}: answers are the holder's alone");
    }
    drop(log);
    // The settlement names the operating-system user that wrote the request, beside who it claims.
    let record =
        read_log(dir.log()).unwrap().records.into_iter().find(|r| r.phase == Phase::Settled).unwrap();
    let settlement = record.settled.unwrap();
    let uid = fs::metadata(&dir.0).unwrap().uid();
    assert_eq!(settlement.by, "alice");
    assert!(
        settlement.os_user.as_deref().is_some_and(|u| u.starts_with(&format!("uid {uid}"))),
        "{settlement:?}"
    );
    // `tool-contract log` shows who really wrote it beside the `by` it claims.
    let contents = read_log(dir.log()).unwrap();
    let mut shown = Vec::new();
    let view = tool_contract::journal::inspect::View::default();
    tool_contract::journal::inspect::render("log", &contents.records, &[], &view, &mut shown).unwrap();
    let shown = String::from_utf8(shown).unwrap();
    let line = shown.lines().find(|l| l.contains("settled ->")).unwrap();
    assert!(line.contains("by alice") && line.contains(&format!("(written by uid {uid}")), "{line}");
}

#[test]
fn a_directory_others_may_write_takes_no_request_and_says_so_once() {
    let dir = Scratch::new("open");
    let key = in_doubt(&dir);
    let requests = dir.requests();
    fs::set_permissions(&requests, fs::Permissions::from_mode(0o777)).unwrap();
    fs::write(requests.join("forged.request"), request(&key, "2999-01-01T00:00:00Z")).unwrap();
    let log = FileJournal::open(dir.log()).unwrap();
    let warnings: Vec<String> = log.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("not taken") && warnings[0].contains("777"), "{warnings:?}");
    // Several looks of the holder: nothing is taken.
    std::thread::sleep(Duration::from_millis(800));
    assert!(requests.join("forged.request").exists(), "the request is left alone");
    drop(log);
    assert_eq!(settled(&dir), 0, "a forged request is not applied");
    // A settler refuses to leave its evidence there.
    let log = FileJournal::open(dir.log()).unwrap();
    let settle = tool_contract::person::Settle::new(tool_contract::journal::Verdict::Landed, "bob", "seen");
    let key = tool_contract::IntentKey::parse(&key).unwrap();
    let refused = tool_contract::journal::file::request_settlement(
        &dir.log(),
        &key,
        1,
        &settle,
        Duration::from_millis(300),
    );
    let said = refused.unwrap_err().to_string();
    assert!(said.contains("not safe to settle through") && said.contains("777"), "{said}");
    drop(log);
}

#[test]
fn a_directory_of_another_user_takes_no_request() {
    let dir = Scratch::new("owner");
    let key = in_doubt(&dir);
    let requests = dir.requests();
    fs::write(requests.join("forged.request"), request(&key, "2999-01-01T00:00:00Z")).unwrap();
    // Only root can give a directory away; as another user, a link stands in for another's directory.
    let moved = dir.0.join("elsewhere");
    fs::rename(&requests, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &requests).unwrap();
    let log = FileJournal::open(dir.log()).unwrap();
    let warnings: Vec<String> = log.warnings().iter().map(ToString::to_string).collect();
    assert!(warnings.iter().any(|w| w.contains("not a directory")), "{warnings:?}");
    std::thread::sleep(Duration::from_millis(600));
    assert!(moved.join("forged.request").exists(), "nothing is taken through a link");
    drop(log);
    fs::remove_file(&requests).unwrap();
    fs::rename(&moved, &requests).unwrap();
    if fs::metadata(&dir.0).unwrap().uid() == 0 {
        std::os::unix::fs::chown(&requests, Some(12_345), None).unwrap();
        let log = FileJournal::open(dir.log()).unwrap();
        let warnings: Vec<String> = log.warnings().iter().map(ToString::to_string).collect();
        assert!(warnings.iter().any(|w| w.contains("belongs to uid 12345")), "{warnings:?}");
        std::thread::sleep(Duration::from_millis(600));
        drop(log);
    }
    assert_eq!(settled(&dir), 0, "a forged request is not applied");
}

/// `settle` run on a thread of its own: its result, or a failure if it has not returned within `most`
/// (a settler that waits forever is the bug).
fn settle_within(
    log: PathBuf,
    key: &str,
    attempt: u32,
    wait: Duration,
    most: Duration,
) -> Result<tool_contract::journal::Record, tool_contract::person::SettleError> {
    let key = tool_contract::IntentKey::parse(key).unwrap();
    let (sent, got) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let settle =
            tool_contract::person::Settle::new(tool_contract::journal::Verdict::Landed, "bob", "seen");
        let _ =
            sent.send(tool_contract::journal::file::request_settlement(&log, &key, attempt, &settle, wait));
    });
    got.recv_timeout(most).unwrap_or_else(|_| panic!("the settler still waits after {most:?}"))
}

#[test]
fn a_settler_whose_request_was_taken_by_a_holder_that_died_stops_waiting_and_says_it_may_have_landed() {
    let dir = Scratch::new("taken");
    let key = in_doubt(&dir);
    // A holder: the log's lock, and a watcher that takes each request and dies before answering.
    let lock = fs::File::options().read(true).write(true).open(dir.log()).unwrap();
    lock.try_lock().unwrap();
    let requests = dir.requests();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let taker = {
        let (requests, stop) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for entry in fs::read_dir(&requests).into_iter().flatten().flatten() {
                    let path = entry.path();
                    if path.extension().is_some_and(|e| e == "request") {
                        let _ = fs::rename(&path, path.with_extension("taken"));
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let wait = Duration::from_millis(300);
    let started = Instant::now();
    let most = wait + tool_contract::journal::file::TAKEN_GRACE + Duration::from_secs(20);
    let said = settle_within(dir.log(), &key, 1, wait, most).unwrap_err().to_string();
    let waited = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    taker.join().unwrap();
    assert!(said.contains("took the request but gave no answer"), "{said}");
    assert!(
        said.contains("may or may not have been applied") && said.contains("tool-contract log"),
        "{said}"
    );
    assert!(
        waited >= wait + tool_contract::journal::file::TAKEN_GRACE,
        "it gave the holder its grace: {waited:?}"
    );
    drop(lock);
}

/// Post a notice; the service's reply is lost, and its error texts are long.
#[tool(effect = "send", target = thread, probe = check_long)]
async fn post_long(thread: &str) -> Result<u64, Class> {
    Err(Class::unknown(format!("reset; the proxy said: {}", "x".repeat(100 * 1024))))
}

async fn check_long(_thread: &&str, _key: tool_contract::IntentKey) -> Probe<u64> {
    Probe::Failed(format!("the thread's API answered: {}", "y".repeat(100 * 1024)))
}

#[test]
fn an_answer_quoting_a_long_record_is_cut_to_fit_and_the_settler_reads_it() {
    let dir = Scratch::new("long");
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    let task = Task::new("ord-10", "agent", Duration::from_secs(30)).journal(log.clone());
    let report = rt.block_on(post_long(&task, "thread-10"));
    assert_eq!(report.outcome, Outcome::Unknown);
    let key = report.idempotency_key.to_string();
    // Every record on disk, the probe's last (it is written after the report is made).
    rt.block_on(log.sync()).unwrap();
    let last = read_log(dir.log()).unwrap().records.last().unwrap().clone();
    assert!(
        last.message
            .as_deref()
            .is_some_and(|m| m.len() as u64 > tool_contract::journal::file::MAX_ANSWER_BYTES),
        "the record is longer than an answer may be"
    );
    // Held by this process (its watcher answers); the settlement names attempt 2, which never was:
    // the refusal quotes the intent's last record, 100 KiB of a message.
    let most = Duration::from_secs(30);
    let refused = settle_within(dir.log(), &key, 2, Duration::from_secs(10), most).unwrap_err();
    match refused {
        tool_contract::person::SettleError::OtherAttempt { last, .. } => {
            let message = last.message.unwrap_or_default();
            assert!(message.len() < 1024 && message.contains("bytes in all"), "{message}");
        }
        other => panic!("{other}"),
    }
    drop(task);
    drop(log);
}
