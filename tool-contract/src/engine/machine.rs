//! The call's decisions as one pure state machine: what a call knows of its effect, where its attempt
//! stands against its landing horizon, and what each finding (its claim granted or held, a record
//! written or refused, an attempt's end, a probe's verdict, an approver's or a person's answer, a
//! waited-out instant) does to that. No I/O, no clock: every instant is an argument, on whatever clock
//! drives it ([`Time`]).
//!
//! The engine drives a `Machine<tokio::time::Instant>`: its runtime carries out the action the machine
//! names ([`Machine::next`]: write this record, send the request before an instant, probe, ask, wait
//! until, attempt after a wait, stop) and feeds back what it found ([`Machine::on`], an [`Event`]).
//! The protocol model (`tool-contract-model`) drives a `Machine<u8>` on its ticks, the same type, so a
//! decision the machine takes is taken once, here, for both. Not public API:
//! `tool_contract::unstable::machine`.

use std::time::Duration;

use crate::effect::EffectKind;
use crate::policy::{self, Change, Decision, End, Facts, Horizon, PersonFact, Room, Shape, Start, Step};
use crate::probe::ProbeMark;
use crate::records::{Recall, Verdict};
use crate::report::{Applied, Outcome};
use crate::rules::Stamps;
use crate::spec::Dedupe;

/// An instant on the clock that drives a [`Machine`].
pub trait Time: Ord + Copy + std::fmt::Debug {
    /// `self` plus `d`; `self` when that does not fit the clock.
    fn plus(self, d: Duration) -> Self;
    /// How long from `self` until `later`: zero once it has passed.
    fn until(self, later: Self) -> Duration;
}

impl Time for tokio::time::Instant {
    fn plus(self, d: Duration) -> Self {
        self.checked_add(d).unwrap_or(self)
    }

    fn until(self, later: Self) -> Duration {
        later.saturating_duration_since(self)
    }
}

/// The protocol model's clock: ticks of one second from 0.
impl Time for u8 {
    fn plus(self, d: Duration) -> Self {
        self.saturating_add(u8::try_from(d.as_secs()).unwrap_or(u8::MAX))
    }

    fn until(self, later: Self) -> Duration {
        Duration::from_secs(u64::from(later.saturating_sub(self)))
    }
}

/// What a call is, for its decisions: the tool's kind, what it can ask, and the task's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Setup<T> {
    /// The tool's effect kind.
    pub kind: EffectKind,
    /// Whether the tool has a probe.
    pub has_probe: bool,
    /// Whether the task has an approver (asked before a second attempt of `money`, and the person who
    /// settles an attempt in doubt).
    pub has_approver: bool,
    /// Whether the call's report can answer from one person's settlement (a single call, not a batch).
    pub asks_person: bool,
    /// The tool's attempt limit.
    pub max_attempts: u32,
    /// The tool's landing horizon.
    pub horizon: Duration,
    /// The task's deadline.
    pub deadline: T,
}

impl<T> Setup<T> {
    /// The setup of a call of the tool `spec` with `deadline`: its kind, attempt limit and landing
    /// horizon are the tool's; `can` says whether it has a probe, an approver to ask before a second
    /// attempt, and a report that can answer from a person's settlement.
    pub fn of(spec: &crate::spec::ToolSpec, can: Can, deadline: T) -> Setup<T> {
        Setup {
            kind: spec.effect(),
            has_probe: can.probe,
            has_approver: can.approver,
            asks_person: can.person,
            max_attempts: spec.get_max_attempts(),
            horizon: spec.get_horizon(),
            deadline,
        }
    }
}

/// What a call can ask besides the service ([`Setup::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Can {
    /// The tool has a probe.
    pub probe: bool,
    /// The task has an approver.
    pub approver: bool,
    /// A person may settle the call's intent (its report can answer from one settlement).
    pub person: bool,
}

/// What happened to a call, fed to its machine ([`Machine::on`]): each finding of the runtime the
/// call's decisions are taken from, with the instants they are judged by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event<'a, T> {
    /// The intent's claim was granted at `at` (a read, which claims nothing, begins so too): what the
    /// log holds of the intent (`recall`), what the call resumes (`shape`), and the last record's
    /// stamps on this call's clock ([`crate::rules::stamps`]). The machine answers with what the call
    /// does first ([`Change::Began`]: [`policy::start`], refined for a batch by [`policy::batch`]).
    Claimed {
        /// What the log holds of the intent, if anything.
        recall: Option<&'a Recall>,
        /// One call, or a batch with the items the last record lists.
        shape: Shape<'a>,
        /// The last record's stamps.
        stamps: Stamps<T>,
        /// When.
        at: T,
    },
    /// Another owner holds the intent's claim; the runtime would look again after `nap`. The machine
    /// names the wait, from when it is next asked ([`Action::WaitUntil`], then [`Event::Waited`] and a
    /// claim again), only while an attempt could still follow it ([`Budget::may_wait_for_claim`]);
    /// otherwise the call stops ([`End::Busy`]).
    ClaimHeld {
        /// How long until the runtime looks again (up to 65 s: a longer nap is cut to that).
        nap: Duration,
    },
    /// The record the machine named ([`Action::Record`]) is written (a read's start record: held, to
    /// go to the log with its end).
    Written,
    /// The record the machine named was not confirmed: `fenced` when the store's fence refused it
    /// (another owner holds the intent), otherwise the store failed or did not answer in time.
    Unwritten {
        /// The store's fence refused it.
        fenced: bool,
    },
    /// The attempt's request may have reached the service by `by`: it is leaving then, or its call
    /// ended then. Its landing horizon runs from the last such instant.
    Reached {
        /// The latest instant the request may have reached the service by.
        by: T,
    },
    /// An attempt ended with its own effect `effect`: the call's effect may have landed from now on if
    /// that one may have (an earlier one's doubt stays).
    Ended {
        /// The attempt's own effect.
        effect: Applied,
    },
    /// The call has something to decide at `at`, which opens the machine's decision: its attempt ended
    /// as `ended` without `ok` (or, with `made == 0`, it resumed an intent in doubt).
    Undecided {
        /// How the attempt ended (or how the intent's last record leaves it).
        ended: (Outcome, Applied),
        /// How many attempts this call made.
        made: u32,
        /// Who deduplicates a `create` for this call, and the landing horizon that goes with them.
        dedupe: (Dedupe, Duration),
        /// Whether the service's retry budget has room for a retry.
        retry_budget: bool,
        /// When.
        at: T,
    },
    /// The probe's verdict.
    Probed {
        /// What it found ([`ProbeMark::Failed`] when it could not tell).
        mark: ProbeMark,
        /// Where the attempt stood against its landing horizon when the probe looked
        /// ([`Machine::judge`]): a "not landed" counts only once the attempt could no longer land.
        horizon: Horizon,
    },
    /// The approver's answer to a second attempt.
    Approved {
        /// Yes; `false` also when they did not answer in time.
        yes: bool,
    },
    /// A person's answer, whether the attempt in doubt landed.
    PersonSaid {
        /// What they said (`None`: no answer, or "can't tell").
        said: Option<Verdict>,
        /// When they saw the attempt: their "not landed" counts only if seen once it could no longer
        /// land.
        seen: T,
        /// When their answer came.
        at: T,
    },
    /// The landing horizon was waited out ([`Action::WaitUntil`]): a "not landed" seen before it says
    /// nothing of what landed since.
    Waited,
}

