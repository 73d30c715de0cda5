use tool_contract::{Call, Class, IntentKey, Probe, tool};

pub struct Desk;

impl Desk {
    /// What the tool does, for the model.
    #[tool(effect = "send", probe = Self::landed, target = thread)]
    pub async fn post_notice(&self, call: &Call, thread: String) -> Result<u64, Class> {
        let _ = (call, thread);
        Ok(1)
    }

    pub fn landed(&self, thread: &String, key: IntentKey) -> Probe<u64> {
        let _ = (thread, key);
        Probe::NotLanded
    }
}

fn main() {}
