//! What a scenario expects of the final report and the service, and the verdict against it.

use super::*;

/// What a scenario expects of the final report and the service.
pub(super) struct Expect {
    pub(super) outcome: Outcome,
    pub(super) applied: Applied,
    pub(super) effects: Option<usize>,
    pub(super) attempts: Option<u32>,
    pub(super) probe: Option<ProbeMark>,
    pub(super) retry_after_s: Option<u64>,
}

impl Expect {
    /// One attempt, refused with `outcome`, nothing applied.
    pub(super) fn refused(outcome: Outcome) -> Expect {
        Expect {
            outcome,
            applied: Applied::No,
            effects: Some(0),
            attempts: Some(1),
            probe: None,
            retry_after_s: None,
        }
    }

    pub(super) fn ok(effects: usize) -> Expect {
        Expect {
            outcome: Outcome::Ok,
            applied: Applied::Yes,
            effects: Some(effects),
            attempts: Some(1),
            probe: None,
            retry_after_s: None,
        }
    }

    /// Compare the report and the service with what is expected; a probe verdict is checked only when
    /// one is expected.
    pub(super) fn judge<T>(
        self,
        scenario: Scenario,
        kind: EffectKind,
        report: &Report<T>,
        service: &FakeService,
        tap: &Tap,
        summary: &str,
    ) -> Verdict {
        let effects = service.effects(report.idempotency_key);
        let attempts = service.requests();
        let probe = tap.last_probe(report.idempotency_key);
        let applied = if kind.has_side_effect() { self.applied } else { Applied::No };
        let mut wrong = Vec::new();
        if report.outcome != self.outcome {
            wrong.push(format!("outcome {} (expected {})", report.outcome, self.outcome));
        }
        if report.effect_applied != applied {
            wrong.push(format!("effect_applied {} (expected {applied})", report.effect_applied));
        }
        if let Some(n) = self.effects
            && effects != n
        {
            wrong.push(format!("{effects} effects at the service (expected {n})"));
        }
        if let Some(n) = self.attempts
            && attempts != n
        {
            wrong.push(format!("{attempts} attempts (expected {n})"));
        }
        if self.probe.is_some() && probe != self.probe {
            wrong.push(format!("probe {probe:?} (expected {:?})", self.probe));
        }
        if let Some(wait) = self.retry_after_s
            && report.retry_after_s != Some(wait)
        {
            wrong.push(format!("retry_after_s {:?} (expected {wait})", report.retry_after_s));
        }
        // The invariants every scenario shares.
        if kind.has_side_effect() && report.outcome == Outcome::Ok && effects == 0 && report.items.is_empty()
        {
            wrong.push("ok without the effect at the service".to_owned());
        }
        if kind.has_side_effect() && report.effect_applied == Applied::No && effects > 0 {
            wrong.push("effect_applied no, but the effect landed".to_owned());
        }
        let expected = if summary.is_empty() {
            let mut s = format!("{}, {}", self.outcome, applied);
            if let Some(n) = self.effects {
                s.push_str(&format!(", {n} effect(s)"));
            }
            s
        } else {
            summary.to_owned()
        };
        Verdict {
            scenario: scenario.name(),
            outcome: report.outcome,
            effect_applied: report.effect_applied,
            attempts,
            probe,
            effects_at_service: effects,
            expected,
            pass: wrong.is_empty(),
            detail: wrong.join(", "),
        }
    }
}
