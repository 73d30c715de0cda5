use tool_contract::{Class, tool};

// The first wait is longer than the cap.
/// What the tool does, for the model.
#[tool(effect = "read", backoff = "5s..200ms")]
pub async fn read_price() -> Result<u64, Class> {
    Ok(1299)
}

fn main() {}
