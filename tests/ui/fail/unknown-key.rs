use tool_contract::{Call, Class, tool};

// `priority` is no key of `#[tool]`, nor near one: the message lists the keys.
/// What the tool does, for the model.
#[tool(effect = "read", priority = "high")]
pub async fn read_price(call: &Call, sku: String) -> Result<u64, Class> {
    let _ = (call, sku);
    Ok(1)
}

fn main() {}
