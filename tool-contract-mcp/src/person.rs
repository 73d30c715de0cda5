//! The person at the MCP client, asked through it: before a second attempt of a `money` call, and when
//! a call resumes an intent in doubt whose probe still cannot tell whether it landed.
//!
//! How the person is reached depends on the protocol the client speaks:
//!
//! - **2025-06-18, 2025-11-25** (the `initialize` era), a client that declared elicitation: the server
//!   sends `elicitation/create` during the call and waits for the answer (at most
//!   [`ASK_WITHIN`](crate::ASK_WITHIN) by default, shorter than a client's own request timeout, and
//!   never past the call's budget). A form the call stops waiting for (no answer in time, the budget
//!   spent, the call cancelled) is withdrawn with `notifications/cancelled` naming its request id.
//! - **2026-07-28**: a server may not send requests of its own. The call answers *input required*:
//!   the form, and a request state sealed with the server's key (HMAC, expiring) that names the
//!   question. The client retries the call with the answer and the state; a state that does not open
//!   (another server's, a changed byte, expired) is refused with nothing attempted.
//! - A client that declared no elicitation: nobody can be asked, and a person who cannot be asked has
//!   not approved.
//!
//! Either way the question is the engine's: recorded in the attempt log before it is asked (an id
//! issued once, the arguments it shows and binds, where it was asked), and its answer recorded before
//! anything acts on it, the no's included. In the 2026-07-28 era the answer comes with a later call,
//! and the engine takes it only to that question, still open, asked in the same session (or
//! connection, or credential), about the same arguments: a second answer to it, whatever it says, is
//! refused naming the first.
//!
//! The approval form asks for `approve` (yes or no) and `confirm`, a code of 6 digits drawn at random
//! for the question and shown in the form's message (never derived from the intent key, never in a
//! report): a client that accepts a form's defaults approves nothing. It does not stop a client that
//! forges answers: such a client sees every question it relays. For a client that is not trusted, the
//! person answers through the log (`Builder::approver` with a `LogApprover`, and the operator console).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CancelledNotificationParam, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, InputRequest, InputRequests, InputRequiredResult, RequestId,
    RequestStateCodec, SealOptions, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_contract::journal::{Asks, BoxFuture, Verdict, Via};
use tool_contract::person::{Approval, ApprovalRequest, Approve, Found, InDoubt, Settle};

/// How long a sealed request state stays good, and a question asked over rounds stays open.
pub(crate) const STATE_TTL: Duration = Duration::from_secs(15 * 60);

/// The input request's name for an approval, and for a settlement.
const APPROVE: &str = "approve";
const SETTLE: &str = "settle";

/// How the person at this call's client can be reached.
#[derive(Clone)]
pub(crate) enum Reach {
    /// `elicitation/create` to the client, answered within the duration.
    Elicit(Peer<RoleServer>, Duration),
    /// Input required, over rounds of the same call (2026-07-28).
    Rounds,
    /// Through the call's MCP task: `input_required`, answered with `tasks/update`, while the call
    /// waits.
    Task,
    /// Nobody: why.
    Nobody(&'static str),
}

/// What the sealed request state of a round carries: the question it answers, and what this call's
/// rounds asked so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    /// The question's id, as the attempt log records it.
    question: String,
    /// `approve` or `settle`: the input request's name.
    kind: String,
    /// The confirm code the approval form showed (empty for a settle form).
    code: String,
    /// When the question went to the client, RFC 3339 UTC: the person saw the attempt no sooner.
    asked_at: String,
    /// The questions this call's rounds asked before (`settle:1`, `approve:1`): none is asked twice.
    asked: Vec<String>,
}

impl Sealed {
    /// The input request's name this state answers.
    pub(crate) fn kind(&self) -> &str {
        &self.kind
    }
}

/// A question the engine asked this round, to be sent as input required: its form, and the state that
/// names it.
#[derive(Debug, Clone)]
struct Asked {
    form: ElicitRequestParams,
    sealed: Sealed,
}

/// The person at one call's client: an [`Approve`] for the engine.
#[derive(Clone)]
pub(crate) struct Person {
    inner: Arc<Inner>,
}

