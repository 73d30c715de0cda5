//! An MCP server for a [`Toolbox`]: every tool's contract, reached over the Model Context Protocol.
//!
//! # Features
//!
//! | feature | what it adds | default |
//! |---|---|---|
//! | `http` | MCP over streamable HTTP: 127.0.0.1 unless told otherwise, `Origin` checked, a bearer token if set | no |
//! | `console` | the operator console (`tool-contract-console`) mounted at `/console` beside the MCP endpoint; turns on `http` | no |
//! | `tracing` | a `tools/call {tool}` server span around each call, with the tool's `execute_tool` span inside | no |
//! | `otel` | the server span continues the client's trace from the request's `_meta` `traceparent`; turns on `tracing` | no |
//!
//! MCP clients must re-send a `tools/call` whose reply stream broke, and the protocol has no
//! idempotency key. This server gives every call an intent key from its task and its `target`, so a
//! re-sent call is recognised in the attempt log and not repeated.
//!
//! - `tools/list`: each tool's name, description, input and output schema, and the annotations its
//!   effect kind implies (`readOnlyHint`, `destructiveHint`, `idempotentHint`), its kind under `_meta`.
//! - `tools/call`: the report as `structuredContent` and as a text block, `isError` when the outcome
//!   is `retryable` or `permanent` (not `ok`, not `unknown`: see [`is_error`]), the intent key and
//!   attempt id in the result's `_meta`. Arguments that do not
//!   decode are a report (`permanent`, effect `no`, the field named), which the model can act on; an
//!   unknown tool is a protocol error.
//! - The task and actor of a call come from the request's `_meta`, under [`TASK_META_KEY`] and
//!   [`ACTOR_META_KEY`]. Without a task the server's instance id scopes the keys: random per process
//!   start unless [`Builder::instance_id`] sets it, which is what makes keys survive a restart.
//! - The person at the client is asked (below, "The person at the client") before a second attempt
//!   of a `money` tool, and when a call resumes an intent in doubt whose probe still cannot tell,
//!   unless the server has an approver of its own ([`Builder::approver`]).
//! - A client's cancellation drops the call's attempt: a side effect then reads `unknown` in the log,
//!   and the next call of the intent probes first.
//! - Feature `tracing`: each `tools/call` runs in a `tools/call {tool}` server span around the tool's
//!   `execute_tool` span; feature `otel` continues the client's trace from the request's `_meta`
//!   `traceparent` ([`trace`]). The model's id for the call, under [`TOOL_CALL_ID_META_KEY`], becomes
//!   `gen_ai.tool.call.id`.
//!
//! # The person at the client
//!
//! How the person is reached depends on the protocol the client speaks:
//!
//! - **2025-06-18, 2025-11-25**, a client that declared elicitation: the server sends
//!   `elicitation/create` during the call and waits for the answer, at most [`ASK_WITHIN`]
//!   ([`Builder::ask_within`]), shorter than a client's own request timeout, and never past the
//!   call's budget. A form the call stops waiting for is withdrawn (`notifications/cancelled` with
//!   its request id), so a client that would show it late does not hold the agent.
//! - **2026-07-28**: a server sends no request of its own. The call answers *input required*: the
//!   form, and a request state sealed with the server's key ([`Builder::request_state_key`]; HMAC,
//!   expiring after 15 minutes) naming the tool, the task, the intent and the attempt it answers for.
//!   The client retries the call with the answer and the state. A state that does not open (another
//!   server's, a changed byte, expired) is refused with nothing attempted; an answer for another
//!   intent, or for an attempt already made, approves nothing.
//! - A client that declared no elicitation: nobody can be asked, and a person who cannot be asked has
//!   not approved.
//!
//! The approval form asks for `approve` (yes or no) and `confirm`, the last 6 hex characters of the
//! intent key its message shows: a client that accepts a form's defaults approves nothing. A decline,
//! a cancel, no answer in time, a value of the wrong type or a wrong `confirm` is a no, and the report
//! says which. When a call resumes an intent in doubt and its probe still cannot tell, the person is
//! asked "landed / not landed / can't tell" with evidence; an answer is recorded as a settlement
//! (`via` client, `by` the request's actor) and honoured at once.
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tool_contract::{Class, FileJournal, Toolbox, tool};
//! use tool_contract_mcp::McpServer;
//!
//! /// Read the price of one item, in cents.
//! #[tool(effect = "read", target = sku)]
//! async fn read_price(sku: String) -> Result<u64, Class> {
//!     Ok(1299)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let mut toolbox = Toolbox::new();
//! toolbox.add(read_price_tool())?;
//! let server = McpServer::builder(toolbox)
//!     .budget(Duration::from_secs(30))
//!     .journal(Arc::new(FileJournal::open("attempts.log")?))
//!     .build()?;
//! eprintln!("instance {}", server.instance_id());
//! server.serve_stdio().await
//! # }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "http")]
pub mod http;
mod lines;
mod person;
pub mod trace;

