//! The smallest tool: a read needs no probe, and a body that does not need the call context leaves it out.

use std::time::Duration;

use tool_contract::{Applied, Class, Outcome, Task, tool};

/// Look up the price of a SKU, in cents.
#[tool(effect = "read", target = sku)]
pub async fn read_price(sku: String) -> Result<u64, Class> {
    match sku.as_str() {
        "sku-1" => Ok(1299),
        _ => Err(Class::permanent(format!("no SKU `{sku}`; check the catalogue"))),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("ord-7741", "agent:sales", Duration::from_secs(10));
    let report = read_price(&task, "sku-1".to_owned()).await;
    assert_eq!((report.outcome, report.effect_applied, report.value), (Outcome::Ok, Applied::No, Some(1299)));

    let report = read_price(&task, "sku-404".to_owned()).await;
    assert_eq!(report.outcome, Outcome::Permanent);
    assert_eq!(report.value, None);
}
