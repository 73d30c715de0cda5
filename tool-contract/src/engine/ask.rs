//! Asking a person, as the engine's steps `Approve` and `AskPerson` do: the question recorded in the
//! attempt log before it is asked (an id issued once, what it asks and shows, the arguments it binds,
//! where it is asked), the answer recorded before anything acts on it, the no's included, and the
//! answer that counts always the recorded one (a question is answered once).

use std::time::Duration;

use super::guard::secs;
use super::state::Run;
use super::stop::Stop;
use crate::classify::Class;
use crate::journal::word::question::{self, Question};
use crate::journal::{ApprovalStep as Step, Approvals, Asks, Phase, Record, Verdict};
use crate::person::{Approval, ApprovalRequest, Approve, Found, InDoubt};
use crate::report::{Applied, Outcome, Reason};

/// Where a question's records go: the task's log, when its store keeps a person's records; `None` for
/// a task with no log (nothing is recorded, answers included); `Err` with why nobody may be asked when
/// the log keeps none.
fn store<'a>(run: &Run<'a>) -> Result<Option<&'a dyn Approvals>, String> {
    match run.task().journal_ref() {
        None => Ok(None),
        Some(journal) => journal.approvals().map(Some).ok_or_else(|| {
            "the attempt log keeps no person's answers (its store does not implement `Approvals`), so nobody \
             is asked: an answer that cannot be recorded is not acted on"
                .to_owned()
        }),
    }
}

/// The question this call puts to a person: the open one an answer brought from an earlier call is for
/// (the approver [`carries`](Approve::carries) it), or a new one, recorded before it is asked. `Err`
/// with why nothing is asked (and a carried answer changes nothing).
async fn question(
    run: &Run<'_>,
    approver: &dyn Approve,
    store: Option<&dyn Approvals>,
    asks: Asks,
    why: String,
) -> Result<Record, String> {
    let attempt = run.now.number();
    let asked_in = approver.asked_in();
    if let Some(id) = approver.carries(asks) {
        return match store {
            Some(store) => {
                question::open(store, &run.key(), attempt, asks, &id, &asked_in, run.arguments()).await
            }
            // With no log, the answer is taken as the approver brings it: nothing recorded it.
            None => Ok(Question::new(run, asks, id, approver, why, &asked_in).record()),
        };
    }
    let id = question::fresh_id(&run.key(), attempt);
    let asked = Question::new(run, asks, id, approver, why, &asked_in).record();
    if let Some(store) = store {
        question::ask(store, &asked).await?;
    }
    Ok(asked)
}

impl<'q> Question<'q> {
    /// The question `id` of this call asking `asks` of `approver`, saying `why`.
    fn new(
        run: &'q Run<'_>,
        asks: Asks,
        id: String,
        approver: &dyn Approve,
        why: String,
        asked_in: &str,
    ) -> Question<'q> {
        Question {
            about: run.log().attempt_record(Phase::Approval),
            asks,
            id,
            by: approver.who(),
            why,
            open: approver.open_for(run.task().remaining()),
            asked_in: asked_in.to_owned(),
            arguments: run.arguments(),
        }
    }
}

/// Record `answer` to `asked` before anything acts on it: the answer that counts (this one, or the
/// first recorded when someone answered before it), or why none does.
async fn record(store: Option<&dyn Approvals>, answer: Record) -> Result<Record, String> {
    match store {
        Some(store) => question::answer(store, &answer).await,
        None => Ok(answer),
    }
}

/// The stop of a second attempt that was not approved: why.
fn denied(class: &Class, why: &str) -> Stop {
    let why = format!("a second attempt was not approved: {why}");
    Stop::said(Outcome::Permanent, Applied::No, class, &why, None, Reason::Denied)
}

/// Why a question the budget ran out on has no answer: `who` was asked and did not answer in time.
fn unanswered(who: &str, left: Duration) -> String {
    format!("{who} did not answer in time (within the {} the budget had left)", secs(left))
}

/// Ask the approver before a second attempt of a `money` call: who said yes, or the stop on no.
pub(super) async fn approve(
    run: &Run<'_>,
    class: &Class,
    no_approver: impl FnOnce() -> Stop,
) -> Result<String, Stop> {
    let task = run.task();
    let Some(approver) = task.approver_ref() else { return Err(no_approver()) };
    approver
        .reach(Asks::Approval, run.now.number())
        .map_err(|why| denied(class, &why.unwrap_or_else(|| format!("{} asks nobody", approver.who()))))?;
    let store = store(run).map_err(|why| denied(class, &why))?;
    let shown = crate::person::shown(&run.arguments().shows);
    let why = match shown.as_str() {
        "" => class.message().to_owned(),
        shown => format!("{shown}; {}", class.message()),
    };
    let asked =
        question(run, approver, store, Asks::Approval, why).await.map_err(|why| denied(class, &why))?;
    let mut request = ApprovalRequest::new(
        task.id(),
        run.spec().name(),
        run.key(),
        run.now.number() + 1,
        class.message(),
        task.remaining(),
    );
    request.question = asked.approval.as_ref().and_then(|n| n.question.clone()).unwrap_or_default();
    request.shows = run.arguments().shows.clone();
    crate::observe::approval_asked(request.next_attempt);
    // A person's answer is waited for within the budget left: the call's claim runs out with it.
    let left = request.left;
    let reply = match tokio::time::timeout(left, approver.approve(&request)).await {
        Ok(reply) => reply,
        Err(_) => Approval::Unanswered(unanswered(&approver.who(), left)),
    };
    let (step, why) = match reply {
        Approval::Approved => (Step::Approved, "approved".to_owned()),
        Approval::Denied(why) => (Step::Denied, why),
        Approval::Declined(why) => (Step::Declined, why),
        Approval::Cancelled(why) => (Step::Cancelled, why),
        Approval::Unanswered(why) => (Step::Unanswered, why),
        // Asked: the answer comes with a later call, which takes it to this question.
        Approval::Later => {
            let id = request.question;
            return Err(denied(class, &format!("waiting for {} to answer question {id}", approver.who())));
        }
    };
    let answer = question::answer_to(&asked, step, &approver.who(), &why, &approver.asked_in());
    let counted = record(store, answer.clone()).await.map_err(|why| denied(class, &why))?;
    let note =
        counted.approval.as_ref().ok_or_else(|| denied(class, "the answer is not a person's answer"))?;
    crate::observe::approval_answered(note.step == Step::Approved);
    let ours = counted == answer;
    match note.step {
        Step::Approved if ours => Ok(note.by.clone()),
        Step::Approved => Ok(format!("{} ({})", note.by, note.why)),
        step => Err(denied(class, &answered_no(step, &note.by, &note.why, ours))),
    }
}

