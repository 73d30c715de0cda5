use tool_contract::{Call, Class, tool};

/// What the tool does, for the model.
#[tool(effect = "read", target = sku)]
pub async fn read_price(call: &Call, sku: String, again: &Call) -> Result<u64, Class> {
    let _ = (call, sku, again);
    Ok(1299)
}

fn main() {}
