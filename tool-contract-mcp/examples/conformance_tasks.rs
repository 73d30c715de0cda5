//! The fixture server of the official MCP conformance suite's task scenarios
//! (`@modelcontextprotocol/conformance`, the `tasks-*` server scenarios), built on tool-contract: each
//! fixture tool the scenarios call is a `#[tool]`, served over streamable HTTP with the attempt log in
//! memory.
//!
//! ```text
//! cargo run -p tool-contract-mcp --features http --example conformance_tasks -- [--http 127.0.0.1:0]
//! ```
//!
//! It prints `conformance_tasks: MCP over HTTP at http://ADDR/mcp` on standard error once it listens;
//! `.ci/run` runs the suite against that address.
//!
//! | tool | what the scenarios expect | how |
//! |---|---|---|
//! | `greet` | a plain result, `Hello, {name}!`, never a task | a `read` (never a task), its value as the first text block |
//! | `slow_compute` | a task when the client declares the extension (one of no time may answer at once); cancelled when cancelled | a `read` whose task support is `Optional`: past the window the call goes on as a task, and a cancel stops it |
//! | `failing_job` | only as a task; a tool error is `completed` with `isError` | `Required`; `permanent` after a second |
//! | `protocol_error_job` | only as a task, ending `failed` with a JSON-RPC error | `Required`; a `create` whose first attempt the attempt log refuses (a log that refuses this tool's attempts): nothing was attempted, the task fails |
//! | `confirm_delete` | a task that asks the client one question, then completes | `Required`; [`Call::ask`] once the task exists |
//! | `multi_input` | a task that asks two questions at once | `Required`; two [`Call::ask`] at once |
//! | `test_tool_with_task` | a question over rounds before any task, then a task whose result names the answer | `Required`; [`Call::ask`] before the window, then work past it |

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_contract::journal::{
    Answer, Approvals, Claimed, Durability, Journal, JournalError, McpTasks, Owner, Recall, Record, RecordRef,
};
use tool_contract::{Call, Class, IntentKey, MemoryJournal, Probe, Toolbox, tool};
use tool_contract_mcp::http::HttpOptions;
use tool_contract_mcp::{McpServer, TaskSupport};

/// Say hello.
#[tool(effect = "read", target = name)]
async fn greet(
    /// Who to greet.
    name: String,
) -> Result<String, Class> {
    Ok(format!("Hello, {name}!"))
}

/// Compute slowly: wait `seconds`, then answer.
#[tool(effect = "read", target = label)]
async fn slow_compute(
    /// How long the computation takes.
    seconds: u64,
    /// A name for the computation.
    label: String,
) -> Result<String, Class> {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    Ok(format!("{label}: done after {seconds}s"))
}

/// A job that fails after a second: a tool error.
#[tool(effect = "read")]
async fn failing_job() -> Result<String, Class> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(Class::permanent("the job failed: its input is not valid"))
}

/// A job the server cannot run: its attempt log refuses it.
#[tool(effect = "create", probe = never_made)]
async fn protocol_error_job() -> Result<String, Class> {
    Ok("never reached: the log refuses this tool's attempts".to_owned())
}

async fn never_made(_key: IntentKey) -> Probe<String> {
    Probe::NotLanded
}

/// An elicitation form: `message`, and the fields `properties` asks for.
fn form(message: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": { "type": "object", "properties": properties, "required": required },
        },
    })
}

/// Delete a file, once the client confirms it.
#[tool(effect = "read", target = filename)]
async fn confirm_delete(
    call: &Call,
    /// The file to delete.
    filename: String,
) -> Result<String, Class> {
    // Looking the file up takes a moment: the call is a task by the time it asks.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let asked =
        form(&format!("Delete {filename}?"), json!({ "confirm": { "type": "boolean" } }), &["confirm"]);
    let answer = call.ask("confirm", asked).await?;
    let confirmed = answer["action"] == "accept" && answer["content"]["confirm"] == true;
    Ok(if confirmed { format!("deleted {filename}") } else { format!("kept {filename}") })
}

