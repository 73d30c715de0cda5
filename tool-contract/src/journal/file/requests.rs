//! Settling an intent of a log another process holds: a request the holder picks up.
//!
//! One process appends to a log at a time, so a settlement made while an agent runs cannot be written
//! by the settler. It leaves a request instead, a file in the directory beside the log named after it
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

/// A request as its file holds it.
#[derive(Serialize, Deserialize)]
struct Request {
    intent_key: IntentKey,
    #[serde(flatten)]
    settle: Settle,
}

/// An answer as its file holds it: the record written, or why none was.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Settled(Box<Record>),
    Refused { kind: String, why: String, record: Option<Box<Record>> },
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
        Err(JournalError::InUse { .. }) => through_holder(log, key, settle, wait),
        Err(e) => Err(SettleError::Store(e)),
    }
}

/// Leave a request for the holder and wait for its answer.
fn through_holder(
    log: &Path,
    key: &IntentKey,
    settle: &Settle,
    wait: Duration,
) -> Result<Record, SettleError> {
    let dir = requests_dir(log);
    let io = |what: &str, e: std::io::Error| {
        SettleError::Store(JournalError::Io { context: format!("{what} {}", dir.display()), source: e })
    };
    fs::create_dir_all(&dir).map_err(|e| io("cannot create", e))?;
    let id = format!("{}-{}", key, crate::journal::Owner::unique().as_str().replace('.', "-"));
    let request = dir.join(format!("{id}.request"));
    let answer = dir.join(format!("{id}.answer"));
    let text = serde_json::to_vec(&Request { intent_key: *key, settle: settle.clone() })
        .map_err(|e| io("cannot encode a request for", e.into()))?;
    write_whole(&request, &text).map_err(|e| io("cannot write a request in", e))?;
    let until = std::time::Instant::now() + wait;
    loop {
        if let Ok(bytes) = fs::read(&answer) {
            let _ = fs::remove_file(&answer);
            return read_answer(key, &bytes);
        }
        if std::time::Instant::now() >= until {
            // Withdrawn if the holder has not taken it; if it has, its answer is coming.
            if fs::remove_file(&request).is_ok() {
                return Err(SettleError::Store(JournalError::Io {
                    context: format!(
                        "{} is held by another process that did not take the settlement within {wait:?} \
                         (is it stopped?); the request was withdrawn and nothing was settled",
                        log.display()
                    ),
                    source: std::io::ErrorKind::TimedOut.into(),
                }));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_answer(key: &IntentKey, bytes: &[u8]) -> Result<Record, SettleError> {
    let answer: Answer = serde_json::from_slice(bytes).map_err(|e| {
        SettleError::Store(JournalError::Io {
            context: format!("the holder's answer could not be read ({e})"),
            source: std::io::ErrorKind::InvalidData.into(),
        })
    })?;
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
            Some(request) => {
                let view = FileJournal::view(Arc::clone(shared));
                let done = block_on(settle_now(&view, &request.intent_key, &request.settle));
                match done {
                    Ok(record) => Answer::Settled(Box::new(record)),
                    Err(e) => refused(e),
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
