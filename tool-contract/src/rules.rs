//! The contract's rules over records, each written once.
//!
//! Every reader of an attempt log (the engine, each store, the console, the commands) asks these
//! functions, and nothing else, what the records mean:
//!
//! | rule | function |
//! |---|---|
//! | whether a record is an attempt's (an approval record is not) | [`counts_as_attempt`] |
//! | whether an intent is in doubt, by its last word | [`in_doubt`] |
//! | which record is an intent's last word | [`supersedes`] |
//! | the order of the escalation queue | [`queue_order`] |
//! | the question still waiting for a person's answer | [`waiting_question`], [`waiting_approval`] |
//! | whether an approval record may follow the last one: a question is answered once | [`may_follow`], [`answer_refused`] |
//! | whether a person's answer is about the attempt they examined | [`answer_bound`] |
//! | an intent's last word in the one vocabulary every reader prints | [`last_word`] ([`Word`]), [`last_word_in_words`] |
//! | an attempt's state, in words | [`attempt_state`] |
//!
//! The rules the engine and the stores keep among themselves (who gets an intent's claim, the fence
//! on a holder's records, whether an attempt may start with the budget left, and what a record's
//! stamps bound on this process's clock) are not public API: docs/protocol.md names them.
//!
//! PostgreSQL's store states some of them again in SQL, where the database must apply them (the
//! highest attempt, the last word, the queue's order); its SQL is held to these functions by the store
//! suite (`tool_contract_testing::stores`).
//!
//! Each function is pure: records in, one answer out; none reads a clock.
//!
//! ```
//! use tool_contract::journal::Phase;
//! use tool_contract::{Applied, Outcome};
//! use tool_contract::rules;
//!
//! // An end whose effect is unknown (a refusal after an attempt that may have landed) is in doubt.
//! assert!(rules::in_doubt(Phase::End, Some(Outcome::Retryable), Some(Applied::Unknown)));
//! // A settlement never is.
//! assert!(!rules::in_doubt(Phase::Settled, Some(Outcome::Retryable), Some(Applied::No)));
//! // A late end of attempt 1 does not hide attempt 2's start.
//! assert!(!rules::supersedes(Phase::End, None, 1, 2, Phase::Start));
//! ```

use std::cmp::Ordering;

use crate::probe::ProbeMark;
use crate::records::{LastWord, Phase, Recall, Record, RecordRef};
use crate::report::{Applied, Outcome};

mod claims;
mod stamps;
// The claim's and the stamps' rules are the stores' and the engine's: not public API (the protocol
// model calls them).
#[doc(hidden)]
pub use claims::{Claiming, Fenced, Holder, claim, fence, may_start, may_wait_for_claim};
#[doc(hidden)]
pub use stamps::{CLOCK_SKEW, STAMP_ROUNDING, Stamps, ran_until, reached_by, stamp_up, stamps};

/// Whether a record of this phase is about an attempt: starts, ends (probe verdicts included) and
/// settlements are; an `approval` record (a question before the next attempt, or its answer) and an
/// `mcp_task` record (a step of an MCP task) are not, so they never count toward the intent's highest
/// attempt and are never its last word.
pub const fn counts_as_attempt(phase: Phase) -> bool {
    !matches!(phase, Phase::Approval | Phase::McpTask)
}

/// Whether an intent whose last word has this phase, outcome and effect is *in doubt*: its last attempt
/// started and never ended, ended `unknown` (or with no outcome), or ended with its effect unknown (a
/// refusal after an attempt that may have landed: its next call probes it first). A settlement never
/// is. An approval or MCP task record alone (an intent known by nothing else) is treated as unfinished.
pub const fn in_doubt(phase: Phase, outcome: Option<Outcome>, effect: Option<Applied>) -> bool {
    match phase {
        Phase::Start | Phase::Approval | Phase::McpTask => true,
        Phase::End => {
            matches!(outcome, None | Some(Outcome::Unknown)) || matches!(effect, Some(Applied::Unknown))
        }
        Phase::Settled => false,
    }
}

