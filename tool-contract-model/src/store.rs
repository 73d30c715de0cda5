//! The store, the service and a person, as the model runs them, and the model's step function.

use stateright::{Model, Property};
use tool_contract::journal::{ApprovalStep, Phase, Verdict};
use tool_contract::probe::ProbeMark;
use tool_contract::rules::{Claiming, Fenced, Holder};
use tool_contract::{Applied, Outcome};

use crate::model::{Act, Action, Protocol, State, ghost};
use crate::state::{Got, Msg, PERSON, Question, Rec, Who, code, stamp};

impl Protocol {
    fn highest(s: &State) -> u8 {
        s.word.map_or(0, |w| w.attempts)
    }

    /// A record from a former holder refused after the claim moved on: the partition's late bytes.
    fn refused(s: &mut State, why: &Fenced<Who>) {
        if matches!(why, Fenced::OtherHolder { .. } | Fenced::Expired(_)) {
            s.ghost |= ghost::TAKEOVER;
        }
    }

    /// A message reaches the store.
    pub(crate) fn at_store(&self, s: &mut State, msg: Msg) {
        let now = s.now;
        match msg {
            Msg::Claim { who, deadline, lease } => {
                let id = self.id(who);
                let got = match (self.rules.claim)(s.claim.as_ref(), &id, now, Some(deadline)) {
                    Claiming::Take | Claiming::Renew => {
                        let started = s.claim.filter(|c| c.owner == id).and_then(|c| c.started);
                        let until = now.saturating_add(lease);
                        if until > deadline.saturating_add(lease) {
                            s.ghost |= ghost::LATE_CLAIM;
                        }
                        s.claim = Some(Holder { owner: id, until, started });
                        Got::Held(s.word)
                    }
                    Claiming::Busy { .. } => Got::Busy,
                    Claiming::Late => Got::Late,
                };
                s.send(Msg::Claimed { who, got });
            }
            Msg::Start { who, attempt, at, left } => {
                let highest = u32::from(Self::highest(s));
                match (self.rules.fence)(
                    s.claim.as_ref(),
                    &self.id(who),
                    Phase::Start,
                    u32::from(attempt),
                    false,
                    highest,
                    now,
                ) {
                    Ok(()) => {
                        if let Some(c) = s.claim.as_mut() {
                            c.started = Some(u32::from(attempt));
                        }
                        let slot = &mut s.starters[usize::from(attempt)];
                        if slot.is_some() {
                            s.ghost |= ghost::TWO_ATTEMPTS;
                        }
                        *slot = Some(who);
                        s.fold(Rec {
                            phase: Phase::Start,
                            attempt,
                            started: at,
                            left,
                            outcome: None,
                            effect: None,
                            probe: None,
                            settled: None,
                            sent_by: None,
                        });
                        s.send(Msg::Started { who, attempt, ok: true });
                    }
                    Err(why) => {
                        Self::refused(s, &why);
                        s.send(Msg::Started { who, attempt, ok: false });
                    }
                }
            }
            Msg::End { who, attempt, started, left, sent_by, outcome, effect, probe, finish } => {
                let highest = Self::highest(s);
                let verdict = code::to_probe(probe);
                let id = self.id(who);
                let fenced = (self.rules.fence)(
                    s.claim.as_ref(),
                    &id,
                    Phase::End,
                    u32::from(attempt),
                    verdict.is_some(),
                    u32::from(highest),
                    now,
                );
                match fenced {
                    Ok(()) => {
                        // Accepted only from the holder of an unexpired claim: the attempt's starter, or
                        // its probe verdict on the highest attempt.
                        let holds = s.claim.is_some_and(|c| c.owner == id && c.until > now);
                        let starter = s.starters.get(usize::from(attempt)).copied().flatten() == Some(who);
                        let holders_verdict = verdict.is_some() && attempt == highest;
                        if !holds || (!starter && !holders_verdict) {
                            s.ghost |= ghost::FOREIGN_RECORD;
                        }
                        s.fold(Rec {
                            phase: Phase::End,
                            attempt,
                            started,
                            left,
                            outcome: Some(code::to_outcome(outcome)),
                            effect: Some(code::to_effect(effect)),
                            probe: verdict,
                            settled: None,
                            sent_by,
                        });
                    }
                    Err(why) => Self::refused(s, &why),
                }
                if finish && s.claim.is_some_and(|c| c.owner == id) {
                    s.claim = None;
                }
            }
            Msg::Ask { who, attempt, until } => {
                s.question = Some(Question { attempt, step: ApprovalStep::Asked, until, asker: who });
            }
            Msg::Release { who } if s.claim.is_some_and(|c| c.owner == self.id(who)) => s.claim = None,
            Msg::Settle { examined, looked } => self.settle(s, examined, looked),
            Msg::Answer { examined, yes } => self.answer(s, examined, yes),
            _ => {}
        }
    }

