//! Toolbox tools through rig's own dispatch (`DynamicTool::execute_with`), no model needed: every
//! outcome is the report as the tool's output, never an error rig would retry.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rig_core::tool::ToolContext;
use serde_json::{Value, json};
use tool_contract::key::Intent;
use tool_contract::{Class, IntentKey, Probe, Task, Toolbox, tool};
use tool_contract_rig::{RigToolbox, TaskName};

static SENT: AtomicU32 = AtomicU32::new(0);

/// Send a notice; the reply is always lost after it was sent.
#[tool(effect = "send", probe = cannot_tell, target = thread)]
async fn send_notice(
    /// The thread.
    thread: String,
) -> Result<u64, Class> {
    let _ = thread;
    SENT.fetch_add(1, Ordering::SeqCst);
    Err(Class::unknown("connection reset after the notice was sent"))
}

/// The read that would tell, failing.
async fn cannot_tell(_: &String, _: IntentKey) -> Probe<u64> {
    Probe::Failed("the thread service is down".into())
}

/// Read the price of one item, in cents.
#[tool(effect = "read", target = sku)]
async fn read_price(sku: String) -> Result<u64, Class> {
    if sku == "sku-1" { Ok(1299) } else { Err(Class::permanent(format!("no SKU `{sku}`"))) }
}

fn tools() -> Vec<rig_core::tool::DynamicTool> {
    let mut toolbox = Toolbox::new();
    toolbox.add(read_price_tool()).unwrap();
    toolbox.add(send_notice_tool()).unwrap();
    RigToolbox::new(toolbox).instance_id("rig-test").budget(Duration::from_secs(5)).tools().unwrap()
}

async fn run(tool: &rig_core::tool::DynamicTool, context: &mut ToolContext, arguments: Value) -> Value {
    let output = tool.execute_with(context, arguments).await.expect("a report, never an error");
    output.as_json().expect("the report as JSON").clone()
}

#[test]
fn definitions_carry_the_name_description_and_schema() {
    let tools = tools();
    let names: Vec<String> = tools.iter().map(|tool| tool.name().to_string()).collect();
    assert_eq!(names, ["read_price", "send_notice"]);
    let send = tools[1].definition();
    assert_eq!(send.description, "Send a notice; the reply is always lost after it was sent.");
    assert_eq!(send.parameters["required"], json!(["thread"]));
    assert_eq!(send.parameters["properties"]["thread"]["description"], "The thread.");
}

#[tokio::test]
async fn an_unknown_outcome_is_output_not_an_error_and_is_sent_once() {
    let tools = tools();
    let task = Task::new("ticket-5", "agent:support", Duration::from_secs(5));
    let mut context = ToolContext::default().with_scope(Arc::new(task));
    let report = run(&tools[1], &mut context, json!({ "thread": "t-1" })).await;
    assert_eq!(
        (report["outcome"].as_str(), report["effect_applied"].as_str()),
        (Some("unknown"), Some("unknown"))
    );
    assert_eq!(SENT.load(Ordering::SeqCst), 1, "never sent twice, by the engine or by rig");
    assert_eq!(
        report["idempotency_key"],
        Intent::new("ticket-5", "agent:support", "send_notice", "t-1").key().to_string()
    );
}

#[tokio::test]
async fn every_outcome_is_a_report() {
    let tools = tools();
    let mut context = ToolContext::default();
    context.insert(TaskName { task: "quote-7".into(), actor: "agent:sales".into() }).unwrap();
    let ok = run(&tools[0], &mut context, json!({ "sku": "sku-1" })).await;
    assert_eq!((ok["outcome"].as_str(), ok["value"].as_u64()), (Some("ok"), Some(1299)));
    assert_eq!(
        ok["idempotency_key"],
        Intent::new("quote-7", "agent:sales", "read_price", "sku-1").key().to_string()
    );
    let refused = run(&tools[0], &mut context, json!({ "sku": "sku-9" })).await;
    assert_eq!(refused["outcome"], "permanent");
    let bad = run(&tools[0], &mut context, json!({ "sku": 9 })).await;
    assert_eq!((bad["outcome"].as_str(), bad["effect_applied"].as_str()), (Some("permanent"), Some("no")));
    assert!(bad["message"].as_str().unwrap().contains("argument `sku`"));

    let mut anonymous = ToolContext::default();
    let instance = run(&tools[0], &mut anonymous, json!({ "sku": "sku-1" })).await;
    assert!(instance["attempt_id"].as_str().unwrap().starts_with("rig-test-"), "{instance}");
}

