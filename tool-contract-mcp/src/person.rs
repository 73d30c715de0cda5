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
//!   the form, and a request state sealed with the server's key (HMAC, expiring) that names the tool,
//!   the task, the intent and the attempt the answer is for. The client retries the call with the
//!   answer and the state; a state that does not open (another server's, a changed byte, expired) is
//!   refused with nothing attempted, and an answer for another intent or an attempt already made
//!   approves nothing.
//! - A client that declared no elicitation: nobody can be asked, and a person who cannot be asked has
//!   not approved.
//!
//! The approval form asks for `approve` (yes or no) and `confirm`, the last 6 hex characters of the
//! intent key, which the form's message shows: a client that accepts a form's defaults approves
//! nothing. Anything else (a decline, a cancel, no answer in time, a value of the wrong type, a wrong
//! `confirm`) is a no, and the report says which.

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
use tool_contract::IntentKey;
use tool_contract::journal::BoxFuture;
use tool_contract::journal::{Verdict, Via};
use tool_contract::person::{Approval, ApprovalRequest, Approve, InDoubt, Settle};

/// How long a sealed request state stays good.
const STATE_TTL: Duration = Duration::from_secs(15 * 60);

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
    /// Nobody: why.
    Nobody(&'static str),
}

/// What the sealed request state of a round carries: which question it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    /// `approve` or `settle`.
    kind: String,
    /// The intent, 32 hex characters.
    key: String,
    /// The attempt approved (the next one), or the attempt in doubt.
    attempt: String,
}

impl Sealed {
    /// The input request's name this state answers.
    pub(crate) fn kind(&self) -> &str {
        &self.kind
    }
}

/// A question the engine asked this round, to be sent as input required.
#[derive(Debug, Clone)]
enum Question {
    Approve(ApprovalRequest),
    Settle(InDoubt),
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
    /// What the retried call carries: the opened state and the answer given.
    carried: Option<(Sealed, Option<Value>)>,
    /// What the engine asked that must go to the client as input required.
    asked: Mutex<Option<Question>>,
}

impl Person {
    pub(crate) fn new(reach: Reach, actor: String, carried: Option<(Sealed, Option<Value>)>) -> Person {
        Person { inner: Arc::new(Inner { reach, actor, carried, asked: Mutex::new(None) }) }
    }

    /// The input-required answer for the question the engine asked this round, if it asked one and
    /// the person is reached over rounds.
    pub(crate) fn input_required(
        &self,
        codec: &RequestStateCodec,
        bound: &str,
    ) -> Option<Result<InputRequiredResult, String>> {
        let question = self.inner.asked.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        let (name, sealed, form) = match &question {
            Question::Approve(request) => {
                let sealed = Sealed {
                    kind: APPROVE.into(),
                    key: hex(&request.key),
                    attempt: request.next_attempt.to_string(),
                };
                (APPROVE, sealed, approval_form(request))
            }
            Question::Settle(question) => {
                let sealed = Sealed {
                    kind: SETTLE.into(),
                    key: hex(&question.key),
                    attempt: question.attempt_id.clone(),
                };
                (SETTLE, sealed, settle_form(question))
            }
        };
        let options = SealOptions::new().associated_data(bound.as_bytes()).ttl(STATE_TTL);
        let state = match codec.seal_json_with(&sealed, &options) {
            Ok(state) => state,
            Err(e) => return Some(Err(e.to_string())),
        };
        let mut requests = InputRequests::new();
        requests.insert(name.to_owned(), InputRequest::Elicitation(ElicitRequest::new(form)));
        Some(Ok(InputRequiredResult::new(Some(requests), Some(state))))
    }

    /// The answer the retried call carries for `kind` about `key` and `attempt`: `Ok(answer)` (the
    /// input response, if any), `Err(why)` when the state is for another question, or `None` when the
    /// call carries no state of that kind.
    fn carried(&self, kind: &str, key: &IntentKey, attempt: &str) -> Option<Result<Option<Value>, String>> {
        let (sealed, answer) = self.inner.carried.as_ref()?;
        if sealed.kind != kind {
            return None;
        }
        if sealed.key != hex(key) {
            return Some(Err(
                "the answer carried was given for another intent; it approves nothing here".into()
            ));
        }
        if sealed.attempt != attempt {
            return Some(Err(format!(
                "the answer carried was given for attempt {} of this intent, which is no longer the one at \
                 stake: an answer is used once",
                sealed.attempt
            )));
        }
        Some(Ok(answer.clone()))
    }

