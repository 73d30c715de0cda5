//! A `destructive` tool: never retried automatically. After a lost reply the probe tells whether the
//! record is gone, and the call stops with what it found.
//!
//! `cargo run -p tool-contract-examples --example delete_record`
#![warn(clippy::pedantic)]

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use tool_contract::{Applied, Call, Class, IntentKey, Outcome, Probe, Task, tool};

/// The records: id to name.
static RECORDS: LazyLock<Mutex<BTreeMap<u32, String>>> =
    LazyLock::new(|| Mutex::new(BTreeMap::from([(7, "ada".to_owned()), (8, "bob".to_owned())])));

/// Whether record `id` is gone; the value is the id that was deleted.
async fn record_gone(id: &u32, key: IntentKey) -> Probe<u32> {
    // A real probe fetches the record over the network; this one reads memory.
    tokio::task::yield_now().await;
    let _ = key;
    if RECORDS.lock().unwrap().contains_key(id) { Probe::NotLanded } else { Probe::Landed(*id) }
}

/// Delete a customer record.
#[tool(effect = "destructive", probe = record_gone, target = id)]
pub async fn delete_record(
    call: &Call,
    /// The record's id.
    id: u32,
) -> Result<u32, Class> {
    let _ = call;
    match RECORDS.lock().unwrap().remove(&id) {
        // The DELETE went through; the reply did not come back.
        Some(_) => Err(Class::unknown("connection reset after the DELETE was sent")),
        None => Err(Class::permanent(format!("404: no record {id}"))),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("gdpr-erasure-12", "agent:ops", Duration::from_secs(30));
    let report = delete_record(&task, 7).await;
    println!("{}", serde_json::to_string_pretty(&report).expect("a report serialises"));
    assert_eq!((report.outcome, report.effect_applied, report.value), (Outcome::Ok, Applied::Yes, Some(7)));
    assert_eq!(RECORDS.lock().unwrap().len(), 1);
}

/// `cargo test` runs the example too (`test = true` in its `[[example]]`).
#[test]
fn the_example_runs() {
    main();
}
