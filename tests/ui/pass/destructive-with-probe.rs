//! A `destructive` tool is never retried automatically: after a lost reply its probe says whether the
//! record is gone, and the call stops with what it found.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use tool_contract::{Applied, Call, Class, IntentKey, Outcome, Probe, Task, tool};

static RECORDS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// Whether record `id` is gone; the value is the id deleted.
pub async fn record_gone(id: &u32, key: IntentKey) -> Probe<u32> {
    let _ = key;
    if RECORDS.lock().unwrap().contains(id) { Probe::NotLanded } else { Probe::Landed(*id) }
}

/// Delete a record; the reply is lost after the delete.
#[tool(effect = "destructive", probe = record_gone, target = id)]
pub async fn delete_record(call: &Call, id: u32) -> Result<u32, Class> {
    let _ = call;
    RECORDS.lock().unwrap().remove(&id);
    Err(Class::unknown("connection reset after the DELETE was sent"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    RECORDS.lock().unwrap().extend([1, 2, 3]);
    let task = Task::new("cleanup-1", "agent:ops", Duration::from_secs(10));
    let report = delete_record(&task, 2).await;
    assert_eq!((report.outcome, report.effect_applied, report.value), (Outcome::Ok, Applied::Yes, Some(2)));
}
