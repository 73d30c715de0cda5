use tool_contract::{Call, Class, Item, tool};

/// What the tool does, for the model.
#[tool(effect = "create", dedupe = "receiver", target = sheet, bulk = rows)]
pub async fn write_rows(call: &Call, sheet: String, rows: &[String]) -> Result<Vec<Item>, Class> {
    let _ = (call, sheet);
    Ok(rows.iter().map(Item::ok).collect())
}

fn main() {}
