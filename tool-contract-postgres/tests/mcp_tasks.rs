//! Two MCP servers on one PostgreSQL store serve one task: a call in doubt made through server A is a
//! task that server B, asked by the same client for it, drives to its report, and that A then reads
//! as completed. A's probe can never read the board; B's can.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, GetTaskParams, GetTaskResult,
    Implementation, ProtocolVersion, RequestMetaObject, TaskPayload, TaskStatus,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientHandler, ClientServiceExt, ServiceExt};
use serde_json::{Map, json};
use tool_contract::journal::McpTasks;
use tool_contract::{Call, Class, IntentKey, Probe, Toolbox, tool};
use tool_contract_mcp::{McpServer, TASK_META_KEY};

/// One board, seen by both servers; a server's probe reads it only when it can `see`.
struct Board {
    posted: Arc<Mutex<Vec<IntentKey>>>,
    see: bool,
}

impl Board {
    /// Post a notice to a thread.
    #[tool(effect = "send", probe = Self::find, target = thread)]
    async fn post(&self, call: &Call, thread: String, text: String) -> Result<String, Class> {
        let _ = thread;
        self.posted.lock().unwrap().push(call.key());
        if call.attempt() == 1 {
            return Err(Class::unknown("the connection dropped after the post was sent"));
        }
        Ok(text)
    }

    /// Ask the client for a name, once the call is a task; greet it.
    #[tool(effect = "read", target = label)]
    async fn ask_name(&self, call: &Call, label: String) -> Result<String, Class> {
        let _ = label;
        tokio::time::sleep(Duration::from_millis(400)).await;
        let form = json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Your name?",
                       "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
        });
        let answer = call.ask("name", form).await?;
        Ok(format!("Hello, {}!", answer["content"]["name"].as_str().unwrap_or("nobody")))
    }

    #[allow(clippy::ptr_arg)]
    async fn find(&self, _thread: &String, text: &String, key: IntentKey) -> Probe<String> {
        if !self.see {
            return Probe::Failed("the board cannot be read from here".into());
        }
        if self.posted.lock().unwrap().contains(&key) {
            Probe::Landed(text.clone())
        } else {
            Probe::NotLanded
        }
    }
}

#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_tasks().build(),
            Implementation::new("fleet", "0.0.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }
}

/// A server on its own connection to the store at `conninfo`, and a client of it.
async fn server(
    conninfo: &str,
    posted: &Arc<Mutex<Vec<IntentKey>>>,
    see: bool,
) -> RunningService<RoleClient, Client> {
    let journal = tool_contract_postgres::PgJournal::connect(conninfo).await.unwrap();
    let mut toolbox = Toolbox::new();
    let board = Arc::new(Board { posted: Arc::clone(posted), see });
    toolbox.add_method(Arc::clone(&board), Board::post_tool()).unwrap();
    toolbox.add_method(board, Board::ask_name_tool()).unwrap();
    let server = McpServer::builder(toolbox)
        .budget(Duration::from_secs(10))
        .journal(Arc::new(journal))
        .task_support("ask_name", tool_contract_mcp::TaskSupport::Required)
        .build()
        .unwrap();
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let mode = rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    Client.serve_with_lifecycle(client_side, mode).await.expect("the client connects")
}