/// The last-word rule: a record of attempt `attempt` (of phase `phase`, with the probe's verdict
/// `probe` when it is one) becomes the intent's last word when its attempt is higher than the highest
/// one seen so far (`kept`), or the same one and the last word kept (of phase `kept_phase`) is not a
/// settlement. So the last word is the last record of the highest attempt, and an end record for an
/// older attempt (a late completion) does not hide a newer start.
///
/// A person's settlement of an attempt stands whatever is written about that attempt after it, with
/// one exception: a probe that saw the effect land (`probe` is [`ProbeMark::Landed`]). A call probes an
/// attempt a person settled only when their `not_landed` was given while the attempt could still land
/// (`policy::landing`); what the probe saw later is the truth about it, and the log says so.
/// An `approval` or `mcp_task` record never is the last word, and one kept (an intent known by nothing
/// else) gives way to any other record.
///
/// ```
/// use tool_contract::journal::Phase;
/// use tool_contract::probe::ProbeMark;
/// use tool_contract::rules::supersedes;
///
/// // A late end of attempt 1 does not hide attempt 2's start.
/// assert!(!supersedes(Phase::End, None, 1, 2, Phase::Start));
/// // Attempt 1's own end, written after a person settled it, does not hide the settlement...
/// assert!(!supersedes(Phase::End, None, 1, 1, Phase::Settled));
/// // ...but a probe that saw attempt 1 land does.
/// assert!(supersedes(Phase::End, Some(ProbeMark::Landed), 1, 1, Phase::Settled));
/// ```
pub const fn supersedes(
    phase: Phase,
    probe: Option<ProbeMark>,
    attempt: u32,
    kept: u32,
    kept_phase: Phase,
) -> bool {
    counts_as_attempt(phase)
        && (!counts_as_attempt(kept_phase)
            || attempt > kept
            || (attempt == kept
                && (!matches!(kept_phase, Phase::Settled) || matches!(probe, Some(ProbeMark::Landed)))))
}

/// The escalation queue's order, of two intents' last words: oldest first by start time, then task,
/// attempt and key (so two readers of one log list it alike).
pub fn queue_order(a: &Record, b: &Record) -> Ordering {
    (&a.started, &a.task, a.attempt, a.intent_key).cmp(&(&b.started, &b.task, b.attempt, b.intent_key))
}

/// `open` in the escalation queue's order ([`queue_order`]).
pub fn sort_queue(mut open: Vec<Recall>) -> Vec<Recall> {
    open.sort_by(|a, b| queue_order(&a.last, &b.last));
    open
}

/// The question still waiting for a person's answer at `now` (RFC 3339 UTC, as the log writes times),
/// given the intent's last approval record and its highest attempt: a question (`asked`), about the
/// attempt after the highest, not past its `until`. `None` when nothing waits: never asked, answered,
/// closed, or asked before an attempt that has started since.
pub fn waiting_question<'a>(
    last_approval: Option<&'a Record>,
    attempts: u32,
    now: &str,
) -> Option<&'a Record> {
    let last = last_approval?;
    let note = last.approval.as_ref()?;
    (last.phase == Phase::Approval
        && note.step == crate::records::ApprovalStep::Asked
        && last.attempt == attempts
        && note.until.as_deref().is_some_and(|until| until >= now))
    .then_some(last)
}

/// The approval waiting for an operator's answer at `now`: [`waiting_question`], when what it asks is
/// a yes or no to the next attempt (a question whether an attempt landed, asked of the person at an MCP
/// client, is theirs to answer). What the console lists and [`answer_approval`] answers.
///
/// [`answer_approval`]: crate::person::answer_approval
pub fn waiting_approval<'a>(
    last_approval: Option<&'a Record>,
    attempts: u32,
    now: &str,
) -> Option<&'a Record> {
    waiting_question(last_approval, attempts, now).filter(|asked| {
        asked.approval.as_ref().is_some_and(|note| note.asks == crate::records::Asks::Approval)
    })
}

/// The rule every store applies to an approval record (a question to a person, or its answer), and the
/// rule that a question is answered once: whether `record` may follow `last`, the intent's last approval
/// record. A question always may (one asked since closes any open before it). An answer only to the
/// open question it names: `last` is that question (the same id, the same attempt, the same kind of
/// question), still unanswered, and the answer is one that question takes. A second answer to a
/// question, whatever it says, follows an answer and is refused; [`answer_refused`] says why, naming
/// the first.
pub fn may_follow(record: &RecordRef<'_>, last: Option<&Record>) -> bool {
    use crate::records::ApprovalStep;
    let Some(note) = record.approval else { return false };
    if note.step == ApprovalStep::Asked {
        return true;
    }
    last.is_some_and(|last| {
        last.attempt == record.attempt
            && last.approval.as_ref().is_some_and(|asked| {
                asked.step == ApprovalStep::Asked
                    && asked.question == note.question
                    && asked.asks == note.asks
                    && note.step.answers(asked.asks)
            })
    })
}

