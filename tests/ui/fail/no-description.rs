use tool_contract::{Class, tool};

#[tool(effect = "read", target = sku)]
pub async fn read_price(sku: String) -> Result<u64, Class> {
    let _ = sku;
    Ok(1299)
}

fn main() {}
