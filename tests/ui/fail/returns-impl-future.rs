use std::future::Future;

use tool_contract::{Class, tool};

// Not an `async fn`, though it returns a future.
/// What the tool does, for the model.
#[tool(effect = "read", target = sku)]
pub fn read_price(sku: String) -> impl Future<Output = Result<u64, Class>> {
    async move {
        let _ = sku;
        Ok(1299)
    }
}

fn main() {}
