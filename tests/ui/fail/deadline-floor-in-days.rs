use tool_contract::{Class, tool};

// There is no `d` unit; the message lists those there are.
/// What the tool does, for the model.
#[tool(effect = "read", deadline_floor = "1d")]
pub async fn nightly_report() -> Result<u32, Class> {
    Ok(7)
}

fn main() {}
