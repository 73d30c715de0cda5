//! The HTTP server under a flood of connections that send nothing, in a process of its own with a low
//! file-descriptor limit: accepting fails (no descriptor left), the flood's connections are closed by
//! the header timeout, and the server answers again. It used to stop at the first failed accept.

use std::time::Duration;

use serde_json::json;
use tool_contract::{Class, Toolbox, tool};
use tool_contract_mcp::McpServer;
use tool_contract_mcp::http::HttpOptions;

/// Say hello.
#[tool(effect = "read")]
async fn hello() -> Result<String, Class> {
    Ok("hello".to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_that_exhausts_file_descriptors_does_not_stop_the_server() {
    // The limit of this test's process only (each test file is a process of its own).
    let limit = libc::rlimit { rlim_cur: 128, rlim_max: 128 };
    // SAFETY: setrlimit reads the struct it is given and nothing else.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);

    let mut toolbox = Toolbox::new();
    toolbox.add(hello_tool()).unwrap();
    let options = HttpOptions::default()
        .addr(([127, 0, 0, 1], 0).into())
        .header_read_timeout(Duration::from_millis(300));
    let server = McpServer::builder(toolbox).build().unwrap().bind_http(options).await.expect("bound");
    let addr = server.local_addr().unwrap();
    let serving = tokio::spawn(server.serve());

    // Connect until no descriptor is left, in this process where the server also accepts.
    let mut flood = Vec::new();
    while flood.len() < 1000 {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(stream) => flood.push(stream),
            Err(_) => break,
        }
    }
    assert!(flood.len() < 1000, "the limit was never reached");
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(flood);

    // The server answers again once the flood's connections are gone.
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } });
    let answered = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let response = reqwest::Client::new()
                .post(format!("http://{addr}/mcp"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.to_string())
                .send()
                .await;
            if let Ok(response) = response
                && response.status().is_success()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(answered.is_ok(), "the server no longer answers after the flood");
    assert!(!serving.is_finished(), "the server stopped");
}
