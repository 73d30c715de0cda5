use tool_contract::{Call, Class, tool};

/// What the tool does, for the model.
#[tool(effect = "create", dedupe = "receiver", target = sheet, bulk = rows)]
pub async fn write_rows(call: &Call, sheet: String, rows: Vec<String>) -> Result<usize, Class> {
    let _ = (call, sheet);
    Ok(rows.len())
}

fn main() {}
