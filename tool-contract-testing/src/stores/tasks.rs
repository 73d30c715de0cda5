//! MCP tasks through the store: `mcp_task` records kept by intent, in order, beside its attempts.

use super::*;

/// An MCP task's step, as the MCP adapter writes one: its account in `value`, at the intent's highest
/// attempt.
fn step(key: IntentKey, attempt: u32, step: &str) -> Record {
    Record {
        message: Some(format!("MCP task {step}")),
        value: Some(serde_json::json!({ "id": "conformance", "step": step })),
        ..record(key, Phase::McpTask, attempt)
    }
}

/// MCP tasks through the store ([`McpTasks`](tool_contract::journal::McpTasks)): a store of this suite
/// keeps them; their records come back by intent, whole and in the order written, and change nothing
/// else: not the intent's attempts, not its last word, not whether it is in doubt, not the number the
/// next fenced start must carry.
pub async fn mcp_tasks_are_kept(store: &dyn Journal, scope: &str) {
    const RULE: &str = "an MCP task's records are kept by intent and are never an attempt's";
    let tasks = store.mcp_tasks().unwrap_or_else(|| panic!("{RULE}: the store keeps no MCP tasks"));
    let k = key(scope, "mcp-task");
    assert_eq!(tasks.mcp_task_records(&k).await.expect(RULE), Vec::new(), "{RULE}: none written yet");
    let worker = Owner::new(format!("{scope}-mcp-task-worker"));
    claim(store, k, &worker, RULE).await;
    store.start(&worker, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    let unknown = end(k, 1, Outcome::Unknown, Applied::Unknown, "timed out");
    store.end(&worker, unknown.as_record_ref(), Durability::Synced).await.expect(RULE);
    let before = last(store, k).await;
    let (created, ended) = (step(k, 1, "created"), step(k, 1, "ended"));
    for written in [&created, &ended] {
        store.append(written.as_record_ref(), Durability::Synced).await.expect(RULE);
    }
    assert_eq!(tasks.mcp_task_records(&k).await.expect(RULE), vec![created, ended], "{RULE}: in order");
    assert_eq!(last(store, k).await, before, "{RULE}: the attempts and the last word are unchanged");
    let in_doubt = store.unresolved().await.expect("the store answers");
    assert!(in_doubt.iter().any(|r| r.last.intent_key == k), "{RULE}: attempt 1 is still in doubt");
    let other = key(scope, "mcp-task-other");
    assert_eq!(tasks.mcp_task_records(&other).await.expect(RULE), Vec::new(), "{RULE}: by intent");
    store.start(&worker, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await.expect(RULE);
    store.release(&k, &worker);
}
