use tool_contract::{Class, tool};

// A read has no probe, so nothing waits on one.
/// What the tool does, for the model.
#[tool(effect = "read", horizon = "30s")]
pub async fn read_price() -> Result<u64, Class> {
    Ok(1299)
}

fn main() {}
