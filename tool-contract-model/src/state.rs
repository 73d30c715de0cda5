//! The model's state: small numbers and small enums, turned into the crate's records only when a rule
//! is asked.

use std::fmt;

use tool_contract::journal::{ApprovalNote, ApprovalStep, Phase, Recall, Record, Settlement, Verdict, Via};
use tool_contract::probe::ProbeMark;
use tool_contract::{Applied, Outcome};

/// One call of one worker (`w1.2`: worker 1's second call; `w1.r1.1`: the first call of worker 1
/// restarted once), or a person settling (`person.1`): where a message goes. The store compares owner
/// ids, which [`crate::Rules::owner`] makes from the worker's name, its process and the call's serial,
/// as the engine writes `{worker name}.{incarnation}.{serial}` (`journal::Owner::of_worker`); a
/// worker's name is its own but for [`crate::Config::replaced`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Who {
    /// The worker (`PERSON` for a person's settlement).
    pub worker: u8,
    /// The worker's process: 0 at first, one more at each restart.
    pub incarnation: u8,
    /// The call's serial in its process, from 1.
    pub call: u8,
}

/// The worker number a person's settlement claims the intent under.
pub const PERSON: u8 = 9;

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.worker == PERSON {
            write!(f, "person.{}", self.call)
        } else {
            match self.incarnation {
                0 => write!(f, "w{}.{}", self.worker + 1, self.call),
                n => write!(f, "w{}.r{n}.{}", self.worker + 1, self.call),
            }
        }
    }
}

/// One record of the intent, as small as the rules need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rec {
    /// Start, end (a probe's verdict too) or settled.
    pub phase: Phase,
    /// The attempt it is about.
    pub attempt: u8,
    /// When the attempt started (a probe's verdict: when the probe ran).
    pub started: u8,
    /// The budget its writer had left at `started`: its request went out by `started + left`, or
    /// never.
    pub left: u8,
    /// How it ended.
    pub outcome: Option<Outcome>,
    /// What it applied.
    pub effect: Option<Applied>,
    /// A probe's verdict.
    pub probe: Option<ProbeMark>,
    /// A person's settlement: what they said, when it was recorded, and when they looked.
    pub settled: Option<(Verdict, u8, u8)>,
    /// When the attempt's call ended, as the attempt's own end record wrote it (a non-`ok` end), and
    /// every later record about it repeats ([`Record::sent_by`]).
    pub sent_by: Option<u8>,
}

/// The model's clock as the log writes times.
pub fn stamp(t: u8) -> String {
    format!("2026-12-01T00:{:02}:{:02}Z", t / 60, t % 60)
}

impl Rec {
    /// The crate's record.
    pub fn record(&self) -> Record {
        let key = tool_contract::key::Intent::new("t", "agent", "pay", "x").key();
        Record {
            phase: self.phase,
            task: "t".into(),
            call: "pay".into(),
            intent_key: key,
            attempt: u32::from(self.attempt),
            attempt_id: format!("t-a{}", self.attempt),
            started: stamp(self.started),
            budget_left_s: u64::from(self.left),
            outcome: self.outcome,
            effect_applied: self.effect,
            probe: self.probe,
            message: None,
            retry_at: None,
            sent_by: self.sent_by.map(stamp),
            args: None,
            value: None,
            settled: self.settled.map(|(verdict, at, seen)| Settlement {
                verdict,
                by: "person".into(),
                via: Via::Operator,
                evidence: "looked".into(),
                at: stamp(at),
                seen: Some(stamp(seen)),
                os_user: None,
            }),
            approval: None,
        }
    }
}

/// The intent's last word, folded by the crate's own rule ([`Recall::update`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Word {
    /// The highest attempt recorded.
    pub attempts: u8,
    /// The last word.
    pub last: Rec,
}

impl Word {
    /// Whether the intent's last word leaves it in doubt, by the crate's rule.
    pub(crate) fn in_doubt(&self) -> bool {
        tool_contract::rules::in_doubt(self.last.phase, self.last.outcome, self.last.effect)
    }

    /// The crate's recall.
    pub fn recall(&self) -> Recall {
        Recall { attempts: u32::from(self.attempts), last: self.last.record() }
    }

    /// Fold `rec` in, by the crate's rule ([`tool_contract::rules::supersedes`], as
    /// [`Recall::update`] folds).
    pub fn fold(word: Option<Word>, rec: Rec) -> Word {
        let Some(word) = word else { return Word { attempts: rec.attempt, last: rec } };
        let r = tool_contract::rules::supersedes(
            rec.phase,
            rec.probe,
            u32::from(rec.attempt),
            u32::from(word.attempts),
            word.last.phase,
        );
        let attempts = if tool_contract::rules::counts_as_attempt(rec.phase) {
            word.attempts.max(rec.attempt)
        } else {
            word.attempts
        };
        Word { attempts, last: if r { rec } else { word.last } }
    }
}

