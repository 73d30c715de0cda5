use tool_contract::{Class, tool};

// `retries` is another library's word; here the attempts are counted, the first one included.
/// What the tool does, for the model.
#[tool(effect = "read", retries = 3)]
pub async fn read_price() -> Result<u64, Class> {
    Ok(1299)
}

fn main() {}
