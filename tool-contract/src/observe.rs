//! What an operator sees of each call: tracing spans (feature `tracing`) and metrics (feature
//! `metrics`). Without the features every function here is empty and compiles away.
//!
//! Spans follow the OpenTelemetry GenAI convention for tool execution: one `execute_tool` span per
//! call (its OpenTelemetry name `execute_tool {tool}` in `otel.name`), with `gen_ai.operation.name`,
//! `gen_ai.tool.name`, `gen_ai.tool.type` and, when the task carries one, `gen_ai.tool.call.id`; the
//! contract's own fields under `tool_contract.*`; `error.type` set to the outcome when it is not `ok`.
//! Inside it, an `attempt` span per attempt and a `probe` span per probe. Arguments are never recorded.
//!
//! Metrics (names and labels in docs/observability.md, "Metrics"): labels are the tool, its effect kind, the
//! outcome, the probe's verdict and the service: never a task id or an intent key.

#![allow(unused_variables)]

use std::time::Duration;

use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome};
use crate::spec::ToolSpec;

/// The span of one call, and when it began.
pub(crate) struct CallObserver {
    #[cfg(feature = "tracing")]
    pub(crate) span: tracing::Span,
    #[cfg(feature = "metrics")]
    began: tokio::time::Instant,
}

impl CallObserver {
    pub(crate) fn new(spec: &ToolSpec, key: &crate::key::IntentKey, call_id: Option<&str>) -> CallObserver {
        CallObserver {
            #[cfg(feature = "tracing")]
            span: tracing::info_span!(
                "execute_tool",
                otel.name = %format_args!("execute_tool {}", spec.name()),
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = spec.name(),
                gen_ai.tool.type = "function",
                gen_ai.tool.call.id = call_id,
                tool_contract.effect = %spec.effect(),
                tool_contract.intent_key = %key,
                tool_contract.outcome = tracing::field::Empty,
                tool_contract.effect_applied = tracing::field::Empty,
                tool_contract.attempts = tracing::field::Empty,
                tool_contract.deadline_left_s = tracing::field::Empty,
                error.type = tracing::field::Empty,
            ),
            #[cfg(feature = "metrics")]
            began: tokio::time::Instant::now(),
        }
    }

    /// The call's future, run inside its span (without the feature, the future itself: no layer).
    pub(crate) fn within<F: std::future::Future>(
        &self,
        fut: F,
    ) -> impl std::future::Future<Output = F::Output> {
        #[cfg(feature = "tracing")]
        return tracing::Instrument::instrument(fut, self.span.clone());
        #[cfg(not(feature = "tracing"))]
        fut
    }

    /// The call's end: its report's fields on the span, and the call counted.
    pub(crate) fn finish(
        &self,
        spec: &ToolSpec,
        outcome: Outcome,
        applied: Applied,
        attempts: u32,
        left_s: u64,
    ) {
        #[cfg(feature = "tracing")]
        {
            let span = &self.span;
            span.record("tool_contract.outcome", outcome.as_str());
            span.record("tool_contract.effect_applied", applied.as_str());
            span.record("tool_contract.attempts", attempts);
            span.record("tool_contract.deadline_left_s", left_s);
            if outcome != Outcome::Ok {
                span.record("error.type", outcome.as_str());
            }
        }
        #[cfg(feature = "metrics")]
        {
            let (tool, effect) = (spec.name(), spec.effect().as_str());
            metrics::counter!("tool_contract_calls_total", "tool" => tool, "effect" => effect, "outcome" => outcome.as_str())
                .increment(1);
            if outcome == Outcome::Unknown {
                metrics::counter!("tool_contract_unknown_total", "tool" => tool).increment(1);
            }
            metrics::histogram!("tool_contract_attempts", "tool" => tool).record(f64::from(attempts));
            metrics::histogram!("tool_contract_call_duration_seconds", "tool" => tool)
                .record(self.began.elapsed().as_secs_f64());
        }
    }
}

/// The span of one attempt.
pub(crate) fn attempt_span(attempt: u32, attempt_id: &str) -> Span {
    #[cfg(feature = "tracing")]
    return Span {
        inner: tracing::info_span!(
            "attempt",
            tool_contract.attempt = attempt,
            tool_contract.attempt_id = attempt_id,
            tool_contract.outcome = tracing::field::Empty,
            tool_contract.effect_applied = tracing::field::Empty,
            tool_contract.message = tracing::field::Empty,
            http.request.resend_count = tracing::field::Empty,
        ),
    };
    #[cfg(not(feature = "tracing"))]
    Span {}
}

