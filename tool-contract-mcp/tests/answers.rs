//! A person's answer is a record, in both protocol eras, driven by rmcp's own client over in-memory
//! pipes: a "no" resent as a "yes" changes nothing and is refused naming the first answer; an answer
//! from another connection is refused; a question binds the arguments it shows (an approval for one
//! amount never pays another); an early "not landed" is asked once and the client's rounds end; a
//! megabyte value gets a bounded reply; and the log holds every answer, the no's included.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData, Implementation, InputRequiredResult,
    ProtocolVersion, RequestMetaObject,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ClientServiceExt, ServiceExt};
use serde_json::{Map, Value, json};
use tool_contract::journal::{ApprovalStep, Asks, Phase, Record};
use tool_contract::{Call, Class, IntentKey, MemoryJournal, Probe, Toolbox, tool};
use tool_contract_mcp::{ACTOR_META_KEY, McpServer, TASK_META_KEY};

/// A bank whose first refund attempt is refused busy (nothing paid), or applied with its reply lost.
#[derive(Default)]
struct Bank {
    lost: bool,
    attempts: AtomicU32,
    paid: Mutex<Vec<u64>>,
}

impl Bank {
    /// Refund an order.
    #[tool(effect = "money", probe = Self::refunded, target = order, shows = [cents])]
    async fn refund(&self, call: &Call, order: String, cents: u64) -> Result<u64, Class> {
        let _ = order;
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if call.attempt() == 1 && !self.lost {
            return Err(Class::retryable("503: the bank is busy"));
        }
        self.paid.lock().unwrap().push(cents);
        if self.lost && call.attempt() == 1 {
            return Err(Class::unknown("the connection dropped after the refund was sent"));
        }
        Ok(cents)
    }

    #[allow(clippy::ptr_arg)]
    async fn refunded(&self, _order: &String, cents: &u64, _key: IntentKey) -> Probe<u64> {
        match (self.lost, self.paid().is_empty()) {
            (true, _) => Probe::Failed("the ledger is unavailable".into()),
            (false, true) => Probe::NotLanded,
            (false, false) => Probe::Landed(*cents),
        }
    }

    fn paid(&self) -> Vec<u64> {
        self.paid.lock().unwrap().clone()
    }
}

/// What the scripted person does with each form.
#[derive(Clone, Debug)]
enum Says {
    /// Approve, typing the code the form shows.
    Yes,
    Decline,
    /// Settle: the verdict and the evidence, and a value as JSON text.
    Settle(&'static str, Option<String>),
}

/// The client: declares elicitation, answers as scripted, keeps every form's message.
#[derive(Clone)]
struct Person {
    says: Says,
    version: ProtocolVersion,
    forms: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("answers-test", "0.0.0"),
        )
        .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            _ => String::new(),
        };
        self.forms.lock().unwrap().push(message.clone());
        let accept = |content: Value| Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content));
        match &self.says {
            Says::Yes => accept(json!({ "approve": true, "confirm": code_in(&message) })),
            Says::Decline => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Says::Settle(verdict, value) => {
                let mut content = json!({ "verdict": verdict, "evidence": "looked at the card statement" });
                if let Some(value) = value {
                    content["value"] = json!(value);
                }
                accept(content)
            }
        }
    }
}

/// The confirm code a form's message shows.
fn code_in(message: &str) -> String {
    message.split("confirm code ").nth(1).map(|rest| rest[..6].to_owned()).unwrap_or_default()
}

struct Desk {
    server: McpServer,
    bank: Arc<Bank>,
    log: Arc<MemoryJournal>,
}

fn desk(bank: Bank, budget: Duration) -> Desk {
    let bank = Arc::new(bank);
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::clone(&bank), Bank::refund_tool()).unwrap();
    let log = Arc::new(MemoryJournal::new());
    let server = McpServer::builder(toolbox)
        .budget(budget)
        .journal(log.clone())
        .ask_within(Duration::from_secs(5))
        .build()
        .unwrap();
    Desk { server, bank, log }
}

/// A client connected to its own connection of `server`.
async fn client(
    server: &McpServer,
    says: Says,
    version: ProtocolVersion,
) -> (RunningService<RoleClient, Person>, Arc<Mutex<Vec<String>>>) {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    let server = server.clone();
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let forms = Arc::new(Mutex::new(Vec::new()));
    let person = Person { says, version: version.clone(), forms: forms.clone() };
    let client = if version >= ProtocolVersion::V_2026_07_28 {
        let mode = rmcp::service::ClientLifecycleMode::Discover { preferred_versions: vec![version] };
        person.serve_with_lifecycle(client_side, mode).await.expect("the client connects")
    } else {
        person.serve(client_side).await.expect("the client connects")
    };
    (client, forms)
}

