//! `key_lifetime` on a create the receiver deduplicates: how long the receiver keeps the key. A call
//! whose budget fits inside it resends with the key; one that could send past it does not.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tool_contract::{Applied, Call, Class, Outcome, Task, tool};

static SENT: AtomicU32 = AtomicU32::new(0);

/// Create an order; the payment provider keeps idempotency keys for 24 hours.
#[tool(effect = "create", dedupe = "receiver", key_lifetime = "2m", target = cart)]
pub async fn create_order(call: &Call, cart: String) -> Result<u64, Class> {
    let _ = (call, cart);
    if SENT.fetch_add(1, Ordering::SeqCst) % 2 == 0 {
        Err(Class::unknown("connection reset after the request was sent"))
    } else {
        Ok(41)
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let task = Task::new("order-1", "agent", Duration::from_secs(60));
    let report = create_order(&task, "cart-1".to_owned()).await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(41)), "{}", report.message);
    assert_eq!(SENT.load(Ordering::SeqCst), 2, "resent with the key");

    let task = Task::new("order-2", "agent", Duration::from_secs(600));
    let report = create_order(&task, "cart-2".to_owned()).await;
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Unknown, Applied::Unknown));
    assert_eq!(SENT.load(Ordering::SeqCst), 3, "ten minutes of budget outlast a two-minute key: not resent");
}
