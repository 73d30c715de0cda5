//! The protocol as a stateright model: its actors' steps, each decided by the crate's rules.

use tool_contract::effect::EffectKind;
use tool_contract::probe::ProbeMark;
use tool_contract::rules::Holder;
use tool_contract::unstable::machine::{Ledger, Machine};

use crate::rules::Rules;
use crate::state::{Msg, Question, Rec, Who, Word};

/// The bounds of one run of the checker.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// The tool's kind: `send` or `money`.
    pub kind: EffectKind,
    /// Workers calling the intent.
    pub workers: u8,
    /// Each call's budget, in ticks.
    pub budget: u8,
    /// The tool's landing horizon, in ticks.
    pub window: u8,
    /// The tool's deadline floor, in ticks.
    pub floor: u8,
    /// What a lease adds past the call's budget and the horizon.
    pub margin: u8,
    /// The clock stops here.
    pub max_time: u8,
    /// Crashes (a worker restarting from the store with a new call), all workers together.
    pub crashes: u8,
    /// Settlements a person sends.
    pub looks: u8,
    /// Answers to approval questions a person sends.
    pub answers: u8,
    /// Messages the network loses.
    pub losses: u8,
    /// Probes that answer at a later tick than the one they looked at, all workers together: the
    /// service read at one instant, the verdict back later (a slow read, a retried connection).
    pub late_probes: u8,
    /// A person's settlement is recorded when it reaches the store, ticks after they looked: true of
    /// what they saw when they looked, and judged by when they looked (the `seen` the settle command
    /// and the console record). Without it, they look as their word is recorded.
    pub late_looks: bool,
    /// Ticks a worker's clock stands still while the world's runs, once in the run (0: never): a
    /// process suspended (a VM paused, a laptop asleep: the monotonic clock its budget runs on stops)
    /// between its claim being granted and its start record being sent, so it resumes believing it has
    /// budget its lease no longer covers. Only there: a worker suspended after its start record is
    /// written and before its request leaves is the window no client closes (docs/protocol.md).
    pub suspend: u8,
    /// Worker 2 is worker 1 started again under its name, its second process, while worker 1 is not
    /// dead but suspended (an orchestrator that took the suspension for a death): their owner ids
    /// differ only by the process (T5).
    pub replaced: bool,
    /// Ticks of the healed phase after `max_time` (0: none): no message is lost, probes answer, the
    /// service replies, nobody crashes, time passes only when nothing else can happen, and a
    /// restarted process calls the intent again while it is in doubt. The `eventually` property is
    /// checked where it ends.
    pub heal: u8,
}

impl Config {
    /// The tool's landing horizon as the machine takes it: a request is applied, if ever, while
    /// `now <= sent + window`, so it can no longer land from the tick after.
    pub fn horizon(&self) -> std::time::Duration {
        crate::rules::ticks(self.window.saturating_add(1))
    }

    /// The bound CI checks: two workers with a budget of 3 ticks, a horizon of 1, faults until the clock
    /// reaches 4, then 6 healed ticks; one settlement and one answer by a person; no crash and no lost
    /// message besides the service's lost replies (the deeper bound, [`Config::deep`], adds them).
    pub fn ci(kind: EffectKind) -> Config {
        Config {
            kind,
            workers: 2,
            budget: 3,
            window: 1,
            floor: 1,
            margin: 0,
            // A takeover can happen once the first lease (4 ticks) runs out.
            max_time: 4,
            crashes: 0,
            looks: 1,
            answers: 1,
            losses: 0,
            late_probes: 1,
            late_looks: false,
            suspend: 0,
            replaced: false,
            // Long enough for the last call under way at 4 to end, its lease to run out and a restarted
            // process to wait out the horizon and probe.
            heal: 6,
        }
    }