/// What a call does next, named by its machine ([`Machine::next`]); the runtime carries it out and
/// feeds back what it found ([`Event`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action<T> {
    /// Run the probe; its verdict is [`Event::Probed`].
    Probe,
    /// Ask the approver before a second attempt; their answer is [`Event::Approved`].
    Approve,
    /// Ask a person whether the attempt in doubt landed; their answer is [`Event::PersonSaid`].
    AskPerson,
    /// Wait until the instant the attempt can no longer land, then [`Event::Waited`].
    WaitUntil(T),
    /// Wait `after` (the backoff, or the service's `Retry-After` when longer), then start the next
    /// attempt, if the budget still lets it ([`Budget::may_start`]).
    Attempt {
        /// The wait before it.
        after: Duration,
    },
    /// Write this record; what the store said is [`Event::Written`] or [`Event::Unwritten`].
    Record(Write),
    /// Send the attempt's request, which may leave only before `not_after` ([`Budget::may_leave`]): the
    /// end of the time the attempt gets ([`Budget::attempt_limit`]), never past the task's deadline.
    /// Its request may reach the service from now ([`Event::Reached`]).
    Send {
        /// The instant from which the request may no longer leave.
        not_after: T,
    },
    /// Stop, and report as `end` says ([`Machine::ending`]).
    Stop(End),
}

/// A record the machine names ([`Action::Record`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// The attempt's start record, written before its request may leave: it carries the budget left at
    /// the attempt's start ([`Budget::recorded`]).
    Start {
        /// The budget left at the attempt's start.
        left: Duration,
    },
    /// The end record of an attempt that was not sent (its start not confirmed, or the budget too
    /// short once it was): what the call reports, so the log never shows it in doubt.
    End {
        /// The outcome the call reports.
        outcome: Outcome,
        /// The effect the call reports.
        effect: Applied,
    },
}

/// How the next attempt is paced, from the tool's settings and the last answer: the wait the service
/// asked for (`Retry-After`), the tool's backoff before that attempt, and its floor (the least budget an
/// attempt starts with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pacing {
    /// The wait the service asked for, if it did.
    pub asked: Option<Duration>,
    /// The tool's backoff before the next attempt.
    pub backoff: Duration,
    /// The tool's deadline floor.
    pub floor: Duration,
    /// The time a side effect's attempt keeps back for its probe (zero: a quarter of what is left;
    /// [`Budget::attempt_limit`]).
    pub reserve: Duration,
}

/// When the intent's key may first have reached the service: its first attempt's start, on the
/// machine's clock ([`Machine::dedupes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeySent<T> {
    /// No attempt of the intent has started.
    #[default]
    Never,
    /// No earlier than this.
    At(T),
    /// At an instant not known, or before any this process can tell: as long ago as can be.
    LongAgo,
}

/// The functions on the machine's path that a test of the protocol may swap for a broken one, to see
/// the model checker find the harm (with the feature `unstable`, [`Machine::with_hooks`]);
/// [`Hooks::real`] is what runs, and all that a build without the feature can run.
#[derive(Debug, Clone, Copy)]
pub struct Hooks<T: 'static> {
    /// Whether a "not landed" counts yet ([`policy::landing`]).
    pub landing: fn(Option<T>, T, T, T) -> Horizon,
    /// When a probe's verdict is judged as seen, given when the probe looked and when it answered:
    /// when it looked (T1).
    pub verdict_seen: fn(T, T) -> T,
    /// The budget an attempt's records pair with its start's stamp, given the budget left at the
    /// start and once its start record was written: the first (T2).
    pub recorded_budget: fn(Duration, Duration) -> Duration,
    /// Whether a request may leave at an instant, given the last instant it may: only before it (T4).
    pub may_leave: fn(T, T) -> bool,
    /// Whether an attempt may start with a budget left, given the tool's floor
    /// ([`crate::rules::may_start`]).
    pub may_start: fn(Duration, Duration) -> bool,
    /// When a person's settlement is judged as seen, given when they saw the attempt and when their
    /// word was written: when they saw it (T3).
    pub settlement_seen: fn(Option<T>, Option<T>) -> Option<T>,
    /// The start-of-call decision ([`policy::start`]).
    pub start: fn(Option<&Recall>, EffectKind) -> Start,
    /// The next step ([`policy::next`]).
    pub next: fn(&Facts) -> Step,
}

impl<T: Time + 'static> Hooks<T> {
    /// The functions the engine runs (a `const fn`, so a test's broken set can be a `static`).
    pub const fn real() -> Hooks<T> {
        Hooks {
            landing: policy::landing,
            verdict_seen: |looked, _answered| looked,
            recorded_budget: |at_start, _after_write| at_start,
            may_leave: |now, not_after| now < not_after,
            may_start: crate::rules::may_start,
            settlement_seen: |seen, _written| seen,
            start: policy::start,
            next: policy::next,
        }
    }
}

