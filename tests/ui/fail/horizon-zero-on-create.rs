use tool_contract::{Class, IntentKey, Probe, tool};

pub async fn sent(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::NotLanded
}

// Zero is already what no horizon means for a create, whose retry carries the same key.
/// Open a ticket.
#[tool(effect = "create", probe = sent, target = thread, horizon = "0s")]
pub async fn open_ticket(thread: String) -> Result<u64, Class> {
    let _ = thread;
    Ok(1)
}

fn main() {}
