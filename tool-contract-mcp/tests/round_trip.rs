//! The server and rmcp's own client in one process over an in-memory pipe: the list, calls, refusals,
//! a re-sent call recognised by its task, and a cancelled call.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, RequestMetaObject};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use serde_json::{Map, Value, json};
use tool_contract::{Call, Class, IntentKey, Probe, Toolbox, tool};
use tool_contract_mcp::{ATTEMPT_ID_META_KEY, INTENT_KEY_META_KEY, McpServer, TASK_META_KEY};

/// A thread that counts what reaches it.
#[derive(Default)]
struct Thread {
    posted: std::sync::Mutex<Vec<IntentKey>>,
    bodies: AtomicU32,
}

impl Thread {
    /// Post a notice to the thread.
    #[tool(effect = "send", probe = Self::landed, target = thread)]
    async fn post(
        &self,
        call: &Call,
        /// The thread.
        thread: String,
        /// The text.
        text: String,
    ) -> Result<u64, Class> {
        let _ = (thread, text);
        self.bodies.fetch_add(1, Ordering::SeqCst);
        let mut posted = self.posted.lock().unwrap();
        posted.push(call.key());
        Ok(posted.len() as u64)
    }

    /// Wait, then post: a call a client gives up on.
    #[tool(effect = "send", probe = Self::slow_landed, target = thread)]
    async fn slow_post(&self, call: &Call, thread: String) -> Result<u64, Class> {
        let _ = thread;
        self.bodies.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(3600)).await;
        self.posted.lock().unwrap().push(call.key());
        Ok(0)
    }

    /// Count the posts.
    #[tool(effect = "read")]
    async fn count(&self) -> Result<u64, Class> {
        Ok(self.posted.lock().unwrap().len() as u64)
    }

    #[allow(clippy::ptr_arg)]
    async fn landed(&self, _: &String, _: &String, key: IntentKey) -> Probe<u64> {
        let posted = self.posted.lock().unwrap();
        match posted.iter().position(|k| *k == key) {
            Some(i) => Probe::Landed(i as u64 + 1),
            None => Probe::NotLanded,
        }
    }

    #[allow(clippy::ptr_arg)]
    async fn slow_landed(&self, _: &String, key: IntentKey) -> Probe<u64> {
        if self.posted.lock().unwrap().contains(&key) { Probe::Landed(0) } else { Probe::NotLanded }
    }
}

async fn connect(thread: Arc<Thread>) -> (RunningService<RoleClient, ()>, McpServer) {
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::clone(&thread), Thread::post_tool()).unwrap();
    toolbox.add_method(Arc::clone(&thread), Thread::slow_post_tool()).unwrap();
    toolbox.add_method(thread, Thread::count_tool()).unwrap();
    let server = McpServer::builder(toolbox).budget(Duration::from_secs(30)).build().unwrap();
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    let serving = server.clone();
    tokio::spawn(async move {
        if let Ok(running) = serving.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_side).await.expect("the client connects");
    (client, server)
}

fn params(name: &'static str, arguments: Value, task: Option<&str>) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else { panic!("an object") };
    let mut params = CallToolRequestParams::new(name).with_arguments(arguments);
    if let Some(task) = task {
        let mut meta = Map::new();
        meta.insert(TASK_META_KEY.to_owned(), json!(task));
        params.meta = Some(RequestMetaObject::from(meta));
    }
    params
}

