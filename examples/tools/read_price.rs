//! A `read` tool: no probe, retried with backoff while the budget lasts.
//!
//! `cargo run -p tool-contract-examples --example read_price`
#![warn(clippy::pedantic)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tool_contract::{Applied, Call, Class, Outcome, Task, tool};

/// A catalogue that answers `503` to its first request.
static REQUESTS: AtomicU32 = AtomicU32::new(0);

async fn catalogue_price(sku: &str) -> Result<u64, Class> {
    // A real catalogue answers over the network; this one answers from memory.
    tokio::task::yield_now().await;
    if REQUESTS.fetch_add(1, Ordering::SeqCst) == 0 {
        return Err(Class::retryable("503 service unavailable; nothing was applied"));
    }
    match sku {
        "sku-1" => Ok(1299),
        _ => Err(Class::permanent(format!("404: no SKU `{sku}` in the catalogue"))),
    }
}

/// Look up the price of a SKU, in cents.
#[tool(effect = "read", target = sku, deadline_floor = "250ms")]
pub async fn read_price(
    call: &Call,
    /// The stock-keeping unit, like `sku-1`.
    sku: String,
) -> Result<u64, Class> {
    eprintln!("attempt {} with {:?} left", call.attempt(), call.budget_left());
    catalogue_price(&sku).await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("ord-7741", "agent:sales", Duration::from_secs(10));
    let report = read_price(&task, "sku-1".to_owned()).await;
    println!("{}", serde_json::to_string_pretty(&report).expect("a report serialises"));
    assert_eq!((report.outcome, report.effect_applied, report.value), (Outcome::Ok, Applied::No, Some(1299)));
    assert_eq!(REQUESTS.load(Ordering::SeqCst), 2);
}

/// `cargo test` runs the example too (`test = true` in its `[[example]]`).
#[test]
fn the_example_runs() {
    main();
}
