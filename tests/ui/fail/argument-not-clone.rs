use schemars::JsonSchema;
use serde::Deserialize;
use tool_contract::{Call, Class, IntentKey, Probe, tool};

#[derive(Deserialize, JsonSchema)]
pub struct Draft {
    pub text: String,
}

pub async fn notice_landed(thread: &String, draft: &Draft, key: IntentKey) -> Probe<u64> {
    let _ = (thread, draft, key);
    Probe::NotLanded
}

// Each attempt gets its own copy of the arguments, and `Draft` is not `Clone`.
/// What the tool does, for the model.
#[tool(effect = "send", probe = notice_landed, target = thread)]
pub async fn post_notice(call: &Call, thread: String, draft: Draft) -> Result<u64, Class> {
    let _ = (call, thread, draft.text);
    Ok(1)
}

fn main() {}