    /// A person's settlement, as `person::settle` does it: claim, check, write under the claim, release.
    fn settle(&self, s: &mut State, examined: u8, looked: Option<(u8, bool)>) {
        let Some(word) = s.word else { return };
        // Truthful about the attempt they examined, as it stood when they looked (or, without late
        // looks, as it stands as their word is recorded).
        let at = s.now;
        let (seen, landed) = looked.unwrap_or((at, s.applied.contains(&examined)));
        let person = Who { worker: PERSON, incarnation: 0, call: s.looks };
        if !matches!(
            (self.rules.claim)(s.claim.as_ref(), &person, s.now, None),
            Claiming::Take | Claiming::Renew
        ) {
            return;
        }
        let recall = word.recall();
        if (self.rules.answer_bound)(u32::from(examined), &recall).is_some() {
            return;
        }
        if tool_contract::rules::not_in_doubt(&recall).is_some() {
            return;
        }
        // What the store records the word about: the attempt the rule bound it to (the highest).
        let about = word.attempts;
        let holder = Holder { owner: person, until: s.now.saturating_add(1), started: None };
        let fenced = (self.rules.fence)(
            Some(&holder),
            &person,
            Phase::Settled,
            u32::from(about),
            false,
            u32::from(about),
            s.now,
        );
        s.claim = None;
        if fenced.is_err() {
            return;
        }
        s.spoken = Self::spoken(s.spoken, &mut s.ghost, examined, about);
        let verdict = if landed { Verdict::Landed } else { Verdict::NotLanded };
        let (outcome, effect) =
            if landed { (Outcome::Ok, Applied::Yes) } else { (Outcome::Retryable, Applied::No) };
        s.fold(Rec {
            phase: Phase::Settled,
            attempt: about,
            started: word.last.started,
            left: word.last.left,
            outcome: Some(outcome),
            effect: Some(effect),
            probe: None,
            settled: Some((verdict, at, seen)),
            sent_by: word.last.sent_by,
        });
    }

    /// Ghost check: a person's word is recorded about the attempt they named, once.
    fn spoken(said: u8, flags: &mut u32, examined: u8, about: u8) -> u8 {
        let bit = 1u8 << about.min(7);
        if about != examined || said & bit != 0 {
            *flags |= ghost::UNBOUND;
        }
        said | bit
    }

    /// A person's answer to a question, as `person::answer_approval` checks it.
    fn answer(&self, s: &mut State, examined: u8, yes: bool) {
        let (Some(word), Some(question)) = (s.word, s.question) else { return };
        let recall = word.recall();
        if (self.rules.answer_bound)(u32::from(examined), &recall).is_some() {
            return;
        }
        let about = word.attempts;
        let asked = question.record();
        let Some(waiting) =
            tool_contract::rules::waiting_question(Some(&asked), u32::from(about), &stamp(s.now))
        else {
            return;
        };
        let step = if yes { ApprovalStep::Approved } else { ApprovalStep::Denied };
        let answer = Question { attempt: about, step, ..question };
        if !tool_contract::rules::may_follow(&answer.record().as_record_ref(), Some(waiting)) {
            return;
        }
        s.answered = Self::spoken(s.answered, &mut s.ghost, examined, about);
        if yes {
            s.approvals |= 1 << about.min(7);
        }
        s.question = Some(answer);
        s.send(Msg::Approved { who: question.asker, attempt: about, yes });
    }
}

impl Protocol {
    /// Whether the run is in its healed phase (`Config::heal`).
    pub(crate) fn healed(&self, s: &State) -> bool {
        self.config.heal > 0 && s.now >= self.config.max_time
    }
}

