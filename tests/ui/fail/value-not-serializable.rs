use schemars::JsonSchema;
use tool_contract::{Call, Class, tool};

#[derive(JsonSchema)]
pub struct Price(pub u64);

// The report carries the value as JSON, and `Price` does not implement `Serialize`.
/// What the tool does, for the model.
#[tool(effect = "read", target = sku)]
pub async fn read_price(call: &Call, sku: String) -> Result<Price, Class> {
    let _ = (call, sku);
    Ok(Price(1299))
}

fn main() {}
