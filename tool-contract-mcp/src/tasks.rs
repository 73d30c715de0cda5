//! MCP tasks (the tasks extension of MCP 2026-07-28, `io.modelcontextprotocol/tasks`): a call in
//! doubt kept for the client to poll, in the attempt log.
//!
//! For a client that declares the extension, a side-effecting tool's call whose report is `unknown`
//! is answered with a task instead of the report: the client polls `tasks/get` until the task is
//! `completed`, its result the report of the call once a probe, a person or the landing horizon has
//! resolved it. The task is `mcp_task` records beside the intent's attempts, written before the reply
//! that announces them, so a restarted server, or any server of a fleet on one store, serves it:
//!
//! - `created`: the call as it was made (its tool, arguments, task and actor, so a later call of it
//!   has the same intent key), who may see the task, its TTL, and the report it was created with;
//! - `cancel_requested`: the client asked to cancel it;
//! - `ended`: its status and result. The first one written stands.
//!
//! While a task is open, a driver in the server that serves it calls the tool again, the way any
//! later call of the intent runs: the engine probes first, waits out the landing horizon, and tries
//! again only where the tool's policy allows. A driver starts when the task is created and whenever a
//! server is polled for a task no driver of its own runs (after a restart, on another server); two
//! drivers of one task are harmless, as the intent's claim lets one call run at a time.
//!
//! What a task says is what is known. A call that resolves ends the task `completed`, its result the
//! report (`isError` as the report's outcome says). A cancelled task whose attempt may still have
//! landed ends `completed` with the report in doubt, its status message saying so: cancelling does not
//! undo an effect. A task past its TTL ends the same way, never `failed`.
//!
//! A task id is the intent key and 128 random bits; the log keeps only the bits' digest. Over HTTP a
//! task is served only to requests with the credential it was created with; over a transport of the
//! server's own (stdio, a pipe), to its one client.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, ErrorData, GetTaskResult, JsonObject, TaskPayload,
    TaskStatus,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Digest;
use tool_contract::effect::EffectKind;
use tool_contract::journal::{Durability, Journal, Phase, Record};
use tool_contract::unstable::{parse_rfc3339, rfc3339, wall_clock};
use tool_contract::{Applied, IntentKey, Outcome, Reason, Report};

use crate::call::result_of;
use crate::{ACTOR_META_KEY, McpServer, TASK_META_KEY, TOOL_CALL_ID_META_KEY};

/// How long a task is kept for its client by default: an hour, from its creation. A `money` task is
/// kept at least as long as the person at the client is given to answer, plus the tool's landing
/// horizon and the budget of a call.
pub const TASK_TTL: Duration = Duration::from_secs(3600);

/// How often a client is asked to poll a task while a call of it runs.
const POLL: Duration = Duration::from_secs(1);

/// The longest a driver waits between two calls of an open task: a cancellation is seen within it.
const LONGEST_NAP: Duration = Duration::from_secs(5);

/// What a server keeps of tasks: whether its log keeps them, their TTL, and the tasks its drivers run.
pub(crate) struct Tasks {
    /// The attempt log keeps MCP tasks ([`tool_contract::journal::McpTasks`]): the server offers them.
    pub(crate) on: bool,
    ttl: Duration,
    /// The task ids a driver of this process runs.
    driving: Mutex<HashSet<String>>,
}

impl Tasks {
    /// Tasks kept `ttl` by default, offered when `on`.
    pub(crate) fn new(on: bool, ttl: Duration) -> Tasks {
        Tasks { on, ttl, driving: Mutex::new(HashSet::new()) }
    }
}

/// The account of an `mcp_task` record: its `value`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Note {
    /// The first 32 hex digits of the SHA-256 of the task id's secret part.
    id: String,
    /// When the step was written, RFC 3339 UTC.
    at: String,
    #[serde(flatten)]
    step: Step,
}

