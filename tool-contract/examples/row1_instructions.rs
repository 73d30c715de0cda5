//! Row 1 of BENCHMARKS.md counted in instructions, which a noisy machine does not change: 20,000 `ok`
//! reads through the `#[tool]` wrapper, one way per run.
//!
//! ```text
//! cargo build --release -p tool-contract --example row1_instructions
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/row1_instructions none
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/row1_instructions memory
//! ```
//!
//! Instructions per call: (`I refs` of a way - `I refs` of `none`) / 20,000. Ways: `by_hand` (the
//! bench's baseline: sha2, backon, `tokio::time::timeout`, serde_json), `no_log` (the wrapper on a task
//! without an attempt log) and `memory` (with the in-memory log), as in the criterion bench
//! (`benches/per_call.rs`). A second argument sets the number of calls (`perf stat` wants millions).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use tool_contract::journal::CompactMemoryJournal;
use tool_contract::{Class, MemoryJournal, Task, tool};

#[path = "../benches/common/by_hand.rs"]
#[allow(dead_code)]
mod by_hand;

/// Read a price.
#[tool(effect = "read", target = sku)]
async fn read_price(sku: &str) -> Result<u64, Class> {
    Ok(by_hand::price(sku))
}

fn main() {
    let way = std::env::args().nth(1).unwrap_or_default();
    let calls: u64 = std::env::args().nth(2).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a runtime");
    let task = Task::new("ord-7741", "agent:pricing", Duration::from_secs(3600));
    let task = match way.as_str() {
        // The compact in-memory log (opt-in): row 1's figure.
        "memory" => task.journal(Arc::new(CompactMemoryJournal::new())),
        // The default in-memory log, plain.
        "plain" => task.journal(Arc::new(MemoryJournal::new())),
        _ => task,
    };
    rt.block_on(async {
        if way == "none" {
            return;
        }
        for _ in 0..calls {
            if way == "by_hand" {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(3600);
                let (id, actor) = (black_box("ord-7741"), black_box("agent:pricing"));
                black_box(by_hand::read_price_by_hand(id, actor, black_box("sku-1"), deadline).await);
            } else {
                black_box(read_price(black_box(&task), black_box("sku-1")).await);
            }
        }
    });
}
