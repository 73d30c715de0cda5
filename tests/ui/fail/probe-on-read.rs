use tool_contract::{Call, Class, IntentKey, Probe, tool};

pub async fn price_known(sku: &String, key: IntentKey) -> Probe<u64> {
    let _ = (sku, key);
    Probe::NotLanded
}

/// What the tool does, for the model.
#[tool(effect = "read", probe = price_known)]
pub async fn read_price(call: &Call, sku: String) -> Result<u64, Class> {
    let _ = (call, sku);
    Ok(1299)
}

fn main() {}