    /// The crash bound CI also checks: one worker that crashes once and restarts with a new call from
    /// the store while its dead call's messages are still in flight, one message lost by the network,
    /// and a person's settlement recorded ticks after they looked ([`Config::late_looks`]); otherwise
    /// as [`Config::ci`].
    pub fn crash(kind: EffectKind) -> Config {
        Config { workers: 1, crashes: 1, losses: 1, late_looks: true, ..Config::ci(kind) }
    }

    /// The suspension bound: two workers, the second started under the first's name
    /// ([`Config::replaced`]), with a budget of 2 ticks, one of them suspended for as long as a lease
    /// after its claim is granted; no person and no late probe; a longer healed phase.
    pub fn suspended(kind: EffectKind) -> Config {
        Config {
            budget: 2,
            suspend: 3,
            replaced: true,
            looks: 0,
            answers: 0,
            late_probes: 0,
            // A takeover can happen once the first lease (3 ticks) runs out.
            max_time: 4,
            // Long enough for a call whose deadline moved by the suspension to end, and its intent to
            // be resolved after it.
            heal: 9,
            ..Config::ci(kind)
        }
    }

    /// The deeper bound: both workers of [`Config::ci`] with a crash among them, faults until the clock
    /// reaches 3, no probe answering late (docs/protocol.md gives its state count and time).
    pub fn deep(kind: EffectKind) -> Config {
        Config { crashes: 1, max_time: 3, late_probes: 0, ..Config::ci(kind) }
    }
}

/// The model: the bounds and the rules its actors follow.
#[derive(Clone, Copy)]
pub struct Protocol {
    /// The bounds.
    pub config: Config,
    /// The rules (the crate's own unless a test swapped one).
    pub rules: Rules,
}

/// Where a worker's call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Act {
    /// Not started.
    Idle,
    /// Waiting for the store's answer to its claim.
    Claiming,
    /// Another owner holds the intent: it claims again at this tick.
    Backoff(u8),
    /// Waiting for the store to take its start record.
    Starting,
    /// Its request is sent; waiting for the reply.
    Calling,
    /// About to probe.
    Probing,
    /// Its probe read the service at tick `at` and found the attempt `landed` or not; the verdict is
    /// not back yet.
    Looked {
        /// When the probe read the service.
        at: u8,
        /// What it found then.
        landed: bool,
    },
    /// Waiting out the horizon.
    Waiting,
    /// Waiting for a person's answer.
    Asking,
    /// Reported.
    Done,
}

/// One worker and its current call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Worker {
    /// The call's serial in its process.
    pub call: u8,
    /// The worker's process: one more at each restart.
    pub incarnation: u8,
    /// The call's owner id, as [`Rules::owner`] makes it: its claim, its records and the messages to it
    /// carry it.
    pub owner: Who,
    /// When its budget ends.
    pub deadline: u8,
    /// Where it stands.
    pub act: Act,
    /// The attempt in hand (the intent's highest known) as its records tell it: its number, its start's
    /// stamp with the budget its starter had, and when its call ended. The engine's own ledger.
    pub ledger: Ledger<u8, u8>,
    /// The call's decisions: the engine's own machine, fed what the call finds, which keeps the
    /// decision open after an attempt that did not end `ok`.
    pub machine: Machine<u8>,
    /// Attempts this call made.
    pub made: u8,
    /// The reply of this call's attempt was not heard.
    pub lost_reply: bool,
}

impl Worker {
    /// The attempt in hand's number.
    pub fn attempt(&self) -> u8 {
        u8::try_from(self.ledger.number()).unwrap_or(u8::MAX)
    }

    pub(crate) fn idle(owner: Who, machine: Machine<u8>) -> Worker {
        Worker {
            call: owner.call,
            incarnation: owner.incarnation,
            owner,
            deadline: 0,
            act: Act::Idle,
            ledger: Ledger::default(),
            machine,
            made: 0,
            lost_reply: false,
        }
    }
}

