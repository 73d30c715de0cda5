//! The contract's invariants, checked on what a run left once the service has settled.

use std::time::Duration;

use tool_contract::effect::EffectKind;
use tool_contract::{Applied, Outcome, Report};

use super::Rig;
use super::calls::items_kept;

/// What a run left to check once the service has settled.
pub(super) struct Ending<'a> {
    /// The run's schedule, service and tool.
    pub(super) rig: &'a Rig<'a>,
    /// The report with the last word on the intent.
    pub(super) report: &'a Report<()>,
    /// The other calls' reports.
    pub(super) others: &'a [Report<()>],
    /// The decoy intent's report, with `pipes`.
    pub(super) decoy: Option<&'a Report<()>>,
    /// How long the calls took.
    pub(super) elapsed: Duration,
    /// What the clock may run beyond the schedule's figures.
    pub(super) slack: Duration,
}

impl Ending<'_> {
    /// Every invariant that did not hold, after `seen`: those the log itself saw broken.
    pub(super) fn violations(&self, seen: Vec<String>) -> Vec<String> {
        let (schedule, service) = (self.rig.schedule, &self.rig.service);
        let mut violations = seen;
        self.effects_kept(&mut violations);
        self.floor_and_budget_kept(&mut violations);
        if self.report.outcome == Outcome::Unknown && self.rig.escalations.is_empty() {
            violations.push("unknown and not escalated".to_owned());
        }
        if schedule.budget.is_zero() && service.requests() > 0 {
            violations.push(format!("{} request(s) sent on an empty budget", service.requests()));
        }
        if let Some(decoy) = self.decoy {
            self.decoy_kept(decoy, &mut violations);
        }
        if !schedule.items.is_empty() {
            items_kept(schedule, self.report, service, self.at_most_once(), &mut violations);
        }
        violations
    }

    /// Whether the kind allows at most one applied effect per intent: `send`, `money` and
    /// `destructive`, and a `create` the receiver does not deduplicate.
    fn at_most_once(&self) -> bool {
        let schedule = self.rig.schedule;
        matches!(schedule.kind, EffectKind::Send | EffectKind::Money | EffectKind::Destructive)
            || (schedule.kind == EffectKind::Create && !schedule.receiver_dedupes)
    }

    /// Invariants 1 to 3 for a single act: at most one effect where the kind allows one, never `ok`
    /// without the effect (on a store, from any call), never `effect_applied: no` when it landed.
    fn effects_kept(&self, violations: &mut Vec<String>) {
        let (schedule, report) = (self.rig.schedule, self.report);
        let side = schedule.kind.has_side_effect();
        let effects = self.rig.service.effects(report.idempotency_key);
        let single = schedule.items.is_empty();
        if single && self.at_most_once() && effects > 1 {
            violations.push(format!("{effects} effects applied for one {} intent", schedule.kind));
        }
        if single && side && report.outcome == Outcome::Ok && effects == 0 {
            violations.push("ok without the effect at the service".to_owned());
        }
        // On a store, every call's `ok` is checked, not only the last word's.
        if schedule.store.is_some()
            && single
            && side
            && effects == 0
            && self.others.iter().any(|r| r.outcome == Outcome::Ok)
        {
            violations.push("a call answered ok without the effect at the service".to_owned());
        }
        if side && report.effect_applied == Applied::No && effects > 0 {
            violations.push(format!("effect_applied no, but {effects} effect(s) landed"));
        }
    }

    /// Invariants 4 and 5: no attempt started below the floor (nor, on tokio's clock, with nothing
    /// left), and the call returned within the budget plus one floor.
    fn floor_and_budget_kept(&self, violations: &mut Vec<String>) {
        let (schedule, slack, elapsed) = (self.rig.schedule, self.slack, self.elapsed);
        for left in self.rig.started_with.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            // On a real clock the budget runs on between the engine's check and the attempt, a few
            // instructions apart but for a thread preempted between them.
            if *left + slack / 10 < schedule.floor || (slack.is_zero() && left.is_zero()) {
                violations.push(format!(
                    "an attempt started with {left:?} left, below the {:?} floor",
                    schedule.floor
                ));
            }
        }
        if elapsed > schedule.budget + schedule.floor + slack {
            violations.push(format!("returned after {elapsed:?}, past the {:?} budget", schedule.budget));
        }
    }

    /// Invariant 8: the decoy, whose fields joined with `|` spell the intent's, has a key of its own
    /// and is sent on its own.
    fn decoy_kept(&self, decoy: &Report<()>, violations: &mut Vec<String>) {
        if decoy.idempotency_key == self.report.idempotency_key {
            violations.push("two intents, one key: fields holding `|` were joined as they are".to_owned());
        }
        let side = self.rig.schedule.kind.has_side_effect();
        if side && decoy.outcome == Outcome::Ok && self.rig.service.effects(decoy.idempotency_key) == 0 {
            violations.push("the decoy intent was answered ok without being sent".to_owned());
        }
    }
}
