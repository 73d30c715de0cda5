//! `bulk = rows` names the `Vec` of items: each attempt gets the items still to do and returns one
//! `Item` per item; the probe gets the other arguments by reference, the items whose fate is unknown in
//! the `bulk` parameter's place, and the key. The wrapper returns a `Report<()>` whose `items` say what
//! happened to each.

use std::sync::Mutex;
use std::time::Duration;

use tool_contract::{Applied, Call, Class, IntentKey, Item, Outcome, Task, tool};

static SHEET: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Which of `rows` are in the sheet.
pub async fn rows_written(sheet: &String, rows: Vec<String>, key: IntentKey) -> Vec<Item> {
    let _ = (sheet, key);
    let written = SHEET.lock().unwrap();
    rows.into_iter()
        .map(|row| if written.contains(&row) { Item::ok(row) } else { Item::retryable(row, "not in the sheet") })
        .collect()
}

/// Append rows to a sheet; a row without an `@` is refused, and the first batch loses its reply.
#[tool(effect = "create", probe = rows_written, target = sheet, bulk = rows)]
pub async fn write_rows(call: &Call, sheet: String, rows: Vec<String>) -> Result<Vec<Item>, Class> {
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
    let task = Task::new("import-1", "agent:ops", Duration::from_secs(30));
    let rows = vec!["ada@example.com".to_owned(), "no-email".to_owned(), "bob@example.com".to_owned()];
    let report = write_rows(&task, "sheet-1".to_owned(), rows).await;
    assert_eq!(report.items.len(), 3, "{}", report.message);
    assert_eq!(report.effect_applied, Applied::Partial, "{}", report.message);
    let landed = report.items.iter().filter(|item| item.outcome == Outcome::Ok).count();
    assert_eq!(landed, 2, "{:?}", report.items);
    // Each landed row was written once: the probe found them, so they were not sent again.
    assert_eq!(SHEET.lock().unwrap().len(), 2);
}
