//! Row 8 of BENCHMARKS.md: an `ok` read called over MCP in process (an in-memory pipe, the server on
//! the same runtime), through this crate's server against the same tool behind rmcp's own `#[tool]`
//! router.
//!
//! `cargo bench -p tool-contract-mcp --bench per_call`
//!
//! All run the same body and answer with structured content and its text copy:
//! - `rmcp_tool_router`: rmcp's `#[tool]` answering the bare value;
//! - `rmcp_tool_router_same_answer`: the same, answering a report of the contract's shape (outcome,
//!   effect, key, attempt id, budget, message, value) as an author would build it by hand, so both sides
//!   move the same bytes: what the server machinery costs, apart from the size of the answer;
//! - `tool_contract_mcp`: `McpServer` over a toolbox.
//!
//! Two groups: `row8_server_side` (the handler's side: a client writes the request's JSON-RPC line and
//! reads the answer's line without decoding it) and `row8_round_trip` (rmcp's own client, which also
//! decodes the answer: its cost grows with the answer's size, whichever server sent it).
//!
//! Under `cargo test --benches` each benchmark runs once, as a check.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::service::{RoleClient, RunningService};

#[path = "common/row8.rs"]
mod row8;
use row8::{Plain, RawClient, SameAnswer, connect, ours, request};

async fn calls(client: &RunningService<RoleClient, ()>, iters: u64) -> Duration {
    let started = Instant::now();
    for _ in 0..iters {
        let result = client.call_tool(request()).await.expect("a result");
        debug_assert_eq!(result.is_error, Some(false));
        black_box(result);
    }
    started.elapsed()
}

async fn raw_calls(client: &mut RawClient, iters: u64) -> Duration {
    let started = Instant::now();
    for _ in 0..iters {
        black_box(client.call().await);
    }
    started.elapsed()
}

fn row8(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let (mut raw_ours, mut raw_theirs, mut raw_same) = rt.block_on(async {
        (
            RawClient::connect(ours()).await,
            RawClient::connect(Plain).await,
            RawClient::connect(SameAnswer).await,
        )
    });
    rt.block_on(async {
        assert!(raw_ours.call().await.contains(r#"\"outcome\":\"ok\""#), "ours answers ok");
        assert!(raw_theirs.call().await.contains(r#""structuredContent":{"value":1299}"#), "rmcp's answers");
    });
    let mut group = c.benchmark_group("row8_server_side");
    group.bench_function("rmcp_tool_router", |b| {
        b.iter_custom(|iters| rt.block_on(raw_calls(&mut raw_theirs, iters)))
    });
    group.bench_function("rmcp_tool_router_same_answer", |b| {
        b.iter_custom(|iters| rt.block_on(raw_calls(&mut raw_same, iters)))
    });
    group.bench_function("tool_contract_mcp", |b| {
        b.iter_custom(|iters| rt.block_on(raw_calls(&mut raw_ours, iters)))
    });
    group.finish();

    let (ours, theirs, same) =
        rt.block_on(async { (connect(ours()).await, connect(Plain).await, connect(SameAnswer).await) });
    rt.block_on(async {
        let ours = ours.call_tool(request()).await.expect("ours answers");
        let theirs = theirs.call_tool(request()).await.expect("rmcp's answers");
        assert_eq!(ours.structured_content.unwrap()["value"], theirs.structured_content.unwrap()["value"]);
    });
    let mut group = c.benchmark_group("row8_round_trip");
    group.bench_function("rmcp_tool_router", |b| b.to_async(&rt).iter_custom(|iters| calls(&theirs, iters)));
    group.bench_function("rmcp_tool_router_same_answer", |b| {
        b.to_async(&rt).iter_custom(|iters| calls(&same, iters))
    });
    group.bench_function("tool_contract_mcp", |b| b.to_async(&rt).iter_custom(|iters| calls(&ours, iters)));
    group.finish();
}

criterion_group!(benches, row8);
criterion_main!(benches);