fn refund(order: &str, cents: u64) -> CallToolRequestParams {
    let Value::Object(arguments) = json!({ "order": order, "cents": cents }) else { unreachable!() };
    let mut meta = Map::new();
    meta.insert(TASK_META_KEY.to_owned(), json!("ticket-9"));
    meta.insert(ACTOR_META_KEY.to_owned(), json!("alice@desk"));
    let mut params = CallToolRequestParams::new("refund").with_arguments(arguments);
    params.meta = Some(RequestMetaObject::from(meta));
    params
}

fn answered(params: CallToolRequestParams, name: &str, state: &str, answer: Value) -> CallToolRequestParams {
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert(name.to_owned(), answer);
    params.with_input_responses(responses).with_request_state(state)
}

fn report(result: &CallToolResult) -> Value {
    result.structured_content.clone().expect("the report")
}

/// One round by hand (2026-07-28): the input-required answer to `params`.
async fn round(
    client: &RunningService<RoleClient, Person>,
    params: CallToolRequestParams,
) -> InputRequiredResult {
    match client.call_tool_once(params).await.unwrap() {
        CallToolResponse::InputRequired(input) => input,
        other => panic!("input required, got {other:?}"),
    }
}

/// The report of one call by hand that does not ask again.
async fn complete(client: &RunningService<RoleClient, Person>, params: CallToolRequestParams) -> Value {
    match client.call_tool_once(params).await.unwrap() {
        CallToolResponse::Complete(result) => report(&result),
        other => panic!("a report, got {other:?}"),
    }
}

/// The message of the form an input-required answer carries under `name`.
fn form_of(input: &InputRequiredResult, name: &str) -> String {
    let requests = serde_json::to_value(&input.input_requests).unwrap();
    let request = &requests[name];
    request["params"]["message"].as_str().or(request["message"].as_str()).unwrap_or_default().to_owned()
}

/// The person's records of the intent of `order`, in log order: (what the record asks, its step).
fn person_records(log: &MemoryJournal, order: &str) -> Vec<(Asks, ApprovalStep, Record)> {
    let key = tool_contract::key::Intent::new("ticket-9", "alice@desk", "refund", order).key();
    log.records()
        .into_iter()
        .filter(|r| r.intent_key == key && r.phase == Phase::Approval)
        .map(|r| {
            let note = r.approval.clone().unwrap();
            (note.asks, note.step, r)
        })
        .collect()
}

const V2026: ProtocolVersion = ProtocolVersion::V_2026_07_28;

#[tokio::test]
async fn a_no_resent_as_a_yes_changes_nothing_and_is_refused_naming_the_first() {
    let noes = [
        ("decline", json!({ "action": "decline" }), ApprovalStep::Declined),
        ("cancel", json!({ "action": "cancel" }), ApprovalStep::Cancelled),
        (
            "say no",
            json!({ "action": "accept", "content": { "approve": false, "confirm": "000000" } }),
            ApprovalStep::Denied,
        ),
    ];
    for (what, no, step) in noes {
        let desk = desk(Bank::default(), Duration::from_secs(30));
        let (client, _) = client(&desk.server, Says::Yes, V2026).await;
        let order = format!("ord-{}", what.replace(' ', "-"));
        let input = round(&client, refund(&order, 1250)).await;
        let state = input.request_state.clone().expect("a sealed state");
        let code = code_in(&form_of(&input, "approve"));
        assert_eq!(code.len(), 6, "{what}: the form shows a code: {}", form_of(&input, "approve"));
        let first = complete(&client, answered(refund(&order, 1250), "approve", &state, no)).await;
        assert_eq!(
            (first["outcome"].as_str(), first["effect_applied"].as_str()),
            (Some("permanent"), Some("no")),
            "{what}: {first}"
        );
        // The same state, now with a typed yes: refused, naming the first answer; nothing changes.
        let yes = json!({ "action": "accept", "content": { "approve": true, "confirm": code } });
        let again = complete(&client, answered(refund(&order, 1250), "approve", &state, yes)).await;
        let said = again["message"].as_str().unwrap();
        assert!(said.contains(&format!("was answered already: {}", step.as_str())), "{what}: {said}");
        assert!(!again.to_string().contains(&code), "{what}: the code is never in a report: {again}");
        assert_eq!(desk.bank.attempts.load(Ordering::SeqCst), 1, "{what}: no second attempt");
        assert!(desk.bank.paid().is_empty(), "{what}: nothing paid");
        // The log holds the question and the no, and nothing of the refused yes.
        let steps: Vec<ApprovalStep> =
            person_records(&desk.log, &order).into_iter().map(|(_, s, _)| s).collect();
        assert_eq!(steps, [ApprovalStep::Asked, step], "{what}");
    }
}

