use tool_contract::{Class, tool};

/// Read the price of one item.
#[tool(effect = "read", target = sku)]
pub async fn read_price(sku: &'static str) -> Result<u64, Class> {
    Ok(sku.len() as u64)
}

/// Read the price of one item, in a currency when one is named.
#[tool(effect = "read", target = sku)]
pub async fn read_price_in(sku: String, currency: Option<&'static str>) -> Result<u64, Class> {
    Ok(sku.len() as u64 + currency.map_or(0, str::len) as u64)
}

fn main() {}
