use tool_contract::{Class, tool};

// A count is a number, not a string.
/// What the tool does, for the model.
#[tool(effect = "read", max_attempts = "5")]
pub async fn read_price() -> Result<u64, Class> {
    Ok(1299)
}

fn main() {}