/// One call's decisions, fed what happened and asked what comes next.
///
/// A call sends its attempts itself, numbered and recorded by its
/// [`Ledger`](crate::unstable::machine::Ledger); the machine keeps what those attempts leave to decide
/// by: whether an earlier attempt may have landed, until when the last one may have reached the
/// service, and when a "not landed" about it was seen. Everything the runtime finds reaches it as an
/// [`Event`] ([`Machine::on`]), and [`Machine::next`] names each [`Action`]. Its claim granted
/// ([`Event::Claimed`]), a call begins as the log's last word says; an attempt goes as its start record
/// (named, then [`Event::Written`] or [`Event::Unwritten`]), then its request, named with the last
/// instant it may leave ([`Action::Send`]). After an attempt that did not end `ok`, or at the start of a
/// call that resumed an intent in doubt ([`Event::Undecided`]), the machine opens a [`Decision`] and
/// names its actions (probe, wait until, ask, attempt after a wait, stop) until one is an attempt or a
/// stop.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::effect::EffectKind;
/// use tool_contract::probe::ProbeMark;
/// use tool_contract::spec::Dedupe;
/// use tool_contract::unstable::machine::{Action, Event, Machine, Pacing, Setup, Write};
/// use tool_contract::{Applied, Outcome};
///
/// let setup = Setup {
///     kind: EffectKind::Send,
///     has_probe: true,
///     has_approver: false,
///     asks_person: false,
///     max_attempts: 3,
///     horizon: Duration::from_secs(5),
///     deadline: 30u8,
/// };
/// let mut call = Machine::new(setup);
/// let pacing = Pacing { backoff: Duration::from_secs(1), ..Pacing::default() };
/// // The attempt's request may reach the service until second 2, when its reply was lost.
/// call.on(Event::Reached { by: 2 });
/// let ended = (Outcome::Unknown, Applied::Unknown);
/// let dedupe = (Dedupe::Probe, Duration::from_secs(5));
/// call.on(Event::Undecided { ended, made: 1, dedupe, retry_budget: true, at: 2 });
/// assert_eq!(call.next(2, pacing), Some(Action::Probe));
/// // The probe looked at second 3, before the request could no longer land (second 7).
/// let horizon = call.judge(Applied::Unknown, 3, 4);
/// call.on(Event::Probed { mark: ProbeMark::NotLanded, horizon });
/// assert_eq!(call.next(4, pacing), Some(Action::WaitUntil(7)));
/// call.on(Event::Waited);
/// assert_eq!(call.next(7, pacing), Some(Action::Probe));
/// let horizon = call.judge(Applied::Unknown, 7, 7);
/// call.on(Event::Probed { mark: ProbeMark::NotLanded, horizon });
/// assert_eq!(call.next(7, pacing), Some(Action::Attempt { after: Duration::from_secs(1) }));
/// // Second 8: its start record first, then its request, which keeps a quarter of the 22 s left back
/// // for the probe and may leave until second 24.
/// let start = Write::Start { left: Duration::from_secs(22) };
/// assert_eq!(call.next(8, pacing), Some(Action::Record(start)));
/// call.on(Event::Written);
/// assert_eq!(call.next(8, pacing), Some(Action::Send { not_after: 24 }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Machine<T: 'static> {
    // The setup, laid out flat and narrow: every call's future carries one machine.
    kind: EffectKind,
    has_probe: bool,
    has_approver: bool,
    asks_person: bool,
    /// An earlier attempt of this call may have applied its effect and no probe has said otherwise;
    /// a later attempt that applied nothing does not make the call's effect `no`.
    maybe_applied: bool,
    /// The attempt resumed from is known not to have landed (a person settled it so, or its own end
    /// said so): that stands for the probe's verdict.
    known_not_landed: bool,
    /// The attempt limit, up to 65,535.
    max_attempts: u16,
    /// The landing horizon in nanoseconds, up to 584 years.
    horizon_ns: u64,
    deadline: T,
    /// Until when the last attempt's request may have reached the service: its landing horizon runs
    /// from here. `None` when no attempt's request can still land (none was sent, or the service's own
    /// answer said it applied nothing).
    reached: Option<T>,
    /// When a person's "not landed" about the attempt was seen (their settlement's `seen`, or when they
    /// were asked during this call): it counts only if seen once the attempt could no longer land.
    observed: Option<T>,
    /// The decision open after an attempt that did not end `ok` (or at the start of a call that resumed
    /// an intent in doubt), until it names the next attempt or another opens.
    decision: Option<Decision>,
    /// Where the call stands outside a decision: its claim, its next attempt's start record, its send.
    stage: Stage,
    #[cfg(feature = "unstable")]
    hooks: HookRef<T>,
}

/// Where a call stands outside a decision ([`Machine::next`] names its actions from here): waiting for
/// a claim another owner holds, an attempt named and due, its start record written or not, its request
/// out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum Stage {
    /// Nothing under way (or the last attempt's request out): an open decision names what comes next;
    /// with none, the next attempt goes.
    #[default]
    Idle,
    /// Another owner holds the intent's claim: claim again after a nap of this many milliseconds, if
    /// an attempt could follow (narrow, so the stage fits in the machine's padding).
    ClaimHeld(u16),
    /// An attempt was named: once its wait is over, the budget's check and its start record.
    Due,
    /// Its start record is being written.
    Starting,
    /// Its start record is written: the budget's check again, then its request.
    Started,
    /// Not sent: the end record that says so goes first, then the call stops.
    Unsent(Unsent),
    /// Not sent, and nothing more to write: the call stops.
    Stopping(Unsent),
}

/// Why an attempt was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Unsent {
    /// Its start record was written, and the budget then left was under the floor.
    Short,
    /// The store failed its start record, or did not answer in time.
    Failed,
    /// The store's fence refused its start record.
    Fenced,
}

impl Unsent {
    /// How the call stops.
    fn end(self) -> End {
        match self {
            Unsent::Short => End::NotStarted,
            Unsent::Failed => End::Unstarted { fenced: false },
            Unsent::Fenced => End::Unstarted { fenced: true },
        }
    }
}

/// The hooks a machine runs with: the same for every state of one check, so no part of its state (equal
/// and hashed as nothing).
#[cfg(feature = "unstable")]
#[derive(Debug, Clone, Copy)]
struct HookRef<T: 'static>(Option<&'static Hooks<T>>);

#[cfg(feature = "unstable")]
impl<T> PartialEq for HookRef<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[cfg(feature = "unstable")]
impl<T> Eq for HookRef<T> {}

#[cfg(feature = "unstable")]
impl<T> std::hash::Hash for HookRef<T> {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl<T: Time + 'static> Machine<T> {
    /// A call that has made no attempt yet.
    pub fn new(setup: Setup<T>) -> Machine<T> {
        Machine {
            kind: setup.kind,
            has_probe: setup.has_probe,
            has_approver: setup.has_approver,
            asks_person: setup.asks_person,
            maybe_applied: false,
            known_not_landed: false,
            max_attempts: u16::try_from(setup.max_attempts).unwrap_or(u16::MAX),
            horizon_ns: nanos(setup.horizon),
            deadline: setup.deadline,
            reached: None,
            observed: None,
            decision: None,
            stage: Stage::Idle,
            #[cfg(feature = "unstable")]
            hooks: HookRef(None),
        }
    }

    /// The same call with some of its functions swapped for others (feature `unstable`): what a test
    /// of the protocol breaks, to see the harm found.
    #[cfg(feature = "unstable")]
    pub fn with_hooks(mut self, hooks: &'static Hooks<T>) -> Machine<T> {
        self.hooks = HookRef(Some(hooks));
        self
    }