struct Inner {
    reach: Reach,
    /// Who the client's person acts for: the request's actor.
    actor: String,
    /// Where they are asked: the HTTP session, the credential, or the connection the call came on.
    asked_in: String,
    /// What the retried call carries: the opened state and the answer given.
    carried: Option<(Sealed, Option<Value>)>,
    /// What the engine asked that must go to the client as input required.
    asked: Mutex<Option<Asked>>,
}

impl Person {
    pub(crate) fn new(
        reach: Reach,
        actor: String,
        asked_in: String,
        carried: Option<(Sealed, Option<Value>)>,
    ) -> Person {
        Person { inner: Arc::new(Inner { reach, actor, asked_in, carried, asked: Mutex::new(None) }) }
    }

    /// The input-required answer for the question the engine asked this round, if it asked one and
    /// the person is reached over rounds.
    pub(crate) fn input_required(
        &self,
        codec: &RequestStateCodec,
        bound: &str,
    ) -> Option<Result<InputRequiredResult, String>> {
        let Asked { form, sealed } = self.inner.asked.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        let options = SealOptions::new().associated_data(bound.as_bytes()).ttl(STATE_TTL);
        let state = match codec.seal_json_with(&sealed, &options) {
            Ok(state) => state,
            Err(e) => return Some(Err(e.to_string())),
        };
        let mut requests = InputRequests::new();
        requests.insert(sealed.kind.clone(), InputRequest::Elicitation(ElicitRequest::new(form)));
        Some(Ok(InputRequiredResult::new(Some(requests), Some(state))))
    }

    /// The answer the retried call carries for `kind`: the opened state and the input response, if it
    /// carries one for that kind.
    fn carried(&self, kind: &str) -> Option<&(Sealed, Option<Value>)> {
        self.inner.carried.as_ref().filter(|(sealed, _)| sealed.kind == kind)
    }

    /// The questions this call's rounds asked so far, with `kind` about `attempt` added.
    fn asked_so_far(&self, kind: &str, attempt: &str) -> Vec<String> {
        let mut asked =
            self.inner.carried.as_ref().map(|(sealed, _)| sealed.asked.clone()).unwrap_or_default();
        asked.push(format!("{kind}:{attempt}"));
        asked
    }

    /// Send `form` to the client over rounds: the answer comes with the next call.
    fn ask_later(&self, kind: &str, question: &str, about: &str, code: String, form: ElicitRequestParams) {
        let sealed = Sealed {
            question: question.to_owned(),
            kind: kind.to_owned(),
            code,
            asked_at: tool_contract::unstable::rfc3339(tool_contract::unstable::wall_clock()),
            asked: self.asked_so_far(kind, about),
        };
        *self.inner.asked.lock().unwrap_or_else(|e| e.into_inner()) = Some(Asked { form, sealed });
    }

    /// Ask now (elicitation, or through the call's task under `key`): the person's answer, or why
    /// there is none.
    async fn elicit(&self, form: ElicitRequestParams, key: String) -> Result<ElicitResult, Unanswered> {
        if let Reach::Task = &self.inner.reach {
            let request = json!({ "method": "elicitation/create", "params": form });
            let answer = tool_contract::unstable::ask_now(&key, request)
                .await
                .map_err(|class| Unanswered::Not(class.message().to_owned()))?;
            return serde_json::from_value(answer).map_err(|_| {
                Unanswered::Not("the client answered the form with something else: not an answer".into())
            });
        }
        let Reach::Elicit(peer, within) = &self.inner.reach else {
            return Err(Unanswered::Not("the person at the client cannot be asked during the call".into()));
        };
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(form));
        let sent = peer.send_request_with_option(request, PeerRequestOptions::with_timeout(*within));
        let handle = match sent.await {
            Ok(handle) => handle,
            Err(e) => {
                return Err(Unanswered::Not(format!("the person at the client could not be asked ({e})")));
            }
        };
        // Withdrawn if this wait is abandoned (the call's budget ran out, the client cancelled the call):
        // rmcp withdraws a question only on its own timeout.
        let open = Open { peer: peer.clone(), id: Some(handle.id.clone()) };
        let answer = handle.await_response().await;
        open.closed();
        match answer {
            Ok(ClientResult::ElicitResult(answer)) => Ok(answer),
            Ok(_) => {
                Err(Unanswered::Not("the client answered the form with something else: not an answer".into()))
            }
            Err(rmcp::ServiceError::Timeout { .. }) => Err(Unanswered::InTime(format!(
                "{} did not answer in time (within {})",
                self.who(),
                secs(*within)
            ))),
            Err(e) => Err(Unanswered::Not(format!("the person at the client could not be asked ({e})"))),
        }
    }
}

