//! The MCP server over HTTP, asked by plain HTTP requests: a foreign `Origin`, a missing or wrong bearer
//! token and a wrong path are refused with nothing run; the same `tools/call` with the token runs.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};
use tool_contract::{Class, Toolbox, tool};
use tool_contract_mcp::McpServer;
use tool_contract_mcp::http::HttpOptions;

static RUNS: AtomicU32 = AtomicU32::new(0);

/// Count a run.
#[tool(effect = "read")]
async fn count_run() -> Result<u32, Class> {
    Ok(RUNS.fetch_add(1, Ordering::SeqCst) + 1)
}

async fn start(options: HttpOptions) -> SocketAddr {
    let mut toolbox = Toolbox::new();
    toolbox.add(count_run_tool()).unwrap();
    let server = McpServer::builder(toolbox).build().unwrap().bind_http(options).await.expect("bound");
    let addr = server.local_addr().unwrap();
    tokio::spawn(server.serve());
    addr
}

fn rpc(id: u32, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn initialize() -> Value {
    rpc(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "test", "version": "0" }
        }),
    )
}

struct Post<'a> {
    addr: SocketAddr,
    path: &'a str,
    origin: Option<&'a str>,
    token: Option<&'a str>,
    session: Option<String>,
}

impl Post<'_> {
    async fn send(&self, body: &Value) -> reqwest::Response {
        let mut request = reqwest::Client::new()
            .post(format!("http://{}{}", self.addr, self.path))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(origin) = self.origin {
            request = request.header("origin", origin);
        }
        if let Some(token) = self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        request.send().await.expect("the server answers")
    }
}

/// The JSON-RPC messages in a reply, plain JSON or server-sent events.
async fn messages(response: reqwest::Response) -> Vec<Value> {
    let text = response.text().await.unwrap();
    if let Ok(value) = serde_json::from_str(&text) {
        return vec![value];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_requests_run_nothing_and_the_right_one_runs() {
    let addr = start(HttpOptions::default().addr(([127, 0, 0, 1], 0).into()).bearer_token("s3cret")).await;
    let call = rpc(2, "tools/call", json!({ "name": "count_run", "arguments": {} }));

    let good = Post { addr, path: "/mcp", origin: None, token: Some("s3cret"), session: None };
    let foreign = Post { origin: Some("http://evil.example:8000"), ..good.clone_without_session() };
    let no_token = Post { token: None, ..good.clone_without_session() };
    let wrong_token = Post { token: Some("s3cre7"), ..good.clone_without_session() };
    let wrong_path = Post { path: "/", ..good.clone_without_session() };
    for (post, status) in [(&foreign, 403), (&no_token, 401), (&wrong_token, 401), (&wrong_path, 404)] {
        for body in [&initialize(), &call] {
            assert_eq!(post.send(body).await.status().as_u16(), status);
        }
    }
    assert_eq!(no_token.send(&call).await.headers()["www-authenticate"], "Bearer");
    assert_eq!(RUNS.load(Ordering::SeqCst), 0, "nothing ran for a refused request");

    // The same call with the token, from a page on the server's own origin, runs.
    let local =
        Post { origin: Some(&format!("http://127.0.0.1:{}", addr.port())), ..good.clone_without_session() };
    let response = local.send(&initialize()).await;
    assert_eq!(response.status().as_u16(), 200);
    let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    let session_post = Post { session, ..local.clone_without_session() };
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert!(session_post.send(&initialized).await.status().is_success());
    assert_eq!(RUNS.load(Ordering::SeqCst), 0, "nothing ran before the allowed call");
    let replies = messages(session_post.send(&call).await).await;
    let reply = replies.iter().find(|m| m["id"] == 2).unwrap_or_else(|| panic!("{replies:?}"));
    assert_eq!(reply["result"]["structuredContent"]["outcome"], "ok", "{reply}");
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
}

impl<'a> Post<'a> {
    fn clone_without_session(&self) -> Post<'a> {
        Post { addr: self.addr, path: self.path, origin: self.origin, token: self.token, session: None }
    }
}

#[tokio::test]
async fn a_public_address_needs_a_token() {
    let toolbox = Toolbox::new();
    let server = McpServer::builder(toolbox).build().unwrap();
    let refused = server.bind_http(HttpOptions::default().addr(([0, 0, 0, 0], 0).into())).await;
    assert!(refused.err().is_some_and(|e| e.to_string().contains("without a bearer token")));
    for empty in ["", " ", "two words"] {
        let server = McpServer::builder(Toolbox::new()).build().unwrap();
        let options = HttpOptions::default().addr(([0, 0, 0, 0], 0).into()).bearer_token(empty);
        let refused = server.bind_http(options).await;
        assert!(refused.err().is_some_and(|e| e.to_string().contains("one word")), "{empty:?}");
    }
}

/// An allowed origin is compared as a browser sends it (lowercase, no trailing `/`), whatever case or
/// slash the operator wrote; what is not an origin is refused at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_origins_are_compared_as_browsers_send_them() {
    let options = HttpOptions::default()
        .addr(([127, 0, 0, 1], 0).into())
        .allow_origin("https://App.Example.com/")
        .allow_origin("HTTPS://other.example.com:8443");
    let addr = start(options).await;
    let post = |origin| Post { addr, path: "/mcp", origin: Some(origin), token: None, session: None };
    for (origin, status) in [
        ("https://app.example.com", 200),
        ("https://other.example.com:8443", 200),
        ("https://other.example.com", 403),
        ("https://app.example.com.evil.example", 403),
    ] {
        assert_eq!(post(origin).send(&initialize()).await.status().as_u16(), status, "{origin}");
    }
    for wrong in ["app.example.com", "https://app.example.com/path", "https://", "ftp://app.example.com"] {
        let server = McpServer::builder(Toolbox::new()).build().unwrap();
        let options = HttpOptions::default().addr(([127, 0, 0, 1], 0).into()).allow_origin(wrong);
        let refused = server.bind_http(options).await;
        assert!(refused.err().is_some_and(|e| e.to_string().contains("an origin is")), "{wrong}");
    }
}