/// A no, in words: the reply's own words when the answer recorded is the one this call brought (`ours`),
/// else who answered first, how and why.
fn answered_no(step: Step, by: &str, why: &str, ours: bool) -> String {
    match step {
        _ if ours => why.to_owned(),
        Step::Denied => format!("{by} said no: {why}"),
        step => format!("{by}: {} ({why})", step.as_str().replace('_', " ")),
    }
}

/// Ask the task's approver whether the attempt in doubt landed, recording the question before and the
/// answer after, and record a settlement under the call's claim: what they said, the settlement written
/// and when they saw the attempt (when they were asked, or when they say they looked if that was
/// sooner), or why nobody could tell (the probe's words first).
pub(super) async fn ask_person(
    run: &Run<'_>,
    class: &Class,
    unsure: &str,
    misfit: impl Fn(&serde_json::Value) -> Option<String>,
) -> Result<(Verdict, Record, tokio::time::Instant), String> {
    let task = run.task();
    let Some(approver) = task.approver_ref() else { return Err(unsure.to_owned()) };
    if let Err(why) = approver.reach(Asks::Settlement, run.now.number()) {
        return Err(why.map_or_else(|| unsure.to_owned(), |why| format!("{unsure}; {why}")));
    }
    let store = store(run).map_err(|why| format!("{unsure}; {why}"))?;
    let history = format!("{}; the probe could not tell ({unsure})", class.message());
    let asked = question(run, approver, store, Asks::Settlement, history.clone())
        .await
        .map_err(|why| format!("{unsure}; {why}"))?;
    let mut doubt =
        InDoubt::new(task.id(), task.actor(), run.spec().name(), run.key(), run.now.id(), history);
    doubt.question = asked.approval.as_ref().and_then(|n| n.question.clone()).unwrap_or_default();
    doubt.shows = run.arguments().shows.clone();
    let left = task.remaining();
    // The person sees the attempt no sooner than they are asked about it.
    let asking = tokio::time::Instant::now();
    let reply = match tokio::time::timeout(left, approver.settle(&doubt)).await {
        Ok(reply) => reply,
        Err(_) => Found::Unanswered(unanswered(&approver.who(), left)),
    };
    let Some((step, why, settle)) = settle_step(reply) else {
        return Err(format!(
            "{unsure}; waiting for {} to answer question {}",
            approver.who(),
            doubt.question
        ));
    };
    let answer = question::answer_to(&asked, step, &approver.who(), &why, &approver.asked_in());
    let counted = record(store, answer.clone()).await.map_err(|why| format!("{unsure}; {why}"))?;
    let Some(settle) = settle.filter(|_| counted == answer) else {
        let note = counted.approval.as_ref();
        let said = note.map_or(String::new(), |n| answered_no(n.step, &n.by, &n.why, counted == answer));
        return Err(format!("{unsure}; the person asked could not tell: {said}"));
    };
    // The tool is known here: a value that is not one of its values is not recorded.
    if let Some(why) = settle.value_given().and_then(&misfit) {
        let name = run.spec().name();
        let why = crate::text::cut(&why);
        return Err(format!("{unsure}; the value the person gave is not a value of {name} ({why})"));
    }
    let seen = seen_by(asking, settle.seen_given());
    let settle = settle.seen(crate::journal::wall_clock_at(seen));
    match run.log().settle(&settle).await {
        Ok(record) => Ok((settle.verdict(), record, seen)),
        Err(why) => Err(format!("{unsure}; the person's settlement was not recorded: {why}")),
    }
}

/// What a person's reply to a settle question records: its step, their words and, with a verdict, the
/// settlement; `None` for "later", which records nothing yet.
fn settle_step(reply: Found) -> Option<(Step, String, Option<crate::person::Settle>)> {
    Some(match reply {
        Found::Settled(settle) => {
            let step = if settle.verdict() == Verdict::Landed { Step::Landed } else { Step::NotLanded };
            (step, settle.evidence().to_owned(), Some(settle))
        }
        Found::CantTell(why) => (Step::CantTell, why, None),
        Found::Declined(why) => (Step::Declined, why, None),
        Found::Cancelled(why) => (Step::Cancelled, why, None),
        Found::Unanswered(why) => (Step::Unanswered, why, None),
        Found::Later => return None,
    })
}

/// When a person asked at `asked` saw the attempt: then, or when they say they looked (`said`, RFC 3339)
/// if that was sooner.
fn seen_by(asked: tokio::time::Instant, said: Option<&str>) -> tokio::time::Instant {
    let Some(said) = said.and_then(crate::journal::parse_rfc3339) else { return asked };
    match crate::journal::wall_clock_at(asked).duration_since(said) {
        Ok(sooner) => asked.checked_sub(sooner).unwrap_or(asked),
        Err(_) => asked,
    }
}