/// How long the server waits for the person at the client to answer `elicitation/create` by default:
/// 50 s, shorter than a client's own request timeout (60 s in the reference SDKs), so the call still
/// answers.
pub const ASK_WITHIN: Duration = Duration::from_secs(50);

pub use lines::MAX_LINE_BYTES;

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest, CustomResult,
    ErrorData, Implementation, ListToolsResult, MetaObject, PaginatedRequestParams, ProtocolVersion,
    RequestStateCodec, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use tool_contract::journal::Journal;
use tool_contract::person::Approve;
use tool_contract::task::{Escalate, TaskFactory, TaskTemplate};
pub use tool_contract::toolbox::BudgetTooShort;
use tool_contract::{IntentKey, Outcome, Report, Task, Toolbox};

/// The request `_meta` key that names the task a call works for (its durable identity: the order, the
/// ticket).
pub const TASK_META_KEY: &str = "dev.tool-contract/task";
/// The request `_meta` key that names who the task acts for.
pub const ACTOR_META_KEY: &str = "dev.tool-contract/actor";
/// The request `_meta` key of the model's id for this tool call, when the agent host has one: it
/// becomes the call's `gen_ai.tool.call.id` (feature `tracing`). MCP carries no such id itself.
pub const TOOL_CALL_ID_META_KEY: &str = "dev.tool-contract/tool_call_id";
/// The result `_meta` key that carries the call's intent key.
pub const INTENT_KEY_META_KEY: &str = "dev.tool-contract/intent_key";
/// The result `_meta` key that carries the attempt id the report speaks for.
pub const ATTEMPT_ID_META_KEY: &str = "dev.tool-contract/attempt_id";

/// The actor of a call whose request names none.
pub const DEFAULT_ACTOR: &str = "mcp-client";
/// The longest task id or actor a request may name.
pub const MAX_META_LEN: usize = tool_contract::task::MAX_NAME_CHARS;

/// An MCP server over a toolbox. Cheap to clone: clones share the toolbox and the attempt log.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    toolbox: Toolbox,
    tools: Vec<Tool>,
    template: TaskFactory,
    budget: Duration,
    /// Shared by every task made for a request that names none, as is `default_actor`: a request
    /// then copies neither.
    instance: Arc<str>,
    default_actor: Arc<str>,
    name: String,
    version: String,
    /// Ask the person at the client (no approver of the server's own).
    ask_client: bool,
    ask_within: Duration,
    /// Seals the state of an input-required round.
    codec: RequestStateCodec,
}

/// The options of an [`McpServer`]: the same a library user gives a `Task`.
pub struct Builder {
    toolbox: Toolbox,
    template: TaskTemplate,
    budget: Duration,
    instance: Option<String>,
    name: String,
    version: String,
    own_approver: bool,
    ask_within: Duration,
    state_key: Option<[u8; 32]>,
}

impl Builder {
    /// Each call's budget, from the moment the request arrives (default 60 s).
    pub fn budget(mut self, budget: Duration) -> Builder {
        self.budget = budget;
        self
    }

    /// Every call shares `task`'s attempt log, approver and escalation sink, as a library user's calls
    /// of that task would (what the other options set is applied on top). An approver of the task's
    /// answers instead of the person at the client.
    pub fn like(mut self, task: &Task) -> Builder {
        self.template = self.template.like(task);
        // The task's approver, if it has one, answers instead of the person at the client.
        self.own_approver |= tool_contract::task::has_approver(task);
        self
    }

