//! Generated code stays quiet under strict lints, with the runtime's names imported so that a needless
//! qualification in generated code would be caught. `cargo clippy` checks the same under
//! `clippy::pedantic` in the examples crate (trybuild does not run clippy).
#![deny(warnings, unused_qualifications, missing_docs)]
#![deny(clippy::pedantic)]

use std::time::Duration;

use tool_contract::effect::EffectKind;
use tool_contract::engine::run;
use tool_contract::probe::NoProbe;
use tool_contract::spec::{Dedupe, ToolSpec};
use tool_contract::{Call, Class, IntentKey, Item, Probe, Report, Task, tool};

/// A probe.
pub async fn found(target: &String, key: IntentKey) -> Probe<u64> {
    tokio::task::yield_now().await;
    let _ = (target, key);
    Probe::NotLanded
}

/// A bulk probe.
pub async fn rows_found(sheet: &String, rows: Vec<String>, key: IntentKey) -> Vec<Item> {
    tokio::task::yield_now().await;
    let _ = (sheet, key);
    rows.into_iter().map(Item::ok).collect()
}

/// A send.
#[tool(effect = "send", probe = found, target = target, deadline_floor = "1s")]
pub async fn send(call: &Call, target: String) -> Result<u64, Class> {
    Ok(u64::from(call.attempt()) + target.len() as u64)
}

/// A create the receiver deduplicates.
#[tool(effect = "create", dedupe = "receiver", verb = "make", target = target)]
pub async fn create(target: String) -> Result<u64, Class> {
    Ok(target.len() as u64)
}

/// Bulk rows.
#[tool(effect = "create", probe = rows_found, target = sheet, bulk = rows)]
pub async fn write(call: &Call, sheet: String, rows: Vec<String>) -> Result<Vec<Item>, Class> {
    let _ = (call, sheet);
    Ok(rows.into_iter().map(Item::ok).collect())
}

/// A client.
pub struct Client;

impl Client {
    /// A probe method.
    pub async fn landed(&self, target: &String, key: IntentKey) -> Probe<u64> {
        tokio::task::yield_now().await;
        let _ = (target, key);
        Probe::NotLanded
    }

    /// A method tool.
    #[tool(effect = "money", probe = Self::landed, target = target)]
    pub async fn pay(&self, call: &Call, target: String) -> Result<u64, Class> {
        let _ = (self, call);
        Ok(target.len() as u64)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // The runtime's names, used directly as an author of a hand-written tool would.
    const SPEC: ToolSpec = ToolSpec::new("by_hand", EffectKind::Create).dedupe(Dedupe::Receiver);
    let task = Task::new("strict", "agent", Duration::from_secs(5));
    let key = task.key(&SPEC, &"x", None);
    let by_hand: Report<u64> = run(&task, &SPEC, key, |_call: Call| async { Ok::<u64, Class>(1) }, NoProbe).await;
    assert!(by_hand.is_ok());
    assert!(send(&task, "a".to_owned()).await.is_ok());
    assert!(create(&task, "a".to_owned()).await.is_ok());
    assert!(write(&task, "s".to_owned(), vec!["r".to_owned()]).await.is_ok());
    assert!(Client.pay(&task, "a".to_owned()).await.is_ok());
}
