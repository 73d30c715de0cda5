use tool_contract::{Class, tool};

pub trait Pricing {
    async fn read_price(&self, sku: String) -> Result<u64, Class>;
}

pub struct Shop;

impl Pricing for Shop {
    /// Read a price.
    #[tool(effect = "read", target = sku)]
    async fn read_price(&self, sku: String) -> Result<u64, Class> {
        let _ = sku;
        Ok(1)
    }
}

fn main() {}
