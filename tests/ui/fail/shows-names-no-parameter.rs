use tool_contract::{Call, Class, IntentKey, Probe, tool};

pub async fn refunded(order: &String, cents: &u64, key: IntentKey) -> Probe<u64> {
    let _ = (order, cents, key);
    Probe::NotLanded
}

/// Refund an order.
#[tool(effect = "money", probe = refunded, target = order, shows = [amount, order])]
pub async fn refund(call: &Call, order: String, cents: u64) -> Result<u64, Class> {
    let _ = (call, order);
    Ok(cents)
}

fn main() {}
