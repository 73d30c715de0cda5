//! A `create` tool whose receiver honours the idempotency key (`dedupe = "receiver"`): after a lost
//! reply the engine retries with the same key, and the shop returns the order it already made.
//!
//! `cargo run -p tool-contract-examples --example create_order`
#![warn(clippy::pedantic)]

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_contract::{Applied, Call, Class, Outcome, Task, tool};

/// An order, as the shop returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Order {
    /// The shop's id for the order.
    pub id: u64,
    /// What was ordered.
    pub sku: String,
    /// How many.
    pub quantity: u32,
}

/// A shop that deduplicates by `Idempotency-Key`, and loses its first reply.
#[derive(Default)]
struct Shop {
    orders: Mutex<HashMap<String, Order>>,
    replies: Mutex<u32>,
}

impl Shop {
    fn post_order(&self, idempotency_key: &str, sku: &str, quantity: u32) -> Result<Order, Class> {
        let order = {
            let mut orders = self.orders.lock().unwrap();
            let next = 1000 + orders.len() as u64;
            orders
                .entry(idempotency_key.to_owned())
                .or_insert_with(|| Order { id: next, sku: sku.to_owned(), quantity })
                .clone()
        };
        let mut replies = self.replies.lock().unwrap();
        *replies += 1;
        if *replies == 1 {
            return Err(Class::unknown("connection reset after the order was sent"));
        }
        Ok(order)
    }
}

static SHOP: std::sync::LazyLock<Shop> = std::sync::LazyLock::new(Shop::default);

// The shop keeps an idempotency key for a day: a resend within that is answered with the order it made.
/// Order `quantity` of a SKU for the task's customer.
#[tool(effect = "create", dedupe = "receiver", key_lifetime = "24h", target = sku)]
pub async fn create_order(
    call: &Call,
    /// The stock-keeping unit to order.
    sku: String,
    /// How many to order.
    quantity: u32,
) -> Result<Order, Class> {
    // The intent key goes downstream as the idempotency key: the same on every attempt.
    SHOP.post_order(&call.key().to_string(), &sku, quantity)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("ord-7741", "agent:sales", Duration::from_secs(10));
    let report = create_order(&task, "sku-1".to_owned(), 2).await;
    println!("{}", serde_json::to_string_pretty(&report).expect("a report serialises"));
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes));
    assert_eq!(SHOP.orders.lock().unwrap().len(), 1, "one order, however many attempts");
}

/// `cargo test` runs the example too (`test = true` in its `[[example]]`).
#[test]
fn the_example_runs() {
    main();
}