/// One step of a task.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
enum Step {
    /// The task is created for a call whose report was `unknown`.
    Created {
        /// The call's arguments.
        arguments: Option<Map<String, Value>>,
        /// Who the call's task acts for.
        actor: String,
        /// The model's id of the tool call, when the request named one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
        /// Who may see the task ([`binding`]).
        bound: String,
        /// How long the task is kept, in milliseconds from its creation.
        ttl_ms: u64,
        /// The call's result as the task was created: its report in doubt.
        result: Value,
    },
    /// The client asked to cancel the task.
    CancelRequested,
    /// The task is over.
    Ended {
        /// `completed`, `failed` or `cancelled`.
        status: TaskStatus,
        /// The call's result, when `completed`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// What the task's status message says.
        message: String,
    },
}

/// A task as its records tell it.
struct Told {
    key: IntentKey,
    /// The created record and its account.
    created: (Record, Note),
    cancel_requested: bool,
    /// The first end written.
    ended: Option<Note>,
    /// When it was last written to, RFC 3339 UTC.
    updated: String,
}

impl Told {
    fn ttl_ms(&self) -> u64 {
        match &self.created.1.step {
            Step::Created { ttl_ms, .. } => *ttl_ms,
            _ => 0,
        }
    }

    /// The task on the wire, `status` as `payload` says.
    fn detailed(&self, id: &str, payload: TaskPayload, message: String) -> DetailedTask {
        let task = rmcp::model::Task::new(id, TaskStatus::Working, &self.created.1.at, &self.updated)
            .with_ttl_ms(self.ttl_ms())
            .with_poll_interval_ms(POLL.as_millis() as u64)
            .with_status_message(message);
        DetailedTask::new(task, payload)
    }
}

/// The error for a task id this client cannot see: unknown, expired, malformed or another client's.
fn unknown_task() -> ErrorData {
    ErrorData::invalid_params("no such task (unknown, expired, or not this client's)", None)
}

