use tool_contract::{Call, Class, IntentKey, Probe, tool};

pub struct Threads {
    pub sent: u64,
}

impl Threads {
    pub async fn notice_landed(&self, thread: &String, key: IntentKey) -> Probe<u64> {
        let _ = (thread, key);
        Probe::NotLanded
    }

    /// What the tool does, for the model.
    #[tool(effect = "send", probe = Self::notice_landed, target = thread)]
    pub async fn post_notice(&mut self, call: &Call, thread: String) -> Result<u64, Class> {
        let _ = (call, thread);
        self.sent += 1;
        Ok(self.sent)
    }
}

fn main() {}