    /// The attempt log every call writes ahead (default: one in memory, bounded as
    /// [`MemoryJournal`](tool_contract::MemoryJournal) says).
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> Builder {
        self.template = self.template.journal(journal);
        self
    }

    /// Who says yes or no before a second attempt of a `money` tool, instead of the person at the
    /// client (asked through it by default: see the crate docs).
    pub fn approver(mut self, approver: impl Approve + 'static) -> Builder {
        self.template = self.template.approver(approver);
        self.own_approver = true;
        self
    }

    /// How long to wait for the person at the client to answer a form sent with
    /// `elicitation/create` (default [`ASK_WITHIN`]); no answer by then is a no.
    pub fn ask_within(mut self, within: Duration) -> Builder {
        self.ask_within = within;
        self
    }

    /// The key that seals the state of an input-required round (2026-07-28 clients): the same on every
    /// instance behind one address, so a retried call may reach another one. Default: a random key per
    /// process, so a round is answered by the process that asked.
    pub fn request_state_key(mut self, key: [u8; 32]) -> Builder {
        self.state_key = Some(key);
        self
    }

    /// Where unresolved outcomes go.
    pub fn escalate_to(mut self, sink: impl Escalate + 'static) -> Builder {
        self.template = self.template.escalate_to(sink);
        self
    }

    /// The worker's name the calls' claims carry in a shared store ([`Task::worker`]).
    pub fn worker(mut self, name: impl Into<Arc<str>>) -> Builder {
        self.template = self.template.worker(name);
        self
    }

    /// The task of a call whose request names none. By default a random id per process start, so a
    /// call re-sent after a broken stream is recognised while the process runs; set a stable one (and a
    /// file attempt log) for keys that survive a restart.
    pub fn instance_id(mut self, id: impl Into<String>) -> Builder {
        self.instance = Some(id.into());
        self
    }

    /// The name and version the server gives in its `initialize` reply.
    pub fn server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Builder {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// The server; refused when the budget per call is too short for one of the tools (every call of
    /// it would be refused before it starts), naming the tool and its floor.
    pub fn build(self) -> Result<McpServer, BudgetTooShort> {
        self.toolbox.check_budget(self.budget)?;
        let template = self.template.build();
        let tools = self.toolbox.definitions().iter().map(tool).collect();
        Ok(McpServer {
            inner: Arc::new(Inner {
                toolbox: self.toolbox,
                tools,
                template,
                budget: self.budget,
                instance: self.instance.unwrap_or_else(random_instance).into(),
                default_actor: DEFAULT_ACTOR.into(),
                name: self.name,
                version: self.version,
                ask_client: !self.own_approver,
                ask_within: self.ask_within,
                codec: RequestStateCodec::new_unchecked(self.state_key.unwrap_or_else(random_key).to_vec()),
            }),
        })
    }
}

/// A definition as rmcp's `Tool`: the MCP shape the definition writes, read back.
fn tool(definition: &tool_contract::define::Definition) -> Tool {
    serde_json::from_value(definition.mcp()).unwrap_or_else(|_| {
        Tool::new(
            definition.name(),
            definition.description().to_owned(),
            Arc::new(definition.input_schema().clone()),
        )
    })
}

/// 32 bytes from the operating system's randomness (which seeds every `RandomState`).
fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    for (i, chunk) in key.chunks_mut(8).enumerate() {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_usize(i);
        chunk.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    key
}

/// `mcp-` and 16 hex digits, different at every process start.
fn random_instance() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    format!("mcp-{:016x}", hasher.finish())
}

impl McpServer {
    /// A server over `toolbox`; see [`Builder`] for its options.
    pub fn builder(toolbox: Toolbox) -> Builder {
        Builder {
            toolbox,
            template: TaskTemplate::default(),
            budget: Duration::from_secs(60),
            instance: None,
            name: "tool-contract-mcp".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            own_approver: false,
            ask_within: ASK_WITHIN,
            state_key: None,
        }
    }

    /// The task of calls whose request names none.
    pub fn instance_id(&self) -> &str {
        &self.inner.instance
    }

    /// The toolbox the server serves.
    pub fn toolbox(&self) -> &Toolbox {
        &self.inner.toolbox
    }

