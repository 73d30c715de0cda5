use tool_contract::{Class, IntentKey, Probe, tool};

pub async fn notice_landed(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::NotLanded
}

// Nothing kept back: an attempt that times out leaves the probe no time.
/// What the tool does, for the model.
#[tool(effect = "send", probe = notice_landed, target = thread, probe_reserve = "0ms")]
pub async fn post_notice(thread: String) -> Result<u64, Class> {
    let _ = thread;
    Ok(1)
}

fn main() {}
