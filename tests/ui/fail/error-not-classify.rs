use tool_contract::{Call, tool};

// The error type says nothing the engine can classify.
/// What the tool does, for the model.
#[tool(effect = "read", target = sku)]
pub async fn read_price(call: &Call, sku: String) -> Result<u64, String> {
    let _ = call;
    Err(format!("no price for {sku}"))
}

fn main() {}
