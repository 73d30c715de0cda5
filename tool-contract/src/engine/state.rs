//! The state of one call, shared by the single and the bulk engine: its claim, attempts, log records
//! and reports.

use std::time::{Duration, SystemTime};

use super::claim::Claim;
use super::ledger::Ledger;
use super::machine::{Action, Can, Event, KeySent, Machine, Setup};
use crate::policy::Change;

use crate::call::Call;
use crate::journal::Recall;
use crate::key::IntentKey;
use crate::spec::ToolSpec;
use crate::task::Task;

/// What a store says of an intent's highest attempt: `Ok(None)` for none recorded.
pub(crate) type Attempts = Result<Option<u32>, crate::journal::JournalError>;

/// Where the attempt of a call stands: its number and id, and what the call knows of its effect so far.
#[derive(Default)]
pub(crate) struct Attempt {
    /// Its number, its start's stamp and budget, and when its call ended, as its records carry them.
    ledger: Ledger<SystemTime, Box<str>>,
    id: String,
    /// The earliest instant for the next attempt the service asked for (RFC 3339), written on the end
    /// records of the attempt that was told to wait, so a restarted process waits too.
    retry_at: Option<Box<str>>,
    /// Who said yes to the next attempt (a `money` call's second or later), until it starts: its start
    /// record names them.
    approved: Option<Box<str>>,
    /// When the intent's key may first have reached the service, for how long a receiver that
    /// deduplicates by it still keeps it.
    key_sent: KeySent<tokio::time::Instant>,
}

impl Attempt {
    /// The attempt's number, from 1 (`0` before the first).
    pub(crate) fn number(&self) -> u32 {
        self.ledger.number()
    }

    /// `{task}-{first 8 hex of the key}-a{n}`, unique across the task's intents; empty before the first.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The id, taken: for the report of a call that ends here.
    pub(crate) fn take_id(&mut self) -> String {
        std::mem::take(&mut self.id)
    }

    /// `who` said yes to the next attempt: its start record names them.
    pub(crate) fn approved(&mut self, who: String) {
        self.approved = Some(who.into_boxed_str());
    }

    /// What the start record of an approved attempt says: who approved it.
    pub(crate) fn approval_note(&self) -> Option<String> {
        Some(format!("approved by {} before attempt {}", self.approved.as_deref()?, self.number()))
    }

    /// The approval is used: the attempt it was for has started.
    pub(crate) fn approval_used(&mut self) {
        self.approved = None;
    }

    /// The attempt's start stamp and budget, once it started (or was resumed): what its records carry.
    pub(crate) fn stamp(&self) -> Option<(SystemTime, Duration)> {
        self.ledger.stamp()
    }

    /// The attempt has started: its records carry `started` and the budget it started with.
    pub(crate) fn started(&mut self, started: SystemTime, left: Duration) {
        self.ledger.started(started, left);
    }

    /// An attempt starts at `now`: the intent's key leaves no earlier, if it never left before.
    pub(crate) fn key_leaves(&mut self, now: tokio::time::Instant) {
        if self.key_sent == KeySent::Never {
            self.key_sent = KeySent::At(now);
        }
    }

    /// When the intent's key may first have reached the service.
    pub(crate) fn key_sent(&self) -> KeySent<tokio::time::Instant> {
        self.key_sent
    }

    /// When the attempt's call ended, as a record about it that says `outcome` carries it.
    pub(crate) fn sent_by(&self, outcome: crate::report::Outcome) -> Option<&str> {
        self.ledger.sent_by(outcome).map(|by| &**by)
    }

    /// The service asked to wait `wait` before the next attempt: the records written from now on say
    /// until when.
    pub(crate) fn asked_to_wait(&mut self, wait: Duration) {
        self.retry_at = Some(super::retry_stamp(wait).into_boxed_str());
    }

    /// Until when the service asked to wait, as the records say it.
    pub(crate) fn retry_at(&self) -> Option<&str> {
        self.retry_at.as_deref()
    }

    /// Continue from the attempts a read's log holds: the next is numbered after them.
    pub(crate) fn number_after(&mut self, attempts: u32) {
        self.ledger.resume(attempts, None, None);
    }

    /// Take back the number given to an attempt that was never started: the call speaks for the
    /// attempt before it, if any.
    pub(crate) fn unnumber(&mut self, task: &Task, key: &IntentKey) {
        self.id = match self.ledger.give_back() {
            0 => String::new(),
            n => crate::call::attempt_id(task.id(), key, n),
        };
    }
}

/// A read's start record held here, not yet in the log, while the read has not had to wait: it goes to
/// the log with the read's end record ([`crate::journal::Journal::append_attempt`]), or alone the moment
/// the read has to wait. What it carries is the attempt's stamp and budget, which its [`Ledger`] keeps.
#[derive(Default)]
pub(crate) struct HeldStart {
    /// Whether the start record is still held (set by the start, taken by the flush or the end record).
    holding: std::sync::atomic::AtomicBool,
}

