//! Generic tools keep their generics and bounds; the target only has to display. The companion is
//! generic too: `describe_tool::<u32>()` is the tool for ids of type `u32`.

use std::fmt::Display;
use std::time::Duration;

use serde_json::json;
use tool_contract::{Call, Class, Task, Toolbox, tool};

/// Describe anything that displays.
#[tool(effect = "read", target = id)]
pub async fn describe<Id>(call: &Call, id: Id, note: String) -> Result<String, Class>
where
    Id: Display + Clone,
{
    let _ = call;
    Ok(format!("{id}: {note}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("gen-1", "agent", Duration::from_secs(5));
    assert_eq!(describe(&task, 42u32, "answer".to_owned()).await.value.as_deref(), Some("42: answer"));
    let mut toolbox = Toolbox::new();
    toolbox.add(describe_tool::<u32>()).unwrap();
    let report = toolbox.call(&task, "describe", json!({ "id": 42, "note": "answer" })).await.unwrap();
    assert_eq!(report.value, Some(json!("42: answer")));
}
