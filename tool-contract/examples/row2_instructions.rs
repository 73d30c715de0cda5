//! Row 2 of BENCHMARKS.md counted in instructions: 20,000 `ok` reads through the `#[tool]` wrapper with
//! the file log (a read's records written unsynced), one way per run.
//!
//! ```text
//! cargo build --release -p tool-contract --example row2_instructions
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/row2_instructions none
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/row2_instructions file
//! ```
//!
//! Instructions per call: (`I refs` of `file` - `I refs` of `none`) / 20,000. Both ways open a fresh log
//! in the system's temporary directory; `none` makes no call. A second argument sets the number of calls.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use tool_contract::{Class, FileJournal, Task, tool};

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
    let path = std::env::temp_dir().join(format!("tc-row2-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a runtime");
    let journal = rt.block_on(async { Arc::new(FileJournal::open(&path).expect("a fresh log")) });
    let task = Task::new("ord-7741", "agent:pricing", Duration::from_secs(3600)).journal(journal);
    rt.block_on(async {
        if way == "none" {
            return;
        }
        for _ in 0..calls {
            black_box(read_price(black_box(&task), black_box("sku-1")).await);
        }
    });
    drop(task);
    let _ = std::fs::remove_file(&path);
}
