//! What each actor does on each step: the workers as the engine does, the store as the stores do,
//! the service, the network and a person. A worker's decisions are its call machine's (`Machine`),
//! but for the steps docs/protocol.md lists as the model's own; the store decides by [`Rules`](crate::Rules).

use std::time::Duration;

use tool_contract::policy::{Change, End, Horizon, Shape, Start};
use tool_contract::probe::ProbeMark;
use tool_contract::rules::Stamps;
use tool_contract::spec::Dedupe;
use tool_contract::unstable::machine::{self, Event, Pacing, Write};
use tool_contract::{Applied, Outcome, classify};

use crate::model::{Act, Action, Protocol, State, Worker, ghost};
use crate::rules::ticks;
use crate::state::{Got, Msg, code};

impl Protocol {
    fn worker<'s>(&self, s: &'s mut State, w: u8) -> &'s mut Worker {
        &mut s.workers[usize::from(w)]
    }

    /// How an attempt whose reply never came ends, as the engine classifies its timer
    /// (`classify::no_reply`): for the model's side effects, `unknown` with its effect unknown.
    fn no_reply(&self) -> (Outcome, Applied) {
        let class = classify::no_reply(self.config.kind, "the attempt's time limit");
        (class.outcome(), class.effect())
    }

    /// The call reports and gives its claim up.
    fn report(&self, s: &mut State, w: u8, outcome: Outcome, effect: Applied) {
        self.report_holding(s, w, outcome, effect, true);
    }

    /// [`Protocol::report`]; `holds`: whether the store may have granted the call its claim.
    fn report_holding(&self, s: &mut State, w: u8, outcome: Outcome, effect: Applied, holds: bool) {
        let who = s.who(w);
        let attempt = s.workers[usize::from(w)].attempt();
        if (outcome == Outcome::Ok || effect == Applied::Yes) && s.applied.is_empty() {
            s.ghost |= ghost::OK_WITHOUT_EFFECT;
        }
        if effect == Applied::No {
            s.said_no |= 1 << attempt.min(7);
        }
        if outcome == Outcome::Ok && s.workers[usize::from(w)].lost_reply {
            s.ghost |= ghost::OK_AFTER_LOST_REPLY;
        }
        self.worker(s, w).act = Act::Done;
        // `retryable` tells the agent that calling again is safe: it will.
        s.retry |= outcome == Outcome::Retryable;
        // The release goes with the call's last record (`Journal::finish`), or at once when the call
        // wrote none.
        let last_end = s.net.iter().rposition(|m| matches!(m, Msg::End { who: by, .. } if *by == who));
        match last_end {
            Some(i) => {
                if let Msg::End { finish, .. } = &mut s.net[i] {
                    *finish = true;
                }
            }
            None if holds => s.send(Msg::Release { who }),
            None => {}
        }
    }

    /// The end record of the attempt in hand, as its starter writes it: its call is over now, so its
    /// request reached the service by now.
    fn end_attempt(&self, s: &mut State, w: u8, outcome: Outcome, effect: Applied) {
        let now = s.now;
        self.worker(s, w).ledger.over(now);
        self.end_record(s, w, (outcome, effect), None);
    }

    /// A record about the attempt in hand that says `said` (a probe's verdict with `probe`): what the
    /// attempt's ledger says every record about it carries, its start's stamp and budget and, but for
    /// an `ok`, when its call ended.
    fn end_record(&self, s: &mut State, w: u8, said: (Outcome, Applied), probe: Option<ProbeMark>) {
        let k = s.workers[usize::from(w)];
        let who = s.who(w);
        let (started, left) = k.ledger.stamp().unwrap_or((0, Duration::ZERO));
        s.send(Msg::End {
            who,
            attempt: k.attempt(),
            started,
            left: u8::try_from(left.as_secs()).unwrap_or(u8::MAX),
            sent_by: k.ledger.sent_by(said.0).copied(),
            outcome: code::outcome(said.0),
            effect: code::effect(said.1),
            probe: code::probe(probe),
            finish: false,
        });
    }

    /// How the model's worker paces its attempts: its service asks for no wait (`Retry-After`), its tool
    /// has no backoff and keeps the engine's default back for the probe.
    fn pacing(&self) -> Pacing {
        Pacing { floor: ticks(self.config.floor), ..Pacing::default() }
    }

    /// The attempt's start was not confirmed (`fenced`: the store refused it), told to its machine: the
    /// end record it names, which says the attempt sent nothing (none when the fence refused the
    /// start), then its stop, reported; the attempt's number is given back.
    fn unstarted(&self, s: &mut State, w: u8, fenced: bool) {
        let (now, pacing) = (s.now, self.pacing());
        let k = self.worker(s, w);
        k.machine.on(Event::Unwritten { fenced });
        let mut action = k.machine.next(now, pacing);
        if let Some(machine::Action::Record(Write::End { outcome, effect })) = action {
            self.end_record(s, w, (outcome, effect), None);
            let k = self.worker(s, w);
            k.machine.on(Event::Written);
            action = k.machine.next(now, pacing);
        }
        let Some(machine::Action::Stop(end)) = action else { return };
        let k = self.worker(s, w);
        k.ledger.give_back();
        let (outcome, effect) = k.machine.ending(end, (Outcome::Retryable, Applied::Unknown));
        let effect = k.machine.call_effect(effect);
        self.report(s, w, outcome, effect);
    }

    /// Open the worker's decision after an attempt that ended `ended` (or, with `made == 0`, at the
    /// start of a call that resumed an intent in doubt), then take its first step.
    fn open(&self, s: &mut State, w: u8, ended: (Outcome, Applied)) {
        let now = s.now;
        let k = self.worker(s, w);
        // The model's tool is a `send` or `money`: the probe deduplicates, and the service's retry
        // budget always has room.
        let who = (Dedupe::Probe, self.config.horizon());
        let made = u32::from(k.made);
        k.machine.on(Event::Undecided { ended, made, dedupe: who, retry_budget: true, at: now });
        self.decide(s, w);
    }

    /// Ask the worker's machine for the next action of its open decision, and take it.
    fn decide(&self, s: &mut State, w: u8) {
        let (now, pacing) = (s.now, self.pacing());
        let Some(action) = self.worker(s, w).machine.next(now, pacing) else { return };
        let k = s.workers[usize::from(w)];
        match action {
            // The store wakes it once its machine's horizon has passed (`Machine::wait_left`).
            machine::Action::WaitUntil(_) => self.worker(s, w).act = Act::Waiting,
            machine::Action::Probe => self.worker(s, w).act = Act::Probing,
            machine::Action::Approve => {
                let who = s.who(w);
                s.send(Msg::Ask { who, attempt: k.attempt(), until: k.deadline });
                self.worker(s, w).act = Act::Asking;
            }
            // With no backoff, the wait is none.
            machine::Action::Attempt { .. } => self.start_attempt(s, w),
            // The model's person settles through the store, never as a step of a call (its machine is
            // set up so): were they asked, they would not answer.
            machine::Action::AskPerson => {
                self.worker(s, w).machine.on(Event::PersonSaid { said: None, seen: now, at: now });
                self.decide(s, w);
            }
            machine::Action::Stop(end) => {
                let Some(facts) = k.machine.facts() else { return };
                let (outcome, effect) = k.machine.ending(end, (facts.outcome, facts.effect));
                self.report(s, w, outcome, k.machine.call_effect(effect));
            }
            // A decision names neither: they follow the attempt it names.
            machine::Action::Record(_) | machine::Action::Send { .. } => {}
        }
    }

    /// Start the next attempt: its fenced start record first, as its machine names it if the budget
    /// can hold it (the machine names the attempt first when nothing was open to decide).
    fn start_attempt(&self, s: &mut State, w: u8) {
        let (now, pacing) = (s.now, self.pacing());
        let bound = usize::from(s.workers[usize::from(w)].attempt()) + 1 >= s.starters.len();
        let machine = &mut self.worker(s, w).machine;
        let mut action = machine.next(now, pacing);
        if let Some(machine::Action::Attempt { .. }) = action {
            action = machine.next(now, pacing);
        }
        let k = s.workers[usize::from(w)];
        let left = match action {
            Some(machine::Action::Record(Write::Start { left })) if !bound => left,
            // Not started: the budget cannot hold it (the stop the machine names, reported as it
            // says), or the model's bound on attempts is reached (as the same stop).
            _ => {
                let end = match action {
                    Some(machine::Action::Stop(end)) => end,
                    _ => End::NotStarted,
                };
                let (outcome, effect) = k.machine.ending(end, (Outcome::Retryable, Applied::Unknown));
                return self.report_holding(s, w, outcome, k.machine.call_effect(effect), true);
            }
        };
        let who = s.who(w);
        let left = u8::try_from(left.as_secs()).unwrap_or(u8::MAX);
        let k = self.worker(s, w);
        let next = k.ledger.next_attempt();
        k.ledger.started(now, ticks(left));
        (k.act, k.made) = (Act::Starting, k.made + 1);
        let attempt = u8::try_from(next).unwrap_or(u8::MAX);
        s.send(Msg::Start { who, attempt, at: now, left });
    }

    /// A worker's step that is not a message.
    pub(crate) fn worker_step(&self, s: &mut State, action: Action) {
        match action {
            Action::Begin(w) => {
                let deadline = s.now.saturating_add(self.config.budget);
                let lease = self.config.budget + self.config.window + self.config.margin;
                let who = s.who(w);
                let machine = self.rules.machine(&self.config, deadline);
                let k = self.worker(s, w);
                (k.deadline, k.machine, k.act) = (deadline, machine, Act::Claiming);
                s.send(Msg::Claim { who, deadline, lease });
            }
            Action::GiveUp(w) => {
                // The budget is spent: what the engine does at its deadline, step by step.
                let k = s.workers[usize::from(w)];
                match k.act {
                    // The attempt's time limit: no reply.
                    Act::Calling => {
                        let (outcome, effect) = self.no_reply();
                        self.end_attempt(s, w, outcome, effect);
                        self.ended(s, w, (outcome, effect));
                    }
                    // A start the store did not confirm in time may still be stored after the call gave
                    // up on it (`engine::log::start_attempt`).
                    Act::Starting => self.unstarted(s, w, false),
                    Act::Claiming | Act::Backoff(_) => {
                        let effect = k.machine.call_effect(Applied::No);
                        // A call backing off holds nothing; one claiming may have been granted its claim.
                        let holds = !matches!(k.act, Act::Backoff(_));
                        self.report_holding(s, w, Outcome::Retryable, effect, holds);
                    }
                    // The horizon's wait ends with the budget, and the probe then has none to run in.
                    Act::Waiting | Act::Probing | Act::Looked { .. } => {
                        let machine = &mut self.worker(s, w).machine;
                        if k.act == Act::Waiting {
                            machine.on(Event::Waited);
                        }
                        machine.on(Event::Probed { mark: ProbeMark::Failed, horizon: Horizon::Passed });
                        self.decide(s, w);
                    }
                    // No answer in time is a no.
                    Act::Asking => {
                        self.worker(s, w).machine.on(Event::Approved { yes: false });
                        self.decide(s, w);
                    }
                    Act::Idle | Act::Done => {}
                }
            }
            Action::Crash(w) => {
                s.crashes += 1;
                // It restarts under its name, as a new process whose calls count from 1.
                s.workers[usize::from(w)] = self.fresh(w, s.workers[usize::from(w)].incarnation + 1);
            }
            Action::Suspend(w) => {
                // Its budget runs on a clock that stood still: in the world's time, its deadline moves,
                // and so does its machine's (a call still claiming has told its machine nothing yet).
                s.suspends += 1;
                let deadline = s.workers[usize::from(w)].deadline.saturating_add(self.config.suspend);
                let machine = self.rules.machine(&self.config, deadline);
                let k = self.worker(s, w);
                (k.deadline, k.machine) = (deadline, machine);
            }
            Action::Timeout(w) => {
                let (outcome, effect) = self.no_reply();
                self.end_attempt(s, w, outcome, effect);
                self.worker(s, w).lost_reply = true;
                self.ended(s, w, (outcome, effect));
            }
            Action::Probe(w, verdict) => self.probe(s, w, verdict, s.now),
            Action::ProbeLooks(w) => {
                s.late_probes += 1;
                let landed = !s.applied.is_empty();
                self.worker(s, w).act = Act::Looked { at: s.now, landed };
            }
            Action::ProbeAnswers(w) => {
                if let Act::Looked { at, landed } = s.workers[usize::from(w)].act {
                    let verdict = if landed { ProbeMark::Landed } else { ProbeMark::NotLanded };
                    self.probe(s, w, verdict, at);
                }
            }
            Action::Wake(w) => {
                // Waited out: the probe looks again, as the engine's decision says.
                self.worker(s, w).machine.on(Event::Waited);
                self.decide(s, w);
            }
            Action::Reclaim(w) => {
                self.worker(s, w).machine.on(Event::Waited);
                let k = s.workers[usize::from(w)];
                let lease = self.config.budget + self.config.window + self.config.margin;
                let who = s.who(w);
                s.send(Msg::Claim { who, deadline: k.deadline, lease });
                self.worker(s, w).act = Act::Claiming;
            }
            _ => {}
        }
    }

    /// The attempt in hand ended `ended` (an answer that applied nothing, or no reply): its request
    /// reached the service by now, and the decision opens.
    fn ended(&self, s: &mut State, w: u8, ended: (Outcome, Applied)) {
        let now = s.now;
        let k = self.worker(s, w);
        k.machine.on(Event::Reached { by: now });
        k.machine.on(Event::Ended { effect: ended.1 });
        self.open(s, w, ended);
    }

    /// The probe's verdict, truthful as of when it looked (`looked`), recorded as the engine's single
    /// call records it (`Machine::verdict`), then fed to the machine's decision.
    fn probe(&self, s: &mut State, w: u8, verdict: ProbeMark, looked: u8) {
        let k = s.workers[usize::from(w)];
        let Some(facts) = k.machine.facts() else { return };
        let ended = (facts.outcome, facts.effect);
        let (_, (outcome, effect)) = k.machine.verdict(verdict, ended, looked, s.now);
        // A verdict is a record about the attempt: it carries the attempt's own stamp, budget and
        // `sent_by`, as the engine's does, not the probe's.
        self.end_record(s, w, (outcome, effect), Some(verdict));
        // The executor judges the verdict as the record does: by when the probe looked.
        let judged = k.machine.judge(ended.1, looked, s.now);
        self.worker(s, w).machine.on(Event::Probed { mark: verdict, horizon: judged });
        self.decide(s, w);
    }

    /// A message reaches a worker: only its current call listens.
    pub(crate) fn at_worker(&self, s: &mut State, msg: Msg) {
        let who = match msg {
            Msg::Claimed { who, .. }
            | Msg::Started { who, .. }
            | Msg::Reply { who, .. }
            | Msg::Approved { who, .. } => who,
            _ => return,
        };
        let w = who.worker;
        let k = s.workers[usize::from(w)];
        // A call past its deadline listens to nothing but its start's answer, whose request's last
        // check is the machine's (`Budget::may_leave`).
        let sends = matches!((msg, k.act), (Msg::Started { ok: true, .. }, Act::Starting));
        if k.owner != who || (s.now >= k.deadline && !sends) {
            return;
        }
        match (msg, k.act) {
            (Msg::Claimed { got, .. }, Act::Claiming) => self.claimed(s, w, got),
            (Msg::Started { ok: true, attempt, .. }, Act::Starting)
                if attempt == k.attempt() && self.leaves(s, w) =>
            {
                let left = ticks(k.deadline.saturating_sub(s.now));
                self.acted_on_not_landed(s, attempt);
                if s.starters.get(usize::from(attempt)).copied().flatten() != Some(who) {
                    s.ghost |= ghost::TWO_ATTEMPTS;
                }
                s.send(Msg::Request { who, attempt, sent: s.now });
                let now = s.now;
                let k = self.worker(s, w);
                k.act = Act::Calling;
                // From now on its request may reach the service.
                k.machine.on(Event::Reached { by: now });
                // The budget its records pair with the start's stamp, now the start record is written
                // (the machine's rule: the budget at the start, however long the write took).
                if let Some((at, at_start)) = k.ledger.stamp() {
                    let recorded = k.machine.budget().recorded(at_start, left);
                    k.ledger.started(at, recorded);
                }
            }
            // Fenced out: another owner holds the intent, and may have sent.
            (Msg::Started { ok: false, .. }, Act::Starting) => self.unstarted(s, w, true),
            (Msg::Reply { applied: true, attempt, .. }, Act::Calling) if attempt == k.attempt() => {
                self.end_attempt(s, w, Outcome::Ok, Applied::Yes);
                self.report(s, w, Outcome::Ok, Applied::Yes);
            }
            (Msg::Reply { applied: false, attempt, .. }, Act::Calling) if attempt == k.attempt() => {
                // The engine's end record keeps the call's effect, never `no` after an attempt that
                // may have landed.
                let effect = k.machine.call_effect(Applied::No);
                self.end_attempt(s, w, Outcome::Retryable, effect);
                self.ended(s, w, (Outcome::Retryable, Applied::No));
            }
            (Msg::Approved { attempt, yes, .. }, Act::Asking) if attempt == k.attempt() => {
                self.worker(s, w).machine.on(Event::Approved { yes });
                self.decide(s, w);
            }
            _ => {}
        }
    }

    /// The start record is written, told to the worker's machine: whether the request it then names
    /// leaves now, before the last instant the machine names for it (`Budget::may_leave`). The engine
    /// asks its machine once the write is done (the floor's check, then the request and its last
    /// instant), and lets the request out only before that instant; a worker paused between the two
    /// passes the first and fails the second. The model's one step stands for the write and that
    /// pause: the write is taken as done at the latest instant, from the start to now, at which the
    /// machine still names the request (now, unless the floor's check fails by then), and the last
    /// check is made now.
    fn leaves(&self, s: &mut State, w: u8) -> bool {
        let (now, pacing) = (s.now, self.pacing());
        let k = self.worker(s, w);
        let started = k.ledger.stamp().map_or(now, |(at, _)| at);
        k.machine.on(Event::Written);
        let mut done = now;
        loop {
            let mut machine = k.machine;
            match machine.next(done, pacing) {
                Some(machine::Action::Send { not_after }) => {
                    k.machine = machine;
                    return k.machine.budget().may_leave(now, not_after);
                }
                _ if done > started => done -= 1,
                _ => return false,
            }
        }
    }

    /// Ghost check: a next attempt's request goes out only when no earlier one can still land.
    fn acted_on_not_landed(&self, s: &mut State, attempt: u8) {
        let early = s.net.iter().any(|m| matches!(m, Msg::Request { attempt: a, .. } if *a < attempt));
        if early {
            s.ghost |= ghost::ACTED_EARLY;
        }
    }

    /// The store's answer to a claim reaches the call: the start-of-call decision.
    fn claimed(&self, s: &mut State, w: u8, got: Got) {
        let word = match got {
            Got::Held(word) => word,
            Got::Busy => {
                // Told the claim is held, its machine names a wait of a tick (the engine's poll), then
                // a claim again; or, if no attempt could follow the wait, the stop.
                let (now, pacing) = (s.now, self.pacing());
                let k = self.worker(s, w);
                k.machine.on(Event::ClaimHeld { nap: ticks(1) });
                let end = match k.machine.next(now, pacing) {
                    Some(machine::Action::WaitUntil(until)) => {
                        k.act = Act::Backoff(until);
                        return;
                    }
                    Some(machine::Action::Stop(end)) => end,
                    _ => End::Busy,
                };
                let (outcome, effect) = k.machine.ending(end, (Outcome::Retryable, Applied::Unknown));
                return self.report_holding(s, w, outcome, effect, false);
            }
            Got::Late => {
                return self.report_holding(s, w, Outcome::Retryable, Applied::Unknown, false);
            }
        };
        let recall = word.map(|w| w.recall());
        let (attempts, last) = match word {
            Some(word) => (word.attempts, Some(word.last)),
            None => (0, None),
        };
        // The last record's stamps, on the model's clock (exact ticks: no rounding, no skew): the
        // attempt's start plus the budget its starter had, when its call ended, when a person's
        // settlement was written and when they saw the attempt. The machine takes from them until when
        // the attempt may have reached the service, and judges the person's word by when they saw it.
        let settled = last.and_then(|l| l.settled);
        let (settled_at, seen) = (settled.map(|(_, at, _)| at), settled.map(|(_, _, seen)| seen));
        let sent_by = last.and_then(|l| l.sent_by);
        let stamps = Stamps::new(last.map(|l| l.started.saturating_add(l.left)), sent_by, settled_at, seen);
        let now = s.now;
        let k = self.worker(s, w);
        k.ledger.resume(u32::from(attempts), last.map(|l| (l.started, ticks(l.left))), sent_by);
        let claimed = Event::Claimed { recall: recall.as_ref(), shape: Shape::One, stamps, at: now };
        let Change::Began(start) = k.machine.on(claimed) else { return };
        match start {
            Start::Fresh => self.start_attempt(s, w),
            Start::Replay => self.report(s, w, Outcome::Ok, Applied::Yes),
            Start::Settled => {
                s.ghost |= ghost::SETTLEMENT_HONOURED;
                self.report(s, w, Outcome::Ok, Applied::Yes);
            }
            Start::Probe | Start::SecondAttempt => {
                if settled_at.is_some() {
                    s.ghost |= ghost::SETTLEMENT_HONOURED;
                }
                if let Some(doubt) = machine::doubt(start) {
                    self.open(s, w, doubt);
                }
            }
        }
    }
}
