//! The person at the client, asked through rmcp's own client over an in-memory pipe, in both protocol
//! eras: `elicitation/create` during the call (2025-06-18, 2025-11-25), and input-required rounds with
//! a sealed request state (2026-07-28). A fake bank counts refunds: never more than one per intent,
//! exactly one after an approval.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData, Implementation,
    ProtocolVersion, RequestId, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ClientServiceExt, ServiceExt};
use serde_json::{Map, Value, json};
use tool_contract::{Call, Class, IntentKey, MemoryJournal, Probe, Toolbox, tool};
use tool_contract_mcp::{ACTOR_META_KEY, McpServer, TASK_META_KEY};

/// A bank that refunds; how its first attempt of each refund fails, if it does.
#[derive(Default)]
struct Bank {
    refunds: Mutex<Vec<IntentKey>>,
    /// Attempts answered `503` (nothing applied) before one goes through.
    busy_for: u32,
    /// The first attempt is applied and its reply lost; the probe cannot read the ledger.
    lost: bool,
    attempts: AtomicU32,
}

impl Bank {
    /// Refund an order.
    #[tool(effect = "money", probe = Self::refunded, target = order)]
    async fn refund(&self, call: &Call, order: String, cents: u64) -> Result<u64, Class> {
        let _ = order;
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if call.attempt() <= self.busy_for {
            return Err(Class::retryable("503: the bank is busy"));
        }
        self.refunds.lock().unwrap().push(call.key());
        if self.lost && call.attempt() == 1 {
            return Err(Class::unknown("the connection dropped after the refund was sent"));
        }
        Ok(cents)
    }

    #[allow(clippy::ptr_arg)]
    async fn refunded(&self, _order: &String, cents: &u64, key: IntentKey) -> Probe<u64> {
        if self.lost {
            return Probe::Failed("the ledger is unavailable".into());
        }
        if self.refunds.lock().unwrap().contains(&key) { Probe::Landed(*cents) } else { Probe::NotLanded }
    }

    fn count(&self) -> usize {
        self.refunds.lock().unwrap().len()
    }
}

/// What the scripted person does with a form.
#[derive(Clone, Debug)]
enum Answer {
    /// Approve, typing the key's end as read from the form's message.
    Approve,
    /// Approve, typing something else.
    WrongConfirm,
    /// Accept the form's defaults: `approve` only.
    Defaults,
    /// Values of the wrong type.
    Garbage,
    Decline,
    Cancel,
    /// Never answer.
    Hang,
    /// Settle landed once released, and not before.
    Held(Arc<tokio::sync::Notify>),
    /// Settle: the verdict word and the evidence.
    Settle(&'static str, &'static str),
    /// Settle landed, naming the value as JSON text.
    SettleWith(&'static str),
}

/// The client: declares elicitation (or not) and answers as scripted, counting the forms.
#[derive(Clone)]
struct Person {
    answer: Answer,
    elicits: bool,
    version: ProtocolVersion,
    forms: Arc<Mutex<Vec<String>>>,
    /// The id of each `elicitation/create` the server sent, and each `notifications/cancelled` it sent.
    asked: Arc<Mutex<Vec<RequestId>>>,
    withdrawn: Arc<Mutex<Vec<CancelledNotificationParam>>>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.elicits {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("person-test", "0.0.0"))
            .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.lock().unwrap().push(context.id.clone());
        let message = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            _ => String::new(),
        };
        self.forms.lock().unwrap().push(message.clone());
        // The confirm code, as the person reads it in the message.
        let end = code_in(&message);
        let accept = |content: Value| Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content));
        match &self.answer {
            Answer::Approve => accept(json!({ "approve": true, "confirm": end })),
            Answer::WrongConfirm => accept(json!({ "approve": true, "confirm": "abcdef" })),
            Answer::Defaults => accept(json!({ "approve": true })),
            Answer::Garbage => accept(json!({ "approve": "yes", "confirm": 42 })),
            Answer::Decline => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Answer::Cancel => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Answer::Hang => std::future::pending().await,
            Answer::Held(release) => {
                release.notified().await;
                accept(json!({ "verdict": "landed", "evidence": "refund of 12.99 on the card statement" }))
            }
            Answer::Settle(verdict, evidence) => accept(json!({ "verdict": verdict, "evidence": evidence })),
            Answer::SettleWith(value) => {
                accept(json!({ "verdict": "landed", "evidence": "on the statement", "value": value }))
            }
        }
    }

    async fn on_cancelled(
        &self,
        params: CancelledNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.withdrawn.lock().unwrap().push(params);
    }
}

