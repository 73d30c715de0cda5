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
//! - `asked` and `answered`: a question of the tool to the client, and the client's answer (the first
//!   one written stands);
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
//! report (`isError` as the report's outcome says). A call the server could not run (a protocol error,
//! or an attempt log that refused its first attempt) ends it `failed`. A cancelled task ends
//! `cancelled` when nothing of it can have applied (a read, or a side effect never attempted), and
//! otherwise `completed` with what is known, its status message saying that an attempt may still have
//! landed: cancelling does not undo an effect. A task past its TTL ends the same way, never `failed`.
//!
//! Beyond calls in doubt, a tool's [`TaskSupport`] says when else a call is a task: `Optional` (the
//! default of a side effect) also when the call outlasts [`TASK_WINDOW`], and `Required` always (a client
//! that does not declare the extension is refused, `-32021`). A read is never one unless the server is
//! told so. The call goes on after the reply that announces its task; a tool's question to the client
//! ([`tool_contract::Call::ask`]) is then the task's `input_required`, answered with `tasks/update`,
//! and one asked before the task exists goes to the client over rounds (input required, a sealed
//! request state), so the task starts with the answer in hand.
//!
//! A task id is the intent key and 128 random bits; the log keeps only the bits' digest. Over HTTP
//! with a credential, a task is served only to requests with the credential it was created with.
//! Otherwise (over stdio, an in-process pipe, or HTTP with no credential) the id itself is what admits:
//! whoever holds it, on any connection to a server on the log, reads, answers and cancels the task. That
//! is how a task outlives its connection (a host that starts its server again polls the task on the new
//! one); a server that serves clients who must not see each other's tasks gives each a credential.
//!
//! A cancelled side effect is judged under the intent's claim, so no call of it (here or on another
//! server) is under way meanwhile: `cancelled` when no attempt was made or the log's last word says
//! nothing applied, `completed` with the recorded report when its effect is recorded, and `completed`
//! with the last report, in doubt, otherwise (a call of it still holding the intent included).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult,
    DetailedTask, ElicitResult, ErrorData, GetTaskResult, InputRequest, InputRequests, InputRequiredResult,
    JsonObject, SealOptions, TaskPayload, TaskStatus,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Digest;
use tokio::sync::{Notify, oneshot};
use tool_contract::effect::EffectKind;
use tool_contract::journal::{Claimed, Durability, Journal, Owner, Phase, Recall, Record};
use tool_contract::policy::{self, Start};
use tool_contract::unstable::{Asker, parse_rfc3339, rfc3339, wall_clock, with_asker};
use tool_contract::{Applied, Class, IntentKey, Outcome, Reason, Report};

use crate::call::result_of;
use crate::{ACTOR_META_KEY, McpServer, TASK_META_KEY, TOOL_CALL_ID_META_KEY};

/// How long a task is kept for its client by default: an hour, from its creation. A `money` task is
/// kept at least as long as the person at the client is given to answer, plus two budgets of a call.
pub const TASK_TTL: Duration = Duration::from_secs(3600);

/// How long a call a task may keep runs before the client is answered with the task instead of the
/// call's result (an `Optional` tool's call that ends sooner, and is not in doubt, is answered with its
/// result).
pub const TASK_WINDOW: Duration = Duration::from_millis(250);

/// When a tool's call, from a client that declares the tasks extension, is answered with a task.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never: the call's result, whatever it is (the default of a `read` tool).
    Never,
    /// When the call ends in doubt, or outlasts [`TASK_WINDOW`] (the default of a side effect).
    Optional,
    /// Always; a client that does not declare the extension is refused with `-32021`.
    Required,
}

/// The largest answer to a task's question the log takes, as JSON: a form's answer is a few fields.
pub(crate) const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How often a client is asked to poll a task.
const POLL: Duration = Duration::from_secs(1);

/// The longest a driver or a question waits before it reads the task again: a cancellation, or an
/// answer written by another server, is seen within it.
const LONGEST_NAP: Duration = Duration::from_millis(200);

/// The longest a driver waits between two calls of a task in doubt.
const LONGEST_RETRY: Duration = Duration::from_secs(5);

/// What a server keeps of tasks: whether its log keeps them, their TTL, each tool's support, and what
/// runs in this process.
pub(crate) struct Tasks {
    /// The attempt log keeps MCP tasks ([`tool_contract::journal::McpTasks`]): the server offers them.
    pub(crate) on: bool,
    ttl: Duration,
    support: HashMap<String, TaskSupport>,
    /// The tasks whose call or driver runs in this process, to stop on a cancel.
    running: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// Woken at every answer written here, for the questions waiting on one.
    answered: Notify,
}

impl Tasks {
    /// Tasks kept `ttl` by default, offered when `on`, with the tools' support set in `support`.
    pub(crate) fn new(on: bool, ttl: Duration, support: HashMap<String, TaskSupport>) -> Tasks {
        Tasks { on, ttl, support, running: Mutex::default(), answered: Notify::new() }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, tokio::task::AbortHandle>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
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
    /// The task is created for a call.
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
        /// The call's result when the task was created for a report in doubt; none for a call that
        /// was still running.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
    },
    /// The tool asked the client for input.
    Asked {
        /// The question's key, unique within the task.
        key: String,
        /// The request the client answers (`elicitation/create`, ...).
        request: Value,
    },
    /// The client answered a question (`tasks/update`).
    Answered {
        /// The question's key.
        key: String,
        /// The client's answer.
        response: Value,
    },
    /// The client asked to cancel the task.
    CancelRequested,
    /// The task is over.
    Ended {
        /// `completed`, `failed` or `cancelled`.
        status: TaskStatus,
        /// The call's result, when `completed`; the JSON-RPC error, when `failed`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// What the task's status message says.
        message: String,
    },
}