/// Facts about the path so far that the properties read (violations and reachability).
pub mod ghost {
    /// A record about an attempt accepted from neither its starter nor the holder's probe verdict.
    pub const FOREIGN_RECORD: u32 = 1;
    /// One attempt number started twice, or sent by two owners.
    pub const TWO_ATTEMPTS: u32 = 1 << 1;
    /// The highest attempt went down.
    pub const SHRANK: u32 = 1 << 2;
    /// A person's word recorded about another attempt than they named, or twice.
    pub const UNBOUND: u32 = 1 << 3;
    /// A next attempt's request sent while an earlier attempt's could still land.
    pub const ACTED_EARLY: u32 = 1 << 4;
    /// A claim granted past its caller's deadline.
    pub const LATE_CLAIM: u32 = 1 << 5;
    /// A call reported ok or effect yes with no effect applied.
    pub const OK_WITHOUT_EFFECT: u32 = 1 << 6;
    /// A call reported ok after its attempt's reply was lost.
    pub const OK_AFTER_LOST_REPLY: u32 = 1 << 8;
    /// A former holder's record refused after another owner took the intent over.
    pub const TAKEOVER: u32 = 1 << 9;
    /// A call answered from a person's settlement (landed, or a next attempt after not landed).
    pub const SETTLEMENT_HONOURED: u32 = 1 << 10;
}

/// The whole system's state.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    /// The clock, in ticks.
    pub now: u8,
    /// The workers.
    pub workers: Vec<Worker>,
    /// The intent's claim in the store.
    pub claim: Option<Holder<Who, u8>>,
    /// The intent's last word in the store.
    pub word: Option<Word>,
    /// The intent's last approval record.
    pub question: Option<Question>,
    /// The attempts the service applied, in order.
    pub applied: Vec<u8>,
    /// Messages in flight, grouped by channel (the function `channel`), each channel in the order sent.
    pub net: Vec<Msg>,
    /// Crashes so far.
    pub crashes: u8,
    /// Settlements and answers a person sent so far.
    pub looks: u8,
    /// Answers sent so far.
    pub answers: u8,
    /// Messages lost so far.
    pub lost: u8,
    /// Probes that answered late so far.
    pub late_probes: u8,
    /// Suspensions so far.
    pub suspends: u8,
    /// The attempts a report said effect `no` about (bit n: attempt n).
    pub said_no: u8,
    /// Who started each attempt (index = attempt).
    pub starters: [Option<Who>; 6],
    /// Which attempt a question answered yes was about (bit n: the question before attempt n + 1).
    pub approvals: u8,
    /// Which attempts a person's settlement was recorded about.
    pub spoken: u8,
    /// Which attempts a person's answer was recorded about.
    pub answered: u8,
    /// The facts about the path the properties read (`ghost`'s flags).
    pub ghost: u32,
    /// When a restarted process last called the intent again in the healed phase.
    pub resolved: Option<u8>,
    /// A call reported `retryable` and the intent has not been called since: the agent calls again.
    pub retry: bool,
}

/// One step of one actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Time passes one tick: leases, budgets and horizons run.
    Tick,
    /// A worker starts a call: it claims the intent.
    Begin(u8),
    /// A worker's budget is spent: it reports what it knows.
    GiveUp(u8),
    /// A worker crashes; it restarts with a new call, from the store.
    Crash(u8),
    /// A worker's process is suspended, its claim granted and its start record not yet sent: its clock
    /// stands still for [`Config::suspend`] ticks of the world's.
    Suspend(u8),
    /// A worker stops waiting for its attempt's reply.
    Timeout(u8),
    /// A worker's probe reads the service (`Failed`: the read failed).
    Probe(u8, ProbeMark),
    /// A worker's probe reads the service; its verdict comes back at a later tick.
    ProbeLooks(u8),
    /// The verdict of a probe that looked at an earlier tick comes back.
    ProbeAnswers(u8),
    /// A worker has waited out the horizon and looks again.
    Wake(u8),
    /// A worker whose claim found the intent held claims again.
    Reclaim(u8),
    /// In the healed phase, worker 1 calls the intent again in a new process: a restart's recall of an
    /// intent in doubt, or the agent's retry of a call reported `retryable`.
    Resolve,
    /// The network delivers a message.
    Deliver(Msg),
    /// The service applies a request (delivered now) and its reply reaches the caller.
    Apply(Msg),
    /// The service applies a request, and its reply is lost.
    ApplyLost(Msg),
    /// The service refuses a request (a 503: nothing applied).
    Refuse(Msg),
    /// The network loses a message.
    Drop(Msg),
    /// A person looks at the intent in doubt and settles what they saw.
    Look,
    /// A person answers the waiting question: yes (`true`) or no.
    Answer(bool),
}