fn report(result: &CallToolResult) -> Value {
    result.structured_content.clone().expect("the report as structured content")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_with_schemas_and_the_annotations_of_their_kind() {
    let (client, _) = connect(Arc::default()).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["count", "post", "slow_post"]);
    let post = &tools[1];
    assert_eq!(post.description.as_deref(), Some("Post a notice to the thread."));
    assert_eq!(post.input_schema["required"], json!(["thread", "text"]));
    assert_eq!(post.output_schema.as_ref().unwrap()["type"], "object");
    let hints = post.annotations.as_ref().unwrap();
    assert_eq!(
        (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint),
        (Some(false), Some(false), Some(false))
    );
    assert_eq!(tools[0].annotations.as_ref().unwrap().read_only_hint, Some(true));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_re_sent_for_one_task_posts_once() {
    let thread = Arc::new(Thread::default());
    let (client, _) = connect(Arc::clone(&thread)).await;
    let first = client
        .call_tool(params("post", json!({ "thread": "t-9", "text": "hi" }), Some("ticket-5")))
        .await
        .unwrap();
    // The reply stream broke; the client sends the same call again, as MCP requires of it.
    let again = client
        .call_tool(params("post", json!({ "thread": "t-9", "text": "hi" }), Some("ticket-5")))
        .await
        .unwrap();
    assert_eq!(first.is_error, Some(false));
    assert_eq!(
        (report(&first)["outcome"].clone(), report(&again)["outcome"].clone()),
        (json!("ok"), json!("ok"))
    );
    assert_eq!(report(&again)["value"], report(&first)["value"]);
    assert_eq!(thread.bodies.load(Ordering::SeqCst), 1, "one notice for one intent");
    let meta = first.meta.as_ref().unwrap();
    assert_eq!(meta.0[INTENT_KEY_META_KEY], report(&first)["idempotency_key"]);
    assert_eq!(meta.0[ATTEMPT_ID_META_KEY], report(&first)["attempt_id"]);
    // The text block carries the same report.
    let text = first.content[0].as_text().unwrap().text.clone();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), report(&first));

    // Another task is another intent.
    client
        .call_tool(params("post", json!({ "thread": "t-9", "text": "hi" }), Some("ticket-6")))
        .await
        .unwrap();
    assert_eq!(thread.bodies.load(Ordering::SeqCst), 2);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_task_the_instance_scopes_the_key() {
    let thread = Arc::new(Thread::default());
    let (client, server) = connect(Arc::clone(&thread)).await;
    for _ in 0..2 {
        let result =
            client.call_tool(params("post", json!({ "thread": "t-1", "text": "x" }), None)).await.unwrap();
        let attempt = report(&result)["attempt_id"].as_str().unwrap().to_owned();
        assert!(attempt.starts_with(server.instance_id()), "{attempt}");
    }
    assert_eq!(thread.bodies.load(Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_a_report_an_unknown_tool_an_error() {
    let thread = Arc::new(Thread::default());
    let (client, _) = connect(Arc::clone(&thread)).await;
    let bad = client.call_tool(params("post", json!({ "thread": 9 }), Some("t"))).await.unwrap();
    assert_eq!(bad.is_error, Some(true));
    let bad = report(&bad);
    assert_eq!((bad["outcome"].as_str(), bad["effect_applied"].as_str()), (Some("permanent"), Some("no")));
    assert!(bad["message"].as_str().unwrap().contains("argument `thread`"), "{bad}");
    let unknown = client.call_tool(params("post_notice", json!({}), Some("t"))).await;
    assert!(unknown.is_err(), "{unknown:?}");
    for wrong in [json!(42), json!(""), json!("a\nb"), json!("x".repeat(257))] {
        let mut wrong_meta = params("count", json!({}), None);
        wrong_meta.meta = Some(RequestMetaObject::from(Map::from_iter([(TASK_META_KEY.to_owned(), wrong)])));
        assert!(client.call_tool(wrong_meta).await.is_err());
    }
    assert_eq!(thread.bodies.load(Ordering::SeqCst), 0);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_drops_its_attempt() {
    let thread = Arc::new(Thread::default());
    let (client, _) = connect(Arc::clone(&thread)).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params(
        "slow_post",
        json!({ "thread": "t-2" }),
        Some("ticket-8"),
    )));
    let handle =
        client.peer().send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    while thread.bodies.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // `notifications/cancelled`: the server drops the attempt's future, which never gets to post.
    handle.cancel(Some("the user gave up".into())).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(thread.posted.lock().unwrap().is_empty());
    // The server goes on serving.
    let report = report(&client.call_tool(params("count", json!({}), Some("ticket-8"))).await.unwrap());
    assert_eq!(report["value"], 0);
    client.cancel().await.unwrap();
}

/// What README and `Builder::instance_id` promise an operator: a stable instance id and a file log
/// make a call that names no task recognised after the server restarts; a random id does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stable_instance_id_and_a_file_log_outlive_a_restart() {
    let dir = std::env::temp_dir().join(format!("tc-mcp-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let thread = Arc::new(Thread::default());
    // One server run: open the log, post without a task, stop, and let go of the log.
    let run = async |instance: Option<&str>, log: &str| {
        let mut toolbox = Toolbox::new();
        toolbox.add_method(Arc::clone(&thread), Thread::post_tool()).unwrap();
        let journal = tool_contract::FileJournal::open(dir.join(log)).unwrap();
        let mut builder = McpServer::builder(toolbox).journal(Arc::new(journal));
        if let Some(instance) = instance {
            builder = builder.instance_id(instance);
        }
        let (server_side, client_side) = tokio::io::duplex(64 * 1024);
        let serving = tokio::spawn(async move {
            if let Ok(running) = builder.build().unwrap().serve(server_side).await {
                let _ = running.waiting().await;
            }
        });
        let client = ().serve(client_side).await.expect("the client connects");
        let result =
            client.call_tool(params("post", json!({ "thread": "t-1", "text": "x" }), None)).await.unwrap();
        client.cancel().await.unwrap();
        serving.await.unwrap();
        report(&result)
    };
    let first = run(Some("desk-1"), "stable.log").await;
    let after_restart = run(Some("desk-1"), "stable.log").await;
    assert_eq!(thread.bodies.load(Ordering::SeqCst), 1, "{after_restart}");
    assert_eq!(after_restart["idempotency_key"], first["idempotency_key"]);
    assert_eq!(after_restart["value"], first["value"]);
    assert!(after_restart["message"].as_str().unwrap().contains("not repeated"), "{after_restart}");

    run(None, "random.log").await;
    run(None, "random.log").await;
    assert_eq!(thread.bodies.load(Ordering::SeqCst), 3, "a random instance is a new task at every start");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Requests rmcp cannot read as the method they name: a `tools/call` with the wrong params is told
/// what is wrong with them (invalid params, -32602), an unknown method that it does not exist; none
/// runs anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_tools_call_is_told_what_is_wrong() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let thread = Arc::new(Thread::default());
    let (_client, server) = connect(Arc::clone(&thread)).await;
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let (read, mut write) = tokio::io::split(client_side);
    let mut lines = tokio::io::BufReader::new(read).lines();
    let mut send = async |line: Value| {
        write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    };
    send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }))
    .await;
    lines.next_line().await.unwrap().expect("an initialize answer");
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    let cases = [
        (json!({ "name": "post", "arguments": [1, 2] }), -32602, "`tools/call` takes params"),
        (json!({ "name": "post", "arguments": "hi" }), -32602, "invalid type"),
        (json!({ "name": 5, "arguments": {} }), -32602, "invalid type"),
        (json!({ "arguments": {} }), -32602, "missing field `name`"),
    ];
    for (id, (params, code, says)) in cases.into_iter().enumerate() {
        send(json!({ "jsonrpc": "2.0", "id": id + 1, "method": "tools/call", "params": params })).await;
        let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], json!(id + 1), "{answer}");
        assert_eq!(answer["error"]["code"], json!(code), "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(says), "{params}: {answer}");
    }
    send(json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call" })).await;
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
    send(json!({ "jsonrpc": "2.0", "id": 10, "method": "tools/frobnicate", "params": {} })).await;
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32601), "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("`tools/frobnicate`"), "{answer}");
    assert_eq!(thread.bodies.load(Ordering::SeqCst), 0);
}

