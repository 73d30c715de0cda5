use tool_contract::{Call, Class, IntentKey, Probe, tool};

pub async fn notice_landed(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::NotLanded
}

/// Two tools of one service share its retry budget.
#[tool(effect = "send", probe = notice_landed, service = "notices")]
pub async fn post_notice(call: &Call, thread: String) -> Result<u64, Class> {
    let _ = (call, thread);
    Ok(1)
}

fn main() {}