impl HeldStart {
    /// Hold the start record of a read.
    fn hold(&mut self) {
        *self.holding.get_mut() = true;
    }

    /// Whether the start record was still held, taken.
    pub(crate) fn take(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        // Only the call's own future touches it, one poll at a time: no read-modify-write needed.
        let holding = self.holding.load(Relaxed);
        self.holding.store(false, Relaxed);
        holding
    }
}

/// The state of one call, shared by every shape of call: who it is (task, tool, intent), where its
/// attempt stands, its claim, and the read's start record it may hold back. Its methods are split by
/// job: what goes to the log in `log.rs` ([`Run::log`], a view of the call as its writer), how a report
/// is built in `ending.rs` ([`Run::report`]); the budget's rules are `wait.rs`'s pure [`Pace`](super::wait::Pace)
/// ([`Run::pace`]), the call's decisions are its [`Machine`]'s.
pub(crate) struct Run<'a> {
    task: &'a Task,
    spec: &'a ToolSpec,
    key: IntentKey,
    /// Where the attempt stands.
    pub(super) now: Attempt,
    /// The call's decisions: what it knows of its effect, and where its attempt stands against its
    /// landing horizon.
    pub(super) machine: Machine<tokio::time::Instant>,
    /// The side effect's claim on its intent, held for the rest of the call; `None` for a read.
    pub(super) claim: Option<&'a Claim<'a>>,
    /// Where an escalation the report announces waits to be handed to the sink once the call is over.
    pub(super) escalation: &'a std::sync::Mutex<Option<Box<crate::task::Escalation>>>,
    /// A read's start record, held back from the log while the read has not had to wait.
    pub(super) held: HeldStart,
    /// What a question to a person binds of the call (a call by name's): boxed, as few calls have it.
    arguments: Option<Box<crate::call::Arguments>>,
}

impl<'a> Run<'a> {
    /// `shape`: whether the call's tool has a probe, and whether its report can answer from one
    /// person's settlement.
    pub(crate) fn new(
        task: &'a Task,
        spec: &'a ToolSpec,
        key: IntentKey,
        escalation: &'a std::sync::Mutex<Option<Box<crate::task::Escalation>>>,
        (has_probe, asks_person): (bool, bool),
    ) -> Self {
        let can = Can { probe: has_probe, approver: task.approver_ref().is_some(), person: asks_person };
        let setup = Setup::of(spec, can, task.deadline());
        Run {
            task,
            spec,
            key,
            now: Attempt::default(),
            machine: Machine::new(setup),
            claim: None,
            escalation,
            held: HeldStart::default(),
            arguments: None,
        }
    }

    /// What a question to a person binds of this call: its arguments' digest and those it shows.
    pub(crate) fn bind(&mut self, arguments: Option<Box<crate::call::Arguments>>) {
        self.arguments = arguments;
    }

    /// What a question to a person binds of this call (nothing, for a direct call).
    pub(crate) fn arguments(&self) -> &crate::call::Arguments {
        static NONE: crate::call::Arguments =
            crate::call::Arguments { digest: None, shows: std::collections::BTreeMap::new() };
        self.arguments.as_deref().unwrap_or(&NONE)
    }