/// Read a slow report: an attempt needs two seconds.
#[tool(effect = "read", deadline_floor = "2s")]
async fn slow_report() -> Result<u64, Class> {
    Ok(1)
}

/// Issue 23, item 10: a server whose budget per call cannot start one of its tools is refused at
/// start, naming the tool and its floor, instead of refusing every call of it.
#[test]
fn a_server_whose_budget_cannot_start_a_tool_is_refused_at_start() {
    let toolbox = |_| {
        let mut toolbox = Toolbox::new();
        toolbox.add(slow_report_tool()).unwrap();
        toolbox
    };
    for budget in [Duration::ZERO, Duration::from_secs(1), Duration::from_secs(2)] {
        let refused = McpServer::builder(toolbox(())).budget(budget).build().err().expect("refused");
        assert_eq!((refused.tool, refused.floor), ("slow_report", Duration::from_secs(2)));
        let why = refused.to_string();
        assert!(why.contains("slow_report") && why.contains("2.0s"), "{why}");
    }
    assert!(McpServer::builder(toolbox(())).budget(Duration::from_millis(2100)).build().is_ok());
}

/// Issue 23, item 11, over stdio: JSON that is not a JSON-RPC message is answered `-32600` with the id
/// it carries; a line that is not JSON, an unknown notification and a line past the limit are
/// dropped, and the server goes on answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_is_not_json_rpc_is_answered_with_its_id() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let thread = Arc::new(Thread::default());
    let (_client, server) = connect(Arc::clone(&thread)).await;
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_side);
    tokio::spawn(server.serve_lines(server_read, server_write));
    let (read, mut write) = tokio::io::split(client_side);
    let mut lines = tokio::io::BufReader::new(read).lines();
    let mut send = async |line: String| {
        write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    };
    send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } })
    .to_string())
    .await;
    lines.next_line().await.unwrap().expect("an initialize answer");
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string()).await;
    let ping = |id: u32| json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }).to_string();
    for (n, (line, id)) in [
        (r#"{"jsonrpc": "2.0", "id": 7, "params": {}}"#.to_owned(), Some(json!(7))),
        (r#"{"jsonrpc": "2.0", "id": "call-9", "method": 5}"#.to_owned(), Some(json!("call-9"))),
        ("this is not json".to_owned(), None),
        (r#"{"jsonrpc": "2.0", "method": "notifications/unheard_of"}"#.to_owned(), None),
        (format!("\"{}\"", "x".repeat(tool_contract_mcp::MAX_LINE_BYTES + 10)), None),
    ]
    .into_iter()
    .enumerate()
    {
        send(line.clone()).await;
        send(ping(100 + n as u32)).await;
        if let Some(id) = id {
            let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            assert_eq!((&answer["id"], &answer["error"]["code"]), (&id, &json!(-32600)), "{answer}");
        }
        // The ping after it is answered next: nothing else was said about the line.
        let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], json!(100 + n), "{}: {answer}", &line[..line.len().min(60)]);
        assert!(answer.get("result").is_some(), "{answer}");
    }
    assert_eq!(thread.bodies.load(Ordering::SeqCst), 0);
}