/// Why a form brought no answer.
enum Unanswered {
    /// None came in time.
    InTime(String),
    /// It could not be asked, or what came back is not an answer.
    Not(String),
}

/// An `elicitation/create` the client has not answered yet. Dropped before it is closed (its wait
/// abandoned), it withdraws the question with `notifications/cancelled`, so a client that would show the
/// form late does not hold the agent past the call's budget.
struct Open {
    peer: Peer<RoleServer>,
    /// The request's id, until it is answered.
    id: Option<RequestId>,
}

impl Open {
    /// The request was answered (or rmcp withdrew it on its own timeout): nothing to withdraw.
    fn closed(mut self) {
        self.id = None;
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        // Outside a runtime (one shutting down) the client goes with it: nothing to tell.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let peer = self.peer.clone();
        let reason = "the question was withdrawn: the call no longer waits for its answer".to_owned();
        runtime.spawn(async move {
            let _ = peer.notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason))).await;
        });
    }
}

/// A duration as seconds with one decimal, as the engine's reports write it.
fn secs(d: Duration) -> String {
    let tenths = d.as_millis() / 100;
    format!("{}.{}s", tenths / 10, tenths % 10)
}

/// A confirm code: 6 digits from the operating system's generator, drawn for one question.
fn confirm_code() -> String {
    let mut bytes = [0u8; 8];
    // Without the system's generator no code can be drawn that a client could not guess: then none
    // can be typed, and the form approves nothing.
    if getrandom::fill(&mut bytes).is_err() {
        return String::new();
    }
    format!("{:06}", u64::from_le_bytes(bytes) % 1_000_000)
}

impl Approve for Person {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let attempt = request.next_attempt.saturating_sub(1).to_string();
            match &self.inner.reach {
                Reach::Nobody(why) => Approval::Denied((*why).to_owned()),
                Reach::Rounds => match self.carried(APPROVE) {
                    // The engine took the carried answer to this question: judge it.
                    Some((sealed, answer)) if sealed.question == request.question => match answer {
                        Some(answer) => judge_approval(answer, &sealed.code),
                        None => Approval::Unanswered("the retried call carries no answer".into()),
                    },
                    _ => {
                        let code = confirm_code();
                        let form = approval_form(request, &code);
                        self.ask_later(APPROVE, &request.question, &attempt, code, form);
                        Approval::Later
                    }
                },
                Reach::Elicit(..) | Reach::Task => {
                    let code = confirm_code();
                    let key = format!("{APPROVE}-a{}.{}", request.next_attempt, request.question);
                    match self.elicit(approval_form(request, &code), key).await {
                        Ok(answer) => {
                            judge_approval(&serde_json::to_value(answer).unwrap_or(Value::Null), &code)
                        }
                        Err(Unanswered::InTime(why)) => Approval::Unanswered(why),
                        Err(Unanswered::Not(why)) => Approval::Denied(why),
                    }
                }
            }
        })
    }

    fn who(&self) -> String {
        format!("{} (the person at the MCP client)", self.inner.actor)
    }

    fn reach(&self, asks: Asks, attempt: u32) -> Result<(), Option<String>> {
        if let Reach::Nobody(why) = &self.inner.reach {
            // Nobody to settle with says nothing more; a money retry says why it was not approved.
            return Err((asks == Asks::Approval).then(|| (*why).to_owned()));
        }
        // One question per attempt per call: a call's rounds never ask the same question twice.
        let kind = if asks == Asks::Approval { APPROVE } else { SETTLE };
        let carried = self.inner.carried.as_ref().map(|(sealed, _)| sealed);
        let this = format!("{kind}:{attempt}");
        match carried {
            Some(sealed) if sealed.asked.contains(&this) && sealed.kind != kind => Err(Some(format!(
                "the person at the client was asked about attempt {attempt} in this call already, and is not \
                 asked again in it"
            ))),
            _ => Ok(()),
        }
    }

    fn asked_in(&self) -> String {
        self.inner.asked_in.clone()
    }

    fn open_for(&self, left: Duration) -> Duration {
        match self.inner.reach {
            Reach::Rounds => STATE_TTL,
            _ => left,
        }
    }

    fn carries(&self, asks: Asks) -> Option<String> {
        let kind = if asks == Asks::Approval { APPROVE } else { SETTLE };
        self.carried(kind).map(|(sealed, _)| sealed.question.clone())
    }

    fn settle<'a>(&'a self, question: &'a InDoubt) -> BoxFuture<'a, Found> {
        Box::pin(async move {
            let attempt = question.attempt_id.rsplit_once("-a").map_or("", |(_, n)| n).to_owned();
            match &self.inner.reach {
                Reach::Nobody(why) => Found::Unanswered((*why).to_owned()),
                Reach::Rounds => match self.carried(SETTLE) {
                    Some((sealed, answer)) if sealed.question == question.question => match answer {
                        Some(answer) => judge_settlement(answer, &question.actor, Some(&sealed.asked_at)),
                        None => Found::Unanswered("the retried call carries no answer".into()),
                    },
                    _ => {
                        self.ask_later(
                            SETTLE,
                            &question.question,
                            &attempt,
                            String::new(),
                            settle_form(question),
                        );
                        Found::Later
                    }
                },
                Reach::Elicit(..) | Reach::Task => match self
                    .elicit(settle_form(question), format!("{SETTLE}-a{attempt}.{}", question.question))
                    .await
                {
                    Ok(answer) => judge_settlement(
                        &serde_json::to_value(answer).unwrap_or(Value::Null),
                        &question.actor,
                        None,
                    ),
                    Err(Unanswered::InTime(why)) => Found::Unanswered(why),
                    Err(Unanswered::Not(why)) => Found::Unanswered(why),
                },
            }
        })
    }
}

