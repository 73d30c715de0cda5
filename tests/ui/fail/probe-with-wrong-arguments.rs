use tool_contract::{Call, Class, IntentKey, Probe, tool};

// The probe forgets the `text` argument.
pub async fn notice_landed(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::NotLanded
}

/// What the tool does, for the model.
#[tool(effect = "send", probe = notice_landed, target = thread)]
pub async fn post_notice(call: &Call, thread: String, text: String) -> Result<u64, Class> {
    let _ = (call, thread, text);
    Ok(1)
}

fn main() {}
