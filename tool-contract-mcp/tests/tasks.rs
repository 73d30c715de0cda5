//! MCP tasks through rmcp's own client over an in-memory pipe (MCP 2026-07-28): a call in doubt is
//! answered with a task the client polls to the call's report, kept in the attempt log; a client that
//! declares no tasks gets the report as before; cancelling says what is known; an id this client cannot
//! see is an invalid-params error.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig, ErrorCode,
    GetTaskParams, GetTaskResult, Implementation, ProtocolVersion, TaskPayload, TaskStatus,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientHandler, ClientServiceExt, ServiceError, ServiceExt};
use serde_json::{Map, Value, json};
use tool_contract::journal::{Journal, McpTasks, Phase};
use tool_contract::{Call, Class, IntentKey, MemoryJournal, Probe, Toolbox, tool};
use tool_contract_mcp::{McpServer, TASK_META_KEY};

/// A board that posts notices: a post's reply is lost after it lands, and the probe cannot read the
/// board until it has been asked `blind_for` times.
#[derive(Default)]
struct Board {
    posted: Mutex<Vec<IntentKey>>,
    /// The first attempt lands and its reply is lost.
    lose_reply: bool,
    /// Probes that fail before one can read the board (`u32::MAX`: never).
    blind_for: u32,
    probes: AtomicU32,
}

impl Board {
    /// Post a notice to a thread.
    #[tool(effect = "send", probe = Self::find, target = thread)]
    async fn post(&self, call: &Call, thread: String, text: String) -> Result<String, Class> {
        let _ = thread;
        self.posted.lock().unwrap().push(call.key());
        if self.lose_reply && call.attempt() == 1 {
            return Err(Class::unknown("the connection dropped after the post was sent"));
        }
        Ok(text)
    }

    #[allow(clippy::ptr_arg)]
    async fn find(&self, _thread: &String, text: &String, key: IntentKey) -> Probe<String> {
        if self.probes.fetch_add(1, Ordering::SeqCst) < self.blind_for {
            return Probe::Failed("the board cannot be read".into());
        }
        if self.posted.lock().unwrap().contains(&key) {
            Probe::Landed(text.clone())
        } else {
            Probe::NotLanded
        }
    }

    fn count(&self) -> usize {
        self.posted.lock().unwrap().len()
    }
}

/// A 2026-07-28 client that declares the tasks extension, or not.
#[derive(Clone)]
struct Client {
    tasks: bool,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("tasks-test", "0.0.0"))
            .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }
}

struct Setup {
    board: Arc<Board>,
    log: Arc<MemoryJournal>,
    server: McpServer,
}

fn setup(board: Board) -> Setup {
    let board = Arc::new(board);
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::clone(&board), Board::post_tool()).unwrap();
    let log = Arc::new(MemoryJournal::new());
    let server =
        McpServer::builder(toolbox).budget(Duration::from_secs(5)).journal(log.clone()).build().unwrap();
    Setup { board, log, server }
}

/// A client of `server` over an in-memory pipe.
async fn connect(server: &McpServer, tasks: bool) -> RunningService<RoleClient, Client> {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    let server = server.clone();
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let mode = rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    Client { tasks }.serve_with_lifecycle(client_side, mode).await.expect("the client connects")
}

fn post(thread: &str) -> CallToolRequestParams {
    let mut meta = Map::new();
    meta.insert(TASK_META_KEY.to_owned(), json!("ticket-7"));
    let arguments = json!({ "thread": thread, "text": "we are on it" }).as_object().unwrap().clone();
    let mut params = CallToolRequestParams::new("post").with_arguments(arguments);
    params.meta = Some(rmcp::model::RequestMetaObject::from(meta));
    params
}

