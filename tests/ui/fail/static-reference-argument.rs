use tool_contract::{Class, tool};

/// Read the price of one item.
#[tool(effect = "read", target = sku)]
pub async fn read_price(sku: &'static str) -> Result<u64, Class> {
    Ok(sku.len() as u64)
}

fn main() {}
