use tool_contract::{Class, tool};

/// Add the two numbers of a pair.
#[tool(effect = "read")]
pub async fn add((a, b): (u32, u32)) -> Result<u32, Class> {
    Ok(a + b)
}

fn main() {}
