use tool_contract::{Call, Class, IntentKey, Probe, tool};

pub async fn notice_landed(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::NotLanded
}

pub struct Desk;

impl Desk {
    // A method tool's probe receives `&self` first; this one does not take it.
    /// What the tool does, for the model.
    #[tool(effect = "send", probe = notice_landed, target = thread)]
    pub async fn post_notice(&self, call: &Call, thread: String) -> Result<u64, Class> {
        let _ = (call, thread);
        Ok(1)
    }
}

fn main() {}