/// The confirm code an approval form's message shows.
fn code_in(message: &str) -> String {
    message.split("confirm code ").nth(1).map(|rest| rest[..6].to_owned()).unwrap_or_default()
}

struct Setup {
    client: RunningService<RoleClient, Person>,
    bank: Arc<Bank>,
    forms: Arc<Mutex<Vec<String>>>,
    asked: Arc<Mutex<Vec<RequestId>>>,
    withdrawn: Arc<Mutex<Vec<CancelledNotificationParam>>>,
    log: Arc<MemoryJournal>,
}

async fn connect(
    bank: Bank,
    person: Answer,
    elicits: bool,
    version: ProtocolVersion,
    within: Duration,
) -> Setup {
    connect_with_budget(bank, person, elicits, version, within, Duration::from_secs(30)).await
}

async fn connect_with_budget(
    bank: Bank,
    person: Answer,
    elicits: bool,
    version: ProtocolVersion,
    within: Duration,
    budget: Duration,
) -> Setup {
    let bank = Arc::new(bank);
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::clone(&bank), Bank::refund_tool()).unwrap();
    let log = Arc::new(MemoryJournal::new());
    let server =
        McpServer::builder(toolbox).budget(budget).journal(log.clone()).ask_within(within).build().unwrap();
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let (forms, asked, withdrawn) = (Arc::default(), Arc::default(), Arc::default());
    let person = Person {
        answer: person,
        elicits,
        version: version.clone(),
        forms: Arc::clone(&forms),
        asked: Arc::clone(&asked),
        withdrawn: Arc::clone(&withdrawn),
    };
    let client = if version >= ProtocolVersion::V_2026_07_28 {
        let mode = rmcp::service::ClientLifecycleMode::Discover { preferred_versions: vec![version] };
        person.serve_with_lifecycle(client_side, mode).await.expect("the client connects")
    } else {
        person.serve(client_side).await.expect("the client connects")
    };
    Setup { client, bank, forms, asked, withdrawn, log }
}

fn refund(order: &str) -> CallToolRequestParams {
    let Value::Object(arguments) = json!({ "order": order, "cents": 1299 }) else { unreachable!() };
    let mut meta = Map::new();
    meta.insert(TASK_META_KEY.to_owned(), json!("ticket-7"));
    meta.insert(ACTOR_META_KEY.to_owned(), json!("alice@desk"));
    let mut params = CallToolRequestParams::new("refund").with_arguments(arguments);
    params.meta = Some(RequestMetaObject::from(meta));
    params
}

fn report(result: &CallToolResult) -> Value {
    result.structured_content.clone().expect("the report")
}

const ERAS: [ProtocolVersion; 3] =
    [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28];

/// A refund whose first attempt the bank refused as busy: the second needs the person's yes.
async fn busy_refund(answer: Answer, elicits: bool, version: ProtocolVersion) -> (Value, Setup) {
    let bank = Bank { busy_for: 1, ..Bank::default() };
    let setup = connect(bank, answer, elicits, version, Duration::from_secs(5)).await;
    let result = setup.client.call_tool(refund("ord-1")).await.expect("the call answers");
    (report(&result), setup)
}