/// A task as its records tell it.
struct Told {
    key: IntentKey,
    /// The secret's digest.
    id: String,
    /// The created record and its account.
    created: (Record, Note),
    /// The questions asked, in order, and the first answer to each.
    asked: Vec<(String, Value)>,
    answered: BTreeMap<String, Value>,
    cancel_requested: bool,
    /// The first end written.
    ended: Option<(TaskStatus, Option<Value>, String)>,
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

    /// The questions asked and not answered, as the client's input requests. A person's question
    /// (`approve-a2.q-…`, `settle-a1.q-…`) asked again about the same attempt, by a later call of the
    /// task, replaces the one before: nobody waits for that one any more.
    fn open_questions(&self) -> InputRequests {
        let about = |key: &str| match key.split_once('.') {
            Some((about, _)) if about.starts_with("approve-a") || about.starts_with("settle-a") => {
                about.to_owned()
            }
            _ => key.to_owned(),
        };
        let mut latest: BTreeMap<String, &(String, Value)> = BTreeMap::new();
        for asked in &self.asked {
            latest.insert(about(&asked.0), asked);
        }
        latest
            .into_values()
            .filter(|(key, _)| !self.answered.contains_key(key))
            .filter_map(|(key, request)| Some((key.clone(), serde_json::from_value(request.clone()).ok()?)))
            .collect()
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

fn internal(why: impl Into<String>) -> ErrorData {
    ErrorData::internal_error(why.into(), None)
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
    getrandom::fill(&mut bytes).map_err(|e| internal(format!("no random task id could be drawn: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Who may see a task created through `context`: over HTTP, the credential of the request (its
/// digest); otherwise whoever holds the task's id (see the module's docs).
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

/// The JSON of a call's result.
fn json(result: &CallToolResult) -> Result<Value, ErrorData> {
    serde_json::to_value(result).map_err(|e| internal(e.to_string()))
}

/// A JSON-RPC error object.
fn error_object(code: i32, message: &str) -> Value {
    serde_json::json!({ "code": code, "message": message })
}

/// What the task of a call that reported `report` comes to: `Some` end when its intent is out of doubt
/// or the call could not run, `None` while a later call has to look again (in doubt, or another call
/// of the intent holds it).
fn end_of(
    report: Report<Value>,
    first: bool,
    value_text: bool,
) -> Result<Option<(TaskStatus, Value, &'static str)>, ErrorData> {
    if report.reason == Reason::StoreFailed && report.effect_applied == Applied::No && first {
        return Ok(Some((TaskStatus::Failed, error_object(-32603, &report.message), STORE_FAILED)));
    }
    let in_doubt = report.outcome == Outcome::Unknown || report.effect_applied == Applied::Unknown;
    if in_doubt || matches!(report.reason, Reason::Busy | Reason::StoreFailed) {
        return Ok(None);
    }
    Ok(Some((TaskStatus::Completed, json(&result_of(report, value_text)?)?, DONE)))
}

/// The task ids `ids` are from, and what they look up.
struct TaskRef {
    /// The task id, as the client has it.
    id: String,
    key: IntentKey,
    /// The secret's digest.
    digest: String,
    /// The task and the tool of the call.
    task: String,
    call: String,
}

/// A question of a tool, asked before its call is a task: the key and the request.
type Pending = (String, Value);

/// How a call's questions reach its client ([`tool_contract::Call::ask`]).
enum Mode {
    /// Before the call is a task, over rounds: the first question is sent with the call's answer.
    Rounds(Option<Pending>),
    /// Through the task: recorded, answered with `tasks/update`.
    Task(Arc<TaskRef>),
}

/// The asker of one call a task may keep.
struct CallAsker {
    server: McpServer,
    /// The answer the call carries from the round before.
    carried: Option<Pending>,
    mode: Mutex<Mode>,
    /// The call's intent, once it is formed.
    key: std::sync::OnceLock<IntentKey>,
    formed: Notify,
    /// A question that must be answered while the call waits asks for the task to exist now; woken
    /// again once it does.
    promote: Notify,
    promoted: Notify,
}

/// The sealed state of a round that asked a tool's question: the question's key.
#[derive(Serialize, Deserialize)]
struct Asked {
    ask: String,
}

impl CallAsker {
    fn new(server: &McpServer, carried: Option<Pending>, mode: Mode) -> CallAsker {
        CallAsker {
            server: server.clone(),
            carried,
            mode: Mutex::new(mode),
            key: std::sync::OnceLock::new(),
            formed: Notify::new(),
            promote: Notify::new(),
            promoted: Notify::new(),
        }
    }

    /// Until a question of the call must be answered while it waits: the task must exist now.
    async fn promotion(&self) {
        self.promote.notified().await;
    }

    /// The call's intent key, once the call has formed it.
    async fn key(&self) -> IntentKey {
        loop {
            let formed = self.formed.notified();
            if let Some(key) = self.key.get() {
                return *key;
            }
            formed.await;
        }
    }

    fn mode(&self) -> std::sync::MutexGuard<'_, Mode> {
        self.mode.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// From now on, the call's questions go through `task`; the question asked over rounds in the
    /// meantime, if any, which the call ended on.
    fn switch_to_task(&self, task: Arc<TaskRef>) -> Option<Pending> {
        let pending = match std::mem::replace(&mut *self.mode(), Mode::Task(task)) {
            Mode::Rounds(pending) => pending,
            Mode::Task(_) => None,
        };
        self.promoted.notify_waiters();
        pending
    }

    /// The question asked over rounds, if the call ended on one.
    fn pending(&self) -> Option<Pending> {
        match &mut *self.mode() {
            Mode::Rounds(pending) => pending.take(),
            Mode::Task(_) => None,
        }
    }
}

impl Asker for CallAsker {
    fn ask(
        &self,
        key: String,
        request: Value,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, Class>> + Send + '_>> {
        Box::pin(async move {
            if serde_json::from_value::<InputRequest>(request.clone()).is_err() {
                return Err(Class::permanent(format!(
                    "the question `{key}` is not a request a client answers (`elicitation/create`, \
                     `sampling/createMessage` or `roots/list`, with its params)"
                )));
            }
            if let Some((carried, answer)) = &self.carried
                && *carried == key
            {
                return Ok(answer.clone());
            }
            let task = match &mut *self.mode() {
                Mode::Rounds(pending) => {
                    pending.get_or_insert((key.clone(), request));
                    // Not retried within the call, and nothing applied: the call made again with the
                    // answer starts afresh.
                    return Err(Class::permanent(format!(
                        "the client is asked for `{key}`: the call is made again with its answer"
                    )));
                }
                Mode::Task(task) => Arc::clone(task),
            };
            self.server.task_question(&task, key, request).await
        })
    }

    fn began(&self, key: IntentKey) {
        let _ = self.key.set(key);
        self.formed.notify_waiters();
    }

    fn ask_now(
        &self,
        key: String,
        request: Value,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, Class>> + Send + '_>> {
        Box::pin(async move {
            loop {
                let promoted = self.promoted.notified();
                let task = match &*self.mode() {
                    Mode::Task(task) => Some(Arc::clone(task)),
                    Mode::Rounds(_) => None,
                };
                match task {
                    Some(task) => return self.server.task_question(&task, key, request).await,
                    None => {
                        self.promote.notify_one();
                        promoted.await;
                    }
                }
            }
        })
    }
}

/// A task's questions from a call that runs after a restart or on another server: always through
/// the task.
fn task_asker(server: &McpServer, task: Arc<TaskRef>) -> Arc<CallAsker> {
    Arc::new(CallAsker::new(server, None, Mode::Task(task)))
}

impl McpServer {
    /// The attempt log of the server's calls, when it keeps tasks.
    fn task_log(&self) -> Option<Arc<dyn Journal>> {
        let task = self.inner.template.task("", "", Duration::ZERO);
        tool_contract::unstable::journal_of(&task).filter(|log| log.mcp_tasks().is_some())
    }

    /// The effect kind of the tool `name` (`None`: no such tool).
    fn effect_of(&self, name: &str) -> Option<EffectKind> {
        self.inner.toolbox.get(name).map(|d| d.effect())
    }

    /// Whether the tool `name` only reads (or is no tool of this server): nothing of its call applies.
    fn reads(&self, name: &str) -> bool {
        self.effect_of(name).is_none_or(|kind| kind == EffectKind::Read)
    }

    /// When a call of `name` is a task.
    pub(crate) fn task_support(&self, name: &str) -> TaskSupport {
        if let Some(support) = self.inner.tasks.support.get(name) {
            return *support;
        }
        match self.effect_of(name) {
            Some(EffectKind::Read) | None => TaskSupport::Never,
            Some(_) => TaskSupport::Optional,
        }
    }

    /// The person at the client of a call a task keeps, asked through the task (`input_required`),
    /// unless the server has an approver of its own.
    fn task_person(&self, meta: &Map<String, Value>, asked_in: String) -> Option<crate::person::Person> {
        if !self.inner.ask_client {
            return None;
        }
        let actor =
            meta.get(ACTOR_META_KEY).and_then(Value::as_str).unwrap_or(crate::DEFAULT_ACTOR).to_owned();
        Some(crate::person::Person::new(crate::person::Reach::Task, actor, asked_in, None))
    }

    /// Whether the client of `context` declared the tasks extension (for this request).
    pub(crate) fn takes_tasks(&self, context: &RequestContext<RoleServer>) -> bool {
        self.inner.tasks.on && context.client_capabilities().is_some_and(|c| c.supports_tasks())
    }

    /// A `tools/call` a task may keep, from a client that takes tasks: the call runs on its own; its
    /// result within [`TASK_WINDOW`] is the answer (unless it is in doubt, or the tool requires a task),
    /// a question it asks first goes to the client over rounds, and past the window the answer is a
    /// task the call goes on under.
    pub(crate) async fn call_as_task(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        support: TaskSupport,
    ) -> Result<CallToolResponse, ErrorData> {
        let bound = self.bound(&request.name, &context.meta)?;
        let carried = self.carried(&request, &bound)?;
        let asker = Arc::new(CallAsker::new(self, carried, Mode::Rounds(None)));
        let (sent, result) = oneshot::channel();
        let server = self.clone();
        let (name, arguments, meta) =
            (request.name.to_string(), request.arguments.clone(), context.meta.0.clone());
        let person = self.task_person(&context.meta, self.asked_in(context));
        let running = tokio::spawn(with_asker(asker.clone(), async move {
            let _ = sent.send(server.report_of(&name, arguments, &meta, person).await);
        }));
        let mut result = Box::pin(result);
        let window = async {
            // Past the window, or at a question that must be answered while the call waits.
            tokio::select! {
                () = tokio::time::sleep(TASK_WINDOW) => {}
                () = asker.promotion() => {}
            }
            asker.key().await
        };
        let early = tokio::select! {
            biased;
            report = &mut result => Ok(report.map_err(|_| internal("the call stopped"))??),
            key = window => Err(key),
            () = context.ct.cancelled() => {
                running.abort();
                return Err(ErrorData::invalid_request("the client cancelled the call", None));
            }
        };
        match early {
            Ok(report) => {
                if let Some((key, request)) = asker.pending() {
                    return self.ask_over_rounds(key, request, &bound).map(Into::into);
                }
                let in_doubt = report.outcome == Outcome::Unknown;
                let call = result_of(report.clone(), self.inner.value_text)?;
                // A call never made (its arguments did not parse) has no intent to keep a task on: its
                // error is the answer, whatever the tool's support.
                let never_made = report.idempotency_key == IntentKey::NONE;
                if never_made || (!in_doubt && support == TaskSupport::Optional) {
                    return Ok(call.into());
                }
                let created =
                    self.create_task(&request, context, report.idempotency_key, Some(json(&call)?)).await?;
                let task = Arc::new(created.1);
                match end_of(report, true, self.inner.value_text)? {
                    Some((status, result, message)) => {
                        self.end_task(&task, status, Some(result), message).await?
                    }
                    None => self.drive(Arc::clone(&task)),
                }
                Ok(CallToolResponse::Task(self.task_now(&task.id, context).await?))
            }
            Err(key) => {
                let (_, task) = self.create_task(&request, context, key, None).await?;
                let task = Arc::new(task);
                let pending = asker.switch_to_task(Arc::clone(&task));
                self.inner.tasks.running().insert(task.id.clone(), running.abort_handle());
                let server = self.clone();
                let follow = Arc::clone(&task);
                tokio::spawn(async move {
                    let report = result.await.ok();
                    server.inner.tasks.running().remove(&follow.id);
                    server.follow(follow, report, pending.is_some()).await;
                });
                Ok(CallToolResponse::Task(self.task_now(&task.id, context).await?))
            }
        }
    }

    /// The answer a call made again carries for the question its round asked: the key its state names
    /// and the client's response to it. `Err` for a state this server did not seal for this call.
    fn carried(&self, request: &CallToolRequestParams, bound: &str) -> Result<Option<Pending>, ErrorData> {
        let Some(state) = request.request_state.as_deref() else { return Ok(None) };
        let asked: Asked = self.inner.codec.open_json_with(state, bound.as_bytes()).map_err(|_| {
            ErrorData::invalid_params(
                "the request state is not one this server issued for this call (changed, moved or expired): \
                 call again without it",
                None,
            )
        })?;
        let answer = request.input_responses.as_ref().and_then(|answers| answers.get(&asked.ask).cloned());
        Ok(answer.map(|answer| (asked.ask, answer)))
    }

    /// The question `key` sent over rounds: the call's answer is input required, with a state sealed
    /// to the call that names the question.
    fn ask_over_rounds(
        &self,
        key: String,
        request: Value,
        bound: &str,
    ) -> Result<InputRequiredResult, ErrorData> {
        let options = SealOptions::new().associated_data(bound.as_bytes()).ttl(crate::person::STATE_TTL);
        let state = self
            .inner
            .codec
            .seal_json_with(&Asked { ask: key.clone() }, &options)
            .map_err(|e| internal(e.to_string()))?;
        let request: InputRequest = serde_json::from_value(request).map_err(|e| internal(e.to_string()))?;
        let mut requests = InputRequests::new();
        requests.insert(key, request);
        Ok(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// Write the `created` record of a task for `request` on intent `key`, synced: its id and where
    /// it is.
    async fn create_task(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        key: IntentKey,
        result: Option<Value>,
    ) -> Result<(Record, TaskRef), ErrorData> {
        let log = self.task_log().ok_or_else(|| internal("the attempt log keeps no tasks"))?;
        let task = self.task(&context.meta)?;
        let secret = secret()?;
        let ttl = match self.effect_of(&request.name) {
            Some(EffectKind::Money) => {
                self.inner.tasks.ttl.max(self.inner.ask_within + self.inner.budget * 2)
            }
            _ => self.inner.tasks.ttl,
        };
        let step = Step::Created {
            arguments: request.arguments.clone(),
            actor: task.actor().to_owned(),
            tool_call_id: task.call_id().map(str::to_owned),
            bound: binding(context),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            result,
        };
        let reference = TaskRef {
            id: format!("{key}.{secret}"),
            key,
            digest: digest(&secret),
            task: task.id().to_owned(),
            call: request.name.to_string(),
        };
        let record = write(&*log, &reference, step).await?;
        Ok((record, reference))
    }

    /// The task as `tasks/get` would say it now, as the reply to the call that created it.
    async fn task_now(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CreateTaskResult, ErrorData> {
        Ok(CreateTaskResult::new(self.get_task(id, context).await?.task.task))
    }

    /// After the call a task was created for ends: its end, or a driver while it is in doubt.
    async fn follow(
        &self,
        task: Arc<TaskRef>,
        report: Option<Result<Report<Value>, ErrorData>>,
        asked_over_rounds: bool,
    ) {
        let end = match report {
            // Aborted (a cancel), or a question it asked over rounds after all: the task goes on from
            // the log.
            None => None,
            Some(_) if asked_over_rounds => None,
            Some(Err(error)) => {
                Some((TaskStatus::Failed, error_object(error.code.0, &error.message), FAILED))
            }
            Some(Ok(report)) => end_of(report, true, self.inner.value_text).ok().flatten(),
        };
        match end {
            Some((status, result, message)) => {
                let _ = self.end_task(&task, status, Some(result), message).await;
            }
            None => self.drive(task),
        }
    }

    /// Write the end of `task`.
    async fn end_task(
        &self,
        task: &TaskRef,
        status: TaskStatus,
        result: Option<Value>,
        message: &str,
    ) -> Result<(), ErrorData> {
        let log = self.task_log().ok_or_else(|| internal("the attempt log keeps no tasks"))?;
        write(&*log, task, Step::Ended { status, result, message: message.to_owned() }).await.map(drop)
    }

    /// `tasks/get`: the task as the log tells it. An open task no call or driver of this server runs
    /// gets a driver.
    pub(crate) async fn get_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let told = self.told(id, context).await?;
        let detailed = match &told.ended {
            Some((status, result, message)) => {
                let payload = match (status, result) {
                    (TaskStatus::Completed, Some(Value::Object(result))) => {
                        TaskPayload::Completed { result: result.clone() }
                    }
                    (TaskStatus::Cancelled, _) => TaskPayload::Cancelled,
                    (_, Some(Value::Object(error))) => TaskPayload::Failed { error: error.clone() },
                    _ => TaskPayload::Failed { error: as_object(error_object(-32603, message)) },
                };
                told.detailed(id, payload, message.clone())
            }
            None => {
                self.drive(Arc::new(self.reference(id, &told)));
                let questions = told.open_questions();
                if !questions.is_empty() {
                    told.detailed(
                        id,
                        TaskPayload::InputRequired { input_requests: questions },
                        ASKING.to_owned(),
                    )
                } else {
                    // An attempt this server's call has under way is not in doubt yet.
                    let running = self.inner.tasks.running().contains_key(id);
                    let read = self.reads(&told.created.0.call);
                    let in_doubt = match self.task_log() {
                        Some(log) if !read => {
                            log.recall(&told.key).await.ok().flatten().is_some_and(|r| {
                                r.is_unresolved() && !(running && r.last.phase == Phase::Start)
                            })
                        }
                        _ => false,
                    };
                    let message = match (told.cancel_requested, in_doubt) {
                        (true, _) => CANCELLING,
                        (false, true) => IN_DOUBT,
                        (false, false) => WORKING,
                    };
                    told.detailed(id, TaskPayload::Working, message.to_owned())
                }
            }
        };
        Ok(GetTaskResult::new(detailed))
    }

    /// `tasks/update`: each answer to a question still open is recorded (synced) before the reply;
    /// an answer to anything else is ignored.
    pub(crate) async fn update_task(
        &self,
        id: &str,
        responses: BTreeMap<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let told = self.told(id, context).await?;
        if told.ended.is_some() {
            return Ok(());
        }
        let reference = self.reference(id, &told);
        let log = self.task_log().ok_or_else(unknown_task)?;
        let open = told.open_questions();
        // Refused whole, nothing recorded, if any answer is refused.
        if let Some(refused) =
            responses.iter().find_map(|(key, response)| answer_refused(key, response, &open))
        {
            return Err(ErrorData::invalid_params(refused, None));
        }
        for (key, response) in responses {
            if open.contains_key(&key) {
                write(&*log, &reference, Step::Answered { key, response }).await?;
            }
        }
        self.inner.tasks.answered.notify_waiters();
        Ok(())
    }

    /// `tasks/cancel`: the request is recorded, what runs of the task here stops, and the task ends
    /// with what is known: `cancelled` when nothing of it can have applied, else `completed` with the
    /// last report, in doubt.
    pub(crate) async fn cancel_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let told = self.told(id, context).await?;
        if told.ended.is_some() {
            return Ok(());
        }
        let reference = self.reference(id, &told);
        let log = self.task_log().ok_or_else(unknown_task)?;
        if !told.cancel_requested {
            write(&*log, &reference, Step::CancelRequested).await?;
        }
        if let Some(running) = self.inner.tasks.running().remove(id) {
            running.abort();
        }
        self.end_cancelled(&*log, &reference, &told).await
    }

    /// The end of a task cancelled, judged under the intent's claim so that no call of it, on this
    /// server or another of the fleet, is under way meanwhile: `cancelled` when nothing of it can have
    /// applied (a read; no attempt; the log's last word says nothing applied); `completed` with the
    /// recorded report when its effect is recorded; else `completed` with the last report, in doubt.
    async fn end_cancelled(&self, log: &dyn Journal, task: &TaskRef, told: &Told) -> Result<(), ErrorData> {
        if self.reads(&task.call) {
            return self.end_task(task, TaskStatus::Cancelled, None, CANCELLED).await;
        }
        let owner = Owner::new(format!("mcp-cancel:{}", Owner::unique()));
        let held = claim_quiet(log, &task.key, &owner).await;
        // Ended meanwhile (another cancel, or the call's own end): that end stands.
        let ended_meanwhile = matches!(held, Ok(Some(_)))
            && matches!(self.read(&task.id).await, Ok(Some(Told { ended: Some(_), .. })));
        let ended = match held {
            _ if ended_meanwhile => {
                log.release(&task.key, &owner);
                return Ok(());
            }
            Ok(Some(recall)) => self.cancelled_end(task, told, recall),
            // Another call of the intent holds it, and may be sending.
            Ok(None) => self.in_doubt_end(task, told, None, CANCELLED_UNDER_WAY),
            Err(error) => Err(internal(format!("the attempt log could not be read: {error}"))),
        };
        let (written, cancelled) = match ended {
            Ok((status, result, message)) => {
                (self.end_task(task, status, result, message).await, status == TaskStatus::Cancelled)
            }
            Err(error) => (Err(error), false),
        };
        // A task said `cancelled` keeps the intent held for a while: a driver of it on another server,
        // which read the task before the cancel, finds the intent busy instead of starting an attempt,
        // and reads the end at its next turn.
        if !(cancelled && written.is_ok()) {
            log.release(&task.key, &owner);
        }
        written
    }

    /// What a cancelled task ends as, from what the log holds of its intent (under its claim), by
    /// the start-of-call rule ([`policy::start`]): what a later call would start from is what the
    /// cancel can say happened.
    fn cancelled_end(&self, task: &TaskRef, told: &Told, recall: Option<Recall>) -> Result<End, ErrorData> {
        let kind = self.effect_of(&task.call).unwrap_or(EffectKind::Send);
        let Some(recall) = recall else { return Ok((TaskStatus::Cancelled, None, CANCELLED)) };
        match policy::start(Some(&recall), kind) {
            // Nothing applied for sure.
            Start::Fresh | Start::SecondAttempt => Ok((TaskStatus::Cancelled, None, CANCELLED)),
            Start::Probe => self.in_doubt_end(task, told, Some(recall.last.attempt_id), CANCELLED_IN_DOUBT),
            // Its effect is recorded: the cancel came too late to stop anything, and says so.
            Start::Replay | Start::Settled => {
                let result = json(&result_of(recorded_report(task, recall.last), self.inner.value_text)?)?;
                Ok((TaskStatus::Completed, Some(result), CANCELLED_AFTER_EFFECT))
            }
        }
    }

    /// A cancelled task's end while its intent is in doubt: `completed` with the last report.
    fn in_doubt_end(
        &self,
        task: &TaskRef,
        told: &Told,
        attempt_id: Option<String>,
        message: &'static str,
    ) -> Result<End, ErrorData> {
        let last = match &told.created.1.step {
            Step::Created { result: Some(result), .. } => result.clone(),
            _ => json(&result_of(in_doubt_report(task, attempt_id), false)?)?,
        };
        Ok((TaskStatus::Completed, Some(last), message))
    }

    /// Where the task `id` told by `told` is.
    fn reference(&self, id: &str, told: &Told) -> TaskRef {
        let record = &told.created.0;
        TaskRef {
            id: id.to_owned(),
            key: told.key,
            digest: told.id.clone(),
            task: record.task.clone(),
            call: record.call.clone(),
        }
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
        let Some((key, digest)) = parse_id(id) else { return Ok(None) };
        let log = self.task_log().ok_or_else(unknown_task)?;
        let tasks = log.mcp_tasks().ok_or_else(unknown_task)?;
        let records = tasks
            .mcp_task_records(&key)
            .await
            .map_err(|e| internal(format!("the task could not be read: {e}")))?;
        let mut told: Option<Told> = None;
        for record in records {
            let Some(note) = record.value.clone().and_then(|v| serde_json::from_value::<Note>(v).ok()) else {
                continue;
            };
            if note.id != digest {
                continue;
            }
            let Some(told) = &mut told else {
                if let Step::Created { .. } = note.step {
                    let updated = note.at.clone();
                    told = Some(Told {
                        key,
                        id: digest.clone(),
                        created: (record, note),
                        asked: Vec::new(),
                        answered: BTreeMap::new(),
                        cancel_requested: false,
                        ended: None,
                        updated,
                    });
                }
                continue;
            };
            if told.ended.is_some() {
                continue;
            }
            told.updated = note.at.clone();
            match note.step {
                Step::Asked { key, request } if !told.asked.iter().any(|(k, _)| *k == key) => {
                    told.asked.push((key, request))
                }
                Step::Answered { key, response } => {
                    told.answered.entry(key).or_insert(response);
                }
                Step::CancelRequested => told.cancel_requested = true,
                Step::Ended { status, result, message } => told.ended = Some((status, result, message)),
                _ => {}
            }
        }
        Ok(told)
    }

    /// A question of the tool through `task`: recorded once, then waited for until answered (here or
    /// on another server) or the task is cancelled.
    async fn task_question(&self, task: &TaskRef, key: String, request: Value) -> Result<Value, Class> {
        let log = self.task_log().ok_or_else(|| Class::permanent("the attempt log keeps no tasks"))?;
        let mut written = false;
        loop {
            let woken = self.inner.tasks.answered.notified();
            let told = match self.read(&task.id).await {
                Ok(Some(told)) => told,
                _ => return Err(Class::retryable(format!("the task's question `{key}` could not be read"))),
            };
            if let Some(answer) = told.answered.get(&key) {
                return Ok(answer.clone());
            }
            if told.ended.is_some() || told.cancel_requested {
                return Err(Class::permanent(format!("the task was cancelled before `{key}` was answered")));
            }
            if !written && !told.asked.iter().any(|(asked, _)| *asked == key) {
                let step = Step::Asked { key: key.clone(), request: request.clone() };
                write(&*log, task, step).await.map_err(|e| Class::retryable(e.message.to_string()))?;
            }
            written = true;
            let _ = tokio::time::timeout(LONGEST_NAP, woken).await;
        }
    }

    /// Run a driver of `task` unless a call or a driver of it runs in this process already: the tool is
    /// called again, as any later call of the intent, until the task ends.
    fn drive(&self, task: Arc<TaskRef>) {
        let mut running = self.inner.tasks.running();
        if running.contains_key(&task.id) {
            return;
        }
        let server = self.clone();
        let id = task.id.clone();
        let driver = tokio::spawn(async move {
            server.run_task(&task).await;
            server.inner.tasks.running().remove(&task.id);
        });
        running.insert(id, driver.abort_handle());
    }

    /// Call the task's tool again until its intent is out of doubt, the client cancels, or the TTL
    /// passes; then write its end.
    async fn run_task(&self, task: &Arc<TaskRef>) {
        let Some(log) = self.task_log() else { return };
        let mut last: Option<Value> = None;
        loop {
            let Ok(Some(told)) = self.read(&task.id).await else { return };
            let Step::Created { arguments, actor, tool_call_id, ttl_ms, result, .. } = &told.created.1.step
            else {
                return;
            };
            if told.ended.is_some() {
                return;
            }
            if told.cancel_requested {
                let _ = self.end_cancelled(&*log, task, &told).await;
                return;
            }
            let expired = parse_rfc3339(&told.created.1.at)
                .and_then(|at| at.checked_add(Duration::from_millis(*ttl_ms)))
                .is_some_and(|until| wall_clock() >= until);
            if expired {
                let last = last.clone().or_else(|| result.clone());
                let _ = self.end_task(task, TaskStatus::Completed, last, EXPIRED_IN_DOUBT).await;
                return;
            }
            let mut meta = Map::new();
            meta.insert(TASK_META_KEY.to_owned(), Value::String(task.task.clone()));
            meta.insert(ACTOR_META_KEY.to_owned(), Value::String(actor.clone()));
            if let Some(call_id) = tool_call_id {
                meta.insert(TOOL_CALL_ID_META_KEY.to_owned(), Value::String(call_id.clone()));
            }
            let person = self.task_person(&meta, format!("MCP task {}", &task.digest[..8]));
            let call = self.report_of(&task.call, arguments.clone(), &meta, person);
            let report = match with_asker(task_asker(self, Arc::clone(task)), call).await {
                Ok(report) => report,
                Err(error) => {
                    let failed = error_object(error.code.0, &error.message);
                    let _ = self.end_task(task, TaskStatus::Failed, Some(failed), FAILED).await;
                    return;
                }
            };
            let nap = report.retry_after_s.map_or(POLL, Duration::from_secs).clamp(POLL, LONGEST_RETRY);
            let first = result.is_none() && last.is_none();
            let report_json =
                result_of(report.clone(), self.inner.value_text).ok().and_then(|r| json(&r).ok());
            match end_of(report, first, self.inner.value_text) {
                Ok(Some((status, result, message))) => {
                    let _ = self.end_task(task, status, Some(result), message).await;
                    return;
                }
                Ok(None) => last = report_json.or(last),
                Err(_) => return,
            }
            tokio::time::sleep(nap).await;
        }
    }
}

/// The report of a call cancelled while an attempt of it may have landed, when no report of it is
/// known: `unknown`, with the last attempt's id.
fn in_doubt_report(task: &TaskRef, attempt_id: Option<String>) -> Report<Value> {
    Report {
        outcome: Outcome::Unknown,
        effect_applied: Applied::Unknown,
        attempt_id: attempt_id.unwrap_or_default(),
        idempotency_key: task.key,
        retry_after_s: None,
        deadline_left_s: 0,
        message: format!(
            "{} was cancelled while an attempt was under way: it may have landed; the effect may have landed: \
             do not redo it another way (other arguments make a new act); this same call again checks before \
             it acts",
            task.call
        ),
        value: None,
        items: Vec::new(),
        reason: Reason::InDoubt,
    }
}

/// The report of a call cancelled after the log recorded its effect: as the record `last` says.
fn recorded_report(task: &TaskRef, last: Record) -> Report<Value> {
    Report {
        outcome: last.outcome.unwrap_or(Outcome::Ok),
        effect_applied: last.effect_applied.unwrap_or(Applied::Yes),
        attempt_id: last.attempt_id,
        idempotency_key: task.key,
        retry_after_s: None,
        deadline_left_s: 0,
        message: format!(
            "{} was cancelled after the attempt log recorded its effect: {}",
            task.call,
            last.message.unwrap_or_default()
        ),
        value: last.value,
        items: Vec::new(),
        reason: Reason::Replayed,
    }
}

/// `value` as a JSON object (an empty one for anything else).
fn as_object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

/// Why the answer `response` to the question `key` is refused, if it is: larger than
/// [`MAX_ANSWER_BYTES`], or, to a form, not a form's result.
fn answer_refused(key: &str, response: &Value, open: &InputRequests) -> Option<String> {
    let form = matches!(open.get(key), Some(InputRequest::Elicitation(_)));
    let key = tool_contract::unstable::cut(key);
    let size = serde_json::to_vec(response).map_or(usize::MAX, |bytes| bytes.len());
    if size > MAX_ANSWER_BYTES {
        return Some(format!(
            "the answer to `{key}` is {size} bytes; an answer is at most {MAX_ANSWER_BYTES}: nothing was recorded"
        ));
    }
    (form && ElicitResult::deserialize(response).is_err()).then(|| {
        format!(
            "the answer to `{key}` is not the result of an elicitation/create form (an object with `action` \
             accept, decline or cancel, and `content` when accepted): nothing was recorded"
        )
    })
}

/// The error of a call to a tool that requires a task, from a client without the tasks extension,
/// or to a server that keeps no tasks (`offered`: whether it keeps them).
pub(crate) fn task_required(name: &str, offered: bool) -> ErrorData {
    if !offered {
        return ErrorData::invalid_request(
            format!(
                "`{name}` runs only as a task, and this server keeps none (tasks are turned off, or its \
                 attempt log keeps no tasks): it cannot be called here"
            ),
            None,
        );
    }
    let mut error =
        ErrorData::missing_required_client_capability(ClientCapabilities::builder().enable_tasks().build());
    error.message =
        format!("`{name}` runs only as a task: declare the tasks extension (io.modelcontextprotocol/tasks)")
            .into();
    error
}

/// A task's status message while a call of it runs.
const WORKING: &str = "the call is under way";
/// A task's status message while its intent is in doubt.
const IN_DOUBT: &str = "the call's outcome is unknown: the server probes what may have landed, waits out the \
                        landing horizon, and calls again where the tool's policy allows";
/// A task's status message while it waits for the client's answer.
const ASKING: &str = "the tool asks the client for input: answer with tasks/update";
/// A task's status message once cancelling is asked.
const CANCELLING: &str = "cancel requested: nothing more is attempted";
/// The status message of a task whose call resolved.
const DONE: &str = "the call is resolved: its report is the result";
/// The status message of a task the server could not run.
const FAILED: &str = "the call could not be run";
/// The status message of a task whose first attempt the attempt log refused.
const STORE_FAILED: &str = "the attempt log refused the call's first attempt: nothing was attempted";
/// The status message of a task cancelled before anything of it could apply.
const CANCELLED: &str = "cancelled at the client's request: nothing of it was applied";
/// The status message of a task cancelled in doubt.
const CANCELLED_IN_DOUBT: &str = "cancelled at the client's request while the call's outcome was unknown: an \
                                  attempt may still have landed, and nothing more was attempted; the result is \
                                  the last report";
/// The status message of a task cancelled while another call of its intent held it.
const CANCELLED_UNDER_WAY: &str = "cancelled at the client's request while a call of it was under way: an attempt \
                                   may still land, and nothing more was attempted; the result is the last report";
/// The status message of a task cancelled after its effect was recorded.
const CANCELLED_AFTER_EFFECT: &str = "cancelled at the client's request after its effect was recorded: the result \
                                      is the recorded report";
/// How long a cancel waits for the intent's claim: the task's own call, just stopped, gives it up.
const CANCEL_WAIT: Duration = Duration::from_secs(1);
/// The lease a cancel claims the intent for, and how long a task ended `cancelled` keeps it: far
/// longer than a driver takes from reading the task to claiming its intent. A later call of the
/// intent waits it out, as it waits for any claim.
const CANCEL_HOLD: Duration = Duration::from_secs(2);

/// A task's end: its status, its result and its status message.
type End = (TaskStatus, Option<Value>, &'static str);

/// Claim `key` for `owner` (a cancel), waiting up to [`CANCEL_WAIT`] while another holds it: `Some`
/// with what the log holds once held, `None` while another call of the intent still holds it.
async fn claim_quiet(
    log: &dyn Journal,
    key: &IntentKey,
    owner: &Owner,
) -> Result<Option<Option<Recall>>, tool_contract::journal::JournalError> {
    let (mut waited, mut nap) = (Duration::ZERO, Duration::from_millis(10));
    loop {
        match log.claim(key, owner, CANCEL_HOLD).await? {
            Claimed::Held(recall) => return Ok(Some(recall)),
            Claimed::Busy { .. } if waited >= CANCEL_WAIT => return Ok(None),
            Claimed::Busy { left, .. } => {
                let nap_now = nap.min(left.max(Duration::from_millis(1)));
                tokio::time::sleep(nap_now).await;
                waited += nap_now;
                nap = (nap * 2).min(Duration::from_millis(200));
            }
        }
    }
}

/// The status message of a task whose TTL passed in doubt.
const EXPIRED_IN_DOUBT: &str = "the task's TTL passed while the call's outcome was unknown: the result is the \
                                last report, and the intent stays in doubt in the attempt log";

/// Write one step of `task`, synced, at the intent's highest attempt: the record, once on stable
/// storage.
async fn write(log: &dyn Journal, task: &TaskRef, step: Step) -> Result<Record, ErrorData> {
    let recall = log
        .recall(&task.key)
        .await
        .map_err(|e| internal(format!("the attempt log could not be read: {e}")))?;
    let (attempt, attempt_id) = recall.map_or((0, String::new()), |r| (r.attempts, r.last.attempt_id));
    let at = rfc3339(wall_clock());
    let message = match &step {
        Step::Created { .. } => "MCP task created",
        Step::Asked { .. } => "MCP task: the tool asks the client",
        Step::Answered { .. } => "MCP task: the client answered",
        Step::CancelRequested => "MCP task: cancel requested",
        Step::Ended { .. } => "MCP task ended",
    };
    let note = Note { id: task.digest.clone(), at: at.clone(), step };
    let record = Record {
        phase: Phase::McpTask,
        task: task.task.clone(),
        call: task.call.clone(),
        intent_key: task.key,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn told(asked: &[&str], answered: &[&str]) -> Told {
        let form = serde_json::json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": {}}},
        });
        let note = Note { id: "d".into(), at: "2026-12-05T00:00:00Z".into(), step: Step::CancelRequested };
        let record: Record = serde_json::from_value(serde_json::json!({
            "phase": "start", "task": "t", "call": "c", "intent_key": "0".repeat(32), "attempt": 1,
            "attempt_id": "t-00000000-a1", "started": "2026-12-05T00:00:00Z", "budget_left_s": 1,
            "outcome": null, "effect_applied": null, "probe": null, "message": null,
        }))
        .unwrap();
        Told {
            key: IntentKey::NONE,
            id: "d".into(),
            created: (record, note),
            asked: asked.iter().map(|k| ((*k).to_owned(), form.clone())).collect(),
            answered: answered.iter().map(|k| ((*k).to_owned(), Value::Null)).collect(),
            cancel_requested: false,
            ended: None,
            updated: String::new(),
        }
    }

    /// A person's question asked again about the same attempt replaces the one before; a tool's
    /// questions, and a person's about another attempt, stand side by side; an answered one is closed.
    #[test]
    fn the_open_questions_are_the_latest_of_each_attempt_and_unanswered() {
        let open = |asked: &[&str], answered: &[&str]| -> Vec<String> {
            told(asked, answered).open_questions().into_keys().collect()
        };
        assert_eq!(open(&["settle-a1.q-1", "settle-a1.q-2"], &[]), ["settle-a1.q-2"]);
        assert_eq!(
            open(&["settle-a1.q-1", "approve-a2.q-3", "name"], &[]),
            ["approve-a2.q-3", "name", "settle-a1.q-1"]
        );
        assert_eq!(open(&["settle-a1.q-1", "settle-a1.q-2"], &["settle-a1.q-2"]), Vec::<String>::new());
        assert_eq!(open(&["name", "confirm"], &["name"]), ["confirm"]);
    }
}
