//! What each actor does on each step: the workers as the engine does, the store as the stores do,
//! the service, the network and a person. Every decision is a call to [`Rules`].

use tool_contract::policy::{self, Decision, End, Facts, Start, Step};
use tool_contract::probe::ProbeMark;
use tool_contract::{Applied, Outcome};

use crate::model::{Act, Action, Protocol, State, Worker, ghost};
use tool_contract::policy::Horizon;

use crate::rules::{Known, policy_facts, ticks};
use crate::state::{Got, Msg, code};

impl Protocol {
    fn worker<'s>(&self, s: &'s mut State, w: u8) -> &'s mut Worker {
        &mut s.workers[usize::from(w)]
    }

    /// The call reports and gives its claim up.
    fn report(&self, s: &mut State, w: u8, outcome: Outcome, effect: Applied) {
        self.report_holding(s, w, outcome, effect, true);
    }

    /// [`Protocol::report`]; `holds`: whether the store may have granted the call its claim.
    fn report_holding(&self, s: &mut State, w: u8, outcome: Outcome, effect: Applied, holds: bool) {
        let who = s.who(w);
        let attempt = s.workers[usize::from(w)].attempt;
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

    /// The end record of the attempt in hand, as its starter writes it: its start's stamp and budget,
    /// no probe verdict.
    fn end_attempt(&self, s: &mut State, w: u8, outcome: Outcome, effect: Applied) {
        let k = s.workers[usize::from(w)];
        let who = s.who(w);
        s.send(Msg::End {
            who,
            attempt: k.attempt,
            started: k.stamp,
            left: k.left,
            outcome: code::outcome(outcome),
            effect: code::effect(effect),
            probe: code::probe(None),
            finish: false,
        });
    }

    /// What the call reports when it stops knowing `effect`.
    fn stop(&self, s: &mut State, w: u8) {
        let k = s.workers[usize::from(w)];
        if k.effect == Applied::No {
            self.report(s, w, k.outcome, Applied::No);
        } else {
            self.report(s, w, Outcome::Unknown, Applied::Unknown);
        }
    }

    /// Whether a "not landed" about the attempt in hand, seen at `observed`, counts, by the crate's rule
    /// ([`tool_contract::policy::landing`]): the attempt can no longer land from the tick after its
    /// request's last possible reach plus the horizon (a request is applied, if ever, while
    /// `now <= sent + window`); nothing of it is in flight when the service's own answer said it applied
    /// nothing ([`tool_contract::policy::landing_ends`]).
    fn horizon(&self, s: &State, w: u8, observed: u8) -> Horizon {
        let k = &s.workers[usize::from(w)];
        let ends = tool_contract::policy::landing_ends(Some(k.reached), k.effect, |at| {
            at.saturating_add(self.config.window + 1)
        });
        (self.rules.horizon)(ends, observed, s.now, k.deadline)
    }

    /// What the policy is told of worker `w`'s call now.
    fn facts(&self, s: &State, w: u8) -> Facts {
        let k = s.workers[usize::from(w)];
        let left = ticks(k.deadline.saturating_sub(s.now));
        let known = Known {
            kind: self.config.kind,
            outcome: k.outcome,
            effect: k.effect,
            probe: k.probe,
            approved: k.approved,
            made: u32::from(k.made),
            room: (self.rules.may_start)(left, ticks(self.config.floor)),
        };
        policy_facts(&known, k.landing)
    }

    /// Feed worker `w`'s decision what a step found, with the engine's own [`Decision`], and keep what
    /// it then knows.
    fn found(&self, s: &mut State, w: u8, step: impl FnOnce(&mut Decision)) {
        let mut decision = Decision::new(self.facts(s, w));
        step(&mut decision);
        let f = *decision.facts();
        let k = self.worker(s, w);
        (k.outcome, k.effect, k.probe, k.landing, k.approved) =
            (f.outcome, f.effect, f.probe, f.horizon, f.approved);
    }

    /// Ask the policy for the next step, and take it.
    fn decide(&self, s: &mut State, w: u8) {
        let k = s.workers[usize::from(w)];
        let step = (self.rules.next)(&self.facts(s, w));
        match step {
            Step::WaitHorizon => self.worker(s, w).act = Act::Waiting,
            Step::Probe => self.worker(s, w).act = Act::Probing,
            Step::Approve => {
                let who = s.who(w);
                s.send(Msg::Ask { who, attempt: k.attempt, until: k.deadline });
                self.worker(s, w).act = Act::Asking;
            }
            Step::Retry => self.start_attempt(s, w),
            Step::Stop(End::Landed) => self.report(s, w, Outcome::Ok, Applied::Yes),
            _ => self.stop(s, w),
        }
    }

    /// Start the next attempt: its fenced start record first, if the budget can hold it.
    fn start_attempt(&self, s: &mut State, w: u8) {
        let k = s.workers[usize::from(w)];
        let left = ticks(k.deadline.saturating_sub(s.now));
        if !(self.rules.may_start)(left, ticks(self.config.floor))
            || usize::from(k.attempt) + 1 >= s.starters.len()
        {
            self.stop(s, w);
            return;
        }
        let who = s.who(w);
        let next = k.attempt + 1;
        let (now, left) = (s.now, k.deadline.saturating_sub(s.now));
        s.send(Msg::Start { who, attempt: next, at: now, left });
        let k = self.worker(s, w);
        (k.act, k.stamp, k.left, k.reached) = (Act::Starting, now, left, now.saturating_add(left));
        k.attempt = next;
        k.made += 1;
    }

    /// A worker's step that is not a message.
    pub(crate) fn worker_step(&self, s: &mut State, action: Action) {
        match action {
            Action::Begin(w) => {
                let deadline = s.now.saturating_add(self.config.budget);
                let lease = self.config.budget + self.config.window + self.config.margin;
                let who = s.who(w);
                let k = self.worker(s, w);
                k.deadline = deadline;
                k.act = Act::Claiming;
                s.send(Msg::Claim { who, deadline, lease });
            }
            Action::GiveUp(w) => {
                let k = s.workers[usize::from(w)];
                if k.act == Act::Calling {
                    self.end_attempt(s, w, Outcome::Unknown, Applied::Unknown);
                    self.report(s, w, Outcome::Unknown, Applied::Unknown);
                } else if matches!(k.act, Act::Claiming | Act::Starting | Act::Backoff(_)) {
                    // An attempt never started gives its number back: the call speaks for the one before.
                    if k.act == Act::Starting {
                        self.worker(s, w).attempt -= 1;
                    }
                    let effect = if k.effect == Applied::No { Applied::No } else { Applied::Unknown };
                    // A call backing off holds nothing; one claiming may have been granted its claim.
                    let holds = !matches!(k.act, Act::Backoff(_));
                    self.report_holding(s, w, Outcome::Retryable, effect, holds);
                } else {
                    self.stop(s, w);
                }
            }
            Action::Crash(w) => {
                s.crashes += 1;
                // It restarts under its name, as a new process whose calls count from 1.
                s.workers[usize::from(w)] = self.fresh(w, s.workers[usize::from(w)].incarnation + 1);
            }
            Action::Timeout(w) => {
                self.end_attempt(s, w, Outcome::Unknown, Applied::Unknown);
                let k = self.worker(s, w);
                (k.outcome, k.effect, k.probe, k.lost_reply) =
                    (Outcome::Unknown, Applied::Unknown, None, true);
                self.decide(s, w);
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
                self.found(s, w, |d| {
                    d.waited();
                });
                self.decide(s, w);
            }
            Action::Reclaim(w) => {
                let k = s.workers[usize::from(w)];
                let lease = self.config.budget + self.config.window + self.config.margin;
                let who = s.who(w);
                s.send(Msg::Claim { who, deadline: k.deadline, lease });
                self.worker(s, w).act = Act::Claiming;
            }
            _ => {}
        }
    }

    /// The probe's verdict, truthful, recorded as the engine records it ([`policy::verdict`]), then fed
    /// to the engine's [`Decision`] and the policy's next step.
    /// `looked`: when the probe read the service (its verdict is truthful as of then, and judged by
    /// then, as the engine judges it).
    fn probe(&self, s: &mut State, w: u8, verdict: ProbeMark, looked: u8) {
        let landing = self.horizon(s, w, (self.rules.verdict_seen)(looked, s.now));
        let k = s.workers[usize::from(w)];
        let (outcome, effect) = policy::verdict(verdict, landing, (k.outcome, k.effect));
        let who = s.who(w);
        // The engine's verdict record carries the attempt's stamp and budget, and `sent_by`, when its
        // call ended; the model's carries the probe's stamp instead, which a later claim reads as
        // `sent_by` (the call had ended when its probe looked): one of the model's own decisions
        // (docs/protocol.md).
        s.send(Msg::End {
            who,
            attempt: k.attempt,
            started: looked,
            left: k.deadline.saturating_sub(looked),
            outcome: code::outcome(outcome),
            effect: code::effect(effect),
            probe: code::probe(Some(verdict)),
            finish: false,
        });
        self.found(s, w, |d| {
            d.probed(verdict, || landing);
        });
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
        if k.owner != who || s.now >= k.deadline {
            return;
        }
        match (msg, k.act) {
            (Msg::Claimed { got, .. }, Act::Claiming) => self.claimed(s, w, got),
            (Msg::Started { ok: true, attempt, .. }, Act::Starting) if attempt == k.attempt => {
                self.acted_on_not_landed(s, attempt);
                if s.starters.get(usize::from(attempt)).copied().flatten() != Some(who) {
                    s.ghost |= ghost::TWO_ATTEMPTS;
                }
                s.send(Msg::Request { who, attempt, sent: s.now });
                let now = s.now;
                let k = self.worker(s, w);
                (k.act, k.reached, k.approved) = (Act::Calling, now, None);
            }
            (Msg::Started { ok: false, .. }, Act::Starting) => {
                let k = self.worker(s, w);
                k.attempt -= 1;
                self.report(s, w, Outcome::Retryable, Applied::No);
            }
            (Msg::Reply { applied: true, attempt, .. }, Act::Calling) if attempt == k.attempt => {
                self.end_attempt(s, w, Outcome::Ok, Applied::Yes);
                self.report(s, w, Outcome::Ok, Applied::Yes);
            }
            (Msg::Reply { applied: false, attempt, .. }, Act::Calling) if attempt == k.attempt => {
                self.end_attempt(s, w, Outcome::Retryable, Applied::No);
                let k = self.worker(s, w);
                (k.outcome, k.effect, k.probe, k.landing) =
                    (Outcome::Retryable, Applied::No, None, Horizon::Passed);
                self.decide(s, w);
            }
            (Msg::Approved { attempt, yes, .. }, Act::Asking) if attempt == k.attempt => {
                self.worker(s, w).approved = Some(yes);
                self.decide(s, w);
            }
            _ => {}
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
        let k = s.workers[usize::from(w)];
        let left = ticks(k.deadline.saturating_sub(s.now));
        let word = match got {
            Got::Held(word) => word,
            Got::Busy
                if tool_contract::rules::may_wait_for_claim(ticks(1), ticks(self.config.floor), left) =>
            {
                // It waits a tick (the engine's poll), then claims again.
                self.worker(s, w).act = Act::Backoff(s.now.saturating_add(1));
                return;
            }
            Got::Busy | Got::Late => {
                return self.report_holding(s, w, Outcome::Retryable, Applied::Unknown, false);
            }
        };
        let recall = word.map(|w| w.recall());
        let start = (self.rules.start)(recall.as_ref(), self.config.kind);
        let (attempts, last) = match word {
            Some(word) => (word.attempts, Some(word.last)),
            None => (0, None),
        };
        // Until when the attempt's request may have reached the service, by the crate's rule: its start
        // plus the budget its starter had, a probe's stamp, a settlement's stamp, now.
        let (stamp, left) = last.map_or((0, 0), |l| (l.started, l.left));
        let settled_at = last.and_then(|l| l.settled).map(|(_, at)| at);
        let probed = last.filter(|l| l.probe.is_some()).map(|l| l.started);
        let reached =
            tool_contract::rules::reached_by(Some(stamp.saturating_add(left)), probed, settled_at, s.now);
        {
            let k = self.worker(s, w);
            (k.attempt, k.stamp, k.left, k.reached) = (attempts, stamp, left, reached);
        }
        match start {
            Start::Fresh => self.start_attempt(s, w),
            Start::Replay => self.report(s, w, Outcome::Ok, Applied::Yes),
            Start::Settled => {
                s.ghost |= ghost::SETTLEMENT_HONOURED;
                self.report(s, w, Outcome::Ok, Applied::Yes);
            }
            Start::Probe => {
                let k = self.worker(s, w);
                (k.outcome, k.effect, k.probe, k.act) =
                    (Outcome::Unknown, Applied::Unknown, None, Act::Probing);
            }
            Start::SecondAttempt { .. } => {
                // A person's verdict was seen when they settled; an end that applied nothing by the
                // service's own word leaves nothing in flight.
                let observed = settled_at.unwrap_or(s.now);
                if settled_at.is_some() {
                    s.ghost |= ghost::SETTLEMENT_HONOURED;
                }
                let k = s.workers[usize::from(w)];
                let nothing = settled_at.is_none() && last.is_some_and(|l| l.effect == Some(Applied::No));
                let ends = (!nothing).then(|| k.reached.saturating_add(self.config.window + 1));
                let landing = (self.rules.horizon)(ends, observed, s.now, k.deadline);
                // A "not landed" that does not count yet leaves the effect unknown.
                let effect = if landing == Horizon::Passed { Applied::No } else { Applied::Unknown };
                let k = self.worker(s, w);
                (k.outcome, k.effect, k.probe, k.landing) =
                    (Outcome::Retryable, effect, Some(ProbeMark::NotLanded), landing);
                self.decide(s, w);
            }
        }
    }
}
