//! What each actor does on each step: the workers as the engine does, the store as the stores do,
//! the service, the network and a person. Every decision is a call to [`Rules`].

use tool_contract::policy::{End, Start, Step};
use tool_contract::probe::ProbeMark;
use tool_contract::{Applied, Outcome};

use crate::model::{Act, Action, Protocol, State, Worker, ghost};
use crate::rules::{Horizon, Known, Landing, policy_facts, ticks};
use crate::state::{Got, Msg, code};

impl Protocol {
    fn worker<'s>(&self, s: &'s mut State, w: u8) -> &'s mut Worker {
        &mut s.workers[usize::from(w)]
    }

    /// The call reports and gives its claim up.
    fn report(&self, s: &mut State, w: u8, outcome: Outcome, effect: Applied) {
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
            None if s.claim.is_some_and(|c| c.owner == who) => s.claim = None,
            None => {}
        }
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

    fn horizon(&self, s: &State, w: u8, observed: u8) -> Landing {
        let k = &s.workers[usize::from(w)];
        (self.rules.horizon)(Horizon {
            started: k.reached,
            observed,
            now: s.now,
            deadline: k.deadline,
            window: self.config.window,
        })
    }

    /// Ask the policy for the next step, and take it.
    fn decide(&self, s: &mut State, w: u8) {
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
        let (facts, wait) = policy_facts(&known, k.landing);
        let step = (self.rules.next)(&facts);
        if step == wait {
            self.worker(s, w).act = Act::Waiting;
            return;
        }
        match step {
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
                    let who = s.who(w);
                    let (u, e) = (code::outcome(Outcome::Unknown), code::effect(Applied::Unknown));
                    s.send(Msg::End {
                        who,
                        attempt: k.attempt,
                        started: k.stamp,
                        left: k.left,
                        outcome: u,
                        effect: e,
                        probe: 9,
                        finish: false,
                    });
                    self.report(s, w, Outcome::Unknown, Applied::Unknown);
                } else if k.act == Act::Claiming || k.act == Act::Starting {
                    // An attempt never started gives its number back: the call speaks for the one before.
                    if k.act == Act::Starting {
                        self.worker(s, w).attempt -= 1;
                    }
                    let effect = if k.effect == Applied::No { Applied::No } else { Applied::Unknown };
                    self.report(s, w, Outcome::Retryable, effect);
                } else {
                    self.stop(s, w);
                }
            }
            Action::Crash(w) => {
                s.crashes += 1;
                let call = s.workers[usize::from(w)].call + 1;
                s.workers[usize::from(w)] = Worker::idle(call);
            }
            Action::Timeout(w) => {
                let k = *self.worker(s, w);
                let who = s.who(w);
                let (u, e) = (code::outcome(Outcome::Unknown), code::effect(Applied::Unknown));
                s.send(Msg::End {
                    who,
                    attempt: k.attempt,
                    started: k.stamp,
                    left: k.left,
                    outcome: u,
                    effect: e,
                    probe: 9,
                    finish: false,
                });
                let k = self.worker(s, w);
                (k.outcome, k.effect, k.probe, k.lost_reply) =
                    (Outcome::Unknown, Applied::Unknown, None, true);
                self.decide(s, w);
            }
            Action::Probe(w, verdict) => self.probe(s, w, verdict),
            Action::Wake(w) => {
                self.worker(s, w).probe = None;
                self.decide(s, w);
            }
            _ => {}
        }
    }

    /// The probe's verdict, truthful, recorded as the engine records it, then the policy's next step.
    fn probe(&self, s: &mut State, w: u8, verdict: ProbeMark) {
        let landing = self.horizon(s, w, s.now);
        let k = s.workers[usize::from(w)];
        let (outcome, effect) = match verdict {
            ProbeMark::Landed => (Outcome::Ok, Applied::Yes),
            ProbeMark::NotLanded if landing == Landing::Past => (Outcome::Retryable, Applied::No),
            ProbeMark::NotLanded => (Outcome::Unknown, Applied::Unknown),
            ProbeMark::Failed if k.effect == Applied::No => (k.outcome, Applied::No),
            ProbeMark::Failed => (Outcome::Unknown, Applied::Unknown),
        };
        let who = s.who(w);
        s.send(Msg::End {
            who,
            attempt: k.attempt,
            started: k.stamp,
            left: k.left,
            outcome: code::outcome(outcome),
            effect: code::effect(effect),
            probe: code::probe(Some(verdict)),
            finish: false,
        });
        let k = self.worker(s, w);
        (k.outcome, k.effect, k.probe, k.landing) = (outcome, effect, Some(verdict), landing);
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
        if k.call != who.call || s.now >= k.deadline {
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
                let (o, e) = (code::outcome(Outcome::Ok), code::effect(Applied::Yes));
                s.send(Msg::End {
                    who,
                    attempt,
                    started: k.stamp,
                    left: k.left,
                    outcome: o,
                    effect: e,
                    probe: 9,
                    finish: false,
                });
                self.report(s, w, Outcome::Ok, Applied::Yes);
            }
            (Msg::Reply { applied: false, attempt, .. }, Act::Calling) if attempt == k.attempt => {
                let (o, e) = (code::outcome(Outcome::Retryable), code::effect(Applied::No));
                s.send(Msg::End {
                    who,
                    attempt,
                    started: k.stamp,
                    left: k.left,
                    outcome: o,
                    effect: e,
                    probe: 9,
                    finish: false,
                });
                let k = self.worker(s, w);
                (k.outcome, k.effect, k.probe, k.landing) =
                    (Outcome::Retryable, Applied::No, None, Landing::Past);
                self.decide(s, w);
            }
            (Msg::Approved { attempt, .. }, Act::Asking) if attempt == k.attempt => {
                self.worker(s, w).approved = Some(true);
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
                let lease = self.config.budget + self.config.window + self.config.margin;
                let who = s.who(w);
                s.send(Msg::Claim { who, deadline: k.deadline, lease });
                return;
            }
            Got::Busy | Got::Late => return self.report(s, w, Outcome::Retryable, Applied::Unknown),
        };
        let recall = word.map(|w| w.recall());
        let start = (self.rules.start)(recall.as_ref(), self.config.kind);
        let (attempts, last) = match word {
            Some(word) => (word.attempts, Some(word.last)),
            None => (0, None),
        };
        // The attempt's request went out by its start plus the budget its starter had, or never.
        let (stamp, left) = last.map_or((0, 0), |l| (l.started, l.left));
        {
            let k = self.worker(s, w);
            (k.attempt, k.stamp, k.left, k.reached) = (attempts, stamp, left, stamp.saturating_add(left));
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
                // A person's verdict was observed when they looked; an end's effect no, now.
                let observed = last.and_then(|l| l.settled).map_or(s.now, |(_, at)| at);
                if last.is_some_and(|l| l.settled.is_some()) {
                    s.ghost |= ghost::SETTLEMENT_HONOURED;
                }
                let landing = self.horizon(s, w, observed);
                // A "not landed" that does not count yet leaves the effect unknown.
                let effect = if landing == Landing::Past { Applied::No } else { Applied::Unknown };
                let k = self.worker(s, w);
                (k.outcome, k.effect, k.probe, k.landing) =
                    (Outcome::Retryable, effect, Some(ProbeMark::NotLanded), landing);
                self.decide(s, w);
            }
        }
    }
}