impl Model for Protocol {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            now: 0,
            workers: (0..self.config.workers).map(|w| self.fresh(w, self.first_incarnation(w))).collect(),
            claim: None,
            word: None,
            question: None,
            applied: Vec::new(),
            net: Vec::new(),
            crashes: 0,
            late_probes: 0,
            suspends: 0,
            looks: 0,
            answers: 0,
            lost: 0,
            said_no: 0,
            starters: [None; 6],
            approvals: 0,
            spoken: 0,
            answered: 0,
            ghost: 0,
            resolved: None,
            retry: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let c = &self.config;
        let healed = self.healed(s);
        for (i, k) in s.workers.iter().enumerate() {
            let w = i as u8;
            let live = !matches!(k.act, Act::Idle | Act::Done);
            if k.act == Act::Idle && !healed {
                actions.push(Action::Begin(w));
            }
            if live && s.now >= k.deadline {
                actions.push(Action::GiveUp(w));
                continue;
            }
            if live && s.crashes < c.crashes && !healed {
                actions.push(Action::Crash(w));
            }
            // Suspended between its claim's grant and its start record: the grant is on its way back.
            let granted = |m: &Msg| matches!(m, Msg::Claimed { who, got: Got::Held(_) } if *who == k.owner);
            if k.act == Act::Claiming
                && s.suspends == 0
                && c.suspend > 0
                && !healed
                && s.net.iter().any(granted)
            {
                actions.push(Action::Suspend(w));
            }
            match k.act {
                Act::Calling if !healed => actions.push(Action::Timeout(w)),
                Act::Probing => {
                    let truth = if s.applied.is_empty() { ProbeMark::NotLanded } else { ProbeMark::Landed };
                    actions.push(Action::Probe(w, truth));
                    if !healed {
                        actions.push(Action::Probe(w, ProbeMark::Failed));
                        if s.late_probes < c.late_probes {
                            actions.push(Action::ProbeLooks(w));
                        }
                    }
                }
                Act::Looked { at, .. } if s.now > at => actions.push(Action::ProbeAnswers(w)),
                Act::Waiting if k.machine.wait_left(s.now).is_zero() => actions.push(Action::Wake(w)),
                Act::Backoff(at) if s.now >= at => actions.push(Action::Reclaim(w)),
                _ => {}
            }
        }
        let mut seen = Vec::new();
        for msg in &s.net {
            // Only the head of each channel can arrive next.
            let ch = crate::model::channel(msg);
            if seen.contains(&ch) {
                continue;
            }
            seen.push(ch);
            if let Msg::Request { sent, .. } = msg {
                if s.now <= sent.saturating_add(c.window) {
                    actions.push(Action::Apply(*msg));
                    if !healed {
                        actions.push(Action::ApplyLost(*msg));
                    }
                    actions.push(Action::Refuse(*msg));
                }
            } else {
                actions.push(Action::Deliver(*msg));
            }
            if s.lost < c.losses && !healed {
                actions.push(Action::Drop(*msg));
            }
        }
        if !healed {
            if s.looks < c.looks && s.word.is_some_and(|w| w.in_doubt()) {
                actions.push(Action::Look);
            }
            if s.answers < c.answers && s.question.is_some_and(|q| q.step == ApprovalStep::Asked) {
                actions.push(Action::Answer(true));
                actions.push(Action::Answer(false));
            }
            if s.now < c.max_time {
                actions.push(Action::Tick);
            }
            return;
        }
        // The healed phase: a restarted process calls the intent again while it is in doubt, and the
        // agent after a call reported `retryable`, when no call is under way, once a tick; time passes
        // only when nothing else can happen.
        let quiet = s.net.is_empty() && s.workers.iter().all(|k| matches!(k.act, Act::Idle | Act::Done));
        let again = s.retry || s.word.is_some_and(|w| w.in_doubt());
        if quiet && again && s.resolved != Some(s.now) {
            actions.push(Action::Resolve);
        }
        if actions.is_empty() && s.now < c.max_time.saturating_add(c.heal) {
            actions.push(Action::Tick);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Tick => {
                s.now += 1;
                let (now, window) = (s.now, self.config.window);
                // The assumption: a request is applied within its horizon of being sent, or never.
                s.net
                    .retain(|m| !matches!(m, Msg::Request { sent, .. } if sent.saturating_add(window) < now));
            }
            Action::Deliver(msg) => {
                s.take(&msg);
                if crate::model::channel(&msg).3 == 2 {
                    self.at_worker(&mut s, msg);
                } else {
                    self.at_store(&mut s, msg);
                }
            }
            Action::Apply(msg) | Action::ApplyLost(msg) => {
                s.take(&msg);
                if let Msg::Request { who, attempt, .. } = msg {
                    // The service deduplicates nothing: every request it is handed is applied (or
                    // refused). Two requests of one attempt id are two effects; the network never
                    // duplicates one (it loses some), so only two senders of one attempt make them.
                    s.applied.push(attempt);
                    if matches!(action, Action::Apply(_)) {
                        self.at_worker(&mut s, Msg::Reply { who, attempt, applied: true });
                    }
                }
            }
            Action::Refuse(msg) => {
                s.take(&msg);
                if let Msg::Request { who, attempt, .. } = msg {
                    self.at_worker(&mut s, Msg::Reply { who, attempt, applied: false });
                }
            }
            Action::Drop(msg) => {
                s.lost += 1;
                s.take(&msg);
            }
            Action::Look => {
                s.looks += 1;
                let word = s.word?;
                let examined = word.attempts;
                let looked = self.config.late_looks.then(|| (s.now, s.applied.contains(&examined)));
                s.send(Msg::Settle { examined, looked });
            }
            Action::Answer(yes) => {
                s.answers += 1;
                let q = s.question?;
                s.send(Msg::Answer { examined: q.attempt, yes });
            }
            Action::Resolve => {
                (s.resolved, s.retry) = (Some(s.now), false);
                // A restarted process, under the worker's name.
                s.workers[0] = self.fresh(0, s.workers[0].incarnation + 1);
                self.worker_step(&mut s, Action::Begin(0));
            }
            other => self.worker_step(&mut s, other),
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::properties::all(&self.config)
    }

    fn format_action(&self, action: &Action) -> String {
        action.to_string()
    }
}
