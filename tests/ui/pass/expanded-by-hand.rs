//! What `#[tool]` writes, by hand. `post_notice` and `post_notice_by_hand` are the same tool: the
//! attribute keeps the author's `async fn` as it is under a hidden name (the body, `post_notice_body`
//! below), and writes a wrapper under the author's name that takes the task in place of the call
//! context, returns a `Report` and runs the body once per attempt through the engine. It also writes
//! `post_notice_tool()`, the tool for a `Toolbox`: `post_notice_tool_by_hand` below.

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_contract::define::{Definition, Params};
use tool_contract::{toolbox::{Args, ModelArg, ModelValue, ToolFn, Unwritten, json_answer, json_verdict, run_json}, journal::BoxFuture};
use tool_contract::classify::Classify;
use tool_contract::effect::EffectKind;
use tool_contract::spec::ToolSpec;
use tool_contract::{Call, Class, IntentKey, Probe, Report, Task, Toolbox, engine, tool};

/// A support thread.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ThreadId(u32);

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread-{}", self.0)
    }
}

/// A posted notice.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NoticeId(u64);

/// What went wrong.
pub enum ThreadError {
    /// The reply was lost after the notice was sent.
    Dropped,
}

impl Classify for ThreadError {
    fn classify(&self) -> Class {
        match self {
            ThreadError::Dropped => Class::unknown("connection dropped after the notice was sent"),
        }
    }
}

/// Finds the notice carrying `key`.
pub async fn notice_landed(thread: &ThreadId, text: &String, key: IntentKey) -> Probe<NoticeId> {
    let _ = (text, key);
    Probe::Landed(NoticeId(u64::from(thread.0)))
}

/// Post a notice to a support thread.
#[tool(effect = "send", probe = notice_landed, target = thread, deadline_floor = "2s")]
pub async fn post_notice(call: &Call, thread: ThreadId, text: String) -> Result<NoticeId, ThreadError> {
    let _ = (call, thread, text);
    Err(ThreadError::Dropped)
}

/// The author's function, kept under a hidden name: every attempt runs it, called directly or by name.
async fn post_notice_body(call: &Call, thread: ThreadId, text: String) -> Result<NoticeId, ThreadError> {
    let _ = (call, thread, text);
    Err(ThreadError::Dropped)
}

/// The wrapper `#[tool]` generates for `post_notice`, written out.
pub async fn post_notice_by_hand(task: &Task, thread: ThreadId, text: String) -> Report<NoticeId> {
    // Everything the attribute says, as a constant.
    const SPEC: ToolSpec =
        ToolSpec::new("post_notice", EffectKind::Send).deadline_floor(Duration::from_millis(2000));
    // `target = thread` (no `slot`): the key depends on the intent, never on the text.
    let key = task.key(&SPEC, &thread, None);
    engine::run(
        task,
        &SPEC,
        key,
        // One attempt: fresh copies of the arguments (so tool arguments are `Clone`), the author's
        // body with `call` lent to it.
        |call: Call| {
            let thread = thread.clone();
            let text = text.clone();
            async move { post_notice_body(&call, thread, text).await }
        },
        // The probe: the same arguments by reference, then the key.
        |key: IntentKey| {
            let (thread, text) = (&thread, &text);
            async move { notice_landed(thread, text, key).await }
        },
    )
    .await
}

/// The companion `#[tool]` generates for `post_notice`, written out: the definition, and the dispatch
/// that decodes a model's arguments by name and runs the body through `run_json`, the engine with the
/// value as JSON, compiled once in tool-contract for every tool (a crate of a hundred tools does not
/// compile the engine a hundred times over).
#[must_use]
pub fn post_notice_tool_by_hand() -> ToolFn
where
    // Each on the author's type, so a missing `Deserialize` or `JsonSchema` is reported there.
    ThreadId: ModelArg + Send,
    String: ModelArg + Send,
    NoticeId: ModelValue,
{
    const SPEC: ToolSpec =
        ToolSpec::new("post_notice", EffectKind::Send).deadline_floor(Duration::from_millis(2000));
    ToolFn::new(
        || {
            let mut params = Params::new();
            // The doc comment of a parameter, if it has one, is its description.
            <ThreadId as ModelArg>::describe(&mut params, "thread", None, true);
            <String as ModelArg>::describe(&mut params, "text", None, true);
            let definition = Definition::new(&SPEC, "Post a notice to a support thread.\n", params);
            <NoticeId as ModelValue>::describe(definition)
        },
        |_receiver: &(), task: &Task, mut args: Args| -> BoxFuture<'_, Report<Value>> {
            // What a question to a person binds of the call (its arguments' digest, those it shows),
            // read before any argument is taken.
            let arguments = args.arguments(&SPEC);
            let thread = args.take::<ThreadId>("thread");
            let text = args.take::<String>("text");
            // Every problem at once: wrong types, missing and unknown arguments.
            let (Some(thread), Some(text), true) = (thread, text, args.is_clean()) else {
                return Box::pin(std::future::ready(args.refuse(task, &SPEC, &["thread", "text"])));
            };
            Box::pin(async move {
                let key = task.key(&SPEC, &thread, None);
                // A value that cannot be written as JSON: the report says so and has none.
                let unwritten = Unwritten::default();
                let attempt = |call: Call| {
                    let (thread, text, unwritten) = (thread.clone(), text.clone(), &unwritten);
                    Box::pin(async move { json_answer(post_notice_body(&call, thread, text).await, unwritten) })
                        as BoxFuture<'_, _>
                };
                let probe = |key: IntentKey| {
                    let (thread, text, unwritten) = (&thread, &text, &unwritten);
                    Box::pin(async move { json_verdict(notice_landed(thread, text, key).await, unwritten) })
                        as BoxFuture<'_, _>
                };
                run_json(task, &SPEC, key, &attempt, Some(&probe), &unwritten, arguments).await
            })
        },
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("ticket-5", "agent:support", Duration::from_secs(30));
    let generated = post_notice(&task, ThreadId(9), "refund sent".to_owned()).await;
    let by_hand = post_notice_by_hand(&task, ThreadId(9), "refund sent".to_owned()).await;
    assert_eq!(generated.value, Some(NoticeId(9)));
    assert_eq!(
        (generated.outcome, generated.effect_applied, generated.idempotency_key, generated.value),
        (by_hand.outcome, by_hand.effect_applied, by_hand.idempotency_key, by_hand.value),
    );

    let generated = post_notice_tool().definition();
    assert_eq!(generated, post_notice_tool_by_hand().definition());
    let mut toolbox = Toolbox::new();
    toolbox.add(post_notice_tool_by_hand()).unwrap();
    let arguments = json!({ "thread": 9, "text": "refund sent" });
    let by_hand = toolbox.call(&task, "post_notice", arguments.clone()).await.unwrap();
    assert_eq!(by_hand.value, Some(json!(9)));
    let mut toolbox = Toolbox::new();
    toolbox.add(post_notice_tool()).unwrap();
    let generated = toolbox.call(&task, "post_notice", arguments).await.unwrap();
    assert_eq!(
        (generated.outcome, generated.effect_applied, generated.idempotency_key, generated.value),
        (by_hand.outcome, by_hand.effect_applied, by_hand.idempotency_key, by_hand.value),
    );
}
