//! The body reads its intent key, attempt number and budget left through `&Call`; the key is what a
//! tool sends downstream as its `Idempotency-Key`.

use std::sync::Mutex;
use std::time::Duration;

use tool_contract::key::Intent;
use tool_contract::{Call, Class, Outcome, Task, tool};

static SEEN: Mutex<Vec<(String, u32, bool)>> = Mutex::new(Vec::new());

/// Create an order, sending the intent key as the idempotency key.
#[tool(effect = "create", dedupe = "receiver", target = sku)]
pub async fn create_order(call: &Call, sku: String) -> Result<String, Class> {
    let header = call.key().to_string();
    let within_budget = call.budget_left() <= Duration::from_secs(10);
    SEEN.lock().unwrap().push((header.clone(), call.attempt(), within_budget));
    if call.attempt() == 1 {
        return Err(Class::retryable("503 service unavailable; nothing was applied"));
    }
    Ok(format!("order for {sku} ({}, {})", call.task_id(), call.attempt_id()))
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let task = Task::new("ord-7741", "agent:sales", Duration::from_secs(10));
    let report = create_order(&task, "sku-1".to_owned()).await;
    assert_eq!(report.outcome, Outcome::Ok, "{}", report.message);

    let key = Intent::new("ord-7741", "agent:sales", "create_order", "sku-1").key();
    assert_eq!(report.idempotency_key, key);
    let seen = SEEN.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    // The same key on every attempt; the attempt number counts up.
    assert!(seen.iter().all(|(header, _, within)| *header == key.to_string() && *within));
    assert_eq!((seen[0].1, seen[1].1), (1, 2));
}