#[tokio::test]
async fn a_cant_tell_resent_as_landed_changes_nothing_and_is_refused() {
    let desk = desk(Bank { lost: true, ..Bank::default() }, Duration::from_secs(30));
    let (client, _) = client(&desk.server, Says::Yes, V2026).await;
    let first = complete(&client, refund("ord-lost", 1250)).await;
    assert_eq!(first["outcome"], "unknown", "{first}");
    // The next call waits out the landing horizon, then asks whether it landed.
    let input = round(&client, refund("ord-lost", 1250)).await;
    let state = input.request_state.clone().unwrap();
    assert!(form_of(&input, "settle").contains("cents = 1250"), "{}", form_of(&input, "settle"));
    let cant =
        json!({ "action": "accept", "content": { "verdict": "cant_tell", "evidence": "no statement yet" } });
    let unsure = complete(&client, answered(refund("ord-lost", 1250), "settle", &state, cant)).await;
    assert_eq!(unsure["outcome"], "unknown", "{unsure}");
    let landed = json!({ "action": "accept", "content": { "verdict": "landed", "evidence": "forged" } });
    let again = complete(&client, answered(refund("ord-lost", 1250), "settle", &state, landed)).await;
    assert!(again["message"].as_str().unwrap().contains("was answered already: cant_tell"), "{again}");
    assert_eq!(again["outcome"], "unknown", "{again}");
    assert!(desk.log.records().iter().all(|r| r.settled.is_none()), "nobody settled it");
    let steps: Vec<(Asks, ApprovalStep)> =
        person_records(&desk.log, "ord-lost").into_iter().map(|(a, s, _)| (a, s)).collect();
    assert_eq!(steps, [(Asks::Settlement, ApprovalStep::Asked), (Asks::Settlement, ApprovalStep::CantTell)]);
}

#[tokio::test]
async fn an_answer_from_another_connection_is_refused_and_the_question_stays_open() {
    let desk = desk(Bank::default(), Duration::from_secs(30));
    let (asked, _) = client(&desk.server, Says::Yes, V2026).await;
    let (other, _) = client(&desk.server, Says::Yes, V2026).await;
    let input = round(&asked, refund("ord-two", 1250)).await;
    let state = input.request_state.clone().unwrap();
    let yes = json!({ "action": "accept", "content": { "approve": true, "confirm": code_in(&form_of(&input, "approve")) } });
    let replayed = complete(&other, answered(refund("ord-two", 1250), "approve", &state, yes.clone())).await;
    let said = replayed["message"].as_str().unwrap();
    assert!(
        said.contains("was asked in MCP connection") && said.contains("this answer comes from"),
        "{said}"
    );
    assert!(desk.bank.paid().is_empty(), "another connection's yes pays nothing");
    // The connection that was asked answers it: one refund.
    let done = complete(&asked, answered(refund("ord-two", 1250), "approve", &state, yes)).await;
    assert_eq!(done["outcome"], "ok", "{done}");
    assert_eq!(desk.bank.paid(), [1250]);
}