    /// Serves MCP over standard input and output until the client closes them.
    pub async fn serve_stdio(self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let (read, write) = rmcp::transport::stdio();
        self.serve_lines(read, write).await
    }

    /// Serves MCP over `read` and `write`, one JSON-RPC message per line (what [`serve_stdio`]
    /// does over the process's standard streams), until the client closes. A line that is JSON but
    /// not a JSON-RPC message is answered `-32600` with the id it carries, when it carries one; a line
    /// that is not JSON is ignored, as the reference SDKs ignore it; a line over
    /// [`MAX_LINE_BYTES`] is dropped whole.
    ///
    /// [`serve_stdio`]: McpServer::serve_stdio
    pub async fn serve_lines<R, W>(
        self,
        read: R,
        write: W,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let running = self.serve(lines::Lines::new(read, write)).await?;
        running.waiting().await?;
        Ok(())
    }

    /// The task a request works for: from its `_meta`, or the instance's.
    fn task(&self, meta: &Map<String, Value>) -> Result<Task, ErrorData> {
        let id = match meta_text(meta, TASK_META_KEY)? {
            Some(id) => Arc::from(id),
            None => Arc::clone(&self.inner.instance),
        };
        let actor = match meta_text(meta, ACTOR_META_KEY)? {
            Some(actor) => Arc::from(actor),
            None => Arc::clone(&self.inner.default_actor),
        };
        let task = self.inner.template.task(id, actor, self.inner.budget);
        Ok(match meta_text(meta, TOOL_CALL_ID_META_KEY)? {
            Some(call_id) => task.tool_call_id(call_id),
            None => task,
        })
    }

    /// Runs one `tools/call`: the tool's report as the result, or a protocol error for an unknown tool.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: &Map<String, Value>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call_as(name, arguments, meta, None).await
    }

    /// [`McpServer::call`] with the person at the client as the task's approver.
    async fn call_as(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: &Map<String, Value>,
        person: Option<person::Person>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut task = self.task(meta)?;
        if let Some(person) = person {
            task = task.approver(person);
        }
        let arguments = arguments.map(Value::Object).unwrap_or(Value::Null);
        let report = self
            .inner
            .toolbox
            .call(&task, name, arguments)
            .await
            .map_err(|unknown| ErrorData::invalid_params(unknown.to_string(), None))?;
        let unwritable = |error: serde_json::Error| ErrorData::internal_error(error.to_string(), None);
        // The text block is written from the report itself (its fields in the contract's order), not
        // from the JSON value: the same JSON, at a third of the cost.
        // Sized for a report of a few fields at once, rather than grown from the default 128 bytes.
        let mut text = Vec::with_capacity(512);
        serde_json::to_writer(&mut text, &report).map_err(unwritable)?;
        let text =
            String::from_utf8(text).map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let text = vec![ContentBlock::text(text)];
        let key = key_text(&report.idempotency_key);
        let mut result_meta = Map::new();
        result_meta.insert(INTENT_KEY_META_KEY.to_owned(), Value::String(key.clone()));
        result_meta.insert(ATTEMPT_ID_META_KEY.to_owned(), Value::String(report.attempt_id.clone()));
        let mut result = if is_error(report.outcome) {
            CallToolResult::error(text)
        } else {
            CallToolResult::success(text)
        };
        result.structured_content = Some(report_value(report, key).map_err(unwritable)?);
        Ok(result.with_meta(Some(MetaObject(result_meta))))
    }
}

/// Whether a report with `outcome` is sent with `isError: true`: when the model should change something
/// before calling again (`permanent`: its arguments, or its plan) or may call again later
/// (`retryable`: nothing was applied). Never for `ok`, and never for `unknown`: an agent host that
/// turns `isError` into a retry of the model (one that counts against a small limit and ends the run
/// when it is spent) would push the model to call a side effect in doubt again, and would show it only
/// the text, not the report; the report itself says the call is in doubt and what was done about it.
pub fn is_error(outcome: Outcome) -> bool {
    matches!(outcome, Outcome::Retryable | Outcome::Permanent)
}

/// A key as the 32 hex digits its JSON form has.
fn key_text(key: &IntentKey) -> String {
    // Hex digits are ASCII: the check passes at once, and nothing is replaced.
    std::str::from_utf8(&key.hex()).unwrap_or_default().to_owned()
}

