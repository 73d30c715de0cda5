use tool_contract::{Class, tool};

/// Read the price of one item.
#[tool(effect = "read", target = sku, name = "read price!")]
pub async fn read_price(sku: String) -> Result<u64, Class> {
    let _ = sku;
    Ok(1299)
}

fn main() {}
