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
        let seen = Seen {
            effects: service.effects(report.idempotency_key),
            attempts: service.requests(),
            probe: tap.last_probe(report.idempotency_key),
        };
        let applied = if kind.has_side_effect() { self.applied } else { Applied::No };
        let mut wrong = self.mismatches(report, applied, &seen);
        shared_invariants(kind, report, seen.effects, &mut wrong);
        Verdict {
            scenario: scenario.name(),
            outcome: report.outcome,
            effect_applied: report.effect_applied,
            attempts: seen.attempts,
            probe: seen.probe,
            effects_at_service: seen.effects,
            expected: self.expected(applied, summary),
            pass: wrong.is_empty(),
            detail: wrong.join(", "),
        }
    }

    /// Where the report and the service differ from what is expected, `applied` being the effect
    /// expected of this kind.
    fn mismatches<T>(&self, report: &Report<T>, applied: Applied, seen: &Seen) -> Vec<String> {
        let (effects, attempts, probe) = (seen.effects, seen.attempts, seen.probe);
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
        wrong
    }

    /// What was expected, in one line: `summary`, or when it is empty the outcome, the effect and the
    /// effects at the service.
    fn expected(&self, applied: Applied, summary: &str) -> String {
        if summary.is_empty() {
            let mut s = format!("{}, {}", self.outcome, applied);
            if let Some(n) = self.effects {
                s.push_str(&format!(", {n} effect(s)"));
            }
            s
        } else {
            summary.to_owned()
        }
    }
}

/// What the service and the log showed of a scenario's run.
struct Seen {
    /// Effects the service applied for the intent.
    effects: usize,
    /// Requests the service received.
    attempts: u32,
    /// The last probe verdict logged, if a probe ran.
    probe: Option<ProbeMark>,
}

/// The invariants every scenario shares, whatever it expects: never `ok` without the effect, never
/// `effect_applied: no` when it landed.
fn shared_invariants<T>(kind: EffectKind, report: &Report<T>, effects: usize, wrong: &mut Vec<String>) {
    if kind.has_side_effect() && report.outcome == Outcome::Ok && effects == 0 && report.items.is_empty() {
        wrong.push("ok without the effect at the service".to_owned());
    }
    if kind.has_side_effect() && report.effect_applied == Applied::No && effects > 0 {
        wrong.push("effect_applied no, but the effect landed".to_owned());
    }
}
