//! Tools and probes in different modules: the probe is any path to an async fn.

use std::time::Duration;

use tool_contract::{Applied, Outcome, Task};

mod probes {
    use tool_contract::{IntentKey, Probe};

    /// Finds the charge carrying `key`; this fake finds every charge.
    pub async fn charge_landed(card: &String, cents: &u64, key: IntentKey) -> Probe<String> {
        let _ = (card, key);
        Probe::Landed(format!("ch_{cents}"))
    }
}

mod tools {
    use tool_contract::{Call, Class, tool};

    /// Charge a card; the network drops the reply after charging.
    #[tool(effect = "money", probe = crate::probes::charge_landed, target = card, deadline_floor = "1m")]
    pub async fn charge_card(call: &Call, card: String, cents: u64) -> Result<String, Class> {
        let _ = (call, card, cents);
        Err(Class::unknown("card network timed out after the request was sent"))
    }

    /// The same, naming the probe relative to this module.
    #[tool(effect = "money", probe = super::probes::charge_landed, target = card)]
    pub async fn charge_again(call: &Call, card: String, cents: u64) -> Result<String, Class> {
        let _ = (call, card, cents);
        Err(Class::unknown("card network timed out after the request was sent"))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("ord-7741", "agent:billing", Duration::from_secs(120));
    let report = tools::charge_card(&task, "card-42".to_owned(), 1299).await;
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes));
    assert_eq!(report.value.as_deref(), Some("ch_1299"));
    let report = tools::charge_again(&task, "card-42".to_owned(), 1299).await;
    assert_eq!(report.outcome, Outcome::Ok);
}