    /// Ask now (elicitation) or say what to ask over a round; `Err(why)` when nobody can be asked.
    async fn elicit(&self, form: ElicitRequestParams) -> Result<ElicitResult, String> {
        match &self.inner.reach {
            Reach::Elicit(peer, within) => {
                let request = ServerRequest::ElicitRequest(ElicitRequest::new(form));
                let sent = peer.send_request_with_option(request, PeerRequestOptions::with_timeout(*within));
                let handle = match sent.await {
                    Ok(handle) => handle,
                    Err(e) => return Err(format!("the person at the client could not be asked ({e})")),
                };
                // Withdrawn if this wait is abandoned (the call's budget ran out, the client cancelled
                // the call): rmcp withdraws a question only on its own timeout.
                let open = Open { peer: peer.clone(), id: Some(handle.id.clone()) };
                let answer = handle.await_response().await;
                open.closed();
                match answer {
                    Ok(ClientResult::ElicitResult(answer)) => Ok(answer),
                    Ok(_) => Err("the client answered the form with something else: not an answer".into()),
                    Err(rmcp::ServiceError::Timeout { .. }) => {
                        Err(format!("{} did not answer in time (within {})", self.who(), secs(*within)))
                    }
                    Err(e) => Err(format!("the person at the client could not be asked ({e})")),
                }
            }
            Reach::Rounds => Err("the person is asked over rounds".into()),
            Reach::Nobody(why) => Err((*why).to_owned()),
        }
    }
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

impl Approve for Person {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let answer = match &self.inner.reach {
                Reach::Rounds => match self.carried(APPROVE, &request.key, &request.next_attempt.to_string())
                {
                    Some(Ok(Some(answer))) => answer,
                    Some(Ok(None)) => return Approval::Denied("the retried call carries no answer".into()),
                    Some(Err(why)) => return Approval::Denied(why),
                    None => {
                        *self.inner.asked.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(Question::Approve(request.clone()));
                        return Approval::Denied("waiting for the person at the client".into());
                    }
                },
                _ => match self.elicit(approval_form(request)).await {
                    Ok(answer) => serde_json::to_value(answer).unwrap_or(Value::Null),
                    Err(why) => return Approval::Denied(why),
                },
            };
            judge_approval(&answer, &request.key)
        })
    }

    fn who(&self) -> String {
        format!("{} (the person at the MCP client)", self.inner.actor)
    }

    fn settle<'a>(&'a self, question: &'a InDoubt) -> BoxFuture<'a, Option<Result<Settle, String>>> {
        Box::pin(async move {
            let answer = match &self.inner.reach {
                Reach::Nobody(_) => return None,
                Reach::Rounds => match self.carried(SETTLE, &question.key, &question.attempt_id) {
                    Some(Ok(Some(answer))) => answer,
                    Some(Ok(None)) => return Some(Err("the retried call carries no answer".into())),
                    Some(Err(why)) => return Some(Err(why)),
                    None => {
                        *self.inner.asked.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(Question::Settle(question.clone()));
                        return None;
                    }
                },
                Reach::Elicit(..) => match self.elicit(settle_form(question)).await {
                    Ok(answer) => serde_json::to_value(answer).unwrap_or(Value::Null),
                    Err(why) => return Some(Err(why)),
                },
            };
            Some(judge_settlement(&answer, &question.actor))
        })
    }
}

/// The 32 hex characters of a key.
fn hex(key: &IntentKey) -> String {
    key.to_string()
}

/// The last 6 hex characters of the key: what the person types to approve.
fn key_end(key: &IntentKey) -> String {
    let hex = hex(key);
    hex[hex.len() - 6..].to_owned()
}