/// A message's channel: the call it is from or to, and its way (0: to the store, 1: to the service,
/// 2: from the store). Each channel is first in, first out; channels reorder among themselves.
pub(crate) fn channel(msg: &Msg) -> (u8, u8, u8, u8) {
    match *msg {
        Msg::Request { who, .. } => (who.worker, who.incarnation, who.call, 1),
        Msg::Claim { who, .. }
        | Msg::Start { who, .. }
        | Msg::End { who, .. }
        | Msg::Ask { who, .. }
        | Msg::Release { who } => (who.worker, who.incarnation, who.call, 0),
        Msg::Claimed { who, .. } | Msg::Started { who, .. } | Msg::Approved { who, .. } => {
            (who.worker, who.incarnation, who.call, 2)
        }
        Msg::Reply { who, .. } => (who.worker, who.incarnation, who.call, 3),
        Msg::Settle { .. } | Msg::Answer { .. } => (crate::state::PERSON, 0, 0, 0),
    }
}

impl Protocol {
    /// Worker `w`'s first call in its process `incarnation`, idle.
    pub(crate) fn fresh(&self, w: u8, incarnation: u8) -> Worker {
        Worker::idle(Who { worker: w, incarnation, call: 1 }, self.rules.machine(&self.config, 0))
    }

    /// The name worker `w` runs under: its own, or, when [`Config::replaced`], worker 1's for worker 2.
    pub(crate) fn name(&self, w: u8) -> u8 {
        if self.config.replaced && w == 1 { 0 } else { w }
    }

    /// The process worker `w` starts as: worker 2 replacing worker 1 is its second.
    pub(crate) fn first_incarnation(&self, w: u8) -> u8 {
        u8::from(self.config.replaced && w == 1)
    }

    /// The owner id a call claims and writes under, as the store compares it: [`Rules::owner`] of its
    /// worker's name, process and serial. (A message carries the call itself, which is where its answer
    /// goes; two calls whose owner ids are equal are one owner to the store.)
    pub(crate) fn id(&self, who: Who) -> Who {
        if who.worker == crate::state::PERSON {
            return who;
        }
        (self.rules.owner)(self.name(who.worker), who.incarnation, who.call)
    }
}

impl State {
    pub(crate) fn send(&mut self, msg: Msg) {
        self.net.push(msg);
        // Canonical: by channel, each channel in its order.
        self.net.sort_by_key(channel);
    }

    pub(crate) fn take(&mut self, msg: &Msg) -> bool {
        match self.net.iter().position(|m| m == msg) {
            Some(i) => {
                self.net.remove(i);
                true
            }
            None => false,
        }
    }

    pub(crate) fn who(&self, w: u8) -> Who {
        self.workers[usize::from(w)].owner
    }

    pub(crate) fn fold(&mut self, rec: Rec) {
        let before = self.word.map_or(0, |w| w.attempts);
        let word = Word::fold(self.word, rec);
        if word.attempts < before {
            self.ghost |= ghost::SHRANK;
        }
        self.word = Some(word);
    }
}