#[tokio::test]
async fn an_approval_for_one_amount_never_pays_another() {
    // 2026-07-28: a state issued for 1250, answered yes on a call for 999999: refused, naming the amount.
    let bank = desk(Bank::default(), Duration::from_secs(30));
    let (asked, _) = client(&bank.server, Says::Yes, V2026).await;
    let input = round(&asked, refund("ord-amount", 1250)).await;
    let form = form_of(&input, "approve");
    assert!(form.contains("It pays again with cents = 1250"), "the question shows the amount: {form}");
    let state = input.request_state.clone().unwrap();
    let yes = json!({ "action": "accept", "content": { "approve": true, "confirm": code_in(&form) } });
    let other = complete(&asked, answered(refund("ord-amount", 999_999), "approve", &state, yes)).await;
    let said = other["message"].as_str().unwrap();
    assert!(said.contains("cents was 1250, is 999999"), "{said}");
    assert!(bank.bank.paid().is_empty(), "{said}");
    let question = &person_records(&bank.log, "ord-amount")[0].2;
    let note = question.approval.as_ref().unwrap();
    assert_eq!(note.shows.get("cents").map(String::as_str), Some("1250"));
    assert_eq!(note.args.as_ref().map(String::len), Some(32), "the question binds the arguments' digest");

    // 2025: a person who declined 1250 is asked anew for 999999, and the form says 999999.
    for version in [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25] {
        let desk = desk(Bank::default(), Duration::from_secs(30));
        let (declines, forms) = client(&desk.server, Says::Decline, version.clone()).await;
        let no = report(&declines.call_tool(refund("ord-amount", 1250)).await.unwrap());
        assert_eq!(no["outcome"], "permanent", "{version:?}: {no}");
        let (approves, more) = client(&desk.server, Says::Yes, version.clone()).await;
        let yes = report(&approves.call_tool(refund("ord-amount", 999_999)).await.unwrap());
        assert_eq!(yes["outcome"], "ok", "{version:?}: {yes}");
        assert!(forms.lock().unwrap()[0].contains("cents = 1250"), "{version:?}");
        assert!(
            more.lock().unwrap()[0].contains("cents = 999999"),
            "{version:?}: the person saw what they paid"
        );
        // The replay says the arguments differ from those the recorded attempt ran with.
        let replay = report(&approves.call_tool(refund("ord-amount", 5)).await.unwrap());
        assert!(
            replay["message"].as_str().unwrap().contains("arguments differ from those attempt"),
            "{replay}"
        );
        assert_eq!(desk.bank.paid(), [999_999], "{version:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_early_not_landed_is_asked_once_and_the_rounds_end() {
    for version in [ProtocolVersion::V_2025_11_25, V2026] {
        // A budget shorter than the landing horizon: the person is asked while the attempt could still
        // land, and their "not landed" cannot count yet.
        let desk = desk(Bank { lost: true, ..Bank::default() }, Duration::from_secs(4));
        let (client, forms) = client(&desk.server, Says::Settle("not_landed", None), version.clone()).await;
        let first = report(&client.call_tool(refund("ord-early", 1250)).await.unwrap());
        assert_eq!(first["outcome"], "unknown", "{version:?}: {first}");
        let second = client.call_tool_with_mrtr_max_rounds(refund("ord-early", 1250), 10).await;
        let second = report(&second.expect("the rounds end before the client's limit"));
        assert_eq!(second["outcome"], "unknown", "{version:?}: {second}");
        let said = second["message"].as_str().unwrap();
        assert!(
            said.contains("may stay in flight") || said.contains("could no longer land"),
            "{version:?}: {said}"
        );
        assert_eq!(forms.lock().unwrap().len(), 1, "{version:?}: asked once: {:?}", forms.lock().unwrap());
        assert_eq!(desk.bank.paid(), [1250], "{version:?}: never a second refund");
        let steps: Vec<ApprovalStep> =
            person_records(&desk.log, "ord-early").into_iter().map(|(_, s, _)| s).collect();
        assert_eq!(steps, [ApprovalStep::Asked, ApprovalStep::NotLanded], "{version:?}");
    }
}

#[tokio::test]
async fn a_megabyte_value_gets_a_bounded_reply() {
    for version in [ProtocolVersion::V_2025_11_25, V2026] {
        let desk = desk(Bank { lost: true, ..Bank::default() }, Duration::from_secs(30));
        let huge = format!("\"{}\"", "x".repeat(1 << 20));
        let (client, _) = client(&desk.server, Says::Settle("landed", Some(huge)), version.clone()).await;
        complete_or_call(&client, &version).await;
        let reply = client.call_tool(refund("ord-huge", 1250)).await.unwrap();
        let text = serde_json::to_string(&reply).unwrap();
        assert!(text.len() < 8 * 1024, "{version:?}: a reply of {} bytes", text.len());
        assert!(text.contains("bytes in all"), "{version:?}: the echo says its length: {text}");
        assert_eq!(report(&reply)["outcome"], "unknown", "{version:?}");
    }
}

/// The first call of `ord-huge`: its attempt lost.
async fn complete_or_call(client: &RunningService<RoleClient, Person>, version: &ProtocolVersion) {
    let first = report(&client.call_tool(refund("ord-huge", 1250)).await.unwrap());
    assert_eq!(first["outcome"], "unknown", "{version:?}: {first}");
}