fn approval_form(request: &ApprovalRequest) -> ElicitRequestParams {
    let message = format!(
        "Approve a second attempt (attempt {}) of {} for task {}? Money may move again. Intent key {}. \
         What happened so far: {}. To approve, say yes and type the last 6 characters of the intent key.",
        request.next_attempt, request.call, request.task, request.key, request.history
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "approve": { "type": "boolean", "title": "Approve the second attempt" },
            "confirm": {
                "type": "string",
                "title": "The intent key's last 6 characters",
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
    let message = format!(
        "Did {} land (task {}, attempt {}, intent key {})? The code cannot tell: {}. Look at the world and \
         say what you found, and where.",
        question.call, question.task, question.attempt_id, question.key, question.history
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

/// What an approval form's answer means: yes only with `approve: true` and the key's end typed.
fn judge_approval(answer: &Value, key: &IntentKey) -> Approval {
    let (action, content) = match read(answer) {
        Ok(read) => read,
        Err(why) => return Approval::Denied(why),
    };
    match action {
        ElicitationAction::Accept => {}
        ElicitationAction::Decline => return Approval::Denied("the person at the client declined".into()),
        ElicitationAction::Cancel => return Approval::Denied("the person at the client cancelled".into()),
        _ => return Approval::Denied("the person at the client gave no answer".into()),
    }
    let approve = match content.get("approve") {
        Some(Value::Bool(approve)) => *approve,
        _ => return Approval::Denied("`approve` was not true or false: not an answer".into()),
    };
    let confirm = match content.get("confirm") {
        Some(Value::String(confirm)) => confirm.trim().to_ascii_lowercase(),
        _ => return Approval::Denied("`confirm` was not typed: not an answer".into()),
    };
    if !approve {
        return Approval::Denied("the person at the client said no".into());
    }
    if confirm != key_end(key) {
        return Approval::Denied("`confirm` does not match the intent key's last 6 characters".into());
    }
    Approval::Approved
}

/// What a settle form's answer means: a settlement by `actor` through the client, or why not.
fn judge_settlement(answer: &Value, actor: &str) -> Result<Settle, String> {
    let (action, content) = read(answer)?;
    match action {
        ElicitationAction::Accept => {}
        ElicitationAction::Decline => return Err("the person at the client declined".into()),
        ElicitationAction::Cancel => return Err("the person at the client cancelled".into()),
        _ => return Err("the person at the client gave no answer".into()),
    }
    let evidence = match content.get("evidence") {
        Some(Value::String(evidence)) if !evidence.trim().is_empty() => evidence.clone(),
        _ => return Err("no evidence was given: not an answer".into()),
    };
    let verdict = match content.get("verdict").and_then(Value::as_str) {
        Some("landed") => Verdict::Landed,
        Some("not_landed") => Verdict::NotLanded,
        Some("cant_tell") => return Err(format!("the person at the client cannot tell either: {evidence}")),
        _ => return Err("`verdict` was not landed, not_landed or cant_tell: not an answer".into()),
    };
    let value = match content.get("value") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.trim().is_empty() => None,
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(value) if verdict == Verdict::Landed => Some(value),
            Ok(_) => return Err("a value goes with `landed` only: nothing landed".into()),
            Err(e) => return Err(format!("`value` is not JSON ({e}): not an answer")),
        },
        Some(_) => return Err("`value` was not text: not an answer".into()),
    };
    Ok(Settle::new(verdict, actor, evidence).via(Via::Client).json_value(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> IntentKey {
        tool_contract::key::Intent::new("ord-7741", "agent", "refund", "ord-7741").key()
    }

    #[test]
    fn the_forms_are_elicitation_schemas() {
        let request = ApprovalRequest {
            task: "t".into(),
            call: "refund".into(),
            key: key(),
            next_attempt: 2,
            history: "h".into(),
            left: Duration::from_secs(30),
        };
        let ElicitRequestParams::FormElicitationParams { requested_schema, message, .. } =
            approval_form(&request)
        else {
            panic!("a form")
        };
        assert!(message.contains(&key().to_string()), "{message}");
        let schema = serde_json::to_value(requested_schema).unwrap();
        assert_eq!(schema["required"], json!(["approve", "confirm"]), "{schema}");
        let question = InDoubt {
            task: "t".into(),
            actor: "a".into(),
            call: "refund".into(),
            key: key(),
            attempt_id: "t-a1".into(),
            history: "h".into(),
        };
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
    fn only_an_accepted_yes_with_the_keys_end_approves() {
        let end = key_end(&key());
        let cases = [
            (json!({"action": "accept", "content": {"approve": true, "confirm": end}}), true),
            (json!({"action": "accept", "content": {"approve": true, "confirm": end.to_uppercase()}}), true),
            (json!({"action": "accept", "content": {"approve": false, "confirm": end}}), false),
            (json!({"action": "accept", "content": {"approve": true, "confirm": "000000"}}), false),
            (json!({"action": "accept", "content": {"approve": true}}), false),
            (json!({"action": "accept", "content": {"approve": "yes", "confirm": end}}), false),
            (json!({"action": "accept", "content": {"approve": true, "confirm": 7}}), false),
            (json!({"action": "accept", "content": []}), false),
            (json!({"action": "accept"}), false),
            (json!({"action": "decline"}), false),
            (json!({"action": "cancel"}), false),
            (json!({"action": "maybe"}), false),
            (json!("garbage"), false),
        ];
        for (answer, approved) in cases {
            let judged = judge_approval(&answer, &key());
            assert_eq!(judged == Approval::Approved, approved, "{answer}: {judged:?}");
        }
    }
}