/// The report as the JSON value `serde_json::to_value` makes of it (the same keys and values), built
/// from its parts: its strings move into the value where `to_value` would copy them, and no serializer
/// runs for fields whose JSON is known. `key` is the report's key as [`key_text`] writes it.
fn report_value(report: Report<Value>, key: String) -> Result<Value, serde_json::Error> {
    let Report {
        outcome,
        effect_applied,
        attempt_id,
        idempotency_key: _,
        retry_after_s,
        deadline_left_s,
        message,
        value,
        items,
        // Not on the wire: the JSON contract has no reason.
        reason: _,
    } = report;
    let items = if items.is_empty() { Value::Array(Vec::new()) } else { serde_json::to_value(items)? };
    // In the map's order: the map is built in one pass, no field searched for.
    let fields = [
        ("attempt_id", Value::String(attempt_id)),
        ("deadline_left_s", Value::from(deadline_left_s)),
        ("effect_applied", Value::String(effect_applied.as_str().to_owned())),
        ("idempotency_key", Value::String(key)),
        ("items", items),
        ("message", Value::String(message)),
        ("outcome", Value::String(outcome.as_str().to_owned())),
        ("retry_after_s", retry_after_s.map_or(Value::Null, Value::from)),
        ("value", value.unwrap_or(Value::Null)),
    ];
    Ok(Value::Object(fields.into_iter().map(|(name, value)| (name.to_owned(), value)).collect()))
}

/// The error for a request that reached no handler: a method this server serves whose params did not
/// read as that method's (invalid params, with serde's reason), or a method it does not serve.
fn malformed(method: &str, params: Option<Value>) -> ErrorData {
    const SERVED: [&str; 4] = ["initialize", "ping", "tools/list", "tools/call"];
    if method == "tools/call" {
        let why = match serde_json::from_value::<CallToolRequestParams>(params.unwrap_or(Value::Null)) {
            Err(error) => error.to_string(),
            // They read now: rmcp refused something else of the request.
            Ok(_) => "the request does not match the MCP schema".to_owned(),
        };
        ErrorData::invalid_params(
            format!("`tools/call` takes params {{\"name\": a tool's name, \"arguments\": an object}}: {why}"),
            None,
        )
    } else if SERVED.contains(&method) {
        ErrorData::invalid_params(format!("the params of `{method}` do not match the MCP schema"), None)
    } else {
        let method: String = method.chars().take(64).collect();
        ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, format!("no method `{method}` here"), None)
    }
}

/// A text `_meta` value: absent, or a string [`tool_contract::task::is_valid_name`] accepts.
fn meta_text<'m>(meta: &'m Map<String, Value>, key: &str) -> Result<Option<&'m str>, ErrorData> {
    match meta.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if tool_contract::task::is_valid_name(text) => Ok(Some(text)),
        Some(_) => Err(ErrorData::invalid_params(
            format!(
                "`_meta` `{key}` must be a string of 1 to {MAX_META_LEN} characters, none a control character"
            ),
            None,
        )),
    }
}

impl McpServer {
    /// The person at this call's client, as the call's approver: how they are reached, and the answer
    /// the call carries from an earlier round. `Err` for a request state this server cannot open.
    fn person(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        bound: &str,
    ) -> Result<Option<person::Person>, ErrorData> {
        if !self.inner.ask_client {
            return Ok(None);
        }
        let rounds = context.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let elicits = context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        let reach = match (elicits, rounds) {
            (false, _) => {
                person::Reach::Nobody("no person could be asked: the client declared no elicitation")
            }
            (true, true) => person::Reach::Rounds,
            (true, false) => person::Reach::Elicit(context.peer.clone(), self.inner.ask_within),
        };
        let carried = match (&reach, request.request_state.as_deref()) {
            (person::Reach::Rounds, Some(state)) => {
                let sealed: person::Sealed =
                    self.inner.codec.open_json_with(state, bound.as_bytes()).map_err(|_| {
                        ErrorData::invalid_params(
                            "the request state is not one this server issued for this call (changed, moved or                              expired): nothing was attempted; call again without it",
                            None,
                        )
                    })?;
                let answer =
                    request.input_responses.as_ref().and_then(|answers| answers.get(sealed.kind()).cloned());
                Some((sealed, answer))
            }
            _ => None,
        };
        let actor = meta_text(&context.meta, ACTOR_META_KEY)?.unwrap_or(DEFAULT_ACTOR).to_owned();
        Ok(Some(person::Person::new(reach, actor, carried)))
    }

