use tool_contract::{Call, Class, IntentKey, Probe, tool};

pub async fn order_exists(cart: &String, key: IntentKey) -> Probe<u64> {
    let _ = (cart, key);
    Probe::NotLanded
}

/// What the tool does, for the model.
#[tool(effect = "create", probe = order_exists, target = cart, key_lifetime = "24h")]
pub async fn create_order(call: &Call, cart: String) -> Result<u64, Class> {
    let _ = (call, cart);
    Ok(1)
}

fn main() {}