/// Why the answer `record` may not follow `last`, the intent's last approval record
/// ([`may_follow`]), in words: the question it answers was answered already (naming the first
/// answer: who, how and when), a newer question was asked since, or no such question waits. `None`
/// when it may follow.
///
/// ```
/// use tool_contract::journal::{ApprovalNote, ApprovalStep, Asks, Phase, Record};
/// use tool_contract::rules::answer_refused;
///
/// let record = |note: ApprovalNote| -> Record {
///     let mut record: Record = serde_json::from_str(
///         r#"{"phase":"approval","task":"t","call":"refund","intent_key":"b56ee2ce5d70dc24aa8b3866ee8854a0",
///             "attempt":1,"attempt_id":"t-a1","started":"2026-12-01T06:00:00Z","budget_left_s":29,
///             "outcome":null,"effect_applied":null,"probe":null,"message":null,
///             "approval":{"step":"asked","by":"x","why":"y","at":"2026-12-01T06:00:01Z","until":"2026-12-01T06:15:01Z"}}"#,
///     )
///     .unwrap();
///     record.approval = Some(note);
///     record
/// };
/// let mut asked = ApprovalNote::new(ApprovalStep::Asked, "alice (the person at the MCP client)", "approve attempt 2?", "2026-12-01T06:00:01Z");
/// asked.question = Some("q-7f3a".into());
/// asked.until = Some("2026-12-01T06:15:01Z".into());
/// let answer = |step, by: &str| ApprovalNote { step, by: by.into(), why: "said so".into(), until: None, ..asked.clone() };
/// let question = record(asked.clone());
/// let no = record(answer(ApprovalStep::Declined, "alice"));
/// assert_eq!(answer_refused(&no.as_record_ref(), Some(&question)), None);
/// // A second answer, whatever it says: refused, naming the first.
/// let yes = record(answer(ApprovalStep::Approved, "mallory"));
/// let why = answer_refused(&yes.as_record_ref(), Some(&no)).unwrap();
/// assert!(why.contains("was answered already: declined by alice"), "{why}");
/// # let _ = (Asks::Approval, Phase::Approval);
/// ```
pub fn answer_refused(record: &RecordRef<'_>, last: Option<&Record>) -> Option<String> {
    if may_follow(record, last) {
        return None;
    }
    let Some(note) = record.approval else { return Some("it is not a person's answer".into()) };
    Some(refusal(note.question.as_deref(), note.asks, Some(note.step), record.attempt, last))
}

/// Why an answer to `question` (asking `asks`, about `attempt`; `step` the answer, when known) is not
/// taken, given `last`, the intent's last approval record, in words: [`answer_refused`]'s reasons, and
/// a question still recorded as asked but past its `until`, which no answer opens again.
pub fn refusal(
    question: Option<&str>,
    asks: crate::records::Asks,
    step: Option<crate::records::ApprovalStep>,
    attempt: u32,
    last: Option<&Record>,
) -> String {
    use crate::records::ApprovalStep;
    let name = question.map_or_else(|| "the question".to_owned(), |id| format!("question {id}"));
    let Some((last, kept)) = last.and_then(|last| Some((last, last.approval.as_ref()?))) else {
        return format!("no {} question waits for an answer: nothing was asked", asks.as_str());
    };
    match (kept.question.as_deref() == question, kept.step) {
        (true, ApprovalStep::Asked) if last.attempt != attempt => {
            format!("{name} is about attempt {}, not {attempt}", last.attempt)
        }
        (true, ApprovalStep::Asked) => match step {
            Some(step) if !step.answers(kept.asks) || kept.asks != asks => {
                format!("`{}` does not answer {name}, which asks for {}", step.as_str(), kept.asks.as_str())
            }
            _ => format!(
                "{name} is closed: it waited until {}",
                kept.until.as_deref().unwrap_or("its asker stopped waiting")
            ),
        },
        (true, step) => format!(
            "{name} was answered already: {} by {} at {} ({}); an answer is given once",
            step.as_str(),
            one_line(&kept.by),
            kept.at,
            crate::text::cut(&one_line(&kept.why))
        ),
        (false, _) => format!(
            "{name} is no longer open: {} was asked since",
            kept.question
                .as_deref()
                .map_or_else(|| "another question".to_owned(), |id| format!("question {id}"))
        ),
    }
}

