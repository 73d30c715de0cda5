//! A paginated read (`engine::run_pages`): page 4 of 5 keeps failing with a 503, so the read returns
//! the three pages it got, marked incomplete, and says which page is missing: never an empty list, never
//! a partial list presented as complete. A page that failed is retried with the pages after it; the
//! pages already read are not read again.
//!
//! `cargo run -p tool-contract-examples --example list_orders`
#![warn(clippy::pedantic)]

use std::sync::Mutex;
use std::time::Duration;

use tool_contract::effect::EffectKind;
use tool_contract::spec::ToolSpec;
use tool_contract::{Class, Outcome, Task, engine};

/// How many times each page was fetched.
static FETCHED: Mutex<[u32; 5]> = Mutex::new([0; 5]);

const LIST_ORDERS: ToolSpec =
    ToolSpec::new("list_orders", EffectKind::Read).deadline_floor(Duration::from_secs(1));

/// One page of a customer's orders from the order service (in memory here).
async fn fetch_page(page: u32) -> Result<Vec<String>, Class> {
    tokio::task::yield_now().await;
    FETCHED.lock().unwrap()[page as usize - 1] += 1;
    if page == 4 {
        return Err(Class::retryable("503 from /orders?page=4"));
    }
    Ok((1..=2).map(|n| format!("order-{page}{n}")).collect())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("weekly-report", "agent:ops", Duration::from_secs(30));
    let key = task.key(&LIST_ORDERS, &"customer-9", None);
    let report =
        engine::run_pages(&task, &LIST_ORDERS, key, vec![1u32, 2, 3, 4, 5], |_call, page| fetch_page(*page))
            .await;
    println!("{}", serde_json::to_string_pretty(&report).expect("a report serialises"));
    assert_eq!(report.outcome, Outcome::Retryable, "incomplete: not ok");
    assert_eq!(report.value.as_ref().map(Vec::len), Some(6), "what it got: pages 1 to 3");
    assert_eq!(report.items.len(), 5, "one entry per page");
    assert!(report.message.starts_with("list_orders: 3 of 5 pages read"), "{}", report.message);
    assert!(
        report.message.ends_with("4: 503 from /orders?page=4; gave up after 3 attempts"),
        "{}",
        report.message
    );
    let fetched = *FETCHED.lock().unwrap();
    assert_eq!(fetched[..3], [1, 1, 1], "pages read once are not read again");
    assert_eq!(fetched[3], 3, "the failing page, once per attempt");
    assert_eq!(fetched[4], 0, "nothing after a page that failed is read out of order");
}

/// `cargo test` runs the example too (`test = true` in its `[[example]]`).
#[test]
fn the_example_runs() {
    main();
}
