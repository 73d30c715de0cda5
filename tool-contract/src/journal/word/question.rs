//! A question to a person as the engine keeps it: recorded in the attempt log before it is asked, an
//! id issued once, and its answer recorded before anything acts on it, the no's included. A question
//! is answered once ([`rules::may_follow`](crate::rules::may_follow), which every store applies
//! atomically): a second answer, whatever it says, is refused naming the first, and the answer that
//! counts is always the recorded one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::call::Arguments;
use crate::journal::{
    ApprovalNote, ApprovalStep as Step, Approvals, Asks, Phase, Record, rfc3339, wall_clock,
};
use crate::key::IntentKey;
use crate::rules::one_line;

/// A fresh question id: `q-`, the intent key's first 8 hex characters, `-` and 12 hex characters unique
/// across the questions of every process (an id says which intent it is about, and is issued once).
pub(crate) fn fresh_id(key: &IntentKey, attempt: u32) -> String {
    use sha2::Digest;
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let mut hash = sha2::Sha256::new();
    hash.update(crate::journal::Owner::unique().as_str().as_bytes());
    hash.update(SERIAL.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    hash.update(key.as_bytes());
    hash.update(attempt.to_le_bytes());
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    hash.update(nanos.to_le_bytes());
    let digest = hash.finalize();
    let mut id = format!("q-{}-", of_intent(key));
    for byte in &digest[..6] {
        id.push_str(&format!("{byte:02x}"));
    }
    id
}

/// The intent key's first 8 hex characters, as a question id names its intent.
fn of_intent(key: &IntentKey) -> String {
    key.to_string()[..8].to_owned()
}

/// The question record to ask: about the attempt `about` (a record of it: its intent, attempt and
/// stamps), asking `asks` of `by`, saying `why`, open for `open`, with its id, where it is asked and
/// what it binds.
pub(crate) struct Question<'a> {
    pub(crate) about: Record,
    pub(crate) asks: Asks,
    pub(crate) id: String,
    pub(crate) by: String,
    pub(crate) why: String,
    pub(crate) open: Duration,
    pub(crate) asked_in: String,
    pub(crate) arguments: &'a Arguments,
}

impl Question<'_> {
    /// The question as a record.
    pub(crate) fn record(&self) -> Record {
        // At most a century: a clock reading plus any longer wait may not be representable.
        let open = self.open.min(Duration::from_secs(100 * 365 * 86_400));
        let now = wall_clock();
        let mut note = ApprovalNote::new(Step::Asked, self.by.clone(), clip_why(&self.why), rfc3339(now));
        note.until = Some(rfc3339(now + open));
        note.question = Some(self.id.clone());
        note.asks = self.asks;
        note.asked_in = Some(self.asked_in.clone());
        note.args.clone_from(&self.arguments.digest);
        note.shows.clone_from(&self.arguments.shows);
        record_of(&self.about, note)
    }
}

/// `why` within what a record keeps, on one line.
fn clip_why(why: &str) -> String {
    let why = one_line(why);
    if why.len() <= crate::journal::MAX_WHY_BYTES {
        return why;
    }
    let mut end = crate::journal::MAX_WHY_BYTES - 3;
    while !why.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &why[..end])
}

/// The record of a person's step about the attempt `about`: a question, or its answer.
pub(crate) fn record_of(about: &Record, note: ApprovalNote) -> Record {
    let message = match (note.step, note.asks) {
        (Step::Asked, Asks::Approval) => format!(
            "approval of attempt {} asked of {}: {}",
            about.attempt.saturating_add(1),
            note.by,
            one_line(&note.why)
        ),
        (Step::Asked, Asks::Settlement) => {
            format!("asked {} whether attempt {} landed: {}", note.by, about.attempt, one_line(&note.why))
        }
        (step, Asks::Approval) => format!(
            "attempt {} {} by {}: {}",
            about.attempt.saturating_add(1),
            step.as_str(),
            note.by,
            one_line(&note.why)
        ),
        (step, Asks::Settlement) => {
            format!("attempt {} {} by {}: {}", about.attempt, step.as_str(), note.by, one_line(&note.why))
        }
    };
    Record { message: Some(message), approval: Some(note), ..about.about(Phase::Approval) }
}

/// The answer to `question` (its record): `step`, by `by`, for the reason `why`, from `asked_in`.
pub(crate) fn answer_to(question: &Record, step: Step, by: &str, why: &str, asked_in: &str) -> Record {
    let asks = question.approval.as_ref().map_or(Asks::Approval, |q| q.asks);
    let mut note = ApprovalNote::new(step, by.trim(), clip_why(why.trim()), rfc3339(wall_clock()));
    note.question = question.approval.as_ref().and_then(|q| q.question.clone());
    note.asks = asks;
    note.asked_in = Some(asked_in.to_owned());
    record_of(question, note)
}