/// The rule that binds a person's answer to what they examined: `examined` is the attempt whose
/// records the person looked at (the attempt a settlement is about; for an approval, the attempt
/// before the one it lets start). `None` while it is still the intent's highest attempt (`recall`
/// read under the claim, or by the store's own rule); otherwise the intent's last attempt, in words,
/// for the refusal.
pub fn answer_bound(examined: u32, recall: &Recall) -> Option<String> {
    let last = &recall.last;
    if recall.attempts == examined && last.attempt == examined {
        return None;
    }
    if examined > recall.attempts {
        return Some(format!(
            "the intent has no attempt {examined}: its last is attempt {} ({}), which {}",
            recall.attempts,
            last.attempt_id,
            attempt_state(last)
        ));
    }
    Some(format!(
        "attempt {} ({}) has started since, and {}",
        last.attempt,
        last.attempt_id,
        attempt_state(last)
    ))
}

/// Where an attempt stands by its last record, in words: `never ended`, `ended retryable with its
/// effect no`, `is settled landed by alice`.
pub fn attempt_state(last: &Record) -> String {
    match (last.phase, last.outcome, &last.settled) {
        (Phase::Settled, _, Some(s)) => format!("is settled {} by {}", s.verdict, one_line(&s.by)),
        (Phase::Start | Phase::Approval | Phase::McpTask, _, _) | (Phase::End, None, _) => {
            "never ended".into()
        }
        (_, Some(outcome), _) => {
            format!("ended {outcome} with its effect {}", last.effect_applied.unwrap_or(Applied::Unknown))
        }
        (Phase::Settled, None, None) => "is settled".into(),
    }
}

/// Why an intent cannot be settled, in words (`its last attempt (ord-7741-dc01d768-a2) ended ok with
/// its effect yes`); `None` when it is in doubt ([`in_doubt`]) and so can be.
pub fn not_in_doubt(recall: &Recall) -> Option<String> {
    let last = &recall.last;
    if in_doubt(last.phase, last.outcome, last.effect_applied) {
        return None;
    }
    Some(match last.phase {
        Phase::Settled => format!("its last attempt ({}) is settled", last.attempt_id),
        _ => format!(
            "its last attempt ({}) ended {} with its effect {}",
            last.attempt_id,
            last.outcome.unwrap_or(Outcome::Unknown),
            last.effect_applied.unwrap_or(Applied::Unknown)
        ),
    })
}

/// An intent's last word as every reader names it: the inspector (its text and its JSON
/// `last_word`), the console (its pages and the overview's counts and chart), the commands and the MCP
/// messages. One closed vocabulary, [`Word::ALL`] in the console chart's order.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Word {
    /// The last attempt ended `ok`.
    Ok,
    /// The last attempt ended `retryable`.
    Retryable,
    /// The last attempt ended `permanent`.
    Permanent,
    /// The last attempt ended `unknown`.
    Unknown,
    /// The last attempt started and never ended (or the intent is known by an approval record alone).
    Unfinished,
    /// A person settled the last attempt `landed`.
    SettledLanded,
    /// A person settled the last attempt `not_landed`.
    SettledNotLanded,
}

impl Word {
    /// Every word, in the order the console's chart stacks them.
    pub const ALL: [Word; 7] = [
        Word::Ok,
        Word::Retryable,
        Word::Permanent,
        Word::Unknown,
        Word::Unfinished,
        Word::SettledLanded,
        Word::SettledNotLanded,
    ];

    /// The word as readers print it: `ok`, `retryable`, `permanent`, `unknown`, `unfinished`,
    /// `settled landed`, `settled not landed`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Word::Ok => "ok",
            Word::Retryable => "retryable",
            Word::Permanent => "permanent",
            Word::Unknown => "unknown",
            Word::Unfinished => "unfinished",
            Word::SettledLanded => "settled landed",
            Word::SettledNotLanded => "settled not landed",
        }
    }
}

