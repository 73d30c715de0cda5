//! The `tools/call` path: the task a request works for, the person at its client as its approver,
//! and the tool's report as the call's result (structured content, a text block, `isError`, `_meta`).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ErrorData, MetaObject, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value};
use tool_contract::{IntentKey, Outcome, Report, Task};

use crate::{
    ACTOR_META_KEY, ATTEMPT_ID_META_KEY, DEFAULT_ACTOR, INTENT_KEY_META_KEY, MAX_META_LEN, McpServer,
    TASK_META_KEY, TOOL_CALL_ID_META_KEY, person,
};

impl McpServer {
    /// The task a request works for: from its `_meta`, or the instance's.
    pub(crate) fn task(&self, meta: &Map<String, Value>) -> Result<Task, ErrorData> {
        let id = match meta_text(meta, TASK_META_KEY)? {
            Some(id) => Arc::from(id),
            None => Arc::clone(&self.inner.instance),
        };
        let actor = match meta_text(meta, ACTOR_META_KEY)? {
            Some(actor) => Arc::from(actor),
            None => Arc::clone(&self.inner.default_actor),
        };
        let task = self.inner.template.task(id, actor, self.inner.budget);
        Ok(match meta_text(meta, TOOL_CALL_ID_META_KEY)? {
            Some(call_id) => task.tool_call_id(call_id),
            None => task,
        })
    }

    /// Runs one `tools/call`: the tool's report as the result, or a protocol error for an unknown tool.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: &Map<String, Value>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call_as(name, arguments, meta, None).await
    }

    /// [`McpServer::call`] with the person at the client as the task's approver.
    pub(crate) async fn call_as(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: &Map<String, Value>,
        person: Option<person::Person>,
    ) -> Result<CallToolResult, ErrorData> {
        result_of(self.report_of(name, arguments, meta, person).await?, self.inner.value_text)
    }

    /// The tool's report of one call, or a protocol error for an unknown tool or a malformed `_meta`.
    pub(crate) async fn report_of(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: &Map<String, Value>,
        person: Option<person::Person>,
    ) -> Result<Report<Value>, ErrorData> {
        let mut task = self.task(meta)?;
        if let Some(person) = person {
            task = task.approver(person);
        }
        let arguments = arguments.map(Value::Object).unwrap_or(Value::Null);
        self.inner
            .toolbox
            .call(&task, name, arguments)
            .await
            .map_err(|unknown| ErrorData::invalid_params(unknown.to_string(), None))
    }
}

/// A report as a call's result: its structured content, its text block, `isError` and `_meta`; with
/// `value_text`, an `ok` report whose value is a string has that string as a text block before it.
pub(crate) fn result_of(report: Report<Value>, value_text: bool) -> Result<CallToolResult, ErrorData> {
    let unwritable = |error: serde_json::Error| ErrorData::internal_error(error.to_string(), None);
    // The text block is written from the report itself (its fields in the contract's order), not
    // from the JSON value: the same JSON, at a third of the cost.
    // Sized for a report of a few fields at once, rather than grown from the default 128 bytes.
    let mut text = Vec::with_capacity(512);
    serde_json::to_writer(&mut text, &report).map_err(unwritable)?;
    let text = String::from_utf8(text).map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
    let text = match &report.value {
        Some(Value::String(value)) if value_text && report.outcome == Outcome::Ok => {
            vec![ContentBlock::text(value.clone()), ContentBlock::text(text)]
        }
        _ => vec![ContentBlock::text(text)],
    };
    let key = key_text(&report.idempotency_key);
    let mut result_meta = Map::new();
    result_meta.insert(INTENT_KEY_META_KEY.to_owned(), Value::String(key.clone()));
    result_meta.insert(ATTEMPT_ID_META_KEY.to_owned(), Value::String(report.attempt_id.clone()));
    let mut result =
        if is_error(report.outcome) { CallToolResult::error(text) } else { CallToolResult::success(text) };
    result.structured_content = Some(report_value(report, key).map_err(unwritable)?);
    Ok(result.with_meta(Some(MetaObject(result_meta))))
}

/// Whether a report with `outcome` is sent with `isError: true`: when the model should change something
/// before calling again (`permanent`: its arguments, or its plan) or may call again later
/// (`retryable`: nothing was applied). Never for `ok`, and never for `unknown`: an agent host that
/// turns `isError` into a retry of the model (one that counts against a small limit and ends the run
/// when it is spent) would push the model to call a side effect in doubt again, and would show it only
/// the text, not the report; the report itself says the call is in doubt and what was done about it.
pub fn is_error(outcome: Outcome) -> bool {
    matches!(outcome, Outcome::Retryable | Outcome::Permanent)
}

/// A key as the 32 hex digits its JSON form has.
fn key_text(key: &IntentKey) -> String {
    // Hex digits are ASCII: the check passes at once, and nothing is replaced.
    std::str::from_utf8(&key.hex()).unwrap_or_default().to_owned()
}

