use tool_contract::{Class, tool};

// A backoff is the first wait and the longest.
/// What the tool does, for the model.
#[tool(effect = "read", backoff = "200ms")]
pub async fn read_price() -> Result<u64, Class> {
    Ok(1299)
}

fn main() {}
