use tool_contract::{Class, tool};

// A thousand attempts is a retry storm, not a policy.
/// What the tool does, for the model.
#[tool(effect = "read", max_attempts = 1000)]
pub async fn read_price() -> Result<u64, Class> {
    Ok(1299)
}

fn main() {}