/// The report as the JSON value `serde_json::to_value` makes of it (the same keys and values), built
/// from its parts: its strings move into the value where `to_value` would copy them, and no serializer
/// runs for fields whose JSON is known. `key` is the report's key as [`key_text`] writes it.
fn report_value(report: Report<Value>, key: String) -> Result<Value, serde_json::Error> {
    let Report {
        outcome,
        effect_applied,
        attempt_id,
        idempotency_key: _,
        retry_after_s,
        deadline_left_s,
        message,
        value,
        items,
        // Not on the wire: the JSON contract has no reason.
        reason: _,
    } = report;
    let items = if items.is_empty() { Value::Array(Vec::new()) } else { serde_json::to_value(items)? };
    // In the map's order: the map is built in one pass, no field searched for.
    let fields = [
        ("attempt_id", Value::String(attempt_id)),
        ("deadline_left_s", Value::from(deadline_left_s)),
        ("effect_applied", Value::String(effect_applied.as_str().to_owned())),
        ("idempotency_key", Value::String(key)),
        ("items", items),
        ("message", Value::String(message)),
        ("outcome", Value::String(outcome.as_str().to_owned())),
        ("retry_after_s", retry_after_s.map_or(Value::Null, Value::from)),
        ("value", value.unwrap_or(Value::Null)),
    ];
    Ok(Value::Object(fields.into_iter().map(|(name, value)| (name.to_owned(), value)).collect()))
}
/// The first 16 hex characters of the SHA-256 of `text`: a credential named without being shown.
#[cfg(feature = "http")]
fn digest(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// A text `_meta` value: absent, or a string [`tool_contract::task::is_valid_name`] accepts.
fn meta_text<'m>(meta: &'m Map<String, Value>, key: &str) -> Result<Option<&'m str>, ErrorData> {
    match meta.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if tool_contract::task::is_valid_name(text) => Ok(Some(text)),
        Some(_) => Err(ErrorData::invalid_params(
            format!(
                "`_meta` `{key}` must be a string of 1 to {MAX_META_LEN} characters, none a control character"
            ),
            None,
        )),
    }
}
impl McpServer {
    /// The person at this call's client, as the call's approver: how they are reached, and the answer
    /// the call carries from an earlier round. `Err` for a request state this server cannot open.
    pub(crate) fn person(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        bound: &str,
    ) -> Result<Option<person::Person>, ErrorData> {
        if !self.inner.ask_client {
            return Ok(None);
        }
        let rounds = context.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let elicits = context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        let reach = match (elicits, rounds) {
            (false, _) => {
                person::Reach::Nobody("no person could be asked: the client declared no elicitation")
            }
            (true, true) => person::Reach::Rounds,
            (true, false) => person::Reach::Elicit(context.peer.clone(), self.inner.ask_within),
        };
        let carried = match (&reach, request.request_state.as_deref()) {
            (person::Reach::Rounds, Some(state)) => {
                let sealed: person::Sealed =
                    self.inner.codec.open_json_with(state, bound.as_bytes()).map_err(|_| {
                        ErrorData::invalid_params(
                            "the request state is not one this server issued for this call (changed, moved or \
                             expired): nothing was attempted; call again without it",
                            None,
                        )
                    })?;
                let answer =
                    request.input_responses.as_ref().and_then(|answers| answers.get(sealed.kind()).cloned());
                Some((sealed, answer))
            }
            _ => None,
        };
        let actor = meta_text(&context.meta, ACTOR_META_KEY)?.unwrap_or(DEFAULT_ACTOR).to_owned();
        Ok(Some(person::Person::new(reach, actor, self.asked_in(context), carried)))
    }

    /// Where a question to the person at this call's client is asked, as its record says: the HTTP
    /// session (2025 protocols), or, with none (2026-07-28 is stateless), the credential the request
    /// came with; the connection for a transport of its own (stdio, a pipe). An answer is taken only
    /// from where its question was asked.
    pub(crate) fn asked_in(&self, context: &RequestContext<RoleServer>) -> String {
        #[cfg(feature = "http")]
        if let Some(parts) = context.extensions.get::<hyper::http::request::Parts>() {
            let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
            if let Some(session) = header("mcp-session-id") {
                return format!("MCP session {}", tool_contract::unstable::cut(session));
            }
            return match header("authorization") {
                Some(credential) => format!("MCP over HTTP, credential {}", digest(credential)),
                None => "MCP over HTTP, with no session and no credential".to_owned(),
            };
        }
        let _ = context;
        self.connection.to_string()
    }

    /// What a request state is bound to: the tool and the task it was issued for.
    pub(crate) fn bound(&self, name: &str, meta: &Map<String, Value>) -> Result<String, ErrorData> {
        let task = meta_text(meta, TASK_META_KEY)?.unwrap_or(&self.inner.instance);
        Ok(format!("tools/call\n{name}\n{task}"))
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use tool_contract::key::Intent;
    use tool_contract::{Applied, Item};

    fn report(outcome: Outcome, value: Option<Value>, items: Vec<Item>) -> Report<Value> {
        Report {
            outcome,
            effect_applied: Applied::Partial,
            attempt_id: "ord-7741-e7196e5f-a2".to_owned(),
            idempotency_key: Intent::new("ord-7741", "agent:billing", "charge_card", "card-42").key(),
            retry_after_s: (outcome == Outcome::Retryable).then_some(u64::MAX),
            deadline_left_s: 42,
            message: "a line with \"quotes\" and \u{1f600}".to_owned(),
            value,
            items,
            reason: tool_contract::Reason::Answered,
        }
    }

    /// The structured content is what `serde_json::to_value` makes of the report, for every shape.
    #[test]
    fn report_value_is_the_reports_json() {
        let items = vec![Item::ok("row-1"), Item::permanent("row-2", "no such row")];
        let shapes = [
            report(Outcome::Ok, Some(serde_json::json!({ "id": 7, "text": ["a", null] })), Vec::new()),
            report(Outcome::Ok, Some(Value::Null), Vec::new()),
            report(Outcome::Retryable, None, Vec::new()),
            report(Outcome::Unknown, None, items.clone()),
            report(Outcome::Permanent, Some(Value::from(-1.5)), items),
        ];
        for shape in shapes {
            let expected = serde_json::to_value(&shape).unwrap();
            let key = key_text(&shape.idempotency_key);
            assert_eq!(Value::String(key.clone()), expected["idempotency_key"]);
            assert_eq!(report_value(shape, key).unwrap(), expected);
        }
    }
}