fn approval_form(request: &ApprovalRequest, code: &str) -> ElicitRequestParams {
    let shown = match request.shown() {
        shown if shown.is_empty() => String::new(),
        shown => format!(" It pays again with {shown}."),
    };
    let message = format!(
        "Approve a second attempt (attempt {}) of {} for task {}? Money may move again.{shown} Intent key {}. \
         What happened so far, quoting the tool and its service (words no one checked): \u{201c}{}\u{201d}. To \
         approve, say yes and type the confirm code {code}.",
        request.next_attempt,
        request.call,
        request.task,
        request.key,
        tool_contract::unstable::cut(&request.history)
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "approve": { "type": "boolean", "title": "Approve the second attempt" },
            "confirm": {
                "type": "string",
                "title": "The confirm code the message shows",
                "description": "typed by you: a form's defaults approve nothing",
                "minLength": 6,
                "maxLength": 6
            }
        },
        "required": ["approve", "confirm"]
    });
    form(message, schema)
}

fn settle_form(question: &InDoubt) -> ElicitRequestParams {
    let shown = match question.shown() {
        shown if shown.is_empty() => String::new(),
        shown => format!(" It was called with {shown}."),
    };
    let message = format!(
        "Did {} land (task {}, attempt {}, intent key {})?{shown} The code cannot tell. What happened so far, \
         quoting the tool and its service (words no one checked): \u{201c}{}\u{201d}. Look at the world \
         and say what you found, and where.",
        question.call,
        question.task,
        question.attempt_id,
        question.key,
        tool_contract::unstable::cut(&question.history)
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "verdict": {
                "type": "string",
                "title": "What you found",
                "enum": ["landed", "not_landed", "cant_tell"]
            },
            "evidence": {
                "type": "string",
                "title": "Evidence",
                "description": "what you saw, and where (at most 1 KiB)",
                "maxLength": 1024
            },
            "value": {
                "type": "string",
                "title": "What it returned (optional)",
                "description": "if it landed and you know its result: the tool's value, as JSON"
            }
        },
        "required": ["verdict", "evidence"]
    });
    form(message, schema)
}

fn form(message: String, schema: Value) -> ElicitRequestParams {
    // Both schemas are written above in the form MCP's elicitation takes; they always read.
    let requested_schema: ElicitationSchema =
        serde_json::from_value(schema).unwrap_or_else(|_| ElicitationSchema::builder().build_unchecked());
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema }
}

