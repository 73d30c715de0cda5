//! The fault kit's MCP mode: the six scenarios and the held request driven through the MCP server, the tool called by rmcp's
//! client over an in-memory pipe with the task named in `_meta`, on tokio's paused clock.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use serde_json::{Map, Value, json};
use tool_contract::effect::EffectKind;
use tool_contract::{Call, Class, IntentKey, Item, Probe, Report, Task, Toolbox, tool};
use tool_contract_mcp::{ACTOR_META_KEY, McpServer, TASK_META_KEY};
use tool_contract_testing::{Conformance, FakeService, Verdict, batch_probe, batch_result, single_result};

/// A client of the fake service, one tool per kind that the scenarios exercise.
struct Desk {
    service: FakeService,
}

impl Desk {
    /// Post a notice.
    #[tool(effect = "send", probe = Self::landed, target = thread, deadline_floor = "2s")]
    async fn post(&self, call: &Call, thread: String) -> Result<u64, Class> {
        let _ = thread;
        single_result(EffectKind::Send, self.service.submit(call.key()).await)
    }

    /// Charge a card.
    #[tool(effect = "money", probe = Self::landed, target = thread, deadline_floor = "2s")]
    async fn charge(&self, call: &Call, thread: String) -> Result<u64, Class> {
        let _ = thread;
        single_result(EffectKind::Money, self.service.submit(call.key()).await)
    }

    /// Write rows.
    #[tool(effect = "create", probe = Self::rows_landed, target = sheet, bulk = rows, deadline_floor = "2s")]
    async fn write(&self, call: &Call, sheet: String, rows: Vec<String>) -> Result<Vec<Item>, Class> {
        let _ = sheet;
        batch_result(EffectKind::Create, self.service.submit_batch(call.key(), &rows).await)
    }

    #[allow(clippy::ptr_arg)]
    async fn landed(&self, _: &String, key: IntentKey) -> Probe<u64> {
        match self.service.lookup_settled(key).await {
            Ok(found) => found.into_probe(),
            Err(why) => Probe::Failed(why),
        }
    }

    #[allow(clippy::ptr_arg)]
    async fn rows_landed(&self, _: &String, rows: Vec<String>, key: IntentKey) -> Vec<Item> {
        batch_probe(self.service.lookup_items(key, &rows), &rows)
    }
}

/// One call through the MCP server: the task's id and actor in `_meta`, its log and approver shared.
async fn through_mcp(
    task: Task,
    service: FakeService,
    tool: &'static str,
    arguments: Value,
) -> Report<Value> {
    let desk = Arc::new(Desk { service });
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::clone(&desk), Desk::post_tool()).unwrap();
    toolbox.add_method(Arc::clone(&desk), Desk::charge_tool()).unwrap();
    toolbox.add_method(desk, Desk::write_tool()).unwrap();
    let server = McpServer::builder(toolbox).like(&task).budget(task.remaining()).build().unwrap();
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_side).await.expect("the client connects");
    let Value::Object(arguments) = arguments else { unreachable!("arguments are an object") };
    let mut params = CallToolRequestParams::new(tool).with_arguments(arguments);
    let meta = Map::from_iter([
        (TASK_META_KEY.to_owned(), json!(task.id())),
        (ACTOR_META_KEY.to_owned(), json!(task.actor())),
    ]);
    params.meta = Some(RequestMetaObject::from(meta));
    let result = client.call_tool(params).await.expect("a result");
    let _ = client.cancel().await;
    let report: Report<Value> =
        serde_json::from_value(result.structured_content.expect("a report")).expect("a report");
    assert_eq!(result.is_error, Some(tool_contract_mcp::is_error(report.outcome)));
    report
}

fn numbered(report: Report<Value>) -> Report<u64> {
    report.map(|value| value.as_u64().unwrap_or_default())
}

fn assert_all_pass(kind: EffectKind, verdicts: &[Verdict]) {
    assert_eq!(verdicts.len(), 7);
    for verdict in verdicts {
        assert!(verdict.pass, "{kind} over MCP, {}: {verdict:?}", verdict.scenario);
    }
}

#[tokio::test(start_paused = true)]
async fn the_six_and_the_held_request_through_the_mcp_server() {
    for (kind, tool) in [(EffectKind::Send, "post"), (EffectKind::Money, "charge")] {
        let verdicts = Conformance::new(kind, move |task, service| async move {
            numbered(through_mcp(task, service, tool, json!({ "thread": "thread-9" })).await)
        })
        .bulk(|task, service, items: Vec<String>| async move {
            through_mcp(task, service, "write", json!({ "sheet": "sheet-1", "rows": items }))
                .await
                .map(|_| ())
        })
        .run()
        .await;
        assert_all_pass(kind, &verdicts);
    }
}
