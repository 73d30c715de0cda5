use tool_contract::{Call, Class, tool};

/// What the tool does, for the model.
#[tool(effect = "read", target = sku)]
pub async fn read_price(call: Call, sku: String) -> Result<u64, Class> {
    let _ = (call.attempt(), sku);
    Ok(1299)
}

fn main() {}
