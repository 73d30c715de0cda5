//! The wrapper's task parameter never collides with the author's names: a tool may take a `task` of its own.

use std::time::Duration;

use tool_contract::{Class, Outcome, Task, tool};

/// Look up a to-do item by its own task name.
#[tool(effect = "read", target = task)]
pub async fn find_todo(task: String) -> Result<String, Class> {
    Ok(format!("todo: {task}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let work = Task::new("week-12", "agent", Duration::from_secs(5));
    let report = find_todo(&work, "water the plants".to_owned()).await;
    assert_eq!(report.outcome, Outcome::Ok);
    assert_eq!(report.value.as_deref(), Some("todo: water the plants"));
}