/// Ask two questions at once.
#[tool(effect = "read")]
async fn multi_input(call: &Call) -> Result<String, Class> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let name = form("Your name?", json!({ "name": { "type": "string" } }), &["name"]);
    let confirm = form(
        "Go ahead?",
        json!({ "name": { "type": "string" }, "confirm": { "type": "boolean" } }),
        &["confirm"],
    );
    let (name, confirm) = tokio::join!(call.ask("name", name), call.ask("confirm", confirm));
    let (name, confirm) = (name?, confirm?);
    Ok(format!("{} answered; confirmed: {}", name["content"]["name"], confirm["content"]["confirm"]))
}

/// Ask for a name first, then work on it past the window: a task.
#[tool(effect = "read")]
async fn test_tool_with_task(call: &Call) -> Result<String, Class> {
    let asked = form("What is your name?", json!({ "name": { "type": "string" } }), &["name"]);
    let answer = call.ask("user_name", asked).await?;
    let name = answer["content"]["name"].as_str().unwrap_or("nobody").to_owned();
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(format!("Hello, {name}!"))
}

/// An attempt log that refuses the start of every attempt of `protocol_error_job`, and is `inner`
/// otherwise.
struct Refusing(Arc<MemoryJournal>);

impl Journal for Refusing {
    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        self.0.claim(key, owner, lease)
    }

    fn release(&self, key: &IntentKey, owner: &Owner) {
        self.0.release(key, owner)
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        if record.call == "protocol_error_job" {
            let why = "this log refuses protocol_error_job's attempts (the conformance fixture)".to_owned();
            return Answer::now(Err(JournalError::Failed { log: "memory".to_owned(), why }));
        }
        self.0.start(owner, record, durability)
    }

    fn end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.0.end(owner, record, durability)
    }

    fn append(&self, record: RecordRef<'_>, durability: Durability) -> Answer<'_, Result<(), JournalError>> {
        self.0.append(record, durability)
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        self.0.recall(key)
    }

    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        self.0.unresolved()
    }

    fn approvals(&self) -> Option<&dyn Approvals> {
        Some(self)
    }

    fn mcp_tasks(&self) -> Option<&dyn McpTasks> {
        Some(self)
    }
}

impl Approvals for Refusing {
    fn approval(&self, key: &IntentKey) -> Answer<'_, Result<Option<Record>, JournalError>> {
        self.0.approval(key)
    }

    fn approval_step(&self, record: RecordRef<'_>) -> Answer<'_, Result<bool, JournalError>> {
        self.0.approval_step(record)
    }
}

impl McpTasks for Refusing {
    fn mcp_task_records(&self, key: &IntentKey) -> Answer<'_, Result<Vec<Record>, JournalError>> {
        self.0.mcp_task_records(key)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = match args.as_slice() {
        [] => "127.0.0.1:0".to_owned(),
        [flag, addr] if flag == "--http" => addr.clone(),
        _ => return Err("usage: conformance_tasks [--http ADDR]".into()),
    };
    let mut toolbox = Toolbox::new();
    toolbox.add(greet_tool())?;
    toolbox.add(slow_compute_tool())?;
    toolbox.add(failing_job_tool())?;
    toolbox.add(protocol_error_job_tool())?;
    toolbox.add(confirm_delete_tool())?;
    toolbox.add(multi_input_tool())?;
    toolbox.add(test_tool_with_task_tool())?;
    let server = McpServer::builder(toolbox)
        .budget(Duration::from_secs(120))
        .journal(Arc::new(Refusing(Arc::new(MemoryJournal::new()))))
        .value_text(true)
        .task_support("slow_compute", TaskSupport::Optional)
        .task_support("failing_job", TaskSupport::Required)
        .task_support("protocol_error_job", TaskSupport::Required)
        .task_support("confirm_delete", TaskSupport::Required)
        .task_support("multi_input", TaskSupport::Required)
        .task_support("test_tool_with_task", TaskSupport::Required)
        .server_info("tool-contract-conformance-tasks", env!("CARGO_PKG_VERSION"))
        .build()?;
    let server = server.bind_http(HttpOptions::default().addr(addr.parse()?)).await?;
    eprintln!("conformance_tasks: MCP over HTTP at http://{}/mcp", server.local_addr()?);
    Ok(server.serve().await?)
}
