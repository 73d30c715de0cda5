use tool_contract::{Class, tool};

// A read has no probe to keep time for.
/// What the tool does, for the model.
#[tool(effect = "read", probe_reserve = "1s")]
pub async fn read_price() -> Result<u64, Class> {
    Ok(1299)
}

fn main() {}
