use std::future::Future;
use std::pin::Pin;

use tool_contract::{Class, tool};

// A `bool` is refused however the future around it is spelled.
/// What the tool does, for the model.
#[tool(effect = "read", target = sku)]
pub fn in_stock(sku: String) -> Pin<Box<dyn Future<Output = Result<bool, Class>> + Send>> {
    Box::pin(async move {
        let _ = sku;
        Ok(true)
    })
}

fn main() {}