/// The digest the log keeps of a task id's secret.
fn digest(secret: &str) -> String {
    sha2::Sha256::digest(secret.as_bytes())[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The intent key and the secret's digest of a task id (`{key}.{secret}`).
fn parse_id(id: &str) -> Option<(IntentKey, String)> {
    let (key, secret) = id.split_once('.')?;
    let valid = secret.len() == 32 && secret.bytes().all(|b| b.is_ascii_hexdigit());
    valid.then_some(())?;
    Some((IntentKey::parse(key).ok()?, digest(secret)))
}

/// 128 bits from the operating system's generator, as 32 hex digits.
fn secret() -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorData::internal_error(format!("no random task id could be drawn: {e}"), None))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Who may see a task created through `context`: over HTTP, the credential of the request (its
/// digest); over a transport of the server's own, its client.
fn binding(context: &RequestContext<RoleServer>) -> String {
    #[cfg(feature = "http")]
    if let Some(parts) = context.extensions.get::<hyper::http::request::Parts>() {
        return match parts.headers.get("authorization").and_then(|v| v.to_str().ok()) {
            Some(credential) => format!("credential {}", digest(credential)),
            None => "HTTP with no credential".to_owned(),
        };
    }
    let _ = context;
    "the server's own transport".to_owned()
}

/// Whether a driver is done with a call that reported `report`: its intent is out of doubt, or another
/// call of it could not tell (it held the intent, or the store failed).
fn resolved(report: &Report<Value>) -> bool {
    report.outcome != Outcome::Unknown
        && report.effect_applied != Applied::Unknown
        && !matches!(report.reason, Reason::Busy | Reason::StoreFailed)
}

impl McpServer {
    /// The attempt log of the server's calls, when it keeps tasks.
    fn task_log(&self) -> Option<Arc<dyn Journal>> {
        let task = self.inner.template.task("", "", Duration::ZERO);
        tool_contract::unstable::journal_of(&task).filter(|log| log.mcp_tasks().is_some())
    }

    /// Whether the call `name` made through `context` is answered with a task when its report is
    /// `unknown`: the log keeps tasks, the client declared the extension, and the tool has a side effect.
    pub(crate) fn offers_task(&self, name: &str, context: &RequestContext<RoleServer>) -> bool {
        self.inner.tasks.on
            && context.client_capabilities().is_some_and(|c| c.supports_tasks())
            && self.inner.toolbox.get(name).is_some_and(|d| d.effect() != EffectKind::Read)
    }

    /// Keep the call `name` whose result is `result` as a task, if its report is `unknown`: the task's
    /// `created` record is on stable storage before the task is returned, and a driver starts.
    pub(crate) async fn keep_as_task(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
        result: &CallToolResult,
    ) -> Result<Option<CreateTaskResult>, ErrorData> {
        let report = result.structured_content.as_ref();
        if report.and_then(|r| r.get("outcome")).and_then(Value::as_str) != Some(Outcome::Unknown.as_str()) {
            return Ok(None);
        }
        let (Some(log), Some(key)) = (self.task_log(), report.and_then(|r| r.get("idempotency_key"))) else {
            return Ok(None);
        };
        let key = key.as_str().and_then(|k| IntentKey::parse(k).ok()).ok_or_else(unknown_task)?;
        let task = self.task(meta)?;
        let secret = secret()?;
        let id = format!("{key}.{secret}");
        let kind = self.inner.toolbox.get(name).map(|d| d.effect());
        let ttl = match kind {
            Some(EffectKind::Money) => {
                self.inner.tasks.ttl.max(self.inner.ask_within + self.inner.budget * 2)
            }
            _ => self.inner.tasks.ttl,
        };
        let step = Step::Created {
            arguments,
            actor: task.actor().to_owned(),
            tool_call_id: task.call_id().map(str::to_owned),
            bound: binding(context),
            ttl_ms: ttl.as_millis() as u64,
            result: serde_json::to_value(result)
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
        };
        let record = write(&*log, key, task.id(), name, digest(&secret), step).await?;
        self.drive(id.clone(), key);
        let at = record.started.clone();
        let task = rmcp::model::Task::new(id, TaskStatus::Working, &at, &at)
            .with_ttl_ms(ttl.as_millis() as u64)
            .with_poll_interval_ms(POLL.as_millis() as u64)
            .with_status_message(WORKING);
        Ok(Some(CreateTaskResult::new(task)))
    }

    /// `tasks/get`: the task as the log tells it. An open task no driver of this server runs gets one.
    pub(crate) async fn get_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let told = self.told(id, context).await?;
        let detailed = match &told.ended {
            Some(Note { step: Step::Ended { status, result, message }, .. }) => {
                let payload = match (status, result) {
                    (TaskStatus::Completed, Some(Value::Object(result))) => {
                        TaskPayload::Completed { result: result.clone() }
                    }
                    (TaskStatus::Cancelled, _) => TaskPayload::Cancelled,
                    _ => TaskPayload::Failed { error: failed(message) },
                };
                told.detailed(id, payload, message.clone())
            }
            _ => {
                self.drive(id.to_owned(), told.key);
                let message = if told.cancel_requested { CANCELLING } else { WORKING };
                told.detailed(id, TaskPayload::Working, message.to_owned())
            }
        };
        Ok(GetTaskResult::new(detailed))
    }

    /// `tasks/update`: a task asks nothing of its client yet, so every response is ignored, as the
    /// extension says of responses to no outstanding request.
    pub(crate) async fn update_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.told(id, context).await.map(drop)
    }

    /// `tasks/cancel`: the request is recorded and the task's driver ends it at its next step: nothing
    /// more is attempted, and the task says what is known of what was.
    pub(crate) async fn cancel_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let told = self.told(id, context).await?;
        if told.ended.is_some() || told.cancel_requested {
            return Ok(());
        }
        let log = self.task_log().ok_or_else(unknown_task)?;
        let (record, note) = &told.created;
        write(&*log, told.key, &record.task, &record.call, note.id.clone(), Step::CancelRequested).await?;
        self.drive(id.to_owned(), told.key);
        Ok(())
    }

    /// The task `id` as the log tells it, if this client may see it.
    async fn told(&self, id: &str, context: &RequestContext<RoleServer>) -> Result<Told, ErrorData> {
        let told = self.read(id).await?.ok_or_else(unknown_task)?;
        match &told.created.1.step {
            Step::Created { bound, .. } if *bound == binding(context) => Ok(told),
            _ => Err(unknown_task()),
        }
    }

    /// The task `id` as the log tells it; `None` when the log holds no such task.
    async fn read(&self, id: &str) -> Result<Option<Told>, ErrorData> {
        let Some((key, id)) = parse_id(id) else { return Ok(None) };
        let log = self.task_log().ok_or_else(unknown_task)?;
        let tasks = log.mcp_tasks().ok_or_else(unknown_task)?;
        let records = tasks
            .mcp_task_records(&key)
            .await
            .map_err(|e| ErrorData::internal_error(format!("the task could not be read: {e}"), None))?;
        let mut told: Option<Told> = None;
        for record in records {
            let Some(note) = record.value.clone().and_then(|v| serde_json::from_value::<Note>(v).ok()) else {
                continue;
            };
            if note.id != id {
                continue;
            }
            match (&mut told, &note.step) {
                (None, Step::Created { .. }) => {
                    let updated = note.at.clone();
                    told = Some(Told {
                        key,
                        created: (record, note),
                        cancel_requested: false,
                        ended: None,
                        updated,
                    });
                }
                (Some(told), Step::CancelRequested) => {
                    told.cancel_requested = true;
                    told.updated = note.at.clone();
                }
                (Some(told), Step::Ended { .. }) if told.ended.is_none() => {
                    told.updated = note.at.clone();
                    told.ended = Some(note);
                }
                _ => {}
            }
        }
        Ok(told)
    }

    /// Run a driver of the task `id` unless one of this server runs it already.
    fn drive(&self, id: String, key: IntentKey) {
        let driving = &self.inner.tasks.driving;
        if !driving.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone()) {
            return;
        }
        let server = self.clone();
        tokio::spawn(async move {
            server.run_task(&id, key).await;
            server.inner.tasks.driving.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        });
    }

    /// Call the task's tool again until its intent is out of doubt, the client cancels, or the TTL
    /// passes; then write its end.
    async fn run_task(&self, id: &str, key: IntentKey) {
        let Some(log) = self.task_log() else { return };
        let mut last: Option<Value> = None;
        loop {
            let Ok(Some(told)) = self.read(id).await else { return };
            let (record, note) = &told.created;
            let Step::Created { arguments, actor, tool_call_id, ttl_ms, result, .. } = &note.step else {
                return;
            };
            if told.ended.is_some() {
                return;
            }
            let in_doubt = last.clone().unwrap_or_else(|| result.clone());
            let expired = parse_rfc3339(&note.at)
                .and_then(|at| at.checked_add(Duration::from_millis(*ttl_ms)))
                .is_some_and(|until| wall_clock() >= until);
            let end = if told.cancel_requested {
                Some(CANCELLED_IN_DOUBT)
            } else if expired {
                Some(EXPIRED_IN_DOUBT)
            } else {
                None
            };
            if let Some(message) = end {
                let step = Step::Ended {
                    status: TaskStatus::Completed,
                    result: Some(in_doubt),
                    message: message.to_owned(),
                };
                let _ = write(&*log, key, &record.task, &record.call, note.id.clone(), step).await;
                return;
            }
            let mut meta = Map::new();
            meta.insert(TASK_META_KEY.to_owned(), Value::String(record.task.clone()));
            meta.insert(ACTOR_META_KEY.to_owned(), Value::String(actor.clone()));
            if let Some(call_id) = tool_call_id {
                meta.insert(TOOL_CALL_ID_META_KEY.to_owned(), Value::String(call_id.clone()));
            }
            let Ok(report) = self.report_of(&record.call, arguments.clone(), &meta, None).await else {
                return;
            };
            let nap = report.retry_after_s.map_or(POLL, Duration::from_secs).clamp(POLL, LONGEST_NAP);
            let done = resolved(&report);
            let Ok(result) = result_of(report).and_then(|r| {
                serde_json::to_value(r).map_err(|e| ErrorData::internal_error(e.to_string(), None))
            }) else {
                return;
            };
            if done {
                let step = Step::Ended {
                    status: TaskStatus::Completed,
                    result: Some(result),
                    message: DONE.to_owned(),
                };
                let _ = write(&*log, key, &record.task, &record.call, note.id.clone(), step).await;
                return;
            }
            last = Some(result);
            tokio::time::sleep(nap).await;
        }
    }
}

