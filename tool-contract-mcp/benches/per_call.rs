//! Row 8 of BENCHMARKS.md: an `ok` read called over MCP in process (rmcp's client, an in-memory pipe,
//! the server on the same runtime), through this crate's server against the same tool behind rmcp's
//! own `#[tool]` router.
//!
//! `cargo bench -p tool-contract-mcp --bench per_call`
//!
//! All run the same body and answer with structured content (and rmcp's text copy of it):
//! - `rmcp_tool_router`: rmcp's `#[tool]` answering the bare value;
//! - `rmcp_tool_router_same_answer`: the same, answering a report of the contract's shape (outcome,
//!   effect, key, attempt id, budget, message, value) as an author would build it by hand, so both sides
//!   move the same bytes: what the server machinery costs, apart from the size of the answer;
//! - `tool_contract_mcp`: `McpServer` over a toolbox.
//!
//! Under `cargo test --benches` each benchmark runs once, as a check.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ErrorData, ServiceExt, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tool_contract::{Class, Toolbox};
use tool_contract_mcp::McpServer;

fn price(sku: &str) -> u64 {
    black_box(sku.len() as u64) + 1294
}

/// Read the price of one item, in cents.
#[tool_contract::tool(effect = "read", target = sku)]
async fn read_price(
    /// The stock-keeping unit.
    sku: String,
) -> Result<u64, Class> {
    Ok(price(&sku))
}

/// The arguments of rmcp's version.
#[derive(Deserialize, schemars::JsonSchema)]
struct PriceArgs {
    /// The stock-keeping unit.
    sku: String,
}

/// The same tool behind rmcp's router.
#[derive(Clone)]
struct Plain;

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

/// rmcp's router answering what the contract answers, built by hand.
#[derive(Clone)]
struct SameAnswer;

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
        Ok(CallToolResult::structured(report))
    }
}

async fn connect<S: rmcp::ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_side).await.expect("the client connects")
}

fn request() -> CallToolRequestParams {
    let arguments: Map<String, Value> = Map::from_iter([("sku".to_owned(), json!("sku-1"))]);
    CallToolRequestParams::new("read_price").with_arguments(arguments)
}

async fn calls(client: &RunningService<RoleClient, ()>, iters: u64) -> Duration {
    let started = Instant::now();
    for _ in 0..iters {
        let result = client.call_tool(request()).await.expect("a result");
        debug_assert_eq!(result.is_error, Some(false));
        black_box(result);
    }
    started.elapsed()
}

fn row8(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let (ours, theirs, same) = rt.block_on(async {
        let mut toolbox = Toolbox::new();
        toolbox.add(read_price_tool()).expect("one tool");
        (connect(McpServer::builder(toolbox).build()).await, connect(Plain).await, connect(SameAnswer).await)
    });
    rt.block_on(async {
        let ours = ours.call_tool(request()).await.expect("ours answers");
        let theirs = theirs.call_tool(request()).await.expect("rmcp's answers");
        assert_eq!(ours.structured_content.unwrap()["value"], theirs.structured_content.unwrap()["value"]);
    });
    let mut group = c.benchmark_group("row8_read_over_mcp_in_process");
    group.bench_function("rmcp_tool_router", |b| b.to_async(&rt).iter_custom(|iters| calls(&theirs, iters)));
    group.bench_function("rmcp_tool_router_same_answer", |b| {
        b.to_async(&rt).iter_custom(|iters| calls(&same, iters))
    });
    group.bench_function("tool_contract_mcp", |b| b.to_async(&rt).iter_custom(|iters| calls(&ours, iters)));
    group.finish();
}

criterion_group!(benches, row8);
criterion_main!(benches);
