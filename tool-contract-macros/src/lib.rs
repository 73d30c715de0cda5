//! The `#[tool]` attribute of `tool-contract`. Depend on `tool-contract`, which re-exports it as
//! `tool_contract::tool`; generated code reaches the runtime through `::tool_contract::__private`.
//!
//! One stage per file: `attr` parses the arguments, `ast` sorts the function's parts, `valid` holds
//! every rule, `expand` writes the wrapper, `fallback` is what is emitted when something is wrong.

mod ast;
mod attr;
mod ctxt;
mod expand;
mod fallback;
mod valid;

use proc_macro::TokenStream;
use syn::ItemFn;

/// Turns an `async fn` returning `Result<T, E>` into a tool: a same-named `async fn` that takes the
/// `Task` in place of the call context and returns a `Report<T>`.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::{Applied, Call, Class, IntentKey, Outcome, Probe, Task, tool};
///
/// /// Finds the notice carrying `key` in the thread.
/// async fn notice_landed(thread: &String, text: &String, key: IntentKey) -> Probe<u64> {
///     # let _ = (thread, text, key);
///     Probe::Landed(4411)
/// }
///
/// /// Post a notice to a support thread.
/// #[tool(effect = "send", probe = notice_landed, target = thread, deadline_floor = "2s")]
/// async fn post_notice(call: &Call, thread: String, text: String) -> Result<u64, Class> {
///     // `call.key()` goes downstream as the `Idempotency-Key` header.
///     # let _ = (call.key(), thread, text);
///     Err(Class::unknown("connection reset after the request was sent"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // What the agent calls: the task first, then the tool's own arguments.
/// let task = Task::new("ticket-5", "agent:support", Duration::from_secs(30));
/// let report = post_notice(&task, "thread-9".to_owned(), "refund sent".to_owned()).await;
/// // The reply was lost, the probe found the notice: `ok`, applied, no second notice.
/// assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes));
/// assert_eq!(report.value, Some(4411));
/// # }
/// ```
///
/// # The wrapper
///
/// For the tool above the attribute writes, with absolute paths:
///
/// ```
/// # use std::time::Duration;
/// # use tool_contract::{Call, Class, EffectKind, IntentKey, Probe, Report, Task, ToolSpec, engine};
/// # async fn notice_landed(thread: &String, text: &String, key: IntentKey) -> Probe<u64> { Probe::NotLanded }
/// /// Post a notice to a support thread.
/// async fn post_notice(task: &Task, thread: String, text: String) -> Report<u64> {
///     const SPEC: ToolSpec =
///         ToolSpec::new("post_notice", EffectKind::Send).deadline_floor(Duration::from_millis(2000));
///     let key = task.key(&SPEC, &thread, None);
///     engine::run(
///         task,
///         &SPEC,
///         key,
///         |call: Call| {
///             let thread = thread.clone();
///             let text = text.clone();
///             async move {
///                 let call = &call;
///                 // the author's body, its output pinned to `Result<u64, Class>`
///                 # let _ = (call, thread, text);
///                 # Err::<u64, Class>(Class::unknown("connection reset"))
///             }
///         },
///         |key: IntentKey| {
///             let (thread, text) = (&thread, &text);
///             async move { notice_landed(thread, text, key).await }
///         },
///     )
///     .await
/// }
/// ```
///
/// - The wrapper keeps the name, visibility, doc comments, generics and `&self` receiver. Its task
///   parameter is `task: &Task`, right after `&self`; it is hygienic, so an argument of the tool may be
///   called `task` too.
/// - The call-context parameter `call: &Call` (any name, anywhere in the list) is optional. Through it
///   the body reads its intent key (`Call::key()`, the same on every attempt), attempt number, attempt
///   id and the budget left for this attempt.
/// - The body runs once per attempt, each time with fresh copies of the arguments, so every argument
///   is `Clone` (a reference argument copies only the reference). `?` and `return` work as in any
///   `async fn`.
///
/// # Keys
///
/// | key | value | |
/// |---|---|---|
/// | `effect` | `"read"`, `"create"`, `"send"`, `"money"`, `"destructive"` | required; decides the retry policy (`EffectKind`) |
/// | `probe` | path to an async fn: `landed`, `probes::landed`, `Self::landed` | required for every kind but `read`, which takes none |
/// | `dedupe` | `"receiver"` | `create` only: the receiver honours the idempotency key, so no probe is needed |
/// | `target` | a parameter's name | the object acted on, in the intent key (it implements `Display`); `""` when absent |
/// | `slot` | a parameter's name | separates acts repeated on purpose in one task (reminder 1, 2) |
/// | `verb` | a string | the verb of the intent key; the function's name by default |
/// | `deadline_floor` | `"250ms"`, `"2s"`, `"1m"` | no attempt starts with less of the task's budget left |
/// | `bulk` | a `Vec<I>` parameter's name | bulk work, see below |
///
/// The intent key is `hex(sha256("{task_id}|{actor}|{verb}|{target}|{slot}"))[..32]`; it never
/// depends on the payload.
///
/// # Probes
///
/// A probe is a read that tells whether the attempt carrying an intent key landed. It receives the
/// tool's arguments by reference, in order and without the call context, then the `IntentKey`, and
/// returns a `Probe<T>` of the tool's value type:
///
/// ```text
/// async fn notice_landed(thread: &String, text: &String, key: IntentKey) -> Probe<u64>
/// ```
///
/// A method tool's probe receives `&self` first (`probe = Self::notice_landed`). A probe that does not
/// fit is reported by rustc on the `probe = ...` tokens.
///
/// # Bulk tools
///
/// `bulk = rows` names the `Vec<I>` parameter that holds the items (`I: Clone + ItemId`). Each attempt
/// gets, in that parameter, the items still to do, and returns one `Item` per item:
/// `Result<Vec<Item>, E>`. The wrapper returns a `Report<()>` whose `items` say what happened to each.
/// The probe receives the other arguments by reference, the items whose fate is unknown in the bulk
/// parameter's place (by value), then the key, and returns one `Item` per item it could tell:
///
/// ```text
/// async fn rows_written(sheet: &SheetId, rows: Vec<Row>, key: IntentKey) -> Vec<Item>
/// ```
///
/// # Rejected at compile time
///
/// Each with one error on the offending tokens and what to write instead; all errors of a tool are
/// reported at once. The cases, with their exact messages, are in `tests/ui/fail`:
///
/// - a function that is not `async`, a receiver other than `&self`, a call context not taken as `&Call`;
/// - a return type that is not `Result<T, E>`; `bool`, `Result<bool, E>` or `Option<bool>`;
/// - a missing or unknown `effect`; an unknown or repeated key; a value of the wrong form;
/// - `create`, `send`, `money` or `destructive` without `probe` (`create` may say `dedupe = "receiver"`);
///   a `probe` on a `read`; `dedupe` on a kind other than `create`;
/// - an unparsable `deadline_floor`; a `target`, `slot` or `bulk` naming no parameter; a `bulk`
///   parameter that is not a `Vec` or a bulk tool not returning `Result<Vec<Item>, E>`;
/// - from rustc, on the author's tokens: a probe whose signature or value type does not fit, an
///   argument that is not `Clone`, a `target` that does not implement `Display`, an error type that
///   does not implement `Classify`.
///
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    let input = proc_macro2::TokenStream::from(input);
    let Ok(func) = syn::parse2::<ItemFn>(input.clone()) else {
        return fallback::not_a_function(input).into();
    };
    let args = proc_macro2::TokenStream::from(args);
    expand::tool(args.clone(), &func).unwrap_or_else(|error| fallback::expand(args, &func, error)).into()
}
