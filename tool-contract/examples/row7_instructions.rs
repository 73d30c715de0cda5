//! Row 7 of BENCHMARKS.md counted in instructions, which a noisy machine does not change: 20,000 calls
//! of an `ok` read from a model's JSON arguments to the report's JSON text, one way per run.
//!
//! ```text
//! cargo build --release -p tool-contract --example row7_instructions
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/row7_instructions none
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/row7_instructions direct
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/row7_instructions toolbox
//! ```
//!
//! Instructions per call: (`I refs` of a way - `I refs` of `none`) / 20,000. The two ways are the
//! criterion bench's (`benches/toolbox.rs`).

use std::hint::black_box;
use std::time::Duration;

use serde_json::{Value, json};
use tool_contract::{Class, Task, Toolbox, tool};

/// Read the price of one item, in cents.
#[tool(effect = "read", target = sku)]
async fn read_price(
    /// The stock-keeping unit.
    sku: String,
) -> Result<u64, Class> {
    Ok(black_box(sku.len() as u64) + 4406)
}

async fn direct(task: &Task, arguments: Value) -> String {
    let Value::Object(mut fields) = arguments else { return String::new() };
    let sku: String = match fields.remove("sku").map(serde_json::from_value) {
        Some(Ok(sku)) => sku,
        _ => return String::new(),
    };
    serde_json::to_string(&read_price(task, sku).await).unwrap_or_default()
}

async fn through(toolbox: &Toolbox, task: &Task, arguments: Value) -> String {
    match toolbox.call(task, "read_price", arguments).await {
        Ok(report) => serde_json::to_string(&report).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

fn main() {
    let way = std::env::args().nth(1).unwrap_or_default();
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a runtime");
    let task = Task::new("ord-7741", "agent:pricing", Duration::from_secs(3600));
    let mut toolbox = Toolbox::new();
    toolbox.add(read_price_tool()).expect("one tool");
    rt.block_on(async {
        for _ in 0..20_000 {
            match way.as_str() {
                "direct" => black_box(direct(&task, json!({ "sku": "sku-1" })).await),
                "toolbox" => black_box(through(&toolbox, &task, json!({ "sku": "sku-1" })).await),
                _ => String::new(),
            };
        }
    });
}