#[tokio::test]
async fn an_approval_with_the_keys_end_makes_exactly_one_refund_in_every_era() {
    for version in ERAS {
        let (report, setup) = busy_refund(Answer::Approve, true, version.clone()).await;
        assert_eq!(report["outcome"], "ok", "{version:?}: {report}");
        assert_eq!(setup.bank.count(), 1, "{version:?}: exactly one refund after an approval");
        // Journaled with the attempt it allowed.
        let starts: Vec<_> =
            setup.log.records().into_iter().filter(|r| r.attempt == 2 && r.message.is_some()).collect();
        let journaled = starts.iter().filter_map(|r| r.message.as_deref()).collect::<Vec<_>>();
        assert_eq!(
            journaled.first().copied(),
            Some("approved by alice@desk (the person at the MCP client) before attempt 2"),
            "{version:?}: {journaled:?}"
        );
        assert_eq!(setup.bank.attempts.load(Ordering::SeqCst), 2, "{version:?}");
        let forms = setup.forms.lock().unwrap();
        assert_eq!(forms.len(), 1, "{version:?}: one form");
        assert!(
            forms[0].contains(report["idempotency_key"].as_str().unwrap()),
            "the form shows the key: {}",
            forms[0]
        );
        assert!(forms[0].contains("503: the bank is busy"), "and what the first attempt left: {}", forms[0]);
    }
}

#[tokio::test]
async fn anything_but_a_typed_yes_is_a_no_and_nothing_is_attempted() {
    let cases = [
        (Answer::Decline, true, "declined"),
        (Answer::Cancel, true, "cancelled"),
        (Answer::Defaults, true, "`confirm` was not typed"),
        (Answer::WrongConfirm, true, "does not match"),
        (Answer::Garbage, true, "not an answer"),
        (Answer::Approve, false, "no person could be asked"),
    ];
    for version in ERAS {
        for (answer, elicits, says) in cases.clone() {
            let (report, setup) = busy_refund(answer.clone(), elicits, version.clone()).await;
            let context = format!("{version:?} {answer:?}: {report}");
            assert_eq!(
                (report["outcome"].as_str(), report["effect_applied"].as_str()),
                (Some("permanent"), Some("no")),
                "{context}"
            );
            assert!(report["message"].as_str().unwrap().contains(says), "{context}");
            assert_eq!(setup.bank.attempts.load(Ordering::SeqCst), 1, "{context}: no second attempt");
            assert_eq!(setup.bank.count(), 0, "{context}");
        }
    }
}

/// A budget shorter than the server's wait for a form, and one longer.
const UNANSWERED: [(Duration, Duration); 2] =
    [(Duration::from_secs(5), Duration::from_secs(50)), (Duration::from_secs(30), Duration::from_secs(2))];