/// A person's approval record: a question before attempt `attempt + 1`, or its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Question {
    /// The attempt before the one it lets start.
    pub attempt: u8,
    /// Asked or answered.
    pub step: ApprovalStep,
    /// Until when the asker waits.
    pub until: u8,
    /// Who asked.
    pub asker: Who,
}

impl Question {
    /// The crate's approval record.
    pub fn record(&self) -> Record {
        Record {
            approval: Some(ApprovalNote {
                step: self.step,
                by: "person".into(),
                why: "second attempt".into(),
                at: stamp(0),
                until: (self.step == ApprovalStep::Asked).then(|| stamp(self.until)),
                os_user: None,
                question: None,
                asks: Default::default(),
                asked_in: None,
                args: None,
                shows: Default::default(),
            }),
            ..Rec {
                phase: Phase::Approval,
                attempt: self.attempt,
                started: 0,
                left: 0,
                outcome: None,
                effect: None,
                probe: None,
                settled: None,
                sent_by: None,
            }
            .record()
        }
    }
}

/// The store's answer to a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Got {
    /// Held; what the store knew of the intent.
    Held(Option<Word>),
    /// Another owner holds it.
    Busy,
    /// The claim came after the caller's deadline.
    Late,
}

/// A message on the network: delayed, dropped, reordered or delivered late, at the checker's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Msg {
    /// A call asks the store for the intent, giving up at `deadline`, for a lease of `lease` ticks.
    Claim { who: Who, deadline: u8, lease: u8 },
    /// The store's answer.
    Claimed { who: Who, got: Got },
    /// A fenced start record.
    Start { who: Who, attempt: u8, at: u8, left: u8 },
    /// The store took the start (or refused it).
    Started { who: Who, attempt: u8, ok: bool },
    /// A fenced end record (a probe's verdict when `probe` is set), with the attempt's own stamp,
    /// budget and `sent_by`; `finish`: the call's last, which gives its claim up with it
    /// (`Journal::finish`).
    End {
        who: Who,
        attempt: u8,
        started: u8,
        left: u8,
        sent_by: Option<u8>,
        outcome: u8,
        effect: u8,
        probe: u8,
        finish: bool,
    },
    /// A question for a person before the next attempt.
    Ask { who: Who, attempt: u8, until: u8 },
    /// The store tells the asker its question was answered (`yes`: approved).
    Approved { who: Who, attempt: u8, yes: bool },
    /// A call that wrote no last record gives its claim up.
    Release { who: Who },
    /// A request to the service, sent at `sent`.
    Request { who: Who, attempt: u8, sent: u8 },
    /// The service's reply.
    Reply { who: Who, attempt: u8, applied: bool },
    /// A person's settlement of the attempt they examined: with [`crate::Config::late_looks`], when
    /// they looked and whether it had landed then; without, their word speaks for the moment it is
    /// recorded (they look at the service as they settle), so what they saw is read there.
    Settle { examined: u8, looked: Option<(u8, bool)> },
    /// A person's answer (`yes`: approved) to the question about the attempt they examined.
    Answer { examined: u8, yes: bool },
}

/// Outcome, effect and probe verdict to and from the small numbers a message carries.
pub mod code {
    use super::*;

    /// An outcome as a number.
    pub fn outcome(o: Outcome) -> u8 {
        match o {
            Outcome::Ok => 0,
            Outcome::Retryable => 1,
            Outcome::Permanent => 2,
            _ => 3,
        }
    }
    /// A number as an outcome.
    pub fn to_outcome(n: u8) -> Outcome {
        [Outcome::Ok, Outcome::Retryable, Outcome::Permanent, Outcome::Unknown][usize::from(n.min(3))]
    }
    /// An effect as a number.
    pub fn effect(a: Applied) -> u8 {
        match a {
            Applied::Yes => 0,
            Applied::No => 1,
            _ => 2,
        }
    }
    /// A number as an effect.
    pub fn to_effect(n: u8) -> Applied {
        [Applied::Yes, Applied::No, Applied::Unknown][usize::from(n.min(2))]
    }
    /// A probe verdict as a number (`9`: none).
    pub fn probe(p: Option<ProbeMark>) -> u8 {
        match p {
            Some(ProbeMark::Landed) => 0,
            Some(ProbeMark::NotLanded) => 1,
            Some(ProbeMark::Failed) => 2,
            None => 9,
        }
    }
    /// A number as a probe verdict.
    pub fn to_probe(n: u8) -> Option<ProbeMark> {
        match n {
            0 => Some(ProbeMark::Landed),
            1 => Some(ProbeMark::NotLanded),
            2 => Some(ProbeMark::Failed),
            _ => None,
        }
    }
}
