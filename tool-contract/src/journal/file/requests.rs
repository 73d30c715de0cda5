//! Settling an intent of a log another process holds, or answering its question: a request the holder
//! picks up.
//!
//! One process appends to a log at a time, so a settlement made while an agent runs cannot be written
//! by the settler (nor an answer to an approval the agent waits for, [`crate::person::LogApprover`], by the
//! person giving it). It leaves a request instead, a file in the directory beside the log named after it
//! (`attempts.log.settle/`), and the holder settles it under its own lock, as
//! [`settle`](fn@crate::journal::word::settle) would, then answers in a file beside the request:
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
//!
//! # Bounds
//!
//! - A request names the attempt the person examined; the holder refuses it when another attempt has
//!   started since, as [`settle`](crate::person::settle) and [`answer_approval`] do.
//! - A request expires: at the end of its settler's wait, and at most [`REQUEST_LIFETIME`] after it was
//!   written, whatever it says. An expired request is answered `expired` and never applied, so one left
//!   by a settler that was killed does not settle, hours later, whatever attempt is last by then.
//! - A settler waits no longer than its wait plus [`TAKEN_GRACE`]: a holder that took the request and
//!   was then killed never answers, and the settler says the request may or may not have been applied.
//! - An answer is at most [`MAX_ANSWER_BYTES`]: the holder cuts the record it quotes to fit, and a
//!   settler that cannot read an answer says so at once.
//!
//! # Who can settle through the directory
//!
//! Whoever can write a request in the directory speaks for a person, so the directory belongs to the
//! holder's user alone. On Unix the holder creates it with mode `0700` when it opens the log, and takes
//! no request from one that is not a real directory (a symbolic link is not) owned by its own user and
//! writable by nobody else: it says so once, in [`FileJournal::warnings`], and answers nothing there.
//! One of its own that others may read (`0755`, from an older build) is tightened to `0700`. The
//! directory is checked on its open handle, and every file in it is then reached through that handle
//! (`openat`, `renameat`, `unlinkat`): a directory swapped for another by its path after the check is
//! never the one used.
//! Requests and answers are created anew (`O_EXCL`, so never through a link) with mode `0600`. The
//! holder reads only regular files, at most [`MAX_REQUEST_BYTES`] of them, opened without following a
//! link and without blocking (a FIFO is refused, not waited on), and records the operating-system user
//! that owns the request file in the settlement or answer (`os_user`), beside the `by` it claims.
//! Another user who can write the directory (root can) is therefore named, not trusted blindly.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::dir::{RequestDir, RequestFile};
use super::{FileJournal, Shared};
use crate::journal::word::{
    ApprovalError, Decision, REQUEST_LIFETIME, Settle, SettleError, answer_approval, settle_now,
};
use crate::journal::{JournalError, Record};
use crate::key::IntentKey;

/// How often a holder looks for requests.
pub(super) const LOOK_EVERY: Duration = Duration::from_millis(200);

/// The largest request file a holder reads: a request is a few hundred bytes, its evidence at most
/// 1 KiB.
pub const MAX_REQUEST_BYTES: u64 = 16 * 1024;

/// The largest answer a settler reads. A holder never writes a larger one: it cuts the record an
/// answer carries (its message cut to 240 bytes, its value left out) to fit.
pub const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// How long a settler waits, past its own wait, for the answer to a request the holder has taken: a
/// holder answers within a look, so this much more means it was stopped or killed holding it.
pub const TAKEN_GRACE: Duration = Duration::from_secs(5);

/// The most requests a holder answers in one look: the rest wait for the next.
const REQUESTS_A_LOOK: usize = 64;

/// The directory of the settlement requests of the log at `log`: `{log}.settle`.
pub fn requests_dir(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".settle");
    PathBuf::from(name)
}

/// A request as its file holds it: an answer to a question, or a settlement, each naming the attempt
/// it is about, and until when it is good for (RFC 3339 UTC).
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Request {
    Approval {
        intent_key: IntentKey,
        attempt: u32,
        expires: String,
        approval: Decision,
    },
    Settle {
        intent_key: IntentKey,
        attempt: u32,
        expires: String,
        #[serde(flatten)]
        settle: Settle,
    },
}

impl Request {
    fn expires(&self) -> &str {
        match self {
            Request::Approval { expires, .. } | Request::Settle { expires, .. } => expires,
        }
    }
}

/// Until when a request written now, by a settler that waits `wait`, is good for.
fn expiry(wait: Duration) -> String {
    crate::journal::rfc3339(crate::journal::wall_clock() + wait.min(REQUEST_LIFETIME))
}

/// An answer as its file holds it: the record written, or why none was.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Settled(Box<Record>),
    Refused { kind: String, why: String, record: Option<Box<Record>> },
}