/// A connection that sends part of a request's headers and then nothing is closed when the header
/// timeout passes, and the server goes on answering others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_stops_mid_headers_is_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let options = HttpOptions::default()
        .addr(([127, 0, 0, 1], 0).into())
        .header_read_timeout(std::time::Duration::from_millis(200));
    let addr = start(options).await;
    let mut stalled = tokio::net::TcpStream::connect(addr).await.unwrap();
    stalled.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    let mut rest = Vec::new();
    let closed =
        tokio::time::timeout(std::time::Duration::from_secs(10), stalled.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the stalled connection is still open after 10 s");
    let post = Post { addr, path: "/mcp", origin: None, token: None, session: None };
    assert_eq!(post.send(&initialize()).await.status().as_u16(), 200);
}

/// Issue 23, item 11: a body that is not a JSON-RPC message is answered as the reference SDKs answer
/// it: 400 with a JSON-RPC error, -32700 when it is not JSON, -32600 when it is JSON of the wrong
/// shape, carrying the request's id when it can be read. Nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_json_rpc_gets_a_json_rpc_error() {
    let addr = start(HttpOptions::default().addr(SocketAddr::from(([127, 0, 0, 1], 0)))).await;
    let before = RUNS.load(Ordering::SeqCst);
    let post = |body: &'static str| {
        reqwest::Client::new()
            .post(format!("http://{addr}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };
    for (body, code, id) in [
        ("this is not json", -32700, Value::Null),
        ("{\"jsonrpc\": \"2.0\", \"id\": 7, \"params\": {}}", -32600, json!(7)),
        ("{\"jsonrpc\": \"2.0\", \"id\": \"call-9\", \"method\": 5}", -32600, json!("call-9")),
        ("[1, 2, 3]", -32600, Value::Null),
    ] {
        let response = post(body).await.unwrap();
        assert_eq!(response.status(), 400, "{body}");
        assert_eq!(response.headers()["content-type"], "application/json", "{body}");
        let answer: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!((answer["jsonrpc"].as_str(), &answer["id"]), (Some("2.0"), &id), "{body}: {answer}");
        assert_eq!(answer["error"]["code"], json!(code), "{body}: {answer}");
    }
    // A real request still goes through.
    let response = post(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(RUNS.load(Ordering::SeqCst), before);
}
