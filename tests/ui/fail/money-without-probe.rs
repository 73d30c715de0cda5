use tool_contract::{Call, Class, tool};

/// What the tool does, for the model.
#[tool(effect = "money", target = card)]
pub async fn charge_card(call: &Call, card: String, cents: u64) -> Result<u64, Class> {
    let _ = (call, card);
    Ok(cents)
}

fn main() {}
