use tool_contract::{Call, Class, IntentKey, Probe, tool};

// The probe takes `thread` by value; probes borrow the tool's arguments.
pub async fn notice_landed(thread: String, text: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, text, key);
    Probe::NotLanded
}

/// What the tool does, for the model.
#[tool(effect = "send", probe = notice_landed, target = thread)]
pub async fn post_notice(call: &Call, thread: String, text: String) -> Result<u64, Class> {
    let _ = (call, thread, text);
    Ok(1)
}

fn main() {}