/// An answer as an elicitation result: its action and content.
fn read(answer: &Value) -> Result<(ElicitationAction, serde_json::Map<String, Value>), String> {
    let result: ElicitResult = serde_json::from_value(answer.clone())
        .map_err(|_| "the answer was not an elicitation result: not an answer".to_owned())?;
    let content = match result.content {
        Some(Value::Object(content)) => content,
        Some(_) => return Err("the answer's content was not a form's fields: not an answer".into()),
        None => serde_json::Map::new(),
    };
    Ok((result.action, content))
}

/// What an approval form's answer means: yes only with `approve: true` and the question's confirm code
/// typed.
fn judge_approval(answer: &Value, code: &str) -> Approval {
    let (action, content) = match read(answer) {
        Ok(read) => read,
        Err(why) => return Approval::Denied(why),
    };
    match action {
        ElicitationAction::Accept => {}
        ElicitationAction::Decline => return Approval::Declined("the person at the client declined".into()),
        ElicitationAction::Cancel => return Approval::Cancelled("the person at the client cancelled".into()),
        _ => return Approval::Denied("the person at the client gave no answer".into()),
    }
    let approve = match content.get("approve") {
        Some(Value::Bool(approve)) => *approve,
        _ => return Approval::Denied("`approve` was not true or false: not an answer".into()),
    };
    let confirm = match content.get("confirm") {
        Some(Value::String(confirm)) => confirm.trim().to_owned(),
        _ => return Approval::Denied("`confirm` was not typed: not an answer".into()),
    };
    if !approve {
        return Approval::Denied("the person at the client said no".into());
    }
    if code.is_empty() || confirm != code {
        return Approval::Denied("`confirm` does not match the confirm code the form showed".into());
    }
    Approval::Approved
}

