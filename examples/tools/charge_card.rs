//! A `money` tool on a client that holds its connection: a method taking `&self`, probed by another
//! method. The card network charges and times out; the probe finds the charge, so it is not repeated.
//!
//! `cargo run -p tool-contract-examples --example charge_card`
#![warn(clippy::pedantic)]

use std::sync::Mutex;
use std::time::Duration;

use tool_contract::{Applied, Call, Class, IntentKey, Outcome, Probe, Task, tool};

/// A card processor: each charge with the idempotency key it came with.
#[derive(Default)]
pub struct Payments {
    charges: Mutex<Vec<(IntentKey, String, u64)>>,
}

impl Payments {
    /// Charge a card; the network times out after the charge went through.
    #[tool(effect = "money", probe = Self::charge_landed, target = card, deadline_floor = "1s")]
    pub async fn charge_card(
        &self,
        call: &Call,
        /// The card to charge, like `card-42`.
        card: String,
        /// The amount, in cents.
        cents: u64,
    ) -> Result<String, Class> {
        self.charges.lock().unwrap().push((call.key(), card, cents));
        Err(Class::unknown("card network timed out after the request was sent"))
    }

    /// Finds the charge carrying `key`.
    async fn charge_landed(&self, card: &String, cents: &u64, key: IntentKey) -> Probe<String> {
        // A real probe lists the card's charges over the network; this one reads memory.
        tokio::task::yield_now().await;
        let charges = self.charges.lock().unwrap();
        match charges.iter().position(|(k, c, amount)| *k == key && c == card && amount == cents) {
            Some(i) => Probe::Landed(format!("ch_{i}")),
            None => Probe::NotLanded,
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let payments = Payments::default();
    let task = Task::new("ord-7741", "agent:billing", Duration::from_secs(30));
    let report = payments.charge_card(&task, "card-42".to_owned(), 1299).await;
    println!("{}", serde_json::to_string_pretty(&report).expect("a report serialises"));
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes));
    assert_eq!(report.value.as_deref(), Some("ch_0"));
    assert_eq!(payments.charges.lock().unwrap().len(), 1, "charged once");
}

/// `cargo test` runs the example too (`test = true` in its `[[example]]`).
#[test]
fn the_example_runs() {
    main();
}