impl std::fmt::Display for Word {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An intent's last word ([`Word`]): a person's settlement first, then how the last attempt ended.
pub fn last_word(recall: &Recall) -> Word {
    if let Some(settled) = recall.settlement() {
        return match settled.verdict {
            crate::records::Verdict::Landed => Word::SettledLanded,
            crate::records::Verdict::NotLanded => Word::SettledNotLanded,
        };
    }
    match recall.last_word() {
        LastWord::Unfinished => Word::Unfinished,
        LastWord::Ok(_) => Word::Ok,
        LastWord::Ended(Outcome::Ok) => Word::Ok,
        LastWord::Ended(Outcome::Retryable) => Word::Retryable,
        LastWord::Ended(Outcome::Permanent) => Word::Permanent,
        LastWord::Ended(Outcome::Unknown) => Word::Unknown,
    }
}

/// An intent's last word in words: [`last_word`]'s, with the outcome a settlement `not_landed` left
/// (`settled not landed (retryable)`).
pub fn last_word_in_words(recall: &Recall) -> String {
    match (last_word(recall), recall.last_word()) {
        (Word::SettledNotLanded, LastWord::Ended(outcome)) => format!("settled not landed ({outcome})"),
        (word, _) => word.as_str().to_owned(),
    }
}

/// `text` on one line: line breaks and other control characters as spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::person::Settle;
    use crate::records::{ApprovalNote, ApprovalStep, Verdict};
    use Applied::{No, Unknown as EffectUnknown, Yes};
    use Outcome::{Ok as Done, Permanent, Retryable, Unknown};
    use Phase::{Approval, End, Settled, Start};

    fn record(phase: Phase, attempt: u32, outcome: Option<Outcome>, effect: Option<Applied>) -> Record {
        Record {
            phase,
            task: "t".into(),
            call: "refund".into(),
            intent_key: crate::key::Intent::new("t", "a", "refund", "order-9").key(),
            attempt,
            attempt_id: format!("t-a{attempt}"),
            started: "2026-12-01T00:00:00Z".into(),
            budget_left_s: 60,
            outcome,
            effect_applied: effect,
            probe: None,
            message: None,
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: None,
        }
    }

    fn question(attempt: u32, step: ApprovalStep, until: Option<&str>) -> Record {
        Record {
            approval: Some(ApprovalNote {
                step,
                by: "ops".into(),
                why: "503".into(),
                at: "2026-12-01T00:00:00Z".into(),
                until: until.map(str::to_owned),
                os_user: None,
                question: None,
                asks: Default::default(),
                asked_in: None,
                args: None,
                shows: Default::default(),
            }),
            ..record(Approval, attempt, None, None)
        }
    }

    #[test]
    fn in_doubt_as_a_table() {
        let table = [
            (Start, None, None, true),
            (End, None, None, true),
            (End, Some(Unknown), Some(EffectUnknown), true),
            (End, Some(Retryable), Some(EffectUnknown), true),
            (End, Some(Permanent), Some(EffectUnknown), true),
            (End, Some(Retryable), Some(No), false),
            (End, Some(Done), Some(Yes), false),
            (End, Some(Done), Some(No), false),
            (Settled, Some(Done), Some(Yes), false),
            (Settled, Some(Retryable), Some(No), false),
            (Approval, None, None, true),
        ];
        for (phase, outcome, effect, doubt) in table {
            assert_eq!(in_doubt(phase, outcome, effect), doubt, "{phase:?} {outcome:?} {effect:?}");
        }
    }

    #[test]
    fn the_last_word_as_a_table() {
        use crate::probe::ProbeMark::{Failed, Landed, NotLanded};
        // (the record's phase, probe verdict and attempt, the kept highest attempt and last word's
        // phase, replaces?)
        let table = [
            (Start, None, 2, 1, End, true),
            (End, None, 1, 2, Start, false),
            (End, None, 2, 2, Start, true),
            (End, None, 2, 2, Settled, false),
            (End, Some(Failed), 2, 2, Settled, false),
            (End, Some(NotLanded), 2, 2, Settled, false),
            (End, Some(Landed), 2, 2, Settled, true),
            (End, Some(Landed), 1, 2, Settled, false),
            (Settled, None, 2, 2, End, true),
            (Start, None, 3, 2, Settled, true),
            (Approval, None, 3, 2, End, false),
            (End, None, 1, 2, Approval, true),
            (Approval, None, 1, 0, Approval, false),
        ];
        for (phase, probe, attempt, kept, kept_phase, replaces) in table {
            assert_eq!(
                supersedes(phase, probe, attempt, kept, kept_phase),
                replaces,
                "{phase:?} {probe:?} a{attempt} over {kept_phase:?} a{kept}"
            );
        }
        assert!(counts_as_attempt(Settled) && !counts_as_attempt(Approval));
    }

