use tool_contract::{Call, Class, tool};

// Every mistake is reported in one build: the unknown key, the bad floor, the missing probe and the
// missing `async`.
#[tool(effect = "send", deadline_floor = "soon", retries = 3, target = thread)]
pub fn post_notice(call: &Call, thread: String, text: String) -> Result<u64, Class> {
    let _ = (call, thread, text);
    Ok(1)
}

fn main() {}
