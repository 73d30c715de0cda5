//! Row 8 of BENCHMARKS.md counted in instructions, which a noisy machine does not change: 2,000 `ok`
//! reads over MCP in process (rmcp's client, an in-memory pipe, the server on the same runtime), one
//! way per run. The ways are the criterion bench's (`benches/per_call.rs`).
//!
//! ```text
//! cargo build --release -p tool-contract-mcp --example row8_instructions
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/row8_instructions rmcp 0
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/row8_instructions rmcp 2000
//! ```
//!
//! Instructions per call of a way: (`I refs` with 2,000 calls - `I refs` with 0) / 2,000, so the
//! connection's set-up is not counted. Ways: `rmcp` (rmcp's `#[tool]` router answering the bare value),
//! `same` (the same router answering a report of the contract's shape built by hand), `ours`
//! (`McpServer` over a toolbox), each through rmcp's client; with `_raw` (`ours_raw`), through a client
//! that writes the request's line and reads the answer's without decoding it: the server side alone.
//! `ROW8_SHOW=1` prints the first answer.

use std::hint::black_box;

#[path = "../benches/common/row8.rs"]
mod row8;
use row8::{Plain, RawClient, SameAnswer, connect, ours, request};

fn main() {
    let mut args = std::env::args().skip(1);
    let way = args.next().unwrap_or_default();
    let calls: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(2_000);
    let show = std::env::var_os("ROW8_SHOW").is_some();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    rt.block_on(async {
        if let Some(server) = way.strip_suffix("_raw") {
            let mut client = match server {
                "rmcp" => RawClient::connect(Plain).await,
                "same" => RawClient::connect(SameAnswer).await,
                "ours" => RawClient::connect(ours()).await,
                _ => panic!("usage: row8_instructions rmcp|same|ours[_raw] [calls]"),
            };
            // One call before counting, so lazily built state is not counted.
            let first = client.call().await;
            if show {
                print!("{first}");
            }
            for _ in 0..calls {
                client.call().await;
            }
            return;
        }
        let client = match way.as_str() {
            "rmcp" => connect(Plain).await,
            "same" => connect(SameAnswer).await,
            "ours" => connect(ours()).await,
            _ => panic!("usage: row8_instructions rmcp|same|ours[_raw] [calls]"),
        };
        let first = client.call_tool(request()).await.expect("a result");
        if show {
            println!("{}", serde_json::to_string(&first).expect("json"));
        }
        for _ in 0..calls {
            black_box(client.call_tool(request()).await.expect("a result"));
        }
    });
}
