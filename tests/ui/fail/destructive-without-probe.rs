use tool_contract::{Call, Class, tool};

/// What the tool does, for the model.
#[tool(effect = "destructive", target = record)]
pub async fn delete_record(call: &Call, record: String) -> Result<u64, Class> {
    let _ = (call, record);
    Ok(1)
}

fn main() {}
