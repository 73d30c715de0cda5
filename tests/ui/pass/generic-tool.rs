//! Generic tools keep their generics and bounds; the target only has to display.

use std::fmt::Display;
use std::time::Duration;

use tool_contract::{Call, Class, Task, tool};

/// Describe anything that displays.
#[tool(effect = "read", target = id)]
pub async fn describe<Id>(call: &Call, id: Id, note: impl Display + Clone) -> Result<String, Class>
where
    Id: Display + Clone,
{
    let _ = call;
    Ok(format!("{id}: {note}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("gen-1", "agent", Duration::from_secs(5));
    assert_eq!(describe(&task, 42u32, "answer").await.value.as_deref(), Some("42: answer"));
}