/// Record `question` in `store`, synced: `Err` with why when it could not be.
pub(crate) async fn ask(store: &dyn Approvals, question: &Record) -> Result<(), String> {
    match store.approval_step(question.as_record_ref()).await {
        Ok(true) => Ok(()),
        Ok(false) => Err("the store refused the question".into()),
        Err(e) => Err(format!("the question could not be recorded: {e}")),
    }
}

/// Record `answer` (to the question it names) in `store` before anything acts on it: the answer that
/// counts, which is `answer` itself, or the one recorded first when someone answered before it (then
/// this one changes nothing). `Err` with why when neither can be said.
pub(crate) async fn answer(store: &dyn Approvals, answer: &Record) -> Result<Record, String> {
    let recorded = store.approval_step(answer.as_record_ref()).await;
    let last = match recorded {
        Ok(true) => return Ok(answer.clone()),
        Ok(false) => store.approval(&answer.intent_key).await,
        Err(e) => return Err(format!("the answer could not be recorded ({e}): nothing acts on it")),
    };
    match last {
        // Answered first by someone else (the console, another call): that answer counts.
        Ok(Some(first)) if answers_same(&first, answer) => Ok(first),
        Ok(last) => Err(crate::rules::answer_refused(&answer.as_record_ref(), last.as_ref())
            .unwrap_or_else(|| "the answer was not recorded".into())),
        Err(e) => Err(format!("the answer was not recorded, and the log could not be read ({e})")),
    }
}

/// Whether `first` is an answer to the same question `answer` answers.
fn answers_same(first: &Record, answer: &Record) -> bool {
    let (Some(first_note), Some(note)) = (&first.approval, &answer.approval) else { return false };
    first.attempt == answer.attempt
        && first_note.step != Step::Asked
        && first_note.question == note.question
        && first_note.asks == note.asks
}

/// The open question `id` about `attempt` of `key`, asking `asks`, for a channel that brings an answer
/// to it from an earlier call: the question's record, if it is still open, was asked `asked_in`, and
/// binds `arguments`; else why the answer is refused (naming the first answer when it was answered).
pub(crate) async fn open(
    store: &dyn Approvals,
    key: &IntentKey,
    attempt: u32,
    asks: Asks,
    id: &str,
    asked_in: &str,
    arguments: &Arguments,
) -> Result<Record, String> {
    if !id.starts_with(&format!("q-{}-", of_intent(key))) {
        return Err(format!(
            "the answer brought is refused, and changes nothing: question {} is about another intent \
             (an answer applies to the question it answers)",
            crate::text::cut(id)
        ));
    }
    let last = store.approval(key).await.map_err(|e| format!("the log could not be read ({e})"))?;
    let now = rfc3339(wall_clock());
    let waiting = crate::rules::waiting_question(last.as_ref(), attempt, &now);
    let open = waiting.filter(|q| q.approval.as_ref().is_some_and(|n| n.question.as_deref() == Some(id)));
    let Some(question) = open else {
        let why = crate::rules::refusal(Some(id), asks, None, attempt, last.as_ref());
        return Err(format!("the answer brought is refused, and changes nothing: {why}"));
    };
    let Some(note) = question.approval.as_ref() else {
        return Err(format!("question {id} is not a question"));
    };
    if note.asks != asks {
        return Err(format!("question {id} asks for {}, not {}", note.asks.as_str(), asks.as_str()));
    }
    if note.asked_in.as_deref().is_some_and(|there| there != asked_in) {
        return Err(format!(
            "question {id} was asked in {}, and this answer comes from {asked_in}: an answer comes from \
             where its question was asked",
            note.asked_in.as_deref().unwrap_or_default()
        ));
    }
    if let Some(differs) = differs(note, arguments) {
        return Err(format!(
            "question {id} was asked about other arguments ({differs}): an answer applies to the call it \
             was asked about; call again with those, or answer the question this call asks"
        ));
    }
    Ok(question.clone())
}

/// What differs between the arguments a question bound and `arguments`, in words; `None` when they
/// are the same (or either says nothing of them).
pub(crate) fn differs(asked: &ApprovalNote, arguments: &Arguments) -> Option<String> {
    let names: Vec<String> = asked
        .shows
        .iter()
        .filter(|(name, value)| arguments.shows.get(*name).is_some_and(|now| now != *value))
        .map(|(name, value)| {
            format!(
                "{name} was {value}, is {}",
                arguments.shows.get(name).map(String::as_str).unwrap_or_default()
            )
        })
        .collect();
    if !names.is_empty() {
        return Some(names.join("; "));
    }
    match (&asked.args, &arguments.digest) {
        (Some(then), Some(now)) if then != now => Some("its arguments differ".into()),
        _ => None,
    }
}
