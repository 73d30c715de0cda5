use tool_contract::{Class, IntentKey, Probe, tool};

pub async fn opened(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::NotLanded
}

// Zero is already what no horizon means for a create the receiver deduplicates by its key.
/// Open a ticket.
#[tool(effect = "create", dedupe = "receiver", probe = opened, target = thread, horizon = "0s")]
pub async fn open_ticket(thread: String) -> Result<u64, Class> {
    let _ = thread;
    Ok(1)
}

fn main() {}
