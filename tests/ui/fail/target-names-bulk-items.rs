use tool_contract::{Call, Class, Item, tool};

/// What the tool does, for the model.
#[tool(effect = "create", dedupe = "receiver", target = rows, bulk = rows)]
pub async fn write_rows(call: &Call, sheet: String, rows: Vec<String>) -> Result<Vec<Item>, Class> {
    let _ = (call, sheet);
    Ok(rows.into_iter().map(Item::ok).collect())
}

fn main() {}
