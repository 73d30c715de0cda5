use tool_contract::{Call, Class, tool};

/// What the tool does, for the model.
#[tool(effect = "send", target = thread)]
pub async fn post_notice(call: &Call, thread: String, text: String) -> Result<u64, Class> {
    let _ = (call, thread, text);
    Ok(1)
}

fn main() {}