    /// The budget's rules for this call, on its deadline ([`Budget`]).
    pub fn budget(&self) -> Budget<'_, T> {
        Budget(self)
    }

    /// The call's effect given its last attempt's: never `no` while an earlier attempt may have landed.
    pub fn call_effect(&self, attempt: Applied) -> Applied {
        if self.maybe_applied && attempt == Applied::No { Applied::Unknown } else { attempt }
    }

    /// Feed the machine what happened ([`Event`]): the one way a finding of the runtime reaches the
    /// call's decisions. What it changed of the outcome and effect the call would report, for the
    /// runtime to say in its words; told of the claim, how the call begins ([`Change::Began`]).
    pub fn on(&mut self, event: Event<T>) -> Change {
        match event {
            Event::Claimed { recall, shape, stamps, at } => {
                self.stage = Stage::Idle;
                return Change::Began(begin(self, recall, shape, stamps, at));
            }
            Event::ClaimHeld { nap } => {
                self.stage = Stage::ClaimHeld(u16::try_from(nap.as_millis()).unwrap_or(u16::MAX));
            }
            Event::Written => {
                self.stage = match self.stage {
                    Stage::Starting => Stage::Started,
                    Stage::Unsent(why) => Stage::Stopping(why),
                    stage => stage,
                };
            }
            Event::Unwritten { fenced } => {
                self.stage = match self.stage {
                    Stage::Unsent(why) => Stage::Stopping(why),
                    _ if fenced => Stage::Stopping(Unsent::Fenced),
                    _ => Stage::Unsent(Unsent::Failed),
                };
            }
            Event::Reached { by } => self.reached = Some(by),
            Event::Ended { effect } => self.maybe_applied |= effect != Applied::No,
            Event::Undecided { ended, made, dedupe, retry_budget, at } => {
                self.stage = Stage::Idle;
                open(self, ended, made, dedupe, retry_budget, at);
            }
            Event::Probed { mark, horizon } => {
                let Some(decision) = self.decision.as_mut() else { return Change::None };
                let change = decision.probed(mark, || horizon);
                if change == Change::NotLanded {
                    self.maybe_applied = false;
                }
                return change;
            }
            Event::Approved { yes } => {
                if let Some(decision) = self.decision.as_mut() {
                    decision.approved(yes);
                }
            }
            Event::PersonSaid { said, seen, at } => return person_said(self, said, seen, at),
            Event::Waited if matches!(self.stage, Stage::ClaimHeld(_)) => self.stage = Stage::Idle,
            Event::Waited => {
                let Some(decision) = self.decision.as_mut() else { return Change::None };
                let change = decision.waited();
                if change == Change::InDoubt {
                    self.maybe_applied = true;
                }
                return change;
            }
        }
        Change::None
    }

    /// Who deduplicates the call's next attempt, for its decision ([`Event::Undecided`]): the tool's
    /// `dedupe`, but a receiver deduplicates only while it still keeps the key (for `lifetime` from
    /// when the key first reached it, `sent`) for every request this call may send, until its
    /// deadline; past that, nobody but the probe, and a request of it still held would be a second
    /// effect.
    pub fn dedupes(&self, dedupe: Dedupe, sent: KeySent<T>, lifetime: Duration) -> Dedupe {
        let kept = match sent {
            KeySent::Never => true,
            KeySent::At(at) => self.deadline < at.plus(lifetime),
            KeySent::LongAgo => false,
        };
        match dedupe {
            Dedupe::Receiver if !kept => Dedupe::Probe,
            dedupe => dedupe,
        }
    }

    /// What the open decision knows: how the attempt ended, and what the probe, the approver and a
    /// person have said since. `None` before any decision opened.
    pub fn facts(&self) -> Option<&Facts> {
        self.decision.as_ref().map(Decision::facts)
    }

    /// The call's next action at `now`, the next attempt paced by `pacing`; `None` only while a record
    /// the machine named is being written. Outside a decision: a claim another owner holds is waited
    /// for only while an attempt could follow; an attempt starts (its start record named) only with
    /// the tool's floor left, and its request goes (named with the last instant it may leave) only if
    /// the floor is still left once that record is written; one not sent has its end record named,
    /// then stops. An open decision names its actions until one is an attempt, which closes it; with
    /// none open, the next attempt goes at once. Whether the budget left can hold the wait before
    /// another attempt and the tool's floor is the machine's rule (`room`), and so is how long that
    /// wait is and until when the horizon is waited out.
    #[inline]
    pub fn next(&mut self, now: T, pacing: Pacing) -> Option<Action<T>> {
        if let Some(action) = staged(self, now, pacing) {
            return action;
        }
        if self.decision.is_none() {
            self.stage = Stage::Due;
            return Some(Action::Attempt { after: Duration::ZERO });
        }
        decided(self, now, pacing)
    }

    /// Where the attempt the service answered with `answered` stood against its landing horizon when a
    /// probe that answered at `now` looked (`looked`): a batch judges each of its items by it.
    pub fn judge(&self, answered: Applied, looked: T, now: T) -> Horizon {
        let rules = rules(self);
        let ends = policy::landing_ends(self.reached, answered, |at| at.plus(horizon(self)));
        (rules.landing)(ends, (rules.verdict_seen)(looked, now), now, self.deadline)
    }

    /// What a probe's verdict `mark` on the attempt that ended `ended` means, as the log records it:
    /// where the attempt stood against its landing horizon when the probe looked (asked only of a "not
    /// landed"), and the outcome and effect recorded with the verdict ([`policy::verdict`]).
    pub fn verdict(
        &self,
        mark: ProbeMark,
        ended: (Outcome, Applied),
        looked: T,
        now: T,
    ) -> (Horizon, (Outcome, Applied)) {
        let horizon =
            if mark == ProbeMark::NotLanded { self.judge(ended.1, looked, now) } else { Horizon::Passed };
        (horizon, policy::verdict(mark, horizon, (ended.0, self.call_effect(ended.1))))
    }

    /// How much longer the service may still apply the last attempt's request, at `now`: the rest of
    /// its landing horizon (zero once passed, or when nothing of it can be in flight).
    pub fn wait_left(&self, now: T) -> Duration {
        self.reached.map_or(Duration::ZERO, |at| now.until(at.plus(horizon(self))))
    }

    /// The outcome and effect a call the policy stopped at `end` reports, after an attempt that ended
    /// `ended` (before [`Machine::call_effect`], which the report applies): the probe's or a person's
    /// finding that it landed is `ok`; every stop that leaves the effect open is `unknown`; an
    /// approver's no is `permanent` with nothing applied (the same call asks the same question); every
    /// other stop keeps how the attempt ended.
    pub fn ending(&self, end: End, ended: (Outcome, Applied)) -> (Outcome, Applied) {
        let unknown = (Outcome::Unknown, Applied::Unknown);
        match end {
            End::Landed | End::Settled => (Outcome::Ok, Applied::Yes),
            End::NoProbe if ended.1 == Applied::No => ended,
            End::NoProbe | End::BeforeHorizon | End::Unresolved => unknown,
            // What the call knows after a probe that could not tell: the one rule the log's record of
            // the probe and the call's report both follow. A call that applied nothing for sure stays as
            // its attempt ended; any other is in doubt.
            End::ProbeFailed => {
                policy::verdict(ProbeMark::Failed, Horizon::Passed, (ended.0, self.call_effect(ended.1)))
            }
            End::Denied => (Outcome::Permanent, Applied::No),
            End::NotStarted | End::Unstarted { fenced: false } => (Outcome::Retryable, Applied::No),
            // Fenced out, or another owner's claim: what that owner did is its own, and not known here.
            End::Unstarted { fenced: true } | End::Busy => (Outcome::Retryable, Applied::Unknown),
            End::AsIs
            | End::NeverRetried
            | End::GaveUp
            | End::OutOfBudget(_)
            | End::NoApprover
            | End::RetryBudgetSpent => ended,
        }
    }
}