    #[test]
    fn the_queue_is_oldest_first_then_task_attempt_key() {
        let a = Record { started: "2026-12-01T00:00:01Z".into(), ..record(Start, 1, None, None) };
        let b = Record {
            started: "2026-12-01T00:00:00Z".into(),
            task: "z".into(),
            ..record(Start, 1, None, None)
        };
        let c = Record { started: "2026-12-01T00:00:00Z".into(), ..record(Start, 2, None, None) };
        let d = Record { started: "2026-12-01T00:00:00Z".into(), ..record(Start, 1, None, None) };
        let sorted = sort_queue(
            vec![a.clone(), b.clone(), c.clone(), d.clone()].into_iter().map(Recall::from_record).collect(),
        );
        let order: Vec<&Record> = sorted.iter().map(|r| &r.last).collect();
        assert_eq!(order, vec![&d, &c, &b, &a]);
    }

    #[test]
    fn the_waiting_question_as_a_table() {
        let now = "2026-12-01T00:01:00Z";
        let open = Some("2026-12-01T00:05:00Z");
        let closed = Some("2026-12-01T00:00:30Z");
        let table = [
            (Some(question(1, ApprovalStep::Asked, open)), 1, true),
            (Some(question(1, ApprovalStep::Asked, Some(now))), 1, true),
            (Some(question(1, ApprovalStep::Asked, closed)), 1, false),
            (Some(question(1, ApprovalStep::Asked, open)), 2, false),
            (Some(question(1, ApprovalStep::Approved, None)), 1, false),
            (Some(question(1, ApprovalStep::Denied, None)), 1, false),
            (None, 1, false),
        ];
        for (last, attempts, waits) in table {
            assert_eq!(
                waiting_question(last.as_ref(), attempts, now).is_some(),
                waits,
                "{last:?} of {attempts}"
            );
        }
    }

    #[test]
    fn an_answer_follows_only_its_own_open_question() {
        let asked = question(1, ApprovalStep::Asked, Some("2999-01-01T00:00:00Z"));
        let yes = question(1, ApprovalStep::Approved, None);
        let other = question(2, ApprovalStep::Approved, None);
        assert!(may_follow(&asked.as_record_ref(), None));
        assert!(may_follow(&asked.as_record_ref(), Some(&yes)));
        assert!(may_follow(&yes.as_record_ref(), Some(&asked)));
        assert!(!may_follow(&yes.as_record_ref(), Some(&yes)), "one answer per question");
        assert!(!may_follow(&other.as_record_ref(), Some(&asked)), "an answer about another attempt");
        assert!(!may_follow(&yes.as_record_ref(), None), "an answer to nothing");
    }

    #[test]
    fn an_answer_is_bound_to_the_attempt_examined() {
        let recall = |last: Record| Recall { attempts: last.attempt, last };
        let second = recall(record(End, 2, Some(Unknown), Some(EffectUnknown)));
        assert_eq!(answer_bound(2, &second), None);
        let moved = answer_bound(1, &second).unwrap_or_default();
        assert!(
            moved.contains("attempt 2 (t-a2) has started since") && moved.contains("ended unknown"),
            "{moved}"
        );
        let never = answer_bound(3, &second).unwrap_or_default();
        assert!(never.contains("no attempt 3"), "{never}");
        let settled = Settle::new(Verdict::Landed, "alice", "seen")
            .record_for(&second.last, "2026-12-01T00:02:00Z".into());
        assert!(attempt_state(&settled).contains("is settled landed by alice"));
    }

    #[test]
    fn the_last_word_in_words() {
        let words = |last: Record| last_word_in_words(&Recall { attempts: last.attempt, last });
        assert_eq!(words(record(Start, 1, None, None)), "unfinished");
        assert_eq!(words(record(End, 1, Some(Done), Some(Yes))), "ok");
        assert_eq!(words(record(End, 1, Some(Unknown), Some(EffectUnknown))), "unknown");
        assert_eq!(words(record(End, 1, Some(Retryable), Some(No))), "retryable");
        let last = record(End, 1, Some(Unknown), Some(EffectUnknown));
        let landed =
            Settle::new(Verdict::Landed, "alice", "seen").record_for(&last, "2026-12-01T00:02:00Z".into());
        assert_eq!(words(landed), "settled landed");
        let gone = Settle::new(Verdict::NotLanded, "alice", "not seen")
            .record_for(&last, "2026-12-01T00:02:00Z".into());
        assert_eq!(words(gone), "settled not landed (retryable)");
    }
}