    /// What a request state is bound to: the tool and the task it was issued for.
    fn bound(&self, name: &str, meta: &Map<String, Value>) -> Result<String, ErrorData> {
        let task = meta_text(meta, TASK_META_KEY)?.unwrap_or(&self.inner.instance);
        Ok(format!("tools/call\n{name}\n{task}"))
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(self.inner.name.clone(), self.inner.version.clone()))
            .with_instructions(format!(
                "Every tool returns a report: outcome ok | retryable | permanent | unknown, and effect_applied \
                 separately. Name the task under `_meta` `{TASK_META_KEY}` so a re-sent call is recognised."
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        #[cfg(feature = "tracing")]
        let span = trace::server_span(&request.name, Some(&context.id.to_string()), &context.meta);
        let bound = self.bound(&request.name, &context.meta)?;
        let person = self.person(&request, &context, &bound)?;
        let call = self.call_as(&request.name, request.arguments, &context.meta, person.clone());
        #[cfg(feature = "tracing")]
        let call = tracing::Instrument::instrument(call, span.clone());
        let result = tokio::select! {
            // The call first: one answered at its first poll never registers a waiter on the token.
            biased;
            result = call => result,
            // The client gave up: the attempt's future is dropped with this one.
            () = context.ct.cancelled() => Err(ErrorData::invalid_request("the client cancelled the call", None)),
        };
        #[cfg(feature = "tracing")]
        match &result {
            Ok(result) if result.is_error == Some(true) => {
                span.record("error.type", "tool_error");
            }
            Ok(_) => {}
            Err(error) => {
                span.record("error.type", tracing::field::display(error.code.0));
            }
        }
        // Over rounds (2026-07-28), a question the engine asked goes to the client as input required,
        // in place of the report of the call that could not go on without the answer.
        if let (Ok(_), Some(person)) = (&result, &person)
            && let Some(input) = person.input_required(&self.inner.codec, &bound)
        {
            return input.map(Into::into).map_err(|why| ErrorData::internal_error(why, None));
        }
        result.map(Into::into)
    }

    /// A request rmcp could not read as the method it names arrives here: a `tools/call` whose params
    /// are not `{ "name": ..., "arguments": {...} }` is told what is wrong with them (invalid params),
    /// not that the method does not exist.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(malformed(&request.method, request.params))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|tool| tool.name == name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_contract::key::Intent;
    use tool_contract::{Applied, Item};

    fn report(outcome: Outcome, value: Option<Value>, items: Vec<Item>) -> Report<Value> {
        Report {
            outcome,
            effect_applied: Applied::Partial,
            attempt_id: "ord-7741-e7196e5f-a2".to_owned(),
            idempotency_key: Intent::new("ord-7741", "agent:billing", "charge_card", "card-42").key(),
            retry_after_s: (outcome == Outcome::Retryable).then_some(u64::MAX),
            deadline_left_s: 42,
            message: "a line with \"quotes\" and \u{1f600}".to_owned(),
            value,
            items,
            reason: tool_contract::Reason::Answered,
        }
    }

    /// The structured content is what `serde_json::to_value` makes of the report, for every shape.
    #[test]
    fn report_value_is_the_reports_json() {
        let items = vec![Item::ok("row-1"), Item::permanent("row-2", "no such row")];
        let shapes = [
            report(Outcome::Ok, Some(serde_json::json!({ "id": 7, "text": ["a", null] })), Vec::new()),
            report(Outcome::Ok, Some(Value::Null), Vec::new()),
            report(Outcome::Retryable, None, Vec::new()),
            report(Outcome::Unknown, None, items.clone()),
            report(Outcome::Permanent, Some(Value::from(-1.5)), items),
        ];
        for shape in shapes {
            let expected = serde_json::to_value(&shape).unwrap();
            let key = key_text(&shape.idempotency_key);
            assert_eq!(Value::String(key.clone()), expected["idempotency_key"]);
            assert_eq!(report_value(shape, key).unwrap(), expected);
        }
    }
}