/// Poll the task until its status is terminal, for up to ten seconds.
async fn until_done(client: &RunningService<RoleClient, Client>, id: &str) -> GetTaskResult {
    for _ in 0..100 {
        let got = client.get_task(GetTaskParams::new(id)).await.expect("tasks/get answers");
        if got.task.status().is_terminal() {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the task {id} did not end within ten seconds");
}

/// Poll the task until it asks the client something, for up to five seconds: its open questions.
async fn until_asked(client: &RunningService<RoleClient, Client>, id: &str) -> rmcp::model::InputRequests {
    for _ in 0..50 {
        let got = client.get_task(GetTaskParams::new(id)).await.unwrap();
        if let TaskPayload::InputRequired { input_requests } = got.task.payload {
            return input_requests;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the task {id} asked nothing within five seconds")
}

/// The report a completed task carries.
fn report_of(done: &GetTaskResult) -> Value {
    match &done.task.payload {
        TaskPayload::Completed { result } => result.get("structuredContent").cloned().expect("a report"),
        other => panic!("not completed: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_doubt_is_a_task_polled_to_its_report() {
    // The post lands with its reply lost, and the probe cannot tell until its second look.
    let setup = setup(Board { lose_reply: true, blind_for: 1, ..Board::default() });
    let client = connect(&setup.server, true).await;
    let CallToolResponse::Task(created) = client.call_tool_once(post("thread-1")).await.unwrap() else {
        panic!("a call in doubt is answered with a task")
    };
    let task = &created.task;
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(task.ttl_ms, Some(3_600_000));
    assert!(task.poll_interval_ms.is_some_and(|ms| ms > 0));
    let (key, secret) = task.task_id.split_once('.').expect("the id is the intent key and a secret");
    assert_eq!(secret.len(), 32);
    let key = IntentKey::parse(key).unwrap();
    // The task was in the log before the reply announced it (its driver may have ended it since).
    let records = setup.log.mcp_task_records(&key).await.unwrap();
    assert_eq!(records[0].phase, Phase::McpTask);
    assert_eq!(records[0].value.as_ref().unwrap()["step"], "created");
    assert!(!records[0].value.as_ref().unwrap().to_string().contains(secret), "the log keeps no secret");

    let done = until_done(&client, &task.task_id).await;
    assert_eq!(done.task.status(), TaskStatus::Completed);
    let report = report_of(&done);
    assert_eq!((report["outcome"].as_str(), report["effect_applied"].as_str()), (Some("ok"), Some("yes")));
    assert_eq!(setup.board.count(), 1, "the probe found the post: nothing was posted again");
    // Polled again, the same answer: the first end written stands.
    let again = client.get_task(GetTaskParams::new(&task.task_id)).await.unwrap();
    assert_eq!(report_of(&again), report);
    let steps: Vec<String> = setup
        .log
        .mcp_task_records(&key)
        .await
        .unwrap()
        .iter()
        .map(|r| r.value.as_ref().unwrap()["step"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(steps, ["created", "ended"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_declares_no_tasks_gets_the_report_in_doubt() {
    let setup = setup(Board { lose_reply: true, blind_for: 1, ..Board::default() });
    let client = connect(&setup.server, false).await;
    let CallToolResponse::Complete(result) = client.call_tool_once(post("thread-2")).await.unwrap() else {
        panic!("no task for a client that declared none")
    };
    let report = result.structured_content.unwrap();
    assert_eq!(report["outcome"], "unknown");
    let key = IntentKey::parse(report["idempotency_key"].as_str().unwrap()).unwrap();
    assert!(setup.log.mcp_task_records(&key).await.unwrap().is_empty());
    // Nor may it poll one.
    let refused = client.get_task(GetTaskParams::new(format!("{key}.{}", "0".repeat(32)))).await.unwrap_err();
    assert!(
        matches!(&refused, ServiceError::McpError(e) if e.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_resolves_is_answered_with_its_report() {
    let setup = setup(Board::default());
    let client = connect(&setup.server, true).await;
    let CallToolResponse::Complete(result) = client.call_tool_once(post("thread-3")).await.unwrap() else {
        panic!("a call that resolves needs no task")
    };
    assert_eq!(result.structured_content.unwrap()["outcome"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_in_doubt_says_its_attempt_may_have_landed() {
    // The probe never reads the board: the post stays in doubt.
    let setup = setup(Board { lose_reply: true, blind_for: u32::MAX, ..Board::default() });
    let client = connect(&setup.server, true).await;
    let CallToolResponse::Task(created) = client.call_tool_once(post("thread-4")).await.unwrap() else {
        panic!("a call in doubt is answered with a task")
    };
    let id = created.task.task_id;
    client.cancel_task(CancelTaskParams::new(&id)).await.expect("cancel is acknowledged");
    let done = until_done(&client, &id).await;
    assert_eq!(done.task.status(), TaskStatus::Completed, "cancelling does not undo what may have landed");
    let said = done.task.task.status_message.clone().unwrap_or_default();
    assert!(said.contains("cancelled") && said.contains("may still have landed"), "{said}");
    let report = report_of(&done);
    assert_eq!(
        (report["outcome"].as_str(), report["effect_applied"].as_str()),
        (Some("unknown"), Some("unknown"))
    );
    assert_eq!(setup.board.count(), 1, "nothing more was attempted");
    // Cancelling again, or an ended task, is acknowledged and changes nothing.
    client.cancel_task(CancelTaskParams::new(&id)).await.unwrap();
    assert_eq!(client.get_task(GetTaskParams::new(&id)).await.unwrap(), done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_this_client_cannot_see_is_invalid_params() {
    let setup = setup(Board { lose_reply: true, blind_for: 1, ..Board::default() });
    let client = connect(&setup.server, true).await;
    let CallToolResponse::Task(created) = client.call_tool_once(post("thread-5")).await.unwrap() else {
        panic!("a call in doubt is answered with a task")
    };
    let (key, secret) = created.task.task_id.split_once('.').unwrap();
    let guessed = format!("{key}.{}", if secret.starts_with('0') { "1".repeat(32) } else { "0".repeat(32) });
    for id in [guessed.as_str(), "not-a-task", key, &format!("{key}.{secret}x")] {
        let refused = client.get_task(GetTaskParams::new(id)).await.unwrap_err();
        assert!(
            matches!(&refused, ServiceError::McpError(e) if e.code == ErrorCode::INVALID_PARAMS),
            "{id}: {refused:?}"
        );
        let refused = client.cancel_task(CancelTaskParams::new(id)).await.unwrap_err();
        assert!(
            matches!(&refused, ServiceError::McpError(e) if e.code == ErrorCode::INVALID_PARAMS),
            "{id}: {refused:?}"
        );
    }
    until_done(&client, &created.task.task_id).await;
}

/// A desk whose calls take time, and one that asks the client before it answers.
#[derive(Default)]
struct Slow {
    posted: Mutex<Vec<String>>,
}

impl Slow {
    /// Post a notice, slowly.
    #[tool(effect = "send", probe = Self::find, target = thread)]
    async fn slow_post(&self, thread: String, millis: u64) -> Result<String, Class> {
        tokio::time::sleep(Duration::from_millis(millis)).await;
        self.posted.lock().unwrap().push(thread.clone());
        Ok(thread)
    }

    #[allow(clippy::ptr_arg)]
    async fn find(&self, thread: &String, _millis: &u64, _key: IntentKey) -> Probe<String> {
        if self.posted.lock().unwrap().contains(thread) {
            Probe::Landed(thread.clone())
        } else {
            Probe::NotLanded
        }
    }

    /// Count slowly.
    #[tool(effect = "read", target = label)]
    async fn slow_count(&self, label: String, millis: u64) -> Result<u64, Class> {
        let _ = label;
        tokio::time::sleep(Duration::from_millis(millis)).await;
        Ok(millis)
    }

    /// Ask the client for a name, after `millis`; greet it.
    #[tool(effect = "read", target = label)]
    async fn ask_name(&self, call: &Call, label: String, millis: u64) -> Result<String, Class> {
        let _ = label;
        tokio::time::sleep(Duration::from_millis(millis)).await;
        let form = json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Your name?",
                       "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
        });
        let answer = call.ask("name", form).await?;
        Ok(format!("Hello, {}!", answer["content"]["name"].as_str().unwrap_or("nobody")))
    }
}

fn slow_server() -> (Arc<Slow>, McpServer) {
    slow_server_with(|builder| builder)
}

/// [`slow_server`], its builder changed by `tweak` first.
fn slow_server_with(
    tweak: impl FnOnce(tool_contract_mcp::Builder) -> tool_contract_mcp::Builder,
) -> (Arc<Slow>, McpServer) {
    let slow = Arc::new(Slow::default());
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::clone(&slow), Slow::slow_post_tool()).unwrap();
    toolbox.add_method(Arc::clone(&slow), Slow::slow_count_tool()).unwrap();
    toolbox.add_method(Arc::clone(&slow), Slow::ask_name_tool()).unwrap();
    let builder = McpServer::builder(toolbox)
        .budget(Duration::from_secs(10))
        .journal(Arc::new(MemoryJournal::new()))
        .task_support("slow_count", tool_contract_mcp::TaskSupport::Optional)
        .task_support("ask_name", tool_contract_mcp::TaskSupport::Required);
    (slow, tweak(builder).build().unwrap())
}

fn slow_call(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments.as_object().unwrap().clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_effect_that_outlasts_the_window_is_a_task_that_completes_with_its_report() {
    let (slow, server) = slow_server();
    let client = connect(&server, true).await;
    let call = slow_call("slow_post", json!({ "thread": "t-1", "millis": 600 }));
    let CallToolResponse::Task(created) = client.call_tool_once(call).await.unwrap() else {
        panic!("a call past the window is a task")
    };
    assert_eq!(created.task.status, TaskStatus::Working);
    let done = until_done(&client, &created.task.task_id).await;
    let report = report_of(&done);
    assert_eq!((report["outcome"].as_str(), report["value"].as_str()), (Some("ok"), Some("t-1")));
    assert_eq!(slow.posted.lock().unwrap().len(), 1);
    // A quick one is answered with its report.
    let quick = slow_call("slow_post", json!({ "thread": "t-2", "millis": 0 }));
    assert!(matches!(client.call_tool_once(quick).await.unwrap(), CallToolResponse::Complete(_)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_says_cancelled_only_when_nothing_can_have_applied() {
    let (slow, server) = slow_server();
    let client = connect(&server, true).await;
    // A read: nothing applied, whatever it was doing.
    let count = slow_call("slow_count", json!({ "label": "c", "millis": 5000 }));
    let CallToolResponse::Task(read) = client.call_tool_once(count).await.unwrap() else { panic!("a task") };
    client.cancel_task(CancelTaskParams::new(&read.task.task_id)).await.unwrap();
    let done = until_done(&client, &read.task.task_id).await;
    assert_eq!(done.task.status(), TaskStatus::Cancelled);
    // A side effect whose attempt is under way: it may land.
    let post = slow_call("slow_post", json!({ "thread": "t-3", "millis": 5000 }));
    let CallToolResponse::Task(sent) = client.call_tool_once(post).await.unwrap() else { panic!("a task") };
    client.cancel_task(CancelTaskParams::new(&sent.task.task_id)).await.unwrap();
    let done = until_done(&client, &sent.task.task_id).await;
    assert_eq!(done.task.status(), TaskStatus::Completed, "an attempt under way may still land");
    let report = report_of(&done);
    assert_eq!(
        (report["outcome"].as_str(), report["effect_applied"].as_str()),
        (Some("unknown"), Some("unknown"))
    );
    let said = done.task.task.status_message.clone().unwrap_or_default();
    assert!(said.contains("may still have landed"), "{said}");
    assert!(slow.posted.lock().unwrap().is_empty(), "the attempt was stopped: nothing more was attempted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_question_in_a_task_is_input_required_and_answered_once_by_tasks_update() {
    let (_, server) = slow_server();
    let client = connect(&server, true).await;
    let ask = slow_call("ask_name", json!({ "label": "a", "millis": 400 }));
    let CallToolResponse::Task(created) = client.call_tool_once(ask).await.unwrap() else { panic!("a task") };
    let id = created.task.task_id;
    let asked = until_asked(&client, &id).await;
    assert_eq!(asked.keys().collect::<Vec<_>>(), ["name"]);
    let answer = |name: &str| {
        let mut responses = std::collections::BTreeMap::new();
        responses.insert("name".to_owned(), json!({ "action": "accept", "content": { "name": name } }));
        responses.insert("nobody-asked".to_owned(), json!({ "ignored": true }));
        rmcp::model::UpdateTaskParams::new(&id, responses)
    };
    // An answer too large for the log is refused whole, and records nothing.
    let mut huge = std::collections::BTreeMap::new();
    huge.insert("name".to_owned(), json!({ "action": "accept", "content": { "name": "x".repeat(70_000) } }));
    let refused = client.update_task(rmcp::model::UpdateTaskParams::new(&id, huge)).await.unwrap_err();
    assert!(
        matches!(&refused, ServiceError::McpError(e) if e.code == ErrorCode::INVALID_PARAMS),
        "{refused:?}"
    );
    client.update_task(answer("Alice")).await.unwrap();
    // A second answer to the same question changes nothing.
    client.update_task(answer("Mallory")).await.unwrap();
    let done = until_done(&client, &id).await;
    let report = report_of(&done);
    assert_eq!(report["value"], "Hello, Alice!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_before_the_task_goes_over_rounds_and_the_task_starts_with_the_answer() {
    let (_, server) = slow_server();
    let client = connect(&server, true).await;
    let ask = slow_call("ask_name", json!({ "label": "r", "millis": 0 }));
    let first = client.call_tool_once(ask.clone()).await.unwrap();
    let CallToolResponse::InputRequired(round) = first else {
        panic!("a question asked at once goes over rounds, before any task: {first:?}")
    };
    let requests = round.input_requests.clone().expect("the question");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["name"]);
    let mut again = ask;
    again.request_state = round.request_state.clone();
    let mut responses = std::collections::BTreeMap::new();
    responses.insert("name".to_owned(), json!({ "action": "accept", "content": { "name": "Alice" } }));
    again.input_responses = Some(responses);
    let CallToolResponse::Task(created) = client.call_tool_once(again.clone()).await.unwrap() else {
        panic!("a required task, with the answer in hand")
    };
    let report = report_of(&until_done(&client, &created.task.task_id).await);
    assert_eq!(report["value"], "Hello, Alice!");
    // A state changed by a byte is refused.
    let mut tampered = again;
    let mut state = tampered.request_state.take().unwrap();
    state.push('x');
    tampered.request_state = Some(state);
    let refused = client.call_tool_once(tampered).await.unwrap_err();
    assert!(
        matches!(&refused, ServiceError::McpError(e) if e.code == ErrorCode::INVALID_PARAMS),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_task_from_a_client_without_tasks_is_refused_with_what_to_declare() {
    let (_, server) = slow_server();
    let client = connect(&server, false).await;
    let ask = slow_call("ask_name", json!({ "label": "n", "millis": 0 }));
    let refused = client.call_tool_once(ask).await.unwrap_err();
    let ServiceError::McpError(error) = &refused else { panic!("{refused:?}") };
    assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    let data = error.data.clone().expect("what to declare");
    assert!(
        data["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{data}"
    );
    // A tool that asks, called by a client that takes no tasks over no rounds: nobody can be asked.
    let slow = slow_call("slow_count", json!({ "label": "n", "millis": 0 }));
    assert!(matches!(client.call_tool_once(slow).await.unwrap(), CallToolResponse::Complete(_)));
}

/// A bank whose first attempt of each payment is refused (`503`, nothing paid).
#[derive(Default)]
struct Bank {
    paid: Mutex<Vec<IntentKey>>,
}

impl Bank {
    /// Pay an order.
    #[tool(effect = "money", probe = Self::find, target = order, shows = [cents])]
    async fn pay(&self, call: &Call, order: String, cents: u64) -> Result<u64, Class> {
        let _ = order;
        if call.attempt() == 1 {
            return Err(Class::retryable("503: the bank is busy"));
        }
        self.paid.lock().unwrap().push(call.key());
        Ok(cents)
    }

    #[allow(clippy::ptr_arg)]
    async fn find(&self, _order: &String, cents: &u64, key: IntentKey) -> Probe<u64> {
        if self.paid.lock().unwrap().contains(&key) { Probe::Landed(*cents) } else { Probe::NotLanded }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_payment_waits_in_its_task_for_the_persons_yes_with_the_confirm_code() {
    let bank = Arc::new(Bank::default());
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::clone(&bank), Bank::pay_tool()).unwrap();
    let server = McpServer::builder(toolbox)
        .budget(Duration::from_secs(20))
        .journal(Arc::new(MemoryJournal::new()))
        .build()
        .unwrap();
    let client = connect(&server, true).await;
    let pay = slow_call("pay", json!({ "order": "ord-7741", "cents": 1250 }));
    let CallToolResponse::Task(created) = client.call_tool_once(pay).await.unwrap() else {
        panic!("a payment that waits for a person is a task")
    };
    let id = created.task.task_id;
    let asked = until_asked(&client, &id).await;
    let (key, request) = asked.into_iter().next().unwrap();
    assert!(key.starts_with("approve-a2."), "the key names the attempt: {key}");
    let form = serde_json::to_value(&request).unwrap();
    let message = form["params"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("1250"), "the question binds the amount: {message}");
    let code: String = message.rsplit("confirm code ").next().unwrap().chars().take(6).collect();
    let mut responses = std::collections::BTreeMap::new();
    responses.insert(key, json!({ "action": "accept", "content": { "approve": true, "confirm": code } }));
    client.update_task(rmcp::model::UpdateTaskParams::new(&id, responses)).await.unwrap();
    let report = report_of(&until_done(&client, &id).await);
    assert_eq!((report["outcome"].as_str(), report["value"].as_u64()), (Some("ok"), Some(1250)), "{report}");
    assert_eq!(bank.paid.lock().unwrap().len(), 1, "paid once, after the yes");
}

/// A board whose probe cannot read it until `readable` is set; a post's first reply is lost.
#[derive(Default)]
struct Dark {
    posted: Mutex<Vec<IntentKey>>,
    readable: std::sync::atomic::AtomicBool,
}

impl Dark {
    /// Post a notice; the first attempt's reply is lost.
    #[tool(effect = "send", probe = Self::find, target = thread)]
    async fn dark_post(&self, call: &Call, thread: String) -> Result<String, Class> {
        self.posted.lock().unwrap().push(call.key());
        if call.attempt() == 1 {
            return Err(Class::unknown("the connection dropped after the post was sent"));
        }
        Ok(thread)
    }

    #[allow(clippy::ptr_arg)]
    async fn find(&self, thread: &String, key: IntentKey) -> Probe<String> {
        if !self.readable.load(Ordering::SeqCst) {
            return Probe::Failed("the board cannot be read".into());
        }
        if self.posted.lock().unwrap().contains(&key) {
            Probe::Landed(thread.clone())
        } else {
            Probe::NotLanded
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_after_the_effect_was_recorded_completes_with_the_recorded_report() {
    let dark = Arc::new(Dark::default());
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::clone(&dark), Dark::dark_post_tool()).unwrap();
    let server = McpServer::builder(toolbox)
        .budget(Duration::from_secs(5))
        .journal(Arc::new(MemoryJournal::new()))
        .build()
        .unwrap();
    let call = || {
        let mut params = CallToolRequestParams::new("dark_post")
            .with_arguments(json!({ "thread": "t-1" }).as_object().unwrap().clone());
        params.meta = Some(rmcp::model::RequestMetaObject::from(
            json!({ TASK_META_KEY: "ticket-9" }).as_object().unwrap().clone(),
        ));
        params
    };
    let client = connect(&server, true).await;
    let CallToolResponse::Task(created) = client.call_tool_once(call()).await.unwrap() else {
        panic!("a call in doubt is a task")
    };
    // The same call from a client that takes no tasks, once the task's driver has made its first call
    // and naps (a second before its next): while the board is dark it finds the intent in doubt, not
    // busy; then the board becomes readable, and it finds the post: the intent is recorded as landed.
    let plain = connect(&server, false).await;
    let plain_report = || async {
        let CallToolResponse::Complete(again) = plain.call_tool_once(call()).await.unwrap() else {
            panic!("a plain answer")
        };
        again.structured_content.unwrap()
    };
    for tries in 0.. {
        let report = plain_report().await;
        assert_eq!(report["effect_applied"], "unknown", "{report}");
        if !report["message"].as_str().unwrap().contains("another worker") {
            break;
        }
        assert!(tries < 50, "the driver held the intent for five seconds");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    dark.readable.store(true, Ordering::SeqCst);
    assert_eq!(plain_report().await["effect_applied"], "yes");
    client.cancel_task(CancelTaskParams::new(&created.task.task_id)).await.unwrap();
    let done = until_done(&client, &created.task.task_id).await;
    assert_eq!(done.task.status(), TaskStatus::Completed, "{:?}", done.task.task.status_message);
    let report = report_of(&done);
    assert_eq!((&report["outcome"], &report["effect_applied"]), (&json!("ok"), &json!("yes")), "{report}");
    assert!(done.task.task.status_message.unwrap().contains("after its effect was recorded"));
    assert_eq!(dark.posted.lock().unwrap().len(), 1, "posted once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_never_made_is_answered_with_its_error_and_keeps_no_task() {
    let (_, server) = slow_server();
    let client = connect(&server, true).await;
    // `ask_name` requires a task; its `label` is a string, not a number.
    let got = client.call_tool_once(slow_call("ask_name", json!({ "label": 7, "millis": 0 }))).await.unwrap();
    let CallToolResponse::Complete(result) = got else { panic!("no task for a call never made: {got:?}") };
    assert_eq!(result.is_error, Some(true));
    assert_eq!(result.structured_content.unwrap()["outcome"], "permanent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_task_on_a_server_that_keeps_none_says_so() {
    let (_, server) = slow_server_with(|builder| builder.tasks(false));
    let client = connect(&server, true).await;
    let refused =
        client.call_tool_once(slow_call("ask_name", json!({ "label": "x", "millis": 0 }))).await.unwrap_err();
    let ServiceError::McpError(error) = refused else { panic!("{refused:?}") };
    assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
    assert!(error.message.contains("this server keeps none"), "{}", error.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_is_not_a_forms_result_is_refused_whole() {
    let (_, server) = slow_server();
    let client = connect(&server, true).await;
    // Asked past the window, so inside the task.
    let id = match client.call_tool_once(slow_call("ask_name", json!({ "label": "x", "millis": 400 }))).await
    {
        Ok(CallToolResponse::Task(created)) => created.task.task_id,
        other => panic!("{other:?}"),
    };
    until_asked(&client, &id).await;
    let answer = |value: Value| {
        rmcp::model::UpdateTaskParams::new(
            &id,
            std::collections::BTreeMap::from([("name".to_owned(), value)]),
        )
    };
    for wrong in [json!(42), json!({ "name": "Ann" }), json!({ "action": "maybe" })] {
        let refused = client.update_task(answer(wrong.clone())).await.unwrap_err();
        let ServiceError::McpError(error) = refused else { panic!("{refused:?}") };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{wrong}");
        assert!(error.message.contains("elicitation/create"), "{}", error.message);
    }
    // Nothing was recorded: the question is still open, and a form's result answers it.
    assert!(until_asked(&client, &id).await.contains_key("name"));
    client.update_task(answer(json!({ "action": "accept", "content": { "name": "Ann" } }))).await.unwrap();
    assert_eq!(report_of(&until_done(&client, &id).await)["value"], "Hello, Ann!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_under_way_is_said_to_be_under_way_not_in_doubt() {
    let (_, server) = slow_server_with(|builder| builder.task_ttl(Duration::MAX));
    let client = connect(&server, true).await;
    for (name, arguments) in [
        ("slow_post", json!({ "thread": "t-2", "millis": 1500 })),
        ("slow_count", json!({ "label": "c", "millis": 1500 })),
    ] {
        let Ok(CallToolResponse::Task(created)) = client.call_tool_once(slow_call(name, arguments)).await
        else {
            panic!("a task past the window")
        };
        // A TTL too long for milliseconds in 64 bits is said as the longest there is.
        assert_eq!(created.task.ttl_ms, Some(u64::MAX));
        let got = client.get_task(GetTaskParams::new(&created.task.task_id)).await.unwrap();
        for said in [created.task.status_message, got.task.task.status_message] {
            assert_eq!(said.as_deref(), Some("the call is under way"), "{name}");
        }
        assert_eq!(until_done(&client, &created.task.task_id).await.task.status(), TaskStatus::Completed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_cancelled_before_its_second_attempt_is_cancelled_and_holds_its_intent_a_moment() {
    let bank = Arc::new(Bank::default());
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::clone(&bank), Bank::pay_tool()).unwrap();
    let log = Arc::new(MemoryJournal::new());
    let server =
        McpServer::builder(toolbox).budget(Duration::from_secs(20)).journal(log.clone()).build().unwrap();
    let client = connect(&server, true).await;
    let pay = slow_call("pay", json!({ "order": "ord-7742", "cents": 990 }));
    let CallToolResponse::Task(created) = client.call_tool_once(pay).await.unwrap() else {
        panic!("a payment that waits for a person is a task")
    };
    let id = created.task.task_id;
    let (key, _) = until_asked(&client, &id).await.into_iter().next().unwrap();
    // Attempt 1 was refused (nothing applied); the second waits for the person: cancelled, truly.
    client.cancel_task(CancelTaskParams::new(&id)).await.unwrap();
    let done = until_done(&client, &id).await;
    assert_eq!(done.task.status(), TaskStatus::Cancelled, "{:?}", done.task.task.status_message);
    // The intent stays held a moment, so a driver elsewhere that read the task before the cancel
    // starts nothing; then it is free again.
    let intent = IntentKey::parse(id.split_once('.').unwrap().0).unwrap();
    let other = tool_contract::journal::Owner::new("another server's driver");
    let held = log.claim(&intent, &other, Duration::from_secs(1)).await.unwrap();
    assert!(matches!(held, tool_contract::journal::Claimed::Busy { .. }), "{held:?}");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let free = log.claim(&intent, &other, Duration::from_secs(1)).await.unwrap();
    assert!(matches!(free, tool_contract::journal::Claimed::Held(_)), "{free:?}");
    log.release(&intent, &other);
    // A yes sent after the cancel pays nothing.
    let mut responses = std::collections::BTreeMap::new();
    responses.insert(key, json!({ "action": "accept", "content": { "approve": true } }));
    client.update_task(rmcp::model::UpdateTaskParams::new(&id, responses)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(bank.paid.lock().unwrap().is_empty(), "nothing paid after the cancel");
    assert_eq!(client.get_task(GetTaskParams::new(&id)).await.unwrap().task.status(), TaskStatus::Cancelled);
}