/// What a settle form's answer means: a settlement by `actor` through the client (seen no sooner than
/// `asked_at`, when it was asked over rounds), or why there is none.
fn judge_settlement(answer: &Value, actor: &str, asked_at: Option<&str>) -> Found {
    let (action, content) = match read(answer) {
        Ok(read) => read,
        Err(why) => return Found::Unanswered(why),
    };
    match action {
        ElicitationAction::Accept => {}
        ElicitationAction::Decline => return Found::Declined("the person at the client declined".into()),
        ElicitationAction::Cancel => return Found::Cancelled("the person at the client cancelled".into()),
        _ => return Found::Unanswered("the person at the client gave no answer".into()),
    }
    let evidence = match content.get("evidence") {
        Some(Value::String(evidence)) if !evidence.trim().is_empty() => evidence.clone(),
        _ => return Found::Unanswered("no evidence was given: not an answer".into()),
    };
    let verdict = match content.get("verdict").and_then(Value::as_str) {
        Some("landed") => Verdict::Landed,
        Some("not_landed") => Verdict::NotLanded,
        Some("cant_tell") => {
            return Found::CantTell(format!(
                "the person at the client cannot tell either: {}",
                tool_contract::unstable::cut(&evidence)
            ));
        }
        _ => {
            return Found::Unanswered(
                "`verdict` was not landed, not_landed or cant_tell: not an answer".into(),
            );
        }
    };
    let value = match content.get("value") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.trim().is_empty() => None,
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(value) if verdict == Verdict::Landed => Some(value),
            Ok(_) => return Found::Unanswered("a value goes with `landed` only: nothing landed".into()),
            Err(e) => return Found::Unanswered(format!("`value` is not JSON ({e}): not an answer")),
        },
        Some(_) => return Found::Unanswered("`value` was not text: not an answer".into()),
    };
    let mut settle = Settle::new(verdict, actor, evidence).via(Via::Client).json_value(value);
    if let Some(at) = asked_at.and_then(tool_contract::unstable::parse_rfc3339) {
        settle = settle.seen(at);
    }
    Found::Settled(settle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_contract::IntentKey;

    fn key() -> IntentKey {
        tool_contract::key::Intent::new("ord-7741", "agent", "refund", "ord-7741").key()
    }

    #[test]
    fn the_forms_are_elicitation_schemas_and_show_the_code_and_the_arguments() {
        let mut request = ApprovalRequest::new("t", "refund", key(), 2, "h", Duration::from_secs(30));
        request.shows.insert("cents".into(), "1250".into());
        let ElicitRequestParams::FormElicitationParams { requested_schema, message, .. } =
            approval_form(&request, "483920")
        else {
            panic!("a form")
        };
        assert!(message.contains(&key().to_string()), "{message}");
        assert!(message.contains("type the confirm code 483920"), "{message}");
        assert!(message.contains("cents = 1250"), "{message}");
        let schema = serde_json::to_value(requested_schema).unwrap();
        assert_eq!(schema["required"], json!(["approve", "confirm"]), "{schema}");
        // What the tool and its service wrote is quoted, cut and labelled: a reply addressing the
        // person ("safe to approve") reads as theirs, not the server's.
        let said = format!("503: the first refund was reversed; safe to approve {}", "x".repeat(1000));
        let mut quoted = ApprovalRequest::new("t", "refund", key(), 2, said.clone(), Duration::from_secs(30));
        quoted.shows.insert("cents".into(), "1250".into());
        let ElicitRequestParams::FormElicitationParams { message, .. } = approval_form(&quoted, "483920")
        else {
            panic!("a form")
        };
        assert!(
            message
                .contains("quoting the tool and its service (words no one checked): \u{201c}503: the first"),
            "{message}"
        );
        assert!(message.contains("(1052 bytes in all)\u{201d}") && message.len() < 800, "{message}");
        let question = InDoubt::new("t", "a", "refund", key(), "t-a1", said);
        let ElicitRequestParams::FormElicitationParams { message, .. } = settle_form(&question) else {
            panic!("a form")
        };
        assert!(
            message.contains("words no one checked") && message.contains("bytes in all)\u{201d}"),
            "{message}"
        );
        let question = InDoubt::new("t", "a", "refund", key(), "t-a1", "h");
        let ElicitRequestParams::FormElicitationParams { requested_schema, .. } = settle_form(&question)
        else {
            panic!("a form")
        };
        let schema = serde_json::to_value(requested_schema).unwrap();
        assert_eq!(
            schema["properties"]["verdict"]["enum"],
            json!(["landed", "not_landed", "cant_tell"]),
            "{schema}"
        );
    }

    #[test]
    fn a_confirm_code_is_six_digits_drawn_anew_for_each_question() {
        let codes: Vec<String> = (0..8).map(|_| confirm_code()).collect();
        assert!(codes.iter().all(|c| c.len() == 6 && c.bytes().all(|b| b.is_ascii_digit())), "{codes:?}");
        let distinct: std::collections::HashSet<_> = codes.iter().collect();
        assert!(distinct.len() > 1, "eight draws, all alike: {codes:?}");
        let end = &key().to_string()[26..];
        assert!(!codes.iter().any(|c| c == end), "never the key's end");
    }

    #[test]
    fn only_an_accepted_yes_with_the_questions_code_approves() {
        let code = "483920";
        let cases = [
            (json!({"action": "accept", "content": {"approve": true, "confirm": code}}), Approval::Approved),
            (
                json!({"action": "accept", "content": {"approve": false, "confirm": code}}),
                Approval::Denied("the person at the client said no".into()),
            ),
            (json!({"action": "decline"}), Approval::Declined("the person at the client declined".into())),
            (json!({"action": "cancel"}), Approval::Cancelled("the person at the client cancelled".into())),
        ];
        for (answer, judged) in cases {
            assert_eq!(judge_approval(&answer, code), judged, "{answer}");
        }
        let end = key().to_string()[26..].to_owned();
        let noes = [
            json!({"action": "accept", "content": {"approve": true, "confirm": "000000"}}),
            json!({"action": "accept", "content": {"approve": true, "confirm": end}}),
            json!({"action": "accept", "content": {"approve": true}}),
            json!({"action": "accept", "content": {"approve": "yes", "confirm": code}}),
            json!({"action": "accept", "content": {"approve": true, "confirm": 7}}),
            json!({"action": "accept", "content": []}),
            json!({"action": "accept"}),
            json!({"action": "maybe"}),
            json!("garbage"),
        ];
        for answer in noes {
            assert!(matches!(judge_approval(&answer, code), Approval::Denied(_)), "{answer}");
        }
        // No code drawn (no generator): nothing approves.
        let yes = json!({"action": "accept", "content": {"approve": true, "confirm": ""}});
        assert!(matches!(judge_approval(&yes, ""), Approval::Denied(_)));
    }
}
