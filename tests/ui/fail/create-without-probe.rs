use tool_contract::{Call, Class, tool};

/// What the tool does, for the model.
#[tool(effect = "create")]
pub async fn create_order(call: &Call, sku: String) -> Result<u64, Class> {
    let _ = (call, sku);
    Ok(1)
}

fn main() {}
