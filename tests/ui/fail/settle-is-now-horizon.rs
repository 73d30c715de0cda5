use tool_contract::{Class, IntentKey, Probe, tool};

pub async fn sent(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::NotLanded
}

// The landing horizon's former name: `settle` now means only a person's settlement.
/// Post a notice.
#[tool(effect = "send", probe = sent, target = thread, settle = "30s")]
pub async fn post_notice(thread: String) -> Result<u64, Class> {
    let _ = thread;
    Ok(1)
}

fn main() {}
