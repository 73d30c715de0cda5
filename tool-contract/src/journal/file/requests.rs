//! Settling an intent of a log another process holds, or answering its question: a request the holder
//! picks up.
//!
//! One process appends to a log at a time, so a settlement made while an agent runs cannot be written
//! by the settler (nor an answer to an approval the agent waits for, [`crate::LogApprover`], by the
//! person giving it). It leaves a request instead, a file in the directory beside the log named after it
//! (`attempts.log.settle/`), and the holder settles it under its own lock, as [`settle`] would, then
//! answers in a file beside the request:
//!
//! 1. The settler writes `{id}.request` (whole, by a rename) and waits for `{id}.answer`.
//! 2. The holder's watcher (a thread of [`FileJournal`], looking every 200 ms) renames the request to
//!    `{id}.taken`, settles, writes `{id}.answer` (by a rename) and removes `{id}.taken`.
//! 3. The settler reads the answer and removes it. A settler that stops waiting removes its request
//!    first: if the request is gone, the holder has taken it and the answer follows.
//!
//! A log no process holds is opened by the settler itself, and the settlement is a line of the log,
//! synced, by the time [`request_settlement`] returns. A holder that opens a log folds in the requests
//! left in its directory (a settler that gave up, a holder that died holding one) as it starts.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{FileJournal, Shared};
use crate::journal::approval::{ApprovalError, Decision, answer_approval};
use crate::journal::settle::{SettleError, settle_now};
use crate::journal::{JournalError, Record, Settle};
use crate::key::IntentKey;

/// How often a holder looks for requests.
pub(super) const LOOK_EVERY: Duration = Duration::from_millis(200);

/// The directory of the settlement requests of the log at `log`: `{log}.settle`.
pub fn requests_dir(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".settle");
    PathBuf::from(name)
}

/// A request as its file holds it: an answer to a question, or a settlement.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Request {
    Approval {
        intent_key: IntentKey,
        attempt: u32,
        approval: Decision,
    },
    Settle {
        intent_key: IntentKey,
        #[serde(flatten)]
        settle: Settle,
    },
}

/// An answer as its file holds it: the record written, or why none was.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Settled(Box<Record>),
    Refused { kind: String, why: String, record: Option<Box<Record>> },
}

/// Answer the question about attempt `attempt` of intent `key` that the process holding the file log at
/// `log` waits on ([`crate::LogApprover`]): through that holder, waiting for it up to `wait`. A log no
/// process holds has nobody waiting, and takes no answer. Blocking: call it from a thread of its own in
/// async code.
pub fn request_approval(
    log: &Path,
    key: &IntentKey,
    attempt: u32,
    decision: &Decision,
    wait: Duration,
) -> Result<Record, ApprovalError> {
    let not_asked = |why: &str| ApprovalError::NotAsked { key: *key, attempt, why: why.to_owned() };
    if !log.is_file() {
        return Err(ApprovalError::Store(JournalError::Io {
            context: format!("no attempt log at {}", log.display()),
            source: std::io::ErrorKind::NotFound.into(),
        }));
    }
    match FileJournal::open(log) {
        Ok(_) => Err(not_asked("no process holds the log, so nobody waits for an answer")),
        Err(JournalError::InUse { .. }) => {
            let request = Request::Approval { intent_key: *key, attempt, approval: decision.clone() };
            match through_holder(log, key, &request, wait).map_err(ApprovalError::Store)? {
                Answer::Settled(record) => Ok(*record),
                Answer::Refused { kind, why, record } => Err(match (kind.as_str(), record) {
                    ("already_answered", Some(record)) => ApprovalError::AlreadyAnswered { record },
                    ("not_asked", _) => not_asked(&why),
                    ("invalid", _) => ApprovalError::Invalid(why),
                    _ => ApprovalError::Store(JournalError::Io {
                        context: why,
                        source: std::io::ErrorKind::Other.into(),
                    }),
                }),
            }
        }
        Err(e) => Err(ApprovalError::Store(e)),
    }
}

/// Settle the intent `key` of the file log at `log`, held by another process or by none: through the
/// holder (a request it picks up, waiting for its answer up to `wait`) or, when no process holds the
/// log, by opening it. The record written, or why none was. Blocking: call it from a thread of its own
/// in async code.
pub fn request_settlement(
    log: &Path,
    key: &IntentKey,
    settle: &Settle,
    wait: Duration,
) -> Result<Record, SettleError> {
    if !log.is_file() {
        return Err(SettleError::Store(JournalError::Io {
            context: format!("no attempt log at {}", log.display()),
            source: std::io::ErrorKind::NotFound.into(),
        }));
    }
    match FileJournal::open(log) {
        Ok(journal) => {
            let done = block_on(settle_now(&journal, key, settle));
            drop(journal);
            done
        }
        Err(JournalError::InUse { .. }) => {
            let request = Request::Settle { intent_key: *key, settle: settle.clone() };
            let answer = through_holder(log, key, &request, wait).map_err(SettleError::Store)?;
            read_answer(key, answer)
        }
        Err(e) => Err(SettleError::Store(e)),
    }
}

