use schemars::JsonSchema;
use serde::Deserialize;
use tool_contract::{Call, Class, IntentKey, Probe, tool};

#[derive(Clone, Deserialize, JsonSchema)]
pub struct ThreadId(u32);

pub async fn notice_landed(thread: &ThreadId, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::NotLanded
}

// The target goes into the intent key through `Display`, which `ThreadId` does not implement.
/// What the tool does, for the model.
#[tool(effect = "send", probe = notice_landed, target = thread)]
pub async fn post_notice(call: &Call, thread: ThreadId) -> Result<u64, Class> {
    let _ = call;
    Ok(u64::from(thread.0))
}

fn main() {}
