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
//! # Tasks
//!
//! For a client that declares the tasks extension of 2026-07-28 (`io.modelcontextprotocol/tasks`), a
//! side-effecting call whose report is `unknown`, or that outlasts [`TASK_WINDOW`], is answered with a
//! task: the client polls `tasks/get` until the call is resolved, and its result is the report.
//! [`TaskSupport`] says, per tool, when a call is a task ([`Builder::task_support`]). The task lives in
//! the attempt log (`mcp_task` records), so a restarted server, or another server on one PostgreSQL
//! store, serves it; a tool's question to the client ([`tool_contract::Call::ask`]) is its
//! `input_required`, answered with `tasks/update`; a cancel says what is known, and never that an
//! attempt which may have landed did not. A client that declares nothing gets the report, as before.
//! docs/agent-surface.md ("Tasks") gives the statuses, the wire of one task, and the conformance
//! suite's scenarios this server passes.
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

mod builder;
mod call;
mod handler;
#[cfg(feature = "http")]
pub mod http;
mod lines;
mod person;
mod tasks;
pub mod trace;

/// How long the server waits for the person at the client to answer `elicitation/create` by default:
/// 50 s, shorter than a client's own request timeout (60 s in the reference SDKs), so the call still
/// answers.
pub const ASK_WITHIN: Duration = Duration::from_secs(50);

pub use builder::Builder;
pub use call::is_error;
pub use lines::MAX_LINE_BYTES;
pub use tasks::{TASK_TTL, TASK_WINDOW, TaskSupport};

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{RequestStateCodec, Tool};
use tool_contract::Toolbox;
use tool_contract::task::TaskFactory;
pub use tool_contract::toolbox::BudgetTooShort;

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

/// An MCP server over a toolbox. Cheap to clone: clones share the toolbox and the attempt log. Each
/// clone is a connection of its own: serve one clone per stdio or in-process connection, and a question
/// a person is asked through one is answered through it alone (over HTTP, the session or the
/// credential of the request says where a question was asked).
pub struct McpServer {
    inner: Arc<Inner>,
    /// Where a question asked through this value was asked, for a transport with no session of its own.
    connection: Arc<str>,
}

impl Clone for McpServer {
    fn clone(&self) -> Self {
        McpServer { inner: Arc::clone(&self.inner), connection: new_connection() }
    }
}

/// A connection's name: `MCP connection` and 16 hex digits from the operating system's generator (the
/// process id and a counter, were it to fail), unlike any other of any process.
pub(crate) fn new_connection() -> Arc<str> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; 8];
    let id = match getrandom::fill(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => (u64::from(std::process::id()) << 32) | SERIAL.fetch_add(1, Ordering::Relaxed),
    };
    format!("MCP connection {id:016x}").into()
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
    /// MCP tasks: offered when the log keeps them, and the drivers running.
    tasks: tasks::Tasks,
    /// An `ok` report's string value comes first, as a text block of its own.
    value_text: bool,
}
impl McpServer {
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
}