/// Leave a request for the holder and wait for its answer.
fn through_holder(
    log: &Path,
    key: &IntentKey,
    request: &Request,
    wait: Duration,
) -> Result<Answer, JournalError> {
    let (what, undone) = match request {
        Request::Settle { .. } => ("settlement", "nothing was settled"),
        Request::Approval { .. } => ("answer", "nothing was answered"),
    };
    let dir = requests_dir(log);
    let io = |what: &str, e: std::io::Error| JournalError::Io {
        context: format!("{what} {}", dir.display()),
        source: e,
    };
    fs::create_dir_all(&dir).map_err(|e| io("cannot create", e))?;
    let id = format!("{}-{}", key, crate::journal::Owner::unique().as_str().replace('.', "-"));
    let path = dir.join(format!("{id}.request"));
    let answer = dir.join(format!("{id}.answer"));
    let text = serde_json::to_vec(request).map_err(|e| io("cannot encode a request for", e.into()))?;
    write_whole(&path, &text).map_err(|e| io("cannot write a request in", e))?;
    let until = std::time::Instant::now() + wait;
    loop {
        if let Ok(bytes) = fs::read(&answer) {
            let _ = fs::remove_file(&answer);
            return serde_json::from_slice(&bytes).map_err(|e| JournalError::Io {
                context: format!("the holder's answer could not be read ({e})"),
                source: std::io::ErrorKind::InvalidData.into(),
            });
        }
        if std::time::Instant::now() >= until {
            // Withdrawn if the holder has not taken it; if it has, its answer is coming.
            if fs::remove_file(&path).is_ok() {
                return Err(JournalError::Io {
                    context: format!(
                        "{} is held by another process that did not take the {what} within {wait:?} \
                         (is it stopped?); the request was withdrawn and {undone}",
                        log.display()
                    ),
                    source: std::io::ErrorKind::TimedOut.into(),
                });
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_answer(key: &IntentKey, answer: Answer) -> Result<Record, SettleError> {
    match answer {
        Answer::Settled(record) => Ok(*record),
        Answer::Refused { kind, why, record } => Err(match (kind.as_str(), record) {
            ("already_settled", Some(record)) => SettleError::AlreadySettled { key: *key, record },
            ("not_found", _) => SettleError::NotFound { key: *key },
            ("not_in_doubt", _) => SettleError::NotInDoubt { key: *key, state: why },
            ("invalid", _) => SettleError::Invalid(why),
            _ => SettleError::Store(JournalError::Io {
                context: why,
                source: std::io::ErrorKind::Other.into(),
            }),
        }),
    }
}

/// Write `bytes` to `path` whole: to a temporary name, then renamed.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = path.with_extension("part");
    fs::write(&temporary, bytes)?;
    fs::rename(&temporary, path)
}

/// The holder's side: answer every request waiting in the log's directory (and, on the first look,
/// those a holder before this one took and never answered).
pub(super) fn answer_requests(shared: &Arc<Shared>, first: bool) {
    let dir = requests_dir(&shared.path);
    let Ok(entries) = fs::read_dir(&dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let taken = match path.extension().and_then(|e| e.to_str()) {
            Some("request") => path.with_extension("taken"),
            Some("taken") if first => path.clone(),
            _ => continue,
        };
        if taken != path && fs::rename(&path, &taken).is_err() {
            continue;
        }
        let answer = match fs::read(&taken).ok().and_then(|b| serde_json::from_slice::<Request>(&b).ok()) {
            Some(Request::Settle { intent_key, settle }) => {
                let view = FileJournal::view(Arc::clone(shared));
                match block_on(settle_now(&view, &intent_key, &settle)) {
                    Ok(record) => Answer::Settled(Box::new(record)),
                    Err(e) => refused(e),
                }
            }
            Some(Request::Approval { intent_key, attempt, approval }) => {
                let view = FileJournal::view(Arc::clone(shared));
                match block_on(answer_approval(&view, &intent_key, attempt, &approval)) {
                    Ok(record) => Answer::Settled(Box::new(record)),
                    Err(e) => not_answered(e),
                }
            }
            None => Answer::Refused {
                kind: "invalid".into(),
                why: "the request could not be read".into(),
                record: None,
            },
        };
        if let Ok(bytes) = serde_json::to_vec(&answer) {
            let _ = write_whole(&taken.with_extension("answer"), &bytes);
        }
        let _ = fs::remove_file(&taken);
    }
}

fn not_answered(e: ApprovalError) -> Answer {
    let why = e.to_string();
    match e {
        ApprovalError::AlreadyAnswered { record } => {
            Answer::Refused { kind: "already_answered".into(), why, record: Some(record) }
        }
        ApprovalError::NotAsked { why, .. } => {
            Answer::Refused { kind: "not_asked".into(), why, record: None }
        }
        ApprovalError::Invalid(why) => Answer::Refused { kind: "invalid".into(), why, record: None },
        _ => Answer::Refused { kind: "store".into(), why, record: None },
    }
}

fn refused(e: SettleError) -> Answer {
    let why = e.to_string();
    let (kind, record) = match e {
        SettleError::AlreadySettled { record, .. } => ("already_settled", Some(record)),
        SettleError::NotFound { .. } => ("not_found", None),
        SettleError::NotInDoubt { state, .. } => {
            return Answer::Refused { kind: "not_in_doubt".into(), why: state, record: None };
        }
        SettleError::Invalid(why) => return Answer::Refused { kind: "invalid".into(), why, record: None },
        SettleError::Busy { .. } => ("busy", None),
        _ => ("store", None),
    };
    Answer::Refused { kind: kind.into(), why, record }
}

/// Run `future` to its end on this thread: the file log answers at once, or from its writer thread.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}
