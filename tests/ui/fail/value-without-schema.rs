use serde::{Deserialize, Serialize};
use tool_contract::{Class, tool};

/// A price, serialisable but with no `JsonSchema`: the tool's output schema cannot describe it.
#[derive(Serialize, Deserialize)]
pub struct Price {
    /// In cents.
    pub cents: u64,
}

/// Read the price of one item.
#[tool(effect = "read", target = sku)]
pub async fn read_price(sku: String) -> Result<Price, Class> {
    let _ = sku;
    Ok(Price { cents: 1299 })
}

fn main() {}