/// The person at the client never answers the form of a call of `bank`'s refund: the report, how long
/// the call took, and the setup.
async fn unanswered(bank: Bank, budget: Duration, within: Duration) -> (Value, Duration, Setup) {
    let lost = bank.lost;
    let setup =
        connect_with_budget(bank, Answer::Hang, true, ProtocolVersion::V_2025_11_25, within, budget).await;
    if lost {
        // The call that made the attempt asks nobody; the next one asks.
        setup.client.call_tool(refund("ord-1")).await.unwrap();
    }
    let started = tokio::time::Instant::now();
    let report = report(&setup.client.call_tool(refund("ord-1")).await.unwrap());
    let took = started.elapsed();
    // The withdrawal may follow the report: wait for it (on the paused clock, at no cost).
    for _ in 0..100 {
        if !setup.withdrawn.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (report, took, setup)
}

/// The form the person never answered is withdrawn: `notifications/cancelled` naming its request id.
fn assert_withdrawn(setup: &Setup, context: &str) {
    let asked = setup.asked.lock().unwrap().clone();
    let withdrawn = setup.withdrawn.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{context}: one form");
    let ids: Vec<_> = withdrawn.iter().map(|w| w.request_id.clone()).collect();
    assert_eq!(ids, vec![Some(asked[0].clone())], "{context}: the form withdrawn, once");
}

#[tokio::test(start_paused = true)]
async fn a_person_who_does_not_answer_in_time_has_not_approved_and_the_form_is_withdrawn() {
    for (budget, within) in UNANSWERED {
        let bank = Bank { busy_for: 1, ..Bank::default() };
        let (report, took, setup) = unanswered(bank, budget, within).await;
        let context = format!("budget {budget:?}, form {within:?}: {report}");
        assert_eq!(
            (report["outcome"].as_str(), report["effect_applied"].as_str()),
            (Some("permanent"), Some("no")),
            "{context}"
        );
        let message = report["message"].as_str().unwrap();
        assert!(
            message.contains(
                "a second attempt was not approved: alice@desk (the person at the MCP client) did not answer \
                 in time"
            ),
            "{context}"
        );
        assert!(took <= budget, "{context}: answered after {took:?}");
        assert_eq!(setup.bank.attempts.load(Ordering::SeqCst), 1, "{context}");
        assert_withdrawn(&setup, &context);
    }
}

#[tokio::test(start_paused = true)]
async fn a_person_who_does_not_answer_in_time_leaves_the_refund_in_doubt_and_the_form_is_withdrawn() {
    for (budget, within) in UNANSWERED {
        let bank = Bank { lost: true, ..Bank::default() };
        let (report, took, setup) = unanswered(bank, budget, within).await;
        let context = format!("budget {budget:?}, form {within:?}: {report}");
        assert_eq!(report["outcome"], "unknown", "{context}");
        let message = report["message"].as_str().unwrap();
        assert!(
            message.contains("alice@desk (the person at the MCP client) did not answer in time"),
            "{context}"
        );
        assert!(took <= budget, "{context}: answered after {took:?}");
        assert_eq!(setup.bank.count(), 1, "{context}");
        assert_eq!(setup.log.unresolved_now().len(), 1, "{context}: still in doubt");
        assert_withdrawn(&setup, &context);
    }
}

/// One round by hand: the input-required answer to a call of `order`.
async fn round(setup: &Setup, order: &str) -> rmcp::model::InputRequiredResult {
    match setup.client.call_tool_once(refund(order)).await.unwrap() {
        CallToolResponse::InputRequired(input) => input,
        other => panic!("input required, got {other:?}"),
    }
}

/// The confirm code the approval form of an input-required answer shows.
fn code_of(input: &rmcp::model::InputRequiredResult) -> String {
    let requests = serde_json::to_value(&input.input_requests).unwrap();
    code_in(
        requests["approve"]["params"]["message"]
            .as_str()
            .or(requests["approve"]["message"].as_str())
            .unwrap_or(""),
    )
}

fn answered(order: &str, state: &str, answer: Value) -> CallToolRequestParams {
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert("approve".to_owned(), answer);
    refund(order).with_input_responses(responses).with_request_state(state)
}

#[tokio::test]
async fn a_request_state_approves_one_attempt_of_one_intent_and_a_changed_byte_nothing() {
    // The bank is busy for the first two attempts: the approved attempt 2 fails too.
    let bank = Bank { busy_for: 2, ..Bank::default() };
    let setup =
        connect(bank, Answer::Approve, true, ProtocolVersion::V_2026_07_28, Duration::from_secs(5)).await;
    let input = round(&setup, "ord-1").await;
    let state = input.request_state.clone().expect("a sealed state");
    let yes = json!({ "action": "accept", "content": { "approve": true, "confirm": code_of(&input) } });

    // A changed byte: refused, nothing attempted.
    let mut tampered = state.clone().into_bytes();
    let at = tampered.len() / 2;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let refused = setup.client.call_tool_once(answered("ord-1", &tampered, yes.clone())).await;
    assert!(refused.is_err(), "a changed byte is refused: {refused:?}");
    assert_eq!(setup.bank.attempts.load(Ordering::SeqCst), 1);

    // The answer: attempt 2 is made (and the bank is busy again).
    let done = setup.client.call_tool_once(answered("ord-1", &state, yes.clone())).await.unwrap();
    let CallToolResponse::Complete(done) = done else { panic!("a report, got {done:?}") };
    assert_eq!(setup.bank.attempts.load(Ordering::SeqCst), 2, "{}", report(&done));
    // Replayed: the question was answered, and attempt 2 made; attempt 3 is not approved by it.
    let replayed = setup.client.call_tool_once(answered("ord-1", &state, yes.clone())).await.unwrap();
    let CallToolResponse::Complete(replayed) = replayed else { panic!("a report, got {replayed:?}") };
    let said = report(&replayed)["message"].as_str().unwrap().to_owned();
    assert!(said.contains("was answered already: approved by alice@desk"), "{said}");
    assert_eq!(setup.bank.attempts.load(Ordering::SeqCst), 2, "nothing attempted on a replay");

    // Moved to another intent (another order of the same task and tool, at its own approval).
    let other = round(&setup, "ord-2").await;
    assert!(other.request_state.is_some());
    let attempts = setup.bank.attempts.load(Ordering::SeqCst);
    let moved = setup.client.call_tool_once(answered("ord-2", &state, yes)).await.unwrap();
    let CallToolResponse::Complete(moved) = moved else { panic!("a report, got {moved:?}") };
    assert!(report(&moved)["message"].as_str().unwrap().contains("another intent"), "{}", report(&moved));
    assert_eq!(setup.bank.attempts.load(Ordering::SeqCst), attempts, "nothing attempted with a moved state");
    assert_eq!(setup.bank.count(), 0);
}

#[tokio::test]
async fn the_next_call_of_a_lost_refund_asks_the_person_whether_it_landed() {
    for version in ERAS {
        let bank = Bank { lost: true, ..Bank::default() };
        let found = Answer::Settle("landed", "refund of 12.99 on the card statement");
        let setup = connect(bank, found, true, version.clone(), Duration::from_secs(5)).await;
        let first = report(&setup.client.call_tool(refund("ord-1")).await.unwrap());
        assert_eq!(first["outcome"], "unknown", "{version:?}: {first}");
        assert!(
            setup.forms.lock().unwrap().is_empty(),
            "{version:?}: the call that made the attempt asks nobody"
        );
        let second = report(&setup.client.call_tool(refund("ord-1")).await.unwrap());
        assert_eq!(
            (second["outcome"].as_str(), second["effect_applied"].as_str()),
            (Some("ok"), Some("yes")),
            "{version:?}: {second}"
        );
        assert!(
            second["message"].as_str().unwrap().contains("settled landed by alice@desk via client"),
            "{second}"
        );
        assert_eq!(setup.bank.count(), 1, "{version:?}: never a second refund");
        assert_eq!(setup.forms.lock().unwrap().len(), 1);
        let key: IntentKey = serde_json::from_value(second["idempotency_key"].clone()).unwrap();
        let settled = setup.log.recall_now(&key).unwrap();
        let settlement = settled.settlement().expect("a settlement in the log").clone();
        assert_eq!(
            (settlement.by.as_str(), settlement.via),
            ("alice@desk", tool_contract::journal::Via::Client)
        );
        // And a later call answers from it, asking nobody.
        let third = report(&setup.client.call_tool(refund("ord-1")).await.unwrap());
        assert_eq!(third["outcome"], "ok");
        assert_eq!(setup.forms.lock().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn a_person_who_cannot_tell_leaves_the_refund_in_doubt() {
    let bank = Bank { lost: true, ..Bank::default() };
    let answer = Answer::Settle("cant_tell", "the statement is not out yet");
    let setup = connect(bank, answer, true, ProtocolVersion::V_2025_11_25, Duration::from_secs(5)).await;
    setup.client.call_tool(refund("ord-1")).await.unwrap();
    let second = report(&setup.client.call_tool(refund("ord-1")).await.unwrap());
    assert_eq!(second["outcome"], "unknown", "{second}");
    assert!(second["message"].as_str().unwrap().contains("the statement is not out yet"), "{second}");
    assert_eq!(setup.bank.count(), 1);
    assert_eq!(setup.log.unresolved_now().len(), 1, "still in doubt");
}

#[tokio::test]
async fn a_value_the_person_gives_is_checked_against_the_tools_type() {
    for (value, outcome, says) in
        [("1299", "ok", "settled landed"), ("\"lots\"", "unknown", "not a value of refund")]
    {
        let bank = Bank { lost: true, ..Bank::default() };
        let setup = connect(
            bank,
            Answer::SettleWith(value),
            true,
            ProtocolVersion::V_2025_11_25,
            Duration::from_secs(5),
        )
        .await;
        setup.client.call_tool(refund("ord-1")).await.unwrap();
        let second = report(&setup.client.call_tool(refund("ord-1")).await.unwrap());
        assert_eq!(second["outcome"], outcome, "{value}: {second}");
        assert!(second["message"].as_str().unwrap().contains(says), "{value}: {second}");
        if outcome == "ok" {
            assert_eq!(second["value"], 1299, "the settled value: {second}");
        } else {
            assert_eq!(setup.log.unresolved_now().len(), 1, "nothing recorded: still in doubt");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn while_the_person_is_asked_no_other_call_of_the_intent_starts_an_attempt() {
    let release = Arc::new(tokio::sync::Notify::new());
    let bank = Bank { lost: true, ..Bank::default() };
    let answer = Answer::Held(Arc::clone(&release));
    let setup = connect(bank, answer, true, ProtocolVersion::V_2025_11_25, Duration::from_secs(50)).await;
    let first = report(&setup.client.call_tool(refund("ord-1")).await.unwrap());
    assert_eq!(first["outcome"], "unknown", "{first}");
    let in_doubt = first["attempt_id"].as_str().unwrap().to_owned();

    // The asking call: its question stays open until released.
    let peer = setup.client.peer().clone();
    let asking = tokio::spawn(async move { peer.call_tool(refund("ord-1")).await });
    while setup.forms.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Another call of the same intent (another task object, the same log) while the question is open.
    let peer = setup.client.peer().clone();
    let other = tokio::spawn(async move { peer.call_tool(refund("ord-1")).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(setup.bank.attempts.load(Ordering::SeqCst), 1, "no attempt while the person is asked");
    let starts = |setup: &Setup| {
        setup.log.records().iter().filter(|r| r.phase == tool_contract::journal::Phase::Start).count()
    };
    assert_eq!(starts(&setup), 1, "no start record either");
    assert_eq!(setup.forms.lock().unwrap().len(), 1, "and no second question");

    release.notify_one();
    let asked = report(&asking.await.unwrap().unwrap());
    assert_eq!(
        (asked["outcome"].as_str(), asked["attempt_id"].as_str()),
        (Some("ok"), Some(in_doubt.as_str())),
        "{asked}"
    );
    // The other call waited its turn and answers from the settlement (or, had it not waited, reported
    // the intent busy); either way it asked nobody and attempted nothing.
    let other = report(&other.await.unwrap().unwrap());
    let busy = other["outcome"] != "ok" && other["effect_applied"] != "yes";
    assert!(busy || other["attempt_id"] == in_doubt.as_str(), "{other}");
    assert_eq!(setup.forms.lock().unwrap().len(), 1);
    assert_eq!((setup.bank.attempts.load(Ordering::SeqCst), setup.bank.count()), (1, 1));
    assert_eq!(starts(&setup), 1);
    // Exactly one settlement, on the attempt the person was asked about.
    let settlements: Vec<_> =
        setup.log.records().into_iter().filter_map(|r| r.settled.map(|_| r.attempt_id)).collect();
    assert_eq!(settlements, vec![in_doubt], "one settlement, on the attempt in doubt");
}
