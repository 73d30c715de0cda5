//! A bulk tool (`bulk = rows`): one report with one item per row. A row without an email is refused,
//! the first batch's reply is lost, and the probe finds which rows landed so none is written twice.
//!
//! `cargo run -p tool-contract-examples --example write_rows`
#![warn(clippy::pedantic)]

use std::sync::Mutex;
use std::time::Duration;

use tool_contract::{Applied, Call, Class, IntentKey, Item, Outcome, Task, tool};

/// The sheet: the rows written, in order.
static SHEET: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Which of `rows` are in the sheet.
async fn rows_written(sheet: &String, rows: Vec<String>, key: IntentKey) -> Vec<Item> {
    // A real probe reads the sheet over the network; this one reads memory.
    tokio::task::yield_now().await;
    let _ = (sheet, key);
    let written = SHEET.lock().unwrap();
    rows.into_iter()
        .map(
            |row| {
                if written.contains(&row) { Item::ok(row) } else { Item::retryable(row, "not in the sheet") }
            },
        )
        .collect()
}

/// Append contacts to a sheet, one row each.
#[tool(effect = "create", probe = rows_written, target = sheet, bulk = rows)]
pub async fn write_rows(
    call: &Call,
    /// The sheet to append to.
    sheet: String,
    /// The rows, one contact's email address each.
    rows: Vec<String>,
) -> Result<Vec<Item>, Class> {
    let _ = sheet;
    let mut written = SHEET.lock().unwrap();
    let items = rows
        .into_iter()
        .map(|row| {
            if row.contains('@') {
                written.push(row.clone());
                Item::ok(row)
            } else {
                Item::permanent(row, "no email address")
            }
        })
        .collect();
    if call.attempt() == 1 {
        return Err(Class::unknown("connection dropped after the batch was sent"));
    }
    Ok(items)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("import-contacts", "agent:ops", Duration::from_secs(30));
    let rows = ["ada@example.com", "no email here", "bob@example.com"].map(str::to_owned).to_vec();
    let report = write_rows(&task, "sheet-1".to_owned(), rows).await;
    println!("{}", serde_json::to_string_pretty(&report).expect("a report serialises"));
    assert_eq!(report.items.len(), 3);
    assert_eq!(report.effect_applied, Applied::Partial);
    assert_eq!(report.items.iter().filter(|item| item.outcome == Outcome::Ok).count(), 2);
    assert_eq!(SHEET.lock().unwrap().len(), 2, "each row written once");
}

/// `cargo test` runs the example too (`test = true` in its `[[example]]`).
#[test]
fn the_example_runs() {
    main();
}
