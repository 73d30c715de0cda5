//! The `#[tool]` attribute of `tool-contract`. Depend on `tool-contract`, which re-exports it as
//! `tool_contract::tool`; generated code reaches the runtime through `::tool_contract::__private`.
//!
//! One stage per file: `attr` parses the arguments, `ast` sorts the function's parts, `valid` holds
//! every rule, `expand` writes the wrapper, `fallback` is what is emitted when something is wrong.

mod ast;
mod attr;
mod context;
mod ctxt;
mod duration;
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
/// For the tool above the attribute writes, in effect (with absolute paths, and the probe called through
/// a check of its whole signature, so a probe that does not fit is one error on its path):
///
/// ```
/// # use std::time::Duration;
/// # use tool_contract::effect::EffectKind;
/// # use tool_contract::spec::ToolSpec;
/// # use tool_contract::{Call, Class, IntentKey, Probe, Report, Task, engine};
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
/// | `key_lifetime` | a duration: `"30m"`, `"24h"`, `"720h"` | with `dedupe = "receiver"` only: how long the receiver keeps an idempotency key (Stripe: 24 hours). The engine resends on the receiver's word only while every request the call may send reaches it within this of the intent's first attempt; past it, a `create` that may have landed is probed, or ends `unknown` without a probe. 30 minutes by default, the shortest receivers document, so a default never trusts a key the receiver forgot |
/// | `target` | a parameter's name | the object acted on, in the intent key (it implements `Display`); `""` when absent |
/// | `slot` | a parameter's name | separates acts repeated on purpose in one task (reminder 1, 2) |
/// | `verb` | a string | the verb of the intent key; the function's name by default |
/// | `deadline_floor` | a duration: `"250ms"`, `"2s"`, `"1m"`, `"1h"` | no attempt starts with less of the task's budget left; see below |
/// | `max_attempts` | a number from 1 to 100 | the most attempts one call makes, the first included; 3 by default |
/// | `backoff` | `"200ms..5s"`: the first wait and the longest | waits between attempts double from the first to the longest, with full jitter; `"200ms..5s"` by default |
/// | `probe_reserve` | a duration | how much of the budget an attempt of a side effect leaves for the probe that resolves a timeout; the floor by default, and with no floor either, a quarter of the budget left |
/// | `service` | a string | the service the tool calls, whose retry budget (shared by every task calling it) its retries draw on; the tool's name by default |
/// | `horizon` | a duration | the landing horizon: how long the service may still apply a request after its caller stopped waiting for it (a queue, a worker mid-request when the connection dropped or the caller died). A probe's (or a person's) "not landed" counts only once this has passed; until then the engine waits within the budget and probes again, or ends `unknown`, never a second attempt. By default 5 s for `send`, `money`, `destructive` and a `create` only its probe deduplicates, none for a `create` with `dedupe = "receiver"`; `"0s"` trusts "not landed" at once. (`settle`, its former name, is refused) |
/// | `bulk` | a `Vec<I>` parameter's name | bulk work, see below |
/// | `name` | a string | the name a model calls the tool by: 1 to 128 of `A-Z a-z 0-9 _ - .`; the function's name by default |
/// | `description` | a string | what a model reads to choose the tool; the doc comment by default |
///
/// The intent key is `hex(sha256("{task_id}|{actor}|{verb}|{target}|{slot}"))[..32]` (the parts framed
/// by their lengths when one holds `|`; see `IntentKey`); it never depends on the payload.
///
/// A duration is a whole number and one of the units `ms`, `s`, `m`, `h`. A floor of zero (`"0s"`, or
/// no `deadline_floor`) means no floor: an attempt starts whenever any budget is left. A side effect
/// (`create`, `send`, `money`, `destructive`) may not say `deadline_floor = "0s"`: it needs time for
/// its call and for the probe that resolves a timeout, so the attribute asks for that time instead.
///
/// ## `effect = "read"`: no probe, retried with backoff inside the budget
///
/// ```
/// use std::time::Duration;
/// use tool_contract::{Applied, Class, Outcome, Task, tool};
///
/// /// Read a price; the first attempt meets a busy service.
/// #[tool(effect = "read", target = sku)]
/// async fn read_price(call: &tool_contract::Call, sku: String) -> Result<u32, Class> {
///     if call.attempt() == 1 { Err(Class::retryable("503 from /prices")) } else { Ok(1299) }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let task = Task::new("quote-1", "agent", Duration::from_secs(10));
/// let report = read_price(&task, "sku-1".to_owned()).await;
/// assert_eq!((report.outcome, report.effect_applied, report.value), (Outcome::Ok, Applied::No, Some(1299)));
/// # }
/// ```
///
/// Without the macro: `const SPEC: ToolSpec = ToolSpec::new("read_price", EffectKind::Read);` then
/// `engine::run(task, &SPEC, task.key(&SPEC, &sku, None), |call| ..., NoProbe)`.
///
/// ## `dedupe = "receiver"`: a `create` whose receiver honours the key needs no probe
///
/// ```
/// use std::time::Duration;
/// use tool_contract::{Call, Class, Outcome, Task, tool};
///
/// /// Create an order; the receiver deduplicates by the `Idempotency-Key` it is sent.
/// #[tool(effect = "create", dedupe = "receiver", target = cart)]
/// async fn create_order(call: &Call, cart: String) -> Result<String, Class> {
///     // A lost reply is retried with the same key, which the receiver recognises.
///     if call.attempt() == 1 { return Err(Class::unknown("502 from the gateway")) }
///     Ok(format!("order for {cart} under key {}", call.key()))
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let task = Task::new("checkout-8", "agent", Duration::from_secs(10));
/// let report = create_order(&task, "cart-1".to_owned()).await;
/// assert_eq!(report.outcome, Outcome::Ok);
/// assert!(report.value.unwrap().ends_with(&report.idempotency_key.to_string()));
/// # }
/// ```
///
/// Without the macro: `ToolSpec::new("create_order", EffectKind::Create).dedupe(Dedupe::Receiver)` and
/// `NoProbe`.
///
/// ## `deadline_floor`: no attempt starts with less budget than it needs
///
/// ```
/// use std::time::Duration;
/// use tool_contract::{Applied, Class, IntentKey, Outcome, Probe, Task, tool};
///
/// async fn charged(card: &String, key: IntentKey) -> Probe<u64> { Probe::NotLanded }
///
/// /// Charge a card; the payment network needs at least five seconds.
/// #[tool(effect = "money", probe = charged, target = card, deadline_floor = "5s")]
/// async fn charge_card(card: String) -> Result<u64, Class> {
///     unreachable!("never started with a 1 s budget")
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let task = Task::new("ord-1", "agent", Duration::from_secs(1));
/// let report = charge_card(&task, "card-42".to_owned()).await;
/// assert_eq!((report.outcome, report.effect_applied, report.deadline_left_s), (Outcome::Retryable, Applied::No, 0));
/// # }
/// ```
///
/// Without the macro: `ToolSpec::new("charge_card", EffectKind::Money).deadline_floor(Duration::from_secs(5))`.
///
/// ## `verb`, `target`, `slot`: the parts of the intent key
///
/// ```
/// use std::time::Duration;
/// use tool_contract::key::Intent;
/// use tool_contract::{Call, Class, IntentKey, Probe, Task, tool};
///
/// async fn reminded(user: &String, n: &u32, sent_at: &u64, key: IntentKey) -> Probe<()> { Probe::NotLanded }
///
/// /// Send reminder number `n`; the payload (a fresh timestamp) never changes the key.
/// #[tool(effect = "send", probe = reminded, verb = "remind", target = user, slot = n)]
/// async fn send_reminder(user: String, n: u32, sent_at: u64) -> Result<(), Class> {
///     Ok(())
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let task = Task::new("onboarding-3", "agent:crm", Duration::from_secs(10));
/// let report = send_reminder(&task, "ada".to_owned(), 2, 1_796_000_000).await;
/// assert_eq!(report.idempotency_key, Intent::new("onboarding-3", "agent:crm", "remind", "ada").slot("2").key());
/// # }
/// ```
///
/// Without the macro: `task.key(&SPEC, &user, Some(&n))` with `ToolSpec::new(..).verb("remind")`.
///
/// ## `probe = Self::...` on a method: a client that holds its connection
///
/// ```
/// use std::time::Duration;
/// use tool_contract::{Class, IntentKey, Outcome, Probe, Task, tool};
///
/// struct Records { deleted: std::sync::Mutex<Vec<String>> }
///
/// impl Records {
///     /// Delete a record; the reply is lost after the deletion.
///     #[tool(effect = "destructive", probe = Self::gone, target = id)]
///     async fn delete_record(&self, id: String) -> Result<(), Class> {
///         self.deleted.lock().unwrap().push(id);
///         Err(Class::unknown("connection reset after the request was sent"))
///     }
///
///     /// A read that tells whether the record is gone.
///     async fn gone(&self, id: &String, key: IntentKey) -> Probe<()> {
///         if self.deleted.lock().unwrap().contains(id) { Probe::Landed(()) } else { Probe::NotLanded }
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let records = Records { deleted: Default::default() };
/// let task = Task::new("cleanup-2", "agent:ops", Duration::from_secs(10));
/// let report = records.delete_record(&task, "rec-7".to_owned()).await;
/// assert_eq!(report.outcome, Outcome::Ok, "the probe found it gone: not deleted twice");
/// assert_eq!(records.deleted.lock().unwrap().len(), 1);
/// # }
/// ```
///
/// Without the macro: the same `engine::run` call inside the method, the probe closure calling
/// `self.gone(&id, key)`.
///
/// # The tool a model calls: `{name}_tool()`
///
/// Beside the wrapper the attribute writes `{name}_tool()` (an associated function for a method), which
/// returns a [`ToolFn`](../tool_contract/toolbox/struct.ToolFn.html) for a `Toolbox`: the tool's
/// definition (name, description, JSON Schema of its parameters and of its report, effect kind) and its
/// dispatch from a model's JSON arguments. Both run the author's function, which the attribute keeps as
/// written under a hidden name (`__{name}_body`), so its body is checked once and its errors point at
/// the author's tokens; the dispatch runs it through the engine instantiated once in tool-contract
/// (`toolbox::run_json`), so a crate of many tools compiles the engine once, not once per tool. A
/// parameter's doc comment is its description for the model:
///
/// ```
/// use std::time::Duration;
/// use tool_contract::{Class, Outcome, Task, Toolbox, tool};
///
/// /// Read the price of one item, in cents.
/// #[tool(effect = "read", target = sku, name = "shop.read_price")]
/// async fn read_price(
///     /// The stock-keeping unit, like `sku-1`.
///     sku: String,
///     /// Whether to include tax; no when left out.
///     with_tax: Option<bool>,
/// ) -> Result<u64, Class> {
///     Ok(if with_tax == Some(true) { 1559 } else { 1299 })
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let definition = read_price_tool().definition();
/// assert_eq!(definition.name(), "shop.read_price");
/// assert_eq!(definition.description(), "Read the price of one item, in cents.");
/// assert_eq!(definition.input_schema()["required"], serde_json::json!(["sku"]));
///
/// let mut toolbox = Toolbox::new();
/// toolbox.add(read_price_tool()).unwrap();
/// let task = Task::new("quote-1", "agent", Duration::from_secs(10));
/// let report = toolbox.call(&task, "shop.read_price", serde_json::json!({ "sku": "sku-1" })).await.unwrap();
/// assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(serde_json::json!(1299))));
/// # }
/// ```
///
/// Every parameter type implements `Deserialize` and `JsonSchema`, and the value type `JsonSchema`; a
/// missing impl is reported on the type. The tool's future is `Send`, since a toolbox may run it on any
/// thread. A tool cannot be a method of a trait impl: the companion function has no place there. A method tool's receiver type is `'static` and `Sync` (a
/// toolbox holds it in an `Arc`). A generic tool's companion is generic too (`describe_tool::<u32>()`).
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
/// fit is one error on the `probe = ...` path that names both signatures:
///
/// ```text
/// error[E0277]: this probe takes `(String, &String, IntentKey)`, and a probe of this tool takes `(&String, &String, IntentKey)`
///   |
///   | #[tool(effect = "send", probe = notice_landed, target = thread)]
///   |                                 ^^^^^^^^^^^^^ expected `async fn(&String, &String, IntentKey) -> Probe<u64>`
/// ```
///
/// # The value and the error
///
/// The value type is `Serialize` and `Deserialize` ([`LogValue`](../tool_contract/journal/trait.LogValue.html)):
/// the attempt log records it, so a call repeated after its effect landed is answered with the recorded
/// value instead of running again. The error type implements `Classify`, which says what the failure
/// means for the caller; or return `Result<T, Class>`. Each unmet bound is reported on that type in the
/// signature, once.
///
/// The attribute reads the return type as written, so a type alias hides what it names: `type Found =
/// bool;` then `-> Result<Found, Class>` is not rejected as a `bool` would be (a macro cannot see
/// through an alias). Return what the tool found instead.
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
/// - a function that is not `async` (one that returns `impl Future<Output = ...>`, a boxed future or a
///   `BoxFuture` is told to be an `async fn`), a receiver other than `&self`, a call context not taken
///   as `&Call`;
/// - a return type that is not `Result<T, E>`; `bool`, `Result<bool, E>` or `Option<bool>`, however
///   the future around it is spelled;
/// - a missing or unknown `effect`; an unknown or repeated key; a value of the wrong form;
/// - `create`, `send`, `money` or `destructive` without `probe` (`create` may say `dedupe = "receiver"`);
///   a `probe` on a `read`; `dedupe` on a kind other than `create`;
/// - an unparsable duration, a zero `deadline_floor` on a side effect, a `probe_reserve` without a
///   probe or of zero, `max_attempts` outside 1..=100, a `backoff` without a cap or starting above it;
///   a key from another library (`retries`) is pointed to the one here (`max_attempts`);
/// - a `target`, `slot` or `bulk` naming no parameter; a `bulk`
///   parameter that is not a `Vec` or a bulk tool not returning `Result<Vec<Item>, E>`;
/// - what a model could not use: no doc comment and no `description`; a `name` (or a function name)
///   outside MCP's `[A-Za-z0-9_.-]{1,128}`; a destructured parameter, an `impl Trait` parameter, a
///   `&'static` parameter; a parameter type without `Deserialize` or `JsonSchema`, a value type without
///   `JsonSchema` (these from rustc, on the type);
/// - from rustc, on the author's tokens: a probe whose signature or value type does not fit (on the
///   path), an argument that is not `Clone`, a `target` that does not implement `Display`, an error
///   type that does not implement `Classify` or a value type that is not `Serialize` and `Deserialize`
///   (on the type in the signature).
///
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    let input = proc_macro2::TokenStream::from(input);
    let Ok(func) = syn::parse2::<ItemFn>(input.clone()) else {
        return fallback::not_a_function(input).into();
    };
    if let Some((header, self_ty)) = context::trait_impl(&func) {
        // One error, and the function as written: the trait impl is otherwise as the author wrote it.
        let error = context::in_trait_impl(&func, &header, &self_ty).into_compile_error();
        return quote::quote!(#error #func).into();
    }
    let args = proc_macro2::TokenStream::from(args);
    expand::tool(args.clone(), &func).unwrap_or_else(|error| fallback::expand(args, &func, error)).into()
}
