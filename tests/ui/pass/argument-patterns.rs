//! Arguments may be `mut`; each attempt binds its own copy the way the author wrote it. (A model fills
//! parameters by name, so a destructured one is refused: `fail/destructured-argument.rs`.)

use std::time::Duration;

use tool_contract::{Class, Task, tool};

/// Sum a pair and a list, consuming the list.
#[tool(effect = "read")]
pub async fn total(pair: (u32, u32), mut rest: Vec<u32>) -> Result<u32, Class> {
    let (a, b) = pair;
    rest.push(a + b);
    Ok(rest.into_iter().sum())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("sum-1", "agent", Duration::from_secs(5));
    assert_eq!(total(&task, (1, 2), vec![3, 4]).await.value, Some(10));
}
