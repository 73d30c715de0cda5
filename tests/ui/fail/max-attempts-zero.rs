use tool_contract::{Class, tool};

// The first attempt counts: zero would never call the tool.
/// What the tool does, for the model.
#[tool(effect = "read", max_attempts = 0)]
pub async fn read_price() -> Result<u64, Class> {
    Ok(1299)
}

fn main() {}
