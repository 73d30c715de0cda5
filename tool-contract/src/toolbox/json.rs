//! A tool run with its arguments and value as JSON: what the `#[tool]` attribute's generated code
//! calls so a [`Toolbox`](super::Toolbox) can run any tool by name.

use serde_json::Value;

use crate::call::Call;
use crate::classify::{Class, Classify};
use crate::engine::{One, drive_in_parts};
use crate::journal::{BoxFuture, LogValue};
use crate::key::IntentKey;
use crate::probe::Probe;
use crate::report::Report;
use crate::spec::ToolSpec;
use crate::task::Task;

/// A tool's report with its value as JSON. A value that does not serialise (a map with non-string
/// keys) leaves `value` empty and says so; the outcome stays what happened.
#[doc(hidden)]
pub fn into_json<T: LogValue>(report: Report<T>) -> Report<Value> {
    let Report {
        outcome,
        effect_applied,
        attempt_id,
        idempotency_key,
        retry_after_s,
        deadline_left_s,
        mut message,
        value,
        items,
        reason,
    } = report;
    let value = match value.as_ref().map(LogValue::to_log) {
        None => None,
        Some(Ok(value)) => Some(value),
        Some(Err(error)) => {
            message.push_str(&format!("; its value could not be written as JSON: {error}"));
            None
        }
    };
    Report {
        outcome,
        effect_applied,
        attempt_id,
        idempotency_key,
        retry_after_s,
        deadline_left_s,
        message,
        value,
        items,
        reason,
    }
}

/// An attempt of a tool called by name, its value as JSON (made by [`json_answer`]).
#[doc(hidden)]
pub type JsonAttempt<'a> = dyn Fn(Call) -> BoxFuture<'a, Result<Value, Class>> + Sync + 'a;

/// A probe of a tool called by name, its value as JSON (made by [`json_verdict`]).
#[doc(hidden)]
pub type JsonProbe<'a> = dyn Fn(IntentKey) -> BoxFuture<'a, Probe<Value>> + Sync + 'a;

/// Why a value of a tool called by name could not be written as JSON, when one could not: the first
/// such value is kept, the report then has no value and says why.
#[derive(Debug, Default)]
#[doc(hidden)]
pub struct Unwritten(std::sync::OnceLock<String>, Option<fn(&Value) -> Option<String>>);

impl Unwritten {
    /// For a tool whose value is a `T`: a value a person names when settling is checked against it.
    pub fn checking<T: LogValue>() -> Unwritten {
        Unwritten(std::sync::OnceLock::new(), Some(|value| T::from_log(value).err().map(|e| e.to_string())))
    }
}

/// The engine for a tool called by name: [`crate::engine::run`] with the value as JSON and the attempt
/// and probe behind references, so every tool a [`Toolbox`] dispatches runs one instantiation of the
/// engine, compiled once in this crate, where each direct call of a `#[tool]` runs its own. The report
/// is what [`into_json`] makes of the typed one; `unwritten` is the one the attempt and probe wrote to.
///
/// The future is boxed: its type is then one a tool's crate sees as `Send` at a glance, where proving it
/// of the engine's future again for each tool costs that crate a quarter of its `cargo check`.
#[doc(hidden)]
pub fn run_json<'a>(
    task: &'a Task,
    spec: &'a ToolSpec,
    key: IntentKey,
    attempt: &'a JsonAttempt<'a>,
    probe: Option<&'a JsonProbe<'a>>,
    unwritten: &'a Unwritten,
    arguments: crate::call::Arguments,
) -> BoxFuture<'a, Report<Value>> {
    Box::pin(async move {
        let check = unwritten.1;
        let mut report = match probe {
            // The engine's `run`, its attempt loop in an allocation of its own (the future is boxed anyway).
            Some(probe) => {
                let one = One::new(attempt, probe).checking(check).arguments(arguments);
                drive_in_parts(task, spec, key, one).await
            }
            None => {
                let one = One::new(attempt, crate::probe::NoProbe).checking(check).arguments(arguments);
                drive_in_parts(task, spec, key, one).await
            }
        };
        if let Some(why) = unwritten.0.get()
            && report.value == Some(Value::Null)
        {
            report.value = None;
            report.message.push_str(&format!("; its value could not be written as JSON: {why}"));
        }
        report
    })
}

/// An attempt's answer with its value as JSON, for [`JsonAttempt`]: a value that cannot be written
/// is `null`, and `unwritten` says why.
#[doc(hidden)]
pub fn json_answer<T: LogValue, E: Classify>(
    answer: Result<T, E>,
    unwritten: &Unwritten,
) -> Result<Value, Class> {
    match answer {
        Ok(value) => Ok(written(value.to_log(), unwritten)),
        Err(error) => Err(error.classify()),
    }
}

/// A probe's verdict with its value as JSON, for [`JsonProbe`], as in [`json_answer`].
#[doc(hidden)]
pub fn json_verdict<T: LogValue>(verdict: Probe<T>, unwritten: &Unwritten) -> Probe<Value> {
    match verdict {
        Probe::Landed(value) => Probe::Landed(written(value.to_log(), unwritten)),
        Probe::NotLanded => Probe::NotLanded,
        Probe::Failed(why) => Probe::Failed(why),
    }
}

fn written(value: Result<Value, serde_json::Error>, unwritten: &Unwritten) -> Value {
    value.unwrap_or_else(|error| {
        let _ = unwritten.0.set(error.to_string());
        Value::Null
    })
}
