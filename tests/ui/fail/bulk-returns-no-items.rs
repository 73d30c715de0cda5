use tool_contract::{Call, Class, tool};

#[tool(effect = "create", dedupe = "receiver", target = sheet, bulk = rows)]
pub async fn write_rows(call: &Call, sheet: String, rows: Vec<String>) -> Result<usize, Class> {
    let _ = (call, sheet);
    Ok(rows.len())
}

fn main() {}