/// An order desk whose one tool ends as its argument says.
struct Desk;

impl Desk {
    /// Cancel an order.
    #[tool(effect = "send", probe = Self::cancelled, target = order, max_attempts = 1)]
    async fn cancel_order(&self, order: String) -> Result<u64, Class> {
        match order.as_str() {
            "ok" => Ok(1),
            "retryable" => Err(Class::retryable("503: the desk is busy")),
            "permanent" => Err(Class::permanent("404: no such order")),
            _ => Err(Class::unknown("the connection dropped after the request was sent")),
        }
    }

    #[allow(clippy::ptr_arg)]
    async fn cancelled(&self, order: &String, _key: IntentKey) -> Probe<u64> {
        match order.as_str() {
            "retryable" => Probe::NotLanded,
            _ => Probe::Failed("the desk's log is unavailable".into()),
        }
    }
}

/// `isError` in the JSON-RPC response of a `tools/call`, for each outcome: true when the model should
/// change something or may call again later (`permanent`, `retryable`), false for `ok` and for
/// `unknown`, whose report says the call is in doubt (docs/agent-surface.md says why).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn is_error_is_set_for_retryable_and_permanent_only() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::new(Desk), Desk::cancel_order_tool()).unwrap();
    let server = McpServer::builder(toolbox).budget(Duration::from_secs(5)).build().unwrap();
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_side);
    tokio::spawn(server.serve_lines(server_read, server_write));
    let (read, mut write) = tokio::io::split(client_side);
    let mut lines = tokio::io::BufReader::new(read).lines();
    let mut send = async |line: Value| {
        write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    };
    send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }))
    .await;
    lines.next_line().await.unwrap().expect("an initialize answer");
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    for (id, (outcome, is_error)) in
        [("ok", false), ("retryable", true), ("permanent", true), ("unknown", false)].into_iter().enumerate()
    {
        let arguments = json!({ "order": outcome });
        let params = json!({ "name": "cancel_order", "arguments": arguments });
        send(json!({ "jsonrpc": "2.0", "id": id + 1, "method": "tools/call", "params": params })).await;
        let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], json!(id + 1), "{answer}");
        let result = &answer["result"];
        assert_eq!(result["structuredContent"]["outcome"], outcome, "{answer}");
        assert_eq!(result["isError"], is_error, "{outcome}: {answer}");
    }
}
