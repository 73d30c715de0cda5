use tool_contract::{Call, tool};

/// What the tool does, for the model.
#[tool(effect = "read")]
pub async fn read_price(call: &Call, sku: String) -> u64 {
    let _ = (call, sku);
    1299
}

fn main() {}