    /// The task the call runs under.
    pub(crate) fn task(&self) -> &'a Task {
        self.task
    }

    /// The tool.
    pub(crate) fn spec(&self) -> &'a ToolSpec {
        self.spec
    }

    /// The call's intent.
    pub(crate) fn key(&self) -> IntentKey {
        self.key
    }

    /// The budget's rules for this call.
    pub(crate) fn pace(&self) -> super::wait::Pace<'a> {
        super::wait::Pace::of(self.spec, &self.key)
    }

    /// Number the next attempt: `{task}-{first 8 hex of the key}-a{n}`, unique across the task's intents.
    pub(crate) fn next_attempt(&mut self) {
        let number = self.now.ledger.next_attempt();
        self.now.retry_at = None;
        self.now.id = crate::call::attempt_id(self.task.id(), &self.key, number);
    }

    /// Continue from what the log knows of the intent: its attempt numbers, the attempt that may have
    /// reached the service (its landing horizon, from its records' stamps), and a wait the service asked
    /// an earlier run for; with what the call does first, as its machine says once told of the claim
    /// ([`Event::Claimed`]).
    pub(crate) fn resume(
        &mut self,
        recall: &Recall,
        shape: crate::policy::Shape<'_>,
    ) -> (Option<Box<super::ResumeWait>>, crate::policy::Start) {
        self.now.id = recall.last.attempt_id.clone();
        let started = crate::journal::parse_rfc3339(&recall.last.started);
        let stamp = started.map(|at| (at, Duration::from_secs(recall.last.budget_left_s)));
        self.now.ledger.resume(recall.attempts, stamp, recall.last.sent_by.as_deref().map(Box::from));
        self.now.key_sent = key_sent_before(recall);
        let wait = super::ResumeWait::of(&recall.last);
        // A wait the service asked for binds every later attempt until it passes: the records this
        // call writes before it (a probe's verdict) carry it on, so the next call waits too.
        if wait.is_some() {
            self.now.retry_at = recall.last.retry_at.as_deref().map(Box::from);
        }
        let at = tokio::time::Instant::now();
        let stamps = on_this_clock(recall, at);
        let began = self.machine.on(Event::Claimed { recall: Some(recall), shape, stamps, at });
        (wait, if let Change::Began(start) = began { start } else { crate::policy::Start::Fresh })
    }

    /// The attempt's call is over (answered, failed, timed out): its request reaches the service no
    /// later than now, and its landing horizon runs from here.
    pub(crate) fn attempt_over(&mut self) {
        if self.spec.effect().has_side_effect() {
            let now = tokio::time::Instant::now();
            self.machine.on(Event::Reached { by: now });
            if self.log().keeps_records() {
                let by = crate::rules::stamp_up(crate::journal::wall_clock_at(now));
                self.now.ledger.over(by.into_boxed_str());
            }
        }
    }

    /// A read's start, when nothing needs waiting for: its record is held (see `held_start`), or not
    /// kept at all without a log, and its request named at once ([`Action::Send`]). `Some` with the
    /// instant it may leave from (`now`, when it started with `left` of the budget), the budget left then
    /// and the instant it may no longer leave at; `None` for any other start, which
    /// [`super::log::start_attempt`] makes.
    pub(crate) fn start_read(
        &mut self,
        now: tokio::time::Instant,
        left: Duration,
        started: SystemTime,
    ) -> Option<(tokio::time::Instant, Duration, tokio::time::Instant)> {
        if self.spec.effect().has_side_effect() || self.claim.is_some() {
            return None;
        }
        if self.task.journal_ref().is_some() {
            // What it carries is the ledger's stamp, set to `(started, left)` as the attempt started.
            debug_assert_eq!(self.now.stamp(), Some((started, left)));
            self.held.hold();
        }
        self.machine.on(Event::Written);
        match self.machine.next(now, self.pace().starting()) {
            Some(Action::Send { not_after }) => Some((now, left, not_after)),
            // The budget is as it was a moment ago, when the start was allowed: the request goes.
            _ => Some((now, left, self.task.deadline())),
        }
    }

    /// The attempt's call context, its request named by the machine at `now` to leave before
    /// `not_after`: from now on it may reach the service.
    pub(crate) fn call(&mut self, now: tokio::time::Instant, not_after: tokio::time::Instant) -> Call {
        if self.spec.effect().has_side_effect() {
            self.machine.on(Event::Reached { by: now });
        }
        Call::of(self.task.id(), &self.now.id, self.key, self.now.number(), not_after)
    }
}

/// The last record's stamps ([`crate::rules::stamps`]) on tokio's clock at `now`: each instant of the
/// wall clock as long before `now` as it is before the wall clock's now (one still ahead is now).
fn on_this_clock(recall: &Recall, now: tokio::time::Instant) -> crate::rules::Stamps<tokio::time::Instant> {
    let wall = crate::journal::wall_clock();
    crate::rules::stamps(&recall.last).map(|stamp: SystemTime| match wall.duration_since(stamp) {
        Ok(ago) => now.checked_sub(ago).unwrap_or(now),
        Err(_) => now,
    })
}

/// When the intent's key may first have reached the service, from what the log holds: the start of its
/// first attempt when that is the last one recorded (its stamp rounded down, and early by
/// [`crate::rules::CLOCK_SKEW`] for a clock that may be another worker's); otherwise the first
/// attempt's start is not in the record, and is taken as long ago.
fn key_sent_before(recall: &Recall) -> KeySent<tokio::time::Instant> {
    if recall.attempts != 1 || recall.last.attempt != 1 {
        return KeySent::LongAgo;
    }
    let Some(started) = crate::journal::parse_rfc3339(&recall.last.started) else {
        return KeySent::LongAgo;
    };
    let now = tokio::time::Instant::now();
    let ago = crate::journal::wall_clock().duration_since(started).unwrap_or_default();
    match ago.checked_add(crate::rules::CLOCK_SKEW).and_then(|ago| now.checked_sub(ago)) {
        Some(at) => KeySent::At(at),
        None => KeySent::LongAgo,
    }
}

/// Whole seconds, rounded up: a wait is never reported shorter than it is.
pub(crate) fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}