/// Answer the question about attempt `attempt` of intent `key` that the process holding the file log at
/// `log` waits on ([`crate::person::LogApprover`]): through that holder, waiting for it up to `wait`. A log no
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
            let request = Request::Approval {
                intent_key: *key,
                attempt,
                expires: expiry(wait),
                approval: decision.clone(),
            };
            match through_holder(log, key, &request, wait).map_err(ApprovalError::Store)? {
                Answer::Settled(record) => Ok(*record),
                Answer::Refused { kind, why, record } => Err(match (kind.as_str(), record) {
                    ("already_answered", Some(record)) => ApprovalError::AlreadyAnswered { record },
                    ("not_asked" | "expired", _) => not_asked(&why),
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

/// Settle attempt `attempt` of the intent `key` of the file log at `log`, held by another process or
/// by none: through the holder (a request it picks up, waiting for its answer up to `wait`, at most
/// [`REQUEST_LIFETIME`]) or, when no process holds the log, by opening it. The record written, or why
/// none was ([`settle`](crate::person::settle) says which attempt may be settled). Blocking: call it from a
/// thread of its own in async code.
pub fn request_settlement(
    log: &Path,
    key: &IntentKey,
    attempt: u32,
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
            let done = block_on(settle_now(&journal, key, attempt, settle));
            drop(journal);
            done
        }
        Err(JournalError::InUse { .. }) => {
            let request =
                Request::Settle { intent_key: *key, attempt, expires: expiry(wait), settle: settle.clone() };
            let answer = through_holder(log, key, &request, wait).map_err(SettleError::Store)?;
            read_answer(key, attempt, answer)
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
    let path = requests_dir(log);
    let io = |what: &str, e: std::io::Error| JournalError::Io {
        context: format!("{what} {}", path.display()),
        source: e,
    };
    let dir = RequestDir::open(&path).map_err(|why| JournalError::Failed {
        log: log.display().to_string(),
        why: format!(
            "its request directory {} is not safe to settle through ({why}); nothing was sent",
            path.display()
        ),
    })?;
    let id = format!("{}-{}", key, crate::journal::Owner::unique().as_str().replace('.', "-"));
    let (request_name, answer) = (format!("{id}.request"), format!("{id}.answer"));
    let text = serde_json::to_vec(request).map_err(|e| io("cannot encode a request for", e.into()))?;
    dir.write_whole(&request_name, &text).map_err(|e| io("cannot write a request in", e))?;
    let until = std::time::Instant::now() + wait.min(REQUEST_LIFETIME);
    // What a settler that cannot learn the answer says: the holder may have applied the request.
    let unknown = |why: String| JournalError::Io {
        context: format!(
            "{why}; the {what} may or may not have been applied: `tool-contract log {}` shows whether",
            log.display()
        ),
        source: std::io::ErrorKind::TimedOut.into(),
    };
    loop {
        match dir.read_regular(&answer, MAX_ANSWER_BYTES) {
            Ok(RequestFile { bytes, .. }) => {
                let _ = dir.remove(&answer);
                return serde_json::from_slice(&bytes).map_err(|e| JournalError::Io {
                    context: format!("the holder's answer could not be read ({e})"),
                    source: std::io::ErrorKind::InvalidData.into(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            // An answer that cannot be read (too large, not a file) is never waited on again.
            Err(e) => {
                let _ = dir.remove(&answer);
                return Err(unknown(format!(
                    "the answer of the process holding {} could not be read ({e})",
                    log.display()
                )));
            }
        }
        let now = std::time::Instant::now();
        if now >= until {
            // Withdrawn if the holder has not taken it; if it has, its answer is coming within a look,
            // unless the holder was stopped or killed holding it.
            if dir.remove(&request_name).is_ok() {
                return Err(JournalError::Io {
                    context: format!(
                        "{} is held by another process that did not take the {what} within {wait:?} \
                         (is it stopped?); the request was withdrawn and {undone}",
                        log.display()
                    ),
                    source: std::io::ErrorKind::TimedOut.into(),
                });
            }
            if now >= until + TAKEN_GRACE {
                return Err(unknown(format!(
                    "the process holding {} took the request but gave no answer within {:?} more (was it \
                     stopped or killed?)",
                    log.display(),
                    TAKEN_GRACE
                )));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_answer(key: &IntentKey, attempt: u32, answer: Answer) -> Result<Record, SettleError> {
    match answer {
        Answer::Settled(record) => Ok(*record),
        Answer::Refused { kind, why, record } => Err(match (kind.as_str(), record) {
            ("already_settled", Some(record)) => SettleError::AlreadySettled { key: *key, record },
            ("other_attempt", Some(last)) => SettleError::OtherAttempt { key: *key, attempt, now: why, last },
            ("expired", _) => SettleError::Expired { key: *key, why },
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

/// The holder's side: answer every request waiting in the log's directory (and, on the first look,
/// those a holder before this one took and never answered). A directory that is not safe to take
/// requests from ([`RequestDir::open`](super::dir::RequestDir::open)) is not read.
pub(super) fn answer_requests(shared: &Arc<Shared>, first: bool) {
    let Ok(dir) = RequestDir::open_existing(&requests_dir(&shared.path)) else { return };
    let Ok(names) = dir.names() else { return };
    let waiting = names.into_iter().filter_map(|name| {
        let (stem, extension) = name.rsplit_once('.')?;
        match extension {
            "request" => Some((format!("{stem}.taken"), name.clone(), stem.to_owned())),
            "taken" if first => Some((name.clone(), name.clone(), stem.to_owned())),
            _ => None,
        }
    });
    for (taken, name, stem) in waiting.take(REQUESTS_A_LOOK) {
        if taken != name && dir.rename(&name, &taken).is_err() {
            continue;
        }
        let answer = match dir.read_regular(&taken, MAX_REQUEST_BYTES) {
            Ok(file) => match serde_json::from_slice::<Request>(&file.bytes) {
                Ok(request) => answer(shared, request, &file),
                Err(e) => invalid(format!("the request could not be read: {e}")),
            },
            Err(e) => invalid(format!("the request could not be read: {e}")),
        };
        if let Some(bytes) = bounded(answer) {
            let _ = dir.write_whole(&format!("{stem}.answer"), &bytes);
        }
        if dir.remove(&taken).is_err() {
            let _ = dir.remove_entry(&taken, true);
        }
    }
}

/// Why the request directory beside the log at `log` may not be used, if it may not (see
/// [`RequestDir::open`]); one of this user's that others may read is tightened on the way.
pub(super) fn unusable(log: &Path) -> Option<String> {
    RequestDir::open(&requests_dir(log)).err()
}

/// `answer` encoded within [`MAX_ANSWER_BYTES`]: the record it carries (a tool's message or value may
/// be large, and a refusal quotes the intent's last record) is cut to fit, saying so in its message.
fn bounded(mut answer: Answer) -> Option<Vec<u8>> {
    let bytes = serde_json::to_vec(&answer).ok()?;
    if bytes.len() as u64 <= MAX_ANSWER_BYTES {
        return Some(bytes);
    }
    let (why, record) = match &mut answer {
        Answer::Settled(record) => (None, Some(record)),
        Answer::Refused { why, record, .. } => (Some(why), record.as_mut()),
    };
    if let Some(why) = why {
        *why = crate::text::cut(why).into_owned();
    }
    if let Some(record) = record {
        let value = record.value.take().map(|value| value.to_string().len());
        let message = record.message.take().unwrap_or_default();
        let mut cut = crate::text::cut(&message).into_owned();
        if let Some(len) = value {
            cut.push_str(&format!(" (its value, {len} bytes, is in the log)"));
        }
        record.message = Some(cut);
    }
    let bytes = serde_json::to_vec(&answer).ok()?;
    if bytes.len() as u64 <= MAX_ANSWER_BYTES {
        return Some(bytes);
    }
    let why = "the answer was too large to send; the log holds what was done".to_owned();
    serde_json::to_vec(&Answer::Refused { kind: "store".into(), why, record: None }).ok()
}

fn invalid(why: String) -> Answer {
    Answer::Refused { kind: "invalid".into(), why, record: None }
}

/// Answer one request read from `file`: refused as `expired` past its expiry or [`REQUEST_LIFETIME`]
/// after the file was written, else settled or answered as [`settle`](crate::person::settle) or
/// [`answer_approval`] would, with the file's owner recorded.
fn answer(shared: &Arc<Shared>, request: Request, file: &RequestFile) -> Answer {
    let now = crate::journal::wall_clock();
    let stale = file.written.is_some_and(|written| written + REQUEST_LIFETIME < now);
    let expires = request.expires();
    if stale || crate::journal::rfc3339(now).as_str() > expires {
        let why = format!(
            "the request expired at {} before the process holding the log took it; nothing was applied: \
             look at the intent again and send a new one",
            if stale { "the end of its lifetime" } else { expires }
        );
        return Answer::Refused { kind: "expired".into(), why, record: None };
    }
    let view = FileJournal::view(Arc::clone(shared));
    match request {
        Request::Settle { intent_key, attempt, settle, .. } => {
            let settle = match &file.owner {
                Some(owner) => settle.os_user(owner.clone()),
                None => settle,
            };
            match block_on(settle_now(&view, &intent_key, attempt, &settle)) {
                Ok(record) => Answer::Settled(Box::new(record)),
                Err(e) => refused(e),
            }
        }
        Request::Approval { intent_key, attempt, approval, .. } => {
            let approval = match &file.owner {
                Some(owner) => approval.os_user(owner.clone()),
                None => approval,
            };
            match block_on(answer_approval(&view, &intent_key, attempt, &approval)) {
                Ok(record) => Answer::Settled(Box::new(record)),
                Err(e) => not_answered(e),
            }
        }
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
        SettleError::OtherAttempt { now, last, .. } => {
            return Answer::Refused { kind: "other_attempt".into(), why: now, record: Some(last) };
        }
        SettleError::Expired { why, .. } => {
            return Answer::Refused { kind: "expired".into(), why, record: None };
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