#[tokio::test]
async fn a_task_name_that_names_nothing_is_an_error_rig_does_not_retry() {
    let tools = tools();
    for (task, actor) in [("", "agent:sales"), ("quote-8", "a\u{7}b")] {
        let mut context = ToolContext::default();
        context.insert(TaskName { task: task.into(), actor: actor.into() }).unwrap();
        let error = tools[1].execute_with(&mut context, json!({ "thread": "t-2" })).await.unwrap_err();
        assert_eq!(error.retryable(), Some(false), "{error:?}");
        assert!(error.message().contains("TaskName"), "{}", error.message());
    }
}

static CHARGED: AtomicU32 = AtomicU32::new(0);

/// Charge a card; the first attempt's reply is lost before the charge lands.
// The reset came before the charge was made: with no landing horizon, the probe's word counts at once
// and the short budget holds the approved second attempt.
#[tool(effect = "money", probe = charge_landed, target = card, horizon = "0s")]
async fn charge_card(
    /// The card.
    card: String,
) -> Result<u64, Class> {
    let _ = card;
    if CHARGED.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
        return Err(Class::unknown("connection reset before the charge was made"));
    }
    Ok(4200)
}

/// The charge was never made on a first attempt.
async fn charge_landed(_: &String, _: IntentKey) -> Probe<u64> {
    Probe::NotLanded
}

#[tokio::test]
async fn the_adapters_approver_and_sink_serve_calls_named_by_a_task_name() {
    use std::sync::Mutex;
    use tool_contract::person::{Approval, ApprovalRequest};
    use tool_contract::task::Escalation;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let escalated = Arc::new(AtomicU32::new(0));
    let mut toolbox = Toolbox::new();
    toolbox.add(charge_card_tool()).unwrap();
    let asked_by = Arc::clone(&asked);
    let tools = RigToolbox::new(toolbox)
        .budget(Duration::from_secs(5))
        .approver(move |request: ApprovalRequest| {
            asked_by.lock().unwrap().push(request.next_attempt);
            async { Approval::Approved }
        })
        .tools()
        .unwrap();
    let mut context = ToolContext::default();
    context.insert(TaskName { task: "invoice-1".into(), actor: "agent:billing".into() }).unwrap();
    let report = run(&tools[0], &mut context, json!({ "card": "card-42" })).await;
    assert_eq!((report["outcome"].as_str(), report["value"].as_u64()), (Some("ok"), Some(4200)), "{report}");
    assert_eq!(*asked.lock().unwrap(), [2], "asked once, before the second attempt");
    assert_eq!(CHARGED.load(Ordering::SeqCst), 2);

    // Without an approver the adapter's calls stop after the first attempt, say why, and hand the call
    // to the adapter's escalation sink.
    let mut toolbox = Toolbox::new();
    toolbox.add(charge_card_tool()).unwrap();
    let escalated_to = Arc::clone(&escalated);
    let tools = RigToolbox::new(toolbox)
        .budget(Duration::from_secs(5))
        .escalate_to(move |escalation: Escalation| {
            assert_eq!(escalation.task, "invoice-1");
            escalated_to.fetch_add(1, Ordering::SeqCst);
            async {}
        })
        .tools()
        .unwrap();
    let report = run(&tools[0], &mut context, json!({ "card": "card-43" })).await;
    assert_eq!(report["outcome"], "retryable", "{report}");
    assert!(report["message"].as_str().unwrap().contains("needs an approver"), "{report}");
    assert_eq!((CHARGED.load(Ordering::SeqCst), escalated.load(Ordering::SeqCst)), (3, 1), "{report}");
}