/// The span of one probe.
pub(crate) fn probe_span(spec: &ToolSpec) -> Span {
    #[cfg(feature = "tracing")]
    return Span {
        inner: tracing::info_span!(
            "probe",
            gen_ai.tool.name = spec.name(),
            tool_contract.verdict = tracing::field::Empty
        ),
    };
    #[cfg(not(feature = "tracing"))]
    Span {}
}

/// A span, or nothing without the feature.
#[derive(Clone)]
pub(crate) struct Span {
    #[cfg(feature = "tracing")]
    inner: tracing::Span,
}

impl Span {
    /// How the attempt ended.
    pub(crate) fn classified(&self, outcome: Outcome, applied: Applied, message: &str) {
        #[cfg(feature = "tracing")]
        {
            self.inner.record("tool_contract.outcome", outcome.as_str());
            self.inner.record("tool_contract.effect_applied", applied.as_str());
            self.inner.record("tool_contract.message", message);
        }
    }

    /// What the probe said.
    pub(crate) fn verdict(&self, spec: &ToolSpec, mark: ProbeMark) {
        #[cfg(feature = "tracing")]
        self.inner.record("tool_contract.verdict", mark.as_str());
        #[cfg(feature = "metrics")]
        metrics::counter!("tool_contract_probes_total", "tool" => spec.name(), "verdict" => mark.as_str())
            .increment(1);
    }
}

/// `fut`, run inside `span` (without the feature, the future itself: no layer).
pub(crate) fn within_span<F: std::future::Future>(
    span: &Span,
    fut: F,
) -> impl std::future::Future<Output = F::Output> {
    #[cfg(feature = "tracing")]
    return tracing::Instrument::instrument(fut, span.inner.clone());
    #[cfg(not(feature = "tracing"))]
    fut
}

/// An attempt refused before it started: below the floor, or no budget left.
pub(crate) fn refused(spec: &ToolSpec, message: &str) {
    #[cfg(feature = "tracing")]
    tracing::info!(tool_contract.event = "refused", message, "attempt not started");
    #[cfg(feature = "metrics")]
    metrics::counter!("tool_contract_budget_refusals_total", "tool" => spec.name()).increment(1);
}

/// A retry the service's retry budget refused.
pub(crate) fn retry_budget_spent(spec: &ToolSpec) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        tool_contract.event = "retry_budget_spent",
        tool_contract.service = spec.get_service(),
        "retry refused: the service's retry budget is spent"
    );
    #[cfg(feature = "metrics")]
    metrics::counter!("tool_contract_retry_budget_refusals_total", "service" => spec.get_service())
        .increment(1);
}

/// A wait before the next attempt; `asked` when the service asked for it (`Retry-After`).
pub(crate) fn waiting(wait: Duration, asked: bool) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        tool_contract.event = "wait",
        tool_contract.wait_s = wait.as_secs_f64(),
        tool_contract.retry_after = asked,
        "waiting before the next attempt"
    );
}

/// An outcome left `unknown`, handed to the escalation sink (or to none).
pub(crate) fn escalated(spec: &ToolSpec, to_sink: bool) {
    #[cfg(feature = "tracing")]
    tracing::warn!(tool_contract.event = "escalation", tool_contract.sink = to_sink, "unresolved: escalated");
    #[cfg(feature = "metrics")]
    metrics::counter!("tool_contract_escalations_total", "tool" => spec.name()).increment(1);
}

/// The approver was asked for the next attempt.
pub(crate) fn approval_asked(attempt: u32) {
    #[cfg(feature = "tracing")]
    tracing::info!(tool_contract.event = "approval_asked", tool_contract.attempt = attempt, "approval asked");
}

/// The approver answered.
pub(crate) fn approval_answered(approved: bool) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        tool_contract.event = "approval_answered",
        tool_contract.approved = approved,
        "approval answered"
    );
}

/// The call was answered from the attempt log, not repeated.
pub(crate) fn replayed(spec: &ToolSpec) {
    #[cfg(feature = "tracing")]
    tracing::info!(tool_contract.event = "replay", "answered from the attempt log; not repeated");
    #[cfg(feature = "metrics")]
    metrics::counter!("tool_contract_replays_total", "tool" => spec.name()).increment(1);
}

/// An HTTP request of a later attempt: a resend, in the OpenTelemetry HTTP convention's terms.
#[cfg(feature = "reqwest")]
pub(crate) fn resend(attempt: u32) {
    #[cfg(feature = "tracing")]
    if attempt > 1 {
        tracing::Span::current().record("http.request.resend_count", attempt - 1);
    }
}