/// The budget's rules of one call, on its machine's deadline and hooks ([`Machine::budget`]): whether
/// an attempt may start, whether its request may still leave, the budget its records carry, and, for
/// its claim on the intent, the lease it asks for and whether it waits for another owner's.
#[derive(Debug, Clone, Copy)]
pub struct Budget<'a, T: 'static>(&'a Machine<T>);

impl<T: Time + 'static> Budget<'_, T> {
    /// Whether an attempt may start at `now`, given `floor`, the least budget the tool needs to start
    /// one: never on a spent budget, never with less than the floor left ([`crate::rules::may_start`]).
    /// An attempt that could land and never be resolved is not started.
    #[inline]
    pub fn may_start(self, now: T, floor: Duration) -> bool {
        starts(self.0, now, floor).0
    }

    /// Whether the attempt's request may leave at `now`, the last check before it does: only before
    /// `not_after` (the attempt's own deadline) and before the task's. A worker that stood still past
    /// them (a stopped process, a frozen machine) may find another worker holding the intent once its
    /// claim's lease, which outlasts the task's deadline, has run out.
    #[inline]
    pub fn may_leave(self, now: T, not_after: T) -> bool {
        (rules(self.0).may_leave)(now, not_after.min(self.0.deadline))
    }

    /// The budget an attempt's records pair with its start's stamp: the budget left when it started
    /// (`at_start`), not once its start record was written (`after_write`). Together with the stamp it
    /// bounds the attempt's last possible send; the budget after a slow write would end that early.
    #[inline]
    pub fn recorded(self, at_start: Duration, after_write: Duration) -> Duration {
        (rules(self.0).recorded_budget)(at_start, after_write)
    }

    /// The time an attempt that starts with `left` of the budget gets: all of it, but for a side effect
    /// with a probe, `reserve` is kept back for the probe (a reserve of zero: a quarter of `left`),
    /// never leaving the attempt less than the tool's `floor`, so an attempt that times out can still
    /// be resolved inside the budget.
    #[inline]
    pub fn attempt_limit(self, left: Duration, reserve: Duration, floor: Duration) -> Duration {
        let m = self.0;
        if !m.kind.has_side_effect() || !m.has_probe {
            return left;
        }
        let reserve = if reserve.is_zero() { left / 4 } else { reserve };
        left.saturating_sub(reserve).max(floor).min(left)
    }

    /// The budget left at `now`: none at or past the deadline.
    pub fn left(self, now: T) -> Duration {
        now.until(self.0.deadline)
    }

    /// Whether the call waits `wait` at `now` before its next attempt (a wait the service asked an
    /// earlier run for): only if the budget left can hold the wait and the tool's `floor` after it.
    pub fn may_wait(self, now: T, wait: Duration, floor: Duration) -> bool {
        wait.saturating_add(floor) <= self.left(now)
    }

    /// The lease a claim taken at `now` asks the store for: the budget left (the call drops its attempt
    /// at the deadline), then the landing horizon (a request the service still holds may land that much
    /// later), then `margin` for the end record and for clocks. Whoever takes the intent over after it
    /// finds the last attempt past its horizon, and probes first.
    pub fn lease(self, now: T, margin: Duration) -> Duration {
        now.until(self.0.deadline).saturating_add(horizon(self.0)).saturating_add(margin)
    }

    /// Whether a call whose claim another owner holds waits `nap` at `now` and claims again: only if it
    /// could still start an attempt of at least `floor` after the wait
    /// ([`crate::rules::may_wait_for_claim`]).
    pub fn may_wait_for_claim(self, now: T, nap: Duration, floor: Duration) -> bool {
        crate::rules::may_wait_for_claim(nap, floor, now.until(self.0.deadline))
    }
}

/// The start of a call of the shape `shape` at `now` ([`Event::Claimed`]), from what the log holds of
/// its intent ([`policy::start`], which a batch refines from its recorded items, [`policy::batch`]): a
/// call that resumes an attempt which may have landed keeps that in mind, one whose last attempt
/// applied nothing for sure takes that for the probe's "not landed". `stamps`: the last record's
/// ([`crate::rules::stamps`]) on this call's clock, from which the machine takes until when that
/// attempt may have reached the service and when a person's "not landed" about it was seen. The
/// attempt reached the service no later than its last possible send, than when its call ended or
/// a person's settlement was written, nor than now: whoever made it is gone (a process killed, a
/// call dropped, or a claim whose lease, which outlasts the attempt, ran out), since this call holds
/// the intent ([`crate::rules::reached_by`]). A last word that says the attempt applied nothing by
/// the service's own answer leaves nothing that can land; a person's `not_landed` does not, and
/// waits for the horizon like a probe's.
fn begin<T: Time>(
    m: &mut Machine<T>,
    recall: Option<&Recall>,
    shape: Shape<'_>,
    stamps: Stamps<T>,
    now: T,
) -> Start {
    let start = policy::batch((rules(m).start)(recall, m.kind), recall, shape);
    // A batch whose record says it applied nothing but lists an item in doubt is probed: its
    // request is taken as in flight as any other's.
    let nothing = recall.is_none_or(|recall| {
        recall.settlement().is_none() && recall.last.effect_applied == Some(Applied::No)
    }) && start != Start::Probe;
    m.reached = (!nothing).then(|| crate::rules::reached_by(stamps.ran, stamps.sent, stamps.settled, now));
    m.observed = (rules(m).settlement_seen)(stamps.seen, stamps.settled);
    match start {
        Start::SecondAttempt => known_not_landed(m),
        Start::Probe => m.maybe_applied = true,
        Start::Fresh | Start::Replay | Start::Settled => {}
    }
    start
}

/// The open decision's next action at `now` ([`Machine::next`]): naming the next attempt closes it.
fn decided<T: Time>(m: &mut Machine<T>, now: T, pacing: Pacing) -> Option<Action<T>> {
    let next = rules(m).next;
    let horizon_ends = m.reached.map_or(now, |at| at.plus(horizon(m)).max(now));
    let decision = m.decision.as_mut()?;
    let (room, after) = room(decision.facts().made, pacing, now.until(m.deadline));
    Some(match decision.next_by(room, next) {
        Step::Probe => Action::Probe,
        Step::Approve => Action::Approve,
        Step::AskPerson => Action::AskPerson,
        Step::WaitHorizon => Action::WaitUntil(horizon_ends),
        Step::Retry => {
            (m.stage, m.decision) = (Stage::Due, None);
            Action::Attempt { after }
        }
        Step::Stop(end) => Action::Stop(end),
    })
}

/// The action the call's stage names at `now` outside a decision ([`Machine::next`]): `None` when it
/// names none (nothing under way, or the request out), `Some(None)` while a record is being written.
#[inline]
fn staged<T: Time>(m: &mut Machine<T>, now: T, pacing: Pacing) -> Option<Option<Action<T>>> {
    let floor = pacing.floor;
    let action = match m.stage {
        Stage::Idle => return None,
        Stage::Starting => return Some(None),
        Stage::ClaimHeld(nap) => {
            let nap = Duration::from_millis(u64::from(nap));
            match m.budget().may_wait_for_claim(now, nap, floor) {
                true => Action::WaitUntil(now.plus(nap)),
                false => Action::Stop(End::Busy),
            }
        }
        Stage::Due => match starts(m, now, floor) {
            (true, left) => {
                m.stage = Stage::Starting;
                Action::Record(Write::Start { left })
            }
            (false, _) => Action::Stop(End::NotStarted),
        },
        Stage::Started => match starts(m, now, floor) {
            (true, left) => {
                let limit = m.budget().attempt_limit(left, pacing.reserve, floor);
                m.stage = Stage::Idle;
                // All that is left ends at the deadline: no sum to take.
                let not_after = if limit >= left { m.deadline } else { now.plus(limit).min(m.deadline) };
                Action::Send { not_after }
            }
            (false, _) => {
                m.stage = Stage::Unsent(Unsent::Short);
                unsent(m)
            }
        },
        Stage::Unsent(_) => unsent(m),
        Stage::Stopping(why) => Action::Stop(why.end()),
    };
    Some(Some(action))
}

/// Whether an attempt may start at `now` ([`Budget::may_start`]), with the budget left then: the budget
/// read once for both.
#[inline]
fn starts<T: Time>(m: &Machine<T>, now: T, floor: Duration) -> (bool, Duration) {
    let left = now.until(m.deadline);
    ((rules(m).may_start)(left, floor), left)
}

/// The end record of an attempt not sent: it says what the call reports.
fn unsent<T: Time>(m: &Machine<T>) -> Action<T> {
    Action::Record(Write::End { outcome: Outcome::Retryable, effect: m.call_effect(Applied::No) })
}

/// Open the decision after an attempt that ended `ended` (or, with `made == 0`, at the start of a call
/// that resumed an intent in doubt), at `now` ([`Event::Undecided`]). A person may settle the intent
/// only in a call that resumed it in doubt, and only a call whose report can answer from one
/// settlement.
fn open<T: Time>(
    m: &mut Machine<T>,
    ended: (Outcome, Applied),
    made: u32,
    (dedupe, horizon): (Dedupe, Duration),
    retry_budget: bool,
    now: T,
) {
    // A receiver that may have forgotten the key deduplicates nothing: a request of it still held
    // would be a new effect, so the horizon is at least the one that goes with who deduplicates now.
    m.horizon_ns = m.horizon_ns.max(nanos(horizon));
    let known = m.known_not_landed;
    m.decision = Some(Decision::new(Facts {
        kind: m.kind,
        dedupe,
        has_probe: m.has_probe,
        has_approver: m.has_approver,
        outcome: ended.0,
        effect: ended.1,
        // A person's "not landed" is the verdict a probe would give, and counts only if seen once
        // the attempt could no longer land.
        probe: known.then_some(ProbeMark::NotLanded),
        approved: None,
        made,
        max_attempts: u32::from(m.max_attempts),
        room: Room::Enough,
        horizon: if known { judge_word(m, now) } else { Horizon::Passed },
        retry_budget,
        person: if made == 0 && m.asks_person && m.has_approver {
            PersonFact::CanAsk
        } else {
            PersonFact::Nobody
        },
    }));
}

/// What a person asked said ([`Event::PersonSaid`]): their "not landed" stands for the probe's, and
/// counts only if they saw the attempt once it could no longer land.
fn person_said<T: Time>(m: &mut Machine<T>, said: Option<Verdict>, seen: T, now: T) -> Change {
    if said == Some(Verdict::NotLanded) {
        known_not_landed(m);
        m.observed = Some(seen);
    }
    let horizon = judge_word(m, now);
    let Some(decision) = m.decision.as_mut() else { return Change::None };
    decision.person_said(said, || horizon)
}

/// The attempt resumed from is known not to have landed: nothing may have landed, and that stands for
/// the probe the policy asks for before the next attempt.
fn known_not_landed<T>(m: &mut Machine<T>) {
    m.maybe_applied = false;
    m.known_not_landed = true;
}

/// The outcome and effect a call that starts as `start` decides from, before any attempt of its own
/// ([`Event::Undecided`] with `made == 0`): `None` when it has nothing to decide (it attempts at once, or
/// answers from the log).
pub fn doubt(start: Start) -> Option<(Outcome, Applied)> {
    match start {
        Start::SecondAttempt => Some((Outcome::Retryable, Applied::No)),
        Start::Probe => Some((Outcome::Unknown, Applied::Unknown)),
        Start::Fresh | Start::Replay | Start::Settled => None,
    }
}

/// Whether `left` of the budget can hold the wait before the next attempt and the tool's floor, and
/// that wait: the backoff, or the service's asked wait (`Retry-After`) when longer ([`Pacing`]). A call
/// resumed from the log (`made == 0`) has no earlier attempt of its own to back off from. A wait the
/// service asked for that the budget cannot hold is [`Room::AskedTooLong`], so the report can say so.
pub fn room(made: u32, pacing: Pacing, left: Duration) -> (Room, Duration) {
    let Pacing { asked, backoff, floor, .. } = pacing;
    if made == 0 {
        return (Room::Enough, Duration::ZERO);
    }
    if let Some(asked) = asked
        && asked.saturating_add(floor) > left
    {
        return (Room::AskedTooLong, asked);
    }
    let wait = asked.map_or(backoff, |asked| asked.max(backoff));
    if wait.saturating_add(floor) > left || left < floor {
        return (Room::TooShort, wait);
    }
    (Room::Enough, wait)
}

/// Whether a person's "not landed" counts at `now`: only if they saw the attempt once it could no
/// longer land, not when their word was written.
fn judge_word<T: Time>(m: &Machine<T>, now: T) -> Horizon {
    let ends = m.reached.map(|at| at.plus(horizon(m)));
    (rules(m).landing)(ends, m.observed.unwrap_or(now), now, m.deadline)
}

/// The machine's landing horizon.
fn horizon<T>(m: &Machine<T>) -> Duration {
    Duration::from_nanos(m.horizon_ns)
}

/// A horizon in nanoseconds, up to 584 years.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The functions the machine runs: the real ones, or (feature `unstable`) those a test swapped in.
#[inline]
fn rules<T: Time>(m: &Machine<T>) -> Hooks<T> {
    #[cfg(feature = "unstable")]
    if let Some(hooks) = m.hooks.0 {
        return *hooks;
    }
    let _ = m;
    Hooks::real()
}

#[cfg(test)]
mod tests {
    //! The machine on the model's clock (`u8` seconds): no runtime, every instant an argument.

    use super::*;

    const P: Pacing =
        Pacing { asked: None, backoff: Duration::ZERO, floor: Duration::ZERO, reserve: Duration::ZERO };

    fn undecided(made: u32, horizon: u64, at: u8) -> Event<'static, u8> {
        let (ended, dedupe) =
            ((Outcome::Unknown, Applied::Unknown), (Dedupe::Probe, Duration::from_secs(horizon)));
        Event::Undecided { ended, made, dedupe, retry_budget: true, at }
    }

    fn send(deadline: u8) -> Machine<u8> {
        Machine::new(Setup {
            kind: EffectKind::Send,
            has_probe: true,
            has_approver: true,
            asks_person: true,
            max_attempts: 3,
            horizon: Duration::from_secs(5),
            deadline,
        })
    }

    #[test]
    fn a_verdict_counts_from_when_its_probe_looked() {
        let mut call = send(30);
        call.on(Event::Reached { by: 2 });
        // The attempt can no longer land from second 7.
        assert_eq!(call.judge(Applied::Unknown, 6, 9), Horizon::Wait);
        assert_eq!(call.judge(Applied::Unknown, 7, 7), Horizon::Passed);
        // The service's own answer that it applied nothing leaves nothing in flight.
        assert_eq!(call.judge(Applied::No, 3, 3), Horizon::Passed);
        // Past the deadline, the rest of the horizon cannot be waited out.
        let mut short = send(6);
        short.on(Event::Reached { by: 2 });
        assert_eq!(short.judge(Applied::Unknown, 3, 3), Horizon::TooLong);
        assert_eq!(call.wait_left(4), Duration::from_secs(3));
        // A decision opened for a receiver that may have forgotten the key widens the horizon.
        call.on(undecided(1, 8, 4));
        assert_eq!(call.wait_left(4), Duration::from_secs(6));
        assert_eq!(call.wait_left(12), Duration::ZERO);
    }

    #[test]
    fn an_attempt_that_applied_nothing_after_one_that_may_have_is_still_in_doubt() {
        let mut call = send(30);
        call.on(Event::Ended { effect: Applied::No });
        assert_eq!(call.call_effect(Applied::No), Applied::No);
        call.on(Event::Ended { effect: Applied::Unknown });
        call.on(Event::Ended { effect: Applied::No });
        assert_eq!(call.call_effect(Applied::No), Applied::Unknown);
        let refused = (Outcome::Retryable, Applied::No);
        assert_eq!(call.ending(End::ProbeFailed, refused), (Outcome::Unknown, Applied::Unknown));
        // A probe's "not landed", past the horizon, clears the doubt.
        call.on(Event::Reached { by: 2 });
        call.on(undecided(2, 0, 3));
        assert_eq!(call.next(3, P), Some(Action::Probe));
        let horizon = call.judge(Applied::Unknown, 8, 8);
        assert_eq!(call.on(Event::Probed { mark: ProbeMark::NotLanded, horizon }), Change::NotLanded);
        assert_eq!(call.call_effect(Applied::No), Applied::No);
        // Naming the attempt closes the decision (each alternative below on a copy of the call).
        let decided = call;
        assert_eq!(call.next(8, P), Some(Action::Attempt { after: Duration::ZERO }));
        assert_eq!(call.facts(), None);
        // The wait before it is the service's when longer than the backoff, and one the budget cannot
        // hold stops the call.
        let asked = Pacing { asked: Some(Duration::from_secs(4)), backoff: Duration::from_secs(1), ..P };
        assert_eq!({ decided }.next(8, asked), Some(Action::Attempt { after: Duration::from_secs(4) }));
        assert_eq!({ decided }.next(27, asked), Some(Action::Stop(End::OutOfBudget(Room::AskedTooLong))));
    }

    #[test]
    fn a_persons_early_not_landed_is_waited_out_and_looked_at_again() {
        let mut call = send(30);
        call.on(Event::Reached { by: 2 });
        call.on(undecided(0, 0, 3));
        assert_eq!(
            call.facts().map(|f| f.person),
            Some(PersonFact::CanAsk),
            "a resumed call may ask a person"
        );
        assert_eq!(call.next(3, P), Some(Action::Probe));
        call.on(Event::Probed { mark: ProbeMark::Failed, horizon: call.judge(Applied::Unknown, 8, 8) });
        assert_eq!(call.next(8, P), Some(Action::AskPerson));
        // They saw the attempt at second 4, before it could no longer land (7).
        let said = Event::PersonSaid { said: Some(Verdict::NotLanded), seen: 4, at: 9 };
        assert_eq!(call.on(said), Change::NotLanded);
        // Second 9 is past the horizon, but what they saw was not: look again at once.
        assert_eq!(call.next(9, P), Some(Action::WaitUntil(9)));
        assert_eq!(call.on(Event::Waited), Change::InDoubt);
        assert_eq!(call.call_effect(Applied::No), Applied::Unknown);
        assert_eq!(call.next(9, P), Some(Action::Probe));
        // A call that made an attempt of its own asks nobody.
        call.on(undecided(1, 0, 3));
        assert_eq!(call.facts().map(|f| f.person), Some(PersonFact::Nobody));
    }

    #[test]
    fn every_stop_reports_the_outcome_and_effect_of_its_row() {
        let call = send(30);
        let refused = (Outcome::Retryable, Applied::No);
        let lost = (Outcome::Unknown, Applied::Unknown);
        let ok = (Outcome::Ok, Applied::Yes);
        let table = [
            (End::Landed, lost, ok),
            (End::Settled, lost, ok),
            (End::AsIs, (Outcome::Permanent, Applied::No), (Outcome::Permanent, Applied::No)),
            (End::NoProbe, refused, refused),
            (End::NoProbe, (Outcome::Retryable, Applied::Unknown), lost),
            (End::ProbeFailed, refused, refused),
            (End::ProbeFailed, lost, lost),
            (End::BeforeHorizon, refused, lost),
            (End::Unresolved, lost, lost),
            (End::NeverRetried, lost, lost),
            (End::GaveUp, refused, refused),
            (End::OutOfBudget(Room::TooShort), refused, refused),
            (End::NoApprover, refused, refused),
            (End::RetryBudgetSpent, refused, refused),
            (End::Denied, refused, (Outcome::Permanent, Applied::No)),
        ];
        for (end, ended, reported) in table {
            assert_eq!(call.ending(end, ended), reported, "{end:?} after {ended:?}");
        }
    }

    #[test]
    fn no_request_leaves_at_or_past_its_deadline_or_the_tasks() {
        let call = send(30);
        assert!(call.budget().may_leave(9, 10));
        assert!(!call.budget().may_leave(10, 10));
        // An attempt's own deadline past the task's is cut to the task's.
        assert!(!call.budget().may_leave(30, 40));
        assert!(call.budget().may_leave(29, 40));
    }

    #[test]
    fn no_attempt_starts_on_a_spent_budget_or_below_the_floor() {
        let call = send(10);
        assert!(call.budget().may_start(8, Duration::from_secs(2)));
        assert!(!call.budget().may_start(9, Duration::from_secs(2)), "1 s left, a floor of 2 s");
        assert!(call.budget().may_start(9, Duration::ZERO));
        assert!(!call.budget().may_start(10, Duration::ZERO), "nothing left, floor or none");
        assert!(!call.budget().may_start(12, Duration::ZERO), "past the deadline");
    }

    #[test]
    fn a_claim_outlasts_the_budget_by_the_horizon_and_waits_only_while_an_attempt_could_follow() {
        let call = send(10);
        // 5 s of horizon (`send`'s setup), 1 s of margin.
        assert_eq!(call.budget().lease(4, Duration::from_secs(1)), Duration::from_secs(6 + 5 + 1));
        assert_eq!(
            call.budget().lease(12, Duration::ZERO),
            Duration::from_secs(5),
            "past the deadline: the horizon"
        );
        assert!(call.budget().may_wait_for_claim(4, Duration::from_secs(1), Duration::from_secs(4)));
        assert!(
            !call.budget().may_wait_for_claim(4, Duration::from_secs(2), Duration::from_secs(4)),
            "6 s left"
        );
    }

    #[test]
    fn an_attempt_is_sent_only_once_its_start_record_is_written_with_the_floor_still_left() {
        let floor = Pacing { floor: Duration::from_secs(2), ..P };
        let mut call = send(30);
        // Nothing to decide: the attempt goes at once, its start record first.
        assert_eq!(call.next(4, floor), Some(Action::Attempt { after: Duration::ZERO }));
        let start = Action::Record(Write::Start { left: Duration::from_secs(26) });
        assert_eq!(call.next(4, floor), Some(start));
        assert_eq!(call.next(4, floor), None, "the record is being written");
        call.on(Event::Written);
        // A quarter of the 25 s left kept back for the probe: the request leaves before second 23.
        assert_eq!(call.next(5, floor), Some(Action::Send { not_after: 23 }));
        // Written, then the floor no longer left: the end record that says nothing was sent, then stop.
        let mut late = send(30);
        late.next(27, floor);
        late.next(27, floor);
        late.on(Event::Written);
        let unsent = Write::End { outcome: Outcome::Retryable, effect: Applied::No };
        assert_eq!(late.next(29, floor), Some(Action::Record(unsent)));
        late.on(Event::Written);
        assert_eq!(late.next(29, floor), Some(Action::Stop(End::NotStarted)));
        // No attempt starts below the floor.
        let mut spent = send(30);
        spent.next(29, floor);
        assert_eq!(spent.next(29, floor), Some(Action::Stop(End::NotStarted)));
    }

    #[test]
    fn a_start_not_confirmed_writes_its_end_unless_the_fence_refused_it() {
        let started = |call: &mut Machine<u8>| {
            call.next(0, P);
            call.next(0, P);
        };
        let mut fenced = send(30);
        started(&mut fenced);
        fenced.on(Event::Unwritten { fenced: true });
        assert_eq!(fenced.next(1, P), Some(Action::Stop(End::Unstarted { fenced: true })));
        let stop = fenced.ending(End::Unstarted { fenced: true }, (Outcome::Unknown, Applied::Unknown));
        assert_eq!(stop, (Outcome::Retryable, Applied::Unknown));
        let mut failed = send(30);
        started(&mut failed);
        failed.on(Event::Unwritten { fenced: false });
        let unsent = Write::End { outcome: Outcome::Retryable, effect: Applied::No };
        assert_eq!(failed.next(1, P), Some(Action::Record(unsent)));
        // The end record fails too: the call stops all the same.
        failed.on(Event::Unwritten { fenced: false });
        assert_eq!(failed.next(1, P), Some(Action::Stop(End::Unstarted { fenced: false })));
        // After an attempt that may have landed, the call's effect is not `no` either way.
        let mut doubt = send(30);
        doubt.on(Event::Ended { effect: Applied::Unknown });
        started(&mut doubt);
        doubt.on(Event::Unwritten { fenced: false });
        let unsent = Write::End { outcome: Outcome::Retryable, effect: Applied::Unknown };
        assert_eq!(doubt.next(1, P), Some(Action::Record(unsent)));
    }

    #[test]
    fn a_claim_another_owner_holds_is_waited_for_only_while_an_attempt_could_follow() {
        let floor = Pacing { floor: Duration::from_secs(4), ..P };
        let mut call = send(10);
        call.on(Event::ClaimHeld { nap: Duration::from_secs(1) });
        assert_eq!(call.next(4, floor), Some(Action::WaitUntil(5)));
        call.on(Event::Waited);
        call.on(Event::ClaimHeld { nap: Duration::from_secs(2) });
        assert_eq!(call.next(5, floor), Some(Action::Stop(End::Busy)));
        assert_eq!(
            call.ending(End::Busy, (Outcome::Ok, Applied::Yes)),
            (Outcome::Retryable, Applied::Unknown)
        );
        // Granted: the call begins from what the log holds.
        let stamps = Stamps::new(None, None, None, None);
        let claimed = Event::Claimed { recall: None, shape: Shape::One, stamps, at: 6 };
        assert_eq!(call.on(claimed), Change::Began(Start::Fresh));
        assert_eq!(call.next(6, floor), Some(Action::Attempt { after: Duration::ZERO }));
    }

    #[test]
    fn a_resumed_attempt_is_in_flight_until_its_stamps_say_and_no_later_than_now() {
        let record = |phase: &str, effect: &str| -> Recall {
            let json = format!(
                r#"{{"phase":"{phase}","task":"t","call":"post","intent_key":"b56ee2ce5d70dc24aa8b3866ee8854a0",
                    "attempt":1,"attempt_id":"t-a1","started":"2026-12-01T06:00:00Z","budget_left_s":9{effect}}}"#
            );
            Recall { attempts: 1, last: serde_json::from_str(&json).unwrap() }
        };
        use {Change::Began, Start::Fresh, Start::Probe};
        let claimed = |recall, shape, stamps| Event::Claimed { recall: Some(recall), shape, stamps, at: 4 };
        // A start, its request sent by second 9 at the latest (its start plus its budget): this call,
        // holding the intent at second 4, bounds it by now.
        let started = record("start", "");
        let mut call = send(30);
        assert_eq!(
            call.on(claimed(&started, Shape::One, Stamps::new(Some(9), None, None, None))),
            Began(Probe)
        );
        assert_eq!(call.wait_left(4), Duration::from_secs(5));
        // When its call ended, by 3, bounds it sooner.
        let mut call = send(30);
        call.on(claimed(&started, Shape::One, Stamps::new(Some(9), Some(3), None, None)));
        assert_eq!(call.wait_left(4), Duration::from_secs(4));
        // The service's own answer that it applied nothing leaves nothing in flight.
        let refused = record("end", r#","outcome":"retryable","effect_applied":"no""#);
        let mut call = send(30);
        assert_eq!(
            call.on(claimed(&refused, Shape::One, Stamps::new(Some(9), Some(3), None, None))),
            Began(Fresh)
        );
        assert_eq!(call.wait_left(4), Duration::ZERO);
        // A batch whose record says the same but lists an item in doubt is probed, and its request is
        // in flight as any other's.
        let doubt = [crate::report::Item::unknown("row-2", "reply lost")];
        let mut call = send(30);
        let batch = Shape::Batch(Some(&doubt));
        assert_eq!(
            call.on(claimed(&refused, batch, Stamps::new(Some(9), Some(3), None, None))),
            Began(Probe)
        );
        assert_eq!(call.wait_left(4), Duration::from_secs(4));
    }

    #[test]
    fn a_wait_is_waited_only_when_an_attempt_of_the_floor_can_follow_it() {
        let call = send(10);
        assert!(call.budget().may_wait(2, Duration::from_secs(6), Duration::from_secs(2)));
        assert!(!call.budget().may_wait(3, Duration::from_secs(6), Duration::from_secs(2)));
    }

    #[test]
    fn a_receiver_deduplicates_only_while_it_keeps_the_key_for_every_request_the_call_may_send() {
        let call = send(30);
        let life = Duration::from_secs(20);
        assert_eq!(call.dedupes(Dedupe::Receiver, KeySent::Never, life), Dedupe::Receiver);
        assert_eq!(call.dedupes(Dedupe::Receiver, KeySent::At(11), life), Dedupe::Receiver);
        // Kept until second 30, the call's deadline: a request sent at its last instant is not known.
        assert_eq!(call.dedupes(Dedupe::Receiver, KeySent::At(10), life), Dedupe::Probe);
        assert_eq!(call.dedupes(Dedupe::Receiver, KeySent::LongAgo, life), Dedupe::Probe);
        assert_eq!(call.dedupes(Dedupe::Probe, KeySent::Never, life), Dedupe::Probe);
    }

    #[test]
    fn the_budget_recorded_is_the_one_at_the_start() {
        let call = send(30);
        assert_eq!(
            call.budget().recorded(Duration::from_secs(9), Duration::from_secs(4)),
            Duration::from_secs(9)
        );
    }
}