async fn until_done(client: &RunningService<RoleClient, Client>, id: &str) -> GetTaskResult {
    for _ in 0..200 {
        let got = client.get_task(GetTaskParams::new(id)).await.expect("tasks/get answers");
        if got.task.status().is_terminal() {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the task did not end within twenty seconds");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_made_on_one_server_is_driven_by_another_on_the_same_store() {
    let Some(conninfo) = common::database("mcp_tasks").await else { return };
    let posted = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (server(&conninfo, &posted, false).await, server(&conninfo, &posted, true).await);
    let mut meta = Map::new();
    meta.insert(TASK_META_KEY.to_owned(), json!("ticket-fleet"));
    let arguments = json!({ "thread": "thread-1", "text": "on it" }).as_object().unwrap().clone();
    let mut params = CallToolRequestParams::new("post").with_arguments(arguments);
    params.meta = Some(RequestMetaObject::from(meta));
    let CallToolResponse::Task(created) = a.call_tool_once(params).await.unwrap() else {
        panic!("a call in doubt is answered with a task")
    };
    let id = created.task.task_id;
    // A's calls cannot tell, and ask the person to settle through the task; B's probe can tell. The
    // client polls B, and answers what it is asked, there: either way the task ends, once.
    let mut done = None;
    for _ in 0..200 {
        let got = b.get_task(GetTaskParams::new(&id)).await.expect("tasks/get answers");
        if got.task.status().is_terminal() {
            done = Some(got);
            break;
        }
        if let TaskPayload::InputRequired { input_requests } = &got.task.payload {
            let mut responses = std::collections::BTreeMap::new();
            for key in input_requests.keys() {
                let landed = json!({ "verdict": "landed", "evidence": "thread-1 shows the notice" });
                responses.insert(key.clone(), json!({ "action": "accept", "content": landed }));
            }
            b.update_task(rmcp::model::UpdateTaskParams::new(&id, responses)).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let done = done.expect("the task ends within twenty seconds");
    assert_eq!(done.task.status(), TaskStatus::Completed);
    let TaskPayload::Completed { result } = &done.task.payload else { unreachable!() };
    let report = &result["structuredContent"];
    assert_eq!(
        (report["outcome"].as_str(), report["effect_applied"].as_str()),
        (Some("ok"), Some("yes")),
        "{report}"
    );
    // A reads the same end from the store.
    let seen_by_a = a.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert_eq!(seen_by_a.task.payload, done.task.payload);
    assert_eq!(posted.lock().unwrap().len(), 1, "posted once");
    // The store holds one `created` and one `ended`, whichever server wrote it.
    let store = tool_contract_postgres::PgJournal::connect(&conninfo).await.unwrap();
    let key = IntentKey::parse(id.split_once('.').unwrap().0).unwrap();
    let steps: Vec<String> = store
        .mcp_task_records(&key)
        .await
        .unwrap()
        .iter()
        .map(|r| r.value.as_ref().unwrap()["step"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(steps.iter().filter(|s| *s == "created").count(), 1, "{steps:?}");
    assert!(steps.iter().any(|s| s == "ended"), "{steps:?}");
}

/// A tool's question, asked in a task on server A, is answered through server B; two answers sent at
/// once through both, the task uses one of them, the first written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_on_one_server_is_answered_through_another() {
    let Some(conninfo) = common::database("mcp_task_questions").await else { return };
    let posted = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (server(&conninfo, &posted, true).await, server(&conninfo, &posted, true).await);
    let arguments = json!({ "label": "q" }).as_object().unwrap().clone();
    let CallToolResponse::Task(created) =
        a.call_tool_once(CallToolRequestParams::new("ask_name").with_arguments(arguments)).await.unwrap()
    else {
        panic!("a required task")
    };
    let id = created.task.task_id;
    let mut asked = false;
    for _ in 0..50 {
        let got = b.get_task(GetTaskParams::new(&id)).await.unwrap();
        if matches!(got.task.payload, TaskPayload::InputRequired { .. }) {
            asked = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(asked, "server B sees the question server A's call asked");
    let answer = |name: &str| {
        let mut responses = std::collections::BTreeMap::new();
        responses.insert("name".to_owned(), json!({ "action": "accept", "content": { "name": name } }));
        rmcp::model::UpdateTaskParams::new(&id, responses)
    };
    let (on_a, on_b) = tokio::join!(a.update_task(answer("Alice")), b.update_task(answer("Bob")));
    on_a.unwrap();
    on_b.unwrap();
    let done = until_done(&a, &id).await;
    let TaskPayload::Completed { result } = &done.task.payload else { panic!("{done:?}") };
    let greeting = result["structuredContent"]["value"].as_str().unwrap_or_default().to_owned();
    assert!(["Hello, Alice!", "Hello, Bob!"].contains(&greeting.as_str()), "{greeting}");
    // Both servers say the same.
    let seen_by_b = b.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert_eq!(seen_by_b.task.payload, done.task.payload);
}
