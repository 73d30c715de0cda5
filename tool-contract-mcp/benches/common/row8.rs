//! Row 8's tools and clients, shared by the bench (`benches/per_call.rs`) and the instruction count
//! (`examples/row8_instructions.rs`): the same read behind this crate's server and behind rmcp's own
//! `#[tool]` router (answering its bare value, or a report of the contract's shape built by hand).

use std::hint::black_box;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ErrorData, ServiceExt, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tool_contract::{Class, Toolbox};
use tool_contract_mcp::McpServer;

pub fn price(sku: &str) -> u64 {
    black_box(sku.len() as u64) + 1294
}

/// Read the price of one item, in cents.
#[tool_contract::tool(effect = "read", target = sku)]
pub async fn read_price(
    /// The stock-keeping unit.
    sku: String,
) -> Result<u64, Class> {
    Ok(price(&sku))
}

/// The arguments of rmcp's version.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct PriceArgs {
    /// The stock-keeping unit.
    pub sku: String,
}

/// The same tool behind rmcp's router.
#[derive(Clone)]
pub struct Plain;

#[tool_router(server_handler)]
impl Plain {
    #[tool(name = "read_price", description = "Read the price of one item, in cents.")]
    async fn read_price(
        &self,
        Parameters(PriceArgs { sku }): Parameters<PriceArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::structured(json!({ "value": price(&sku) })))
    }
}

/// rmcp's router answering what the contract answers, built by hand: the report as structured
/// content and text, key and attempt id in `_meta`.
#[derive(Clone)]
pub struct SameAnswer;

#[tool_router(server_handler)]
impl SameAnswer {
    #[tool(name = "read_price", description = "Read the price of one item, in cents.")]
    async fn read_price(
        &self,
        Parameters(PriceArgs { sku }): Parameters<PriceArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let report = json!({
            "outcome": "ok",
            "effect_applied": "no",
            "attempt_id": "mcp-5e0d3b2a9c4f7e61-3c9d0a1b-a1",
            "idempotency_key": "3c9d0a1b2e3f40516273849506a7b8c9",
            "retry_after_s": null,
            "deadline_left_s": 59,
            "message": "read_price done on attempt 1",
            "value": price(&sku),
            "items": [],
        });
        let meta = Map::from_iter([
            ("dev.tool-contract/attempt_id".to_owned(), json!("mcp-5e0d3b2a9c4f7e61-3c9d0a1b-a1")),
            ("dev.tool-contract/intent_key".to_owned(), json!("3c9d0a1b2e3f40516273849506a7b8c9")),
        ]);
        Ok(CallToolResult::structured(report).with_meta(Some(rmcp::model::MetaObject(meta))))
    }
}

pub async fn connect<S: rmcp::ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_side).await.expect("the client connects")
}

pub fn request() -> CallToolRequestParams {
    let arguments: Map<String, Value> = Map::from_iter([("sku".to_owned(), json!("sku-1"))]);
    CallToolRequestParams::new("read_price").with_arguments(arguments)
}

/// The server side alone: a client that writes JSON-RPC lines to the pipe and reads the answer's line
/// back without decoding it (what a client makes of an answer is the client's cost, whichever server
/// answered).
pub struct RawClient {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    line: String,
    id: u64,
}

impl RawClient {
    /// Serve `server` on an in-memory pipe and go through the `initialize` handshake.
    pub async fn connect<S: rmcp::ServerHandler>(server: S) -> RawClient {
        use tokio::io::AsyncBufReadExt;
        let (server_side, client_side) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_side).await {
                let _ = running.waiting().await;
            }
        });
        let (read, write) = tokio::io::split(client_side);
        let mut client =
            RawClient { write, read: tokio::io::BufReader::new(read), line: String::new(), id: 0 };
        client
            .send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#)
            .await;
        client.read.read_line(&mut client.line).await.expect("an initialize answer");
        client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        client
    }

    async fn send(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.write.write_all(line.as_bytes()).await.expect("written");
        self.write.write_all(b"\n").await.expect("written");
    }

    /// One `tools/call` of the read: the answer's line, as it came.
    pub async fn call(&mut self) -> &str {
        use tokio::io::AsyncBufReadExt;
        self.id += 1;
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"read_price","arguments":{{"sku":"sku-1"}}}}}}"#,
            self.id
        );
        self.send(&call).await;
        self.line.clear();
        self.read.read_line(&mut self.line).await.expect("an answer");
        black_box(&self.line)
    }
}

/// This crate's server over a toolbox holding the read, its attempt log the compact in-memory one
/// (opt-in; the default, `MemoryJournal`, keeps every record as a `Record`): the figure row 8 has
/// been measured with.
pub fn ours() -> McpServer {
    let mut toolbox = Toolbox::new();
    toolbox.add(read_price_tool()).expect("one tool");
    McpServer::builder(toolbox)
        .journal(std::sync::Arc::new(tool_contract::journal::CompactMemoryJournal::new()))
        .build()
        .expect("the default budget holds the tools")
}