/// A task's status message while a call of it runs.
const WORKING: &str = "the call's outcome is unknown: the server probes, waits out the landing horizon, \
                       and calls again where the tool's policy allows";
/// A task's status message once cancelling is asked.
const CANCELLING: &str = "cancel requested: nothing more is attempted";
/// The status message of a task whose call resolved.
const DONE: &str = "the call is resolved: its report is the result";
/// The status message of a task cancelled in doubt.
const CANCELLED_IN_DOUBT: &str = "cancelled at the client's request while the call's outcome was unknown: an \
                                  attempt may still have landed, and nothing more was attempted; the result is \
                                  the last report";
/// The status message of a task whose TTL passed in doubt.
const EXPIRED_IN_DOUBT: &str = "the task's TTL passed while the call's outcome was unknown: the result is the \
                                last report, and the intent stays in doubt in the attempt log";

/// A JSON-RPC error object saying `message`.
fn failed(message: &str) -> JsonObject {
    let mut error = JsonObject::new();
    error.insert("code".to_owned(), Value::from(-32603));
    error.insert("message".to_owned(), Value::String(message.to_owned()));
    error
}

/// Write one step of the task whose secret's digest is `id` (the call `call` of task `task` on intent
/// `key`), synced, at the intent's highest attempt: the record, once on stable storage.
async fn write(
    log: &dyn Journal,
    key: IntentKey,
    task: &str,
    call: &str,
    id: String,
    step: Step,
) -> Result<Record, ErrorData> {
    let internal = |why: String| ErrorData::internal_error(why, None);
    let recall =
        log.recall(&key).await.map_err(|e| internal(format!("the attempt log could not be read: {e}")))?;
    let (attempt, attempt_id) = recall.map_or((0, String::new()), |r| (r.attempts, r.last.attempt_id));
    let at = rfc3339(wall_clock());
    let message = match &step {
        Step::Created { .. } => "MCP task created: the call's outcome is unknown",
        Step::CancelRequested => "MCP task: cancel requested",
        Step::Ended { .. } => "MCP task ended",
    };
    let note = Note { id, at: at.clone(), step };
    let record = Record {
        phase: Phase::McpTask,
        task: task.to_owned(),
        call: call.to_owned(),
        intent_key: key,
        attempt,
        attempt_id,
        started: at,
        budget_left_s: 0,
        outcome: None,
        effect_applied: None,
        probe: None,
        message: Some(message.to_owned()),
        retry_at: None,
        sent_by: None,
        args: None,
        value: Some(serde_json::to_value(note).map_err(|e| internal(e.to_string()))?),
        settled: None,
        approval: None,
    };
    log.append(record.as_record_ref(), Durability::Synced)
        .await
        .map_err(|e| internal(format!("the task could not be written: {e}")))?;
    Ok(record)
}
