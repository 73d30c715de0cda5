use tool_contract::{Call, Class, tool};

/// What the tool does, for the model.
#[tool(effect = "create", dedupe = "receiver", key_lifetime = "0s")]
pub async fn create_order(call: &Call, cart: String) -> Result<u64, Class> {
    let _ = (call, cart);
    Ok(1)
}

fn main() {}
