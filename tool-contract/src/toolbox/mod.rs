//! Tools a model can call: list their definitions, dispatch a model's JSON call to the engine.
//!
//! Every `#[tool]` also writes a companion function, `{name}_tool()`, that returns the tool ready for a
//! [`Toolbox`]: its [`Definition`] and a dispatcher that decodes the model's arguments and runs the
//! tool's body through the engine, as the wrapper does, so every guarantee of the contract holds for a
//! call that comes as JSON. The dispatcher runs [`run_json`], the engine with the value as JSON, which
//! this crate compiles once for every tool: a crate of a hundred tools does not compile the engine a
//! hundred times.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use serde_json::json;
//! use tool_contract::{Class, Outcome, Task, tool};
//! use tool_contract::toolbox::Toolbox;
//!
//! /// Read the price of one item, in cents.
//! #[tool(effect = "read", target = sku)]
//! async fn read_price(
//!     /// The stock-keeping unit, like `sku-1`.
//!     sku: String,
//! ) -> Result<u64, Class> {
//!     Ok(1299)
//! }
//!
//! struct Shop { name: String }
//!
//! impl Shop {
//!     /// Tell the shop's name.
//!     #[tool(effect = "read")]
//!     async fn shop_name(&self) -> Result<String, Class> {
//!         Ok(self.name.clone())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let mut toolbox = Toolbox::new();
//! toolbox.add(read_price_tool()).unwrap();
//! toolbox.add_method(Arc::new(Shop { name: "corner".into() }), Shop::shop_name_tool()).unwrap();
//!
//! let names: Vec<&str> = toolbox.definitions().iter().map(|d| d.name()).collect();
//! assert_eq!(names, ["read_price", "shop_name"]);
//! let price = &toolbox.definitions()[0];
//! assert_eq!(price.description(), "Read the price of one item, in cents.");
//! assert_eq!(price.input_schema()["properties"]["sku"]["description"], "The stock-keeping unit, like `sku-1`.");
//!
//! // The model's call: a name and JSON arguments. The task comes from the caller, never the model.
//! let task = Task::new("quote-1", "agent:sales", Duration::from_secs(10));
//! let report = toolbox.call(&task, "read_price", json!({ "sku": "sku-1" })).await.unwrap();
//! assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(json!(1299))));
//!
//! // Arguments that do not decode run nothing and say what to fix.
//! let report = toolbox.call(&task, "read_price", json!({ "sku": 7 })).await.unwrap();
//! assert_eq!(report.outcome, Outcome::Permanent);
//! assert!(report.message.contains("`sku`"));
//! # }
//! ```

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::define::{Definition, Format, Params};
use crate::key::IntentKey;
use crate::report::{Applied, Outcome, Report};
use crate::spec::ToolSpec;
use crate::task::Task;

use crate::journal::BoxFuture;

pub use json::{JsonAttempt, JsonProbe, Unwritten, into_json, json_answer, json_verdict, run_json};

/// How deep a model's arguments may nest. `serde_json` refuses deeper text already; this also holds for
/// a `Value` built in memory.
pub const MAX_DEPTH: usize = 128;

/// A tool ready for a [`Toolbox`]: its definition and how to call it with JSON arguments. The
/// `#[tool]` attribute writes one per tool, as `{name}_tool()`; `S` is the receiver of a method tool
/// (`()` for a free function).
pub struct ToolFn<S: ?Sized = ()> {
    describe: fn() -> Definition,
    call: for<'a> fn(&'a S, &'a Task, Args) -> BoxFuture<'a, Report<Value>>,
}

impl<S: ?Sized> ToolFn<S> {
    /// A tool from its definition and its dispatcher. The dispatcher decodes each argument with
    /// [`Args::take`], stops with [`Args::refuse`] when one does not decode, and runs the tool.
    pub fn new(
        describe: fn() -> Definition,
        call: for<'a> fn(&'a S, &'a Task, Args) -> BoxFuture<'a, Report<Value>>,
    ) -> ToolFn<S> {
        ToolFn { describe, call }
    }

    /// The tool's definition.
    pub fn definition(&self) -> Definition {
        (self.describe)()
    }
}

impl<S: ?Sized> Clone for ToolFn<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: ?Sized> Copy for ToolFn<S> {}

impl<S: ?Sized> fmt::Debug for ToolFn<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolFn").finish_non_exhaustive()
    }
}

/// A registered tool's dispatcher: its `ToolFn`'s call, bound to its receiver.
trait Dispatch: Send + Sync {
    fn call<'a>(&'a self, task: &'a Task, args: Args) -> BoxFuture<'a, Report<Value>>;
}

struct Bound<S: ?Sized> {
    receiver: Arc<S>,
    call: for<'a> fn(&'a S, &'a Task, Args) -> BoxFuture<'a, Report<Value>>,
}

impl<S: ?Sized + Send + Sync> Dispatch for Bound<S> {
    fn call<'a>(&'a self, task: &'a Task, args: Args) -> BoxFuture<'a, Report<Value>> {
        (self.call)(&self.receiver, task, args)
    }
}

/// A budget per call too short for one of a toolbox's tools: every call of it would be refused before
/// it starts ([`Toolbox::check_budget`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a budget of {} per call is too short for {tool}, whose deadline floor is {}: every call of it would be \
     refused before it starts; give each call more than {} (or lower the tool's deadline_floor)",
    crate::engine::secs(*budget),
    crate::engine::secs(*floor),
    crate::engine::secs(*floor)
)]
pub struct BudgetTooShort {
    /// The tool whose floor the budget does not exceed.
    pub tool: &'static str,
    /// Its deadline floor.
    pub floor: std::time::Duration,
    /// The budget given.
    pub budget: std::time::Duration,
}

/// The tools an agent offers a model: their definitions, sorted by name, and dispatch by name.
///
/// Calls go through the same engine as direct calls: the same intent key (task and actor from the
/// caller's [`Task`], `target` and `slot` from the arguments), budget, probe and attempt log; two calls
/// of one intent at once run once, as direct calls do.
#[derive(Default)]
pub struct Toolbox {
    /// Sorted by name, beside their dispatchers.
    definitions: Vec<Definition>,
    dispatchers: Vec<Box<dyn Dispatch>>,
}

impl fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.definitions.iter().map(Definition::name).collect();
        f.debug_struct("Toolbox").field("tools", &names).finish()
    }
}

impl Toolbox {
    /// An empty toolbox.
    pub fn new() -> Toolbox {
        Toolbox::default()
    }

    /// Registers a free-function tool: `toolbox.add(post_notice_tool())?`.
    pub fn add(&mut self, tool: ToolFn) -> Result<&mut Toolbox, DuplicateTool> {
        self.add_method(Arc::new(()), tool)
    }

    /// Registers a method tool on a shared receiver: `toolbox.add_method(desk.clone(), Desk::post_notice_tool())?`.
    pub fn add_method<S>(&mut self, receiver: Arc<S>, tool: ToolFn<S>) -> Result<&mut Toolbox, DuplicateTool>
    where
        S: ?Sized + Send + Sync + 'static,
    {
        let definition = tool.definition();
        let name = definition.name();
        let at = match self.find(name) {
            Ok(_) => return Err(DuplicateTool { name }),
            Err(at) => at,
        };
        self.definitions.insert(at, definition);
        self.dispatchers.insert(at, Box::new(Bound { receiver, call: tool.call }));
        Ok(self)
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.definitions.binary_search_by(|definition| definition.name().cmp(name))
    }

    /// The definitions, sorted by name.
    pub fn definitions(&self) -> &[Definition] {
        &self.definitions
    }

    /// The definitions in one format, as one JSON array (an MCP `tools/list` result's `tools`, or a
    /// request's `tools` for OpenAI or Anthropic).
    pub fn definitions_as(&self, format: Format) -> Value {
        Value::Array(self.definitions.iter().map(|definition| definition.to_format(format)).collect())
    }

    /// Whether a call given `budget` can start every tool: refused, naming the first tool (by name)
    /// whose deadline floor the budget does not exceed, since every call of it would be refused "not
    /// started" (the budget is spent a little before the attempt can begin). What a server that
    /// gives each call one budget checks at start ([`BudgetTooShort`]).
    pub fn check_budget(&self, budget: std::time::Duration) -> Result<(), BudgetTooShort> {
        match self.definitions.iter().find(|definition| budget.is_zero() || budget <= definition.floor()) {
            Some(definition) => {
                Err(BudgetTooShort { tool: definition.name(), floor: definition.floor(), budget })
            }
            None => Ok(()),
        }
    }

    /// The definition of the tool `name`.
    pub fn get(&self, name: &str) -> Option<&Definition> {
        self.find(name).ok().map(|at| &self.definitions[at])
    }

    /// Runs the tool `name` with a model's `arguments` (a JSON object; `null` for none) under `task`,
    /// and returns its report with the value as JSON.
    ///
    /// Arguments that do not decode (a missing field, a wrong type, an unknown field, anything but an
    /// object) run nothing: the report is `permanent`, effect `no`, and its message names each field
    /// and what was expected, so the model can fix its call. A name no tool has is an [`UnknownTool`].
    pub async fn call(
        &self,
        task: &Task,
        name: &str,
        arguments: Value,
    ) -> Result<Report<Value>, UnknownTool> {
        let Ok(at) = self.find(name) else {
            dismantle(arguments);
            let known = self.definitions.iter().map(Definition::name).collect();
            return Err(UnknownTool { name: clip(name, 128), known });
        };
        Ok(self.dispatchers[at].call(task, Args::new(arguments)).await)
    }
}

/// Two tools of one name in one toolbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateTool {
    /// The name both tools have.
    pub name: &'static str,
}

impl fmt::Display for DuplicateTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the toolbox already has a tool named `{}`; give one of them `name = \"...\"`", self.name)
    }
}

impl std::error::Error for DuplicateTool {}

/// A call of a tool the toolbox does not have: a protocol error, not a report (nothing was attempted,
/// and no tool's contract applies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTool {
    /// The name asked for (cut to 128 characters).
    pub name: String,
    /// The names the toolbox has.
    pub known: Vec<&'static str>,
}

impl fmt::Display for UnknownTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no tool is named `{}`", self.name)?;
        match self.known.len() {
            0 => write!(f, "; the toolbox is empty"),
            n if n <= 20 => write!(f, "; the tools are {}", self.known.join(", ")),
            n => write!(f, "; the toolbox has {n} tools, listed by its definitions"),
        }
    }
}

impl std::error::Error for UnknownTool {}

/// A model's arguments while a dispatcher decodes them. Every problem found is kept, so one refusal
/// names them all.
#[derive(Debug)]
#[doc(hidden)]
pub struct Args {
    fields: Map<String, Value>,
    problems: Vec<String>,
}

impl Args {
    /// The arguments of one call: an object, or `null` for none.
    pub fn new(arguments: Value) -> Args {
        let mut problems = Vec::new();
        let fields = match arguments {
            Value::Object(fields) => fields,
            Value::Null => Map::new(),
            other => {
                problems.push(format!("the arguments must be a JSON object, not {}", kind(&other)));
                dismantle(other);
                Map::new()
            }
        };
        if problems.is_empty()
            && let Some(deep) =
                fields.iter().find(|(_, value)| deeper_than(value, MAX_DEPTH - 1)).map(|(k, _)| k)
        {
            problems.push(format!("argument `{}` nests deeper than {MAX_DEPTH} levels", clip(deep, 64)));
            return Args { fields: Map::new(), problems }.dropping(fields);
        }
        Args { fields, problems }
    }

    /// What a question to a person binds of this call ([`crate::person`]), read before any argument is
    /// taken: for a side effect, the digest of the arguments in canonical JSON (keys sorted, no
    /// whitespace, so the client's order does not matter) and the arguments the tool shows
    /// ([`ToolSpec::shows`]), as JSON text cut to 240 bytes. A read binds nothing.
    pub fn arguments(&self, spec: &ToolSpec) -> crate::call::Arguments {
        use sha2::Digest;
        if !spec.effect().has_side_effect() {
            return crate::call::Arguments::default();
        }
        let mut hash = Hashed(sha2::Sha256::new());
        canonical_map(&self.fields, &mut hash);
        let digest = hash.0.finalize();
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        let shows = spec
            .get_shows()
            .iter()
            .map(|&name| {
                let text = self.fields.get(name).map_or_else(|| "null".to_owned(), Value::to_string);
                (name.to_owned(), crate::text::cut(&text).into_owned())
            })
            .collect();
        crate::call::Arguments { digest: Some(hex), shows }
    }

    fn dropping(self, fields: Map<String, Value>) -> Args {
        fields.into_iter().for_each(|(_, value)| dismantle(value));
        self
    }

    /// Takes the argument `name` as a `T`. An absent argument decodes as `null`, so an `Option` may be
    /// left out. `None` when it does not decode; the problem is kept for [`refuse`](Args::refuse).
    pub fn take<T: ModelArg>(&mut self, name: &str) -> Option<T> {
        match self.fields.remove(name) {
            Some(value) => match T::decode(value) {
                Ok(value) => Some(value),
                Err(error) => {
                    self.problems.push(clip(&format!("argument `{name}`: {error}"), 240));
                    None
                }
            },
            None => match T::decode(Value::Null) {
                Ok(value) => Some(value),
                Err(error) => {
                    let error = error.to_string();
                    let expected = error.split_once("expected ").map_or("a value", |(_, what)| what);
                    self.problems.push(format!("missing argument `{name}`: expected {expected}"));
                    None
                }
            },
        }
    }

    /// `true` when every argument decoded and none is left over; an argument left over is an unknown
    /// one, and is kept as a problem.
    pub fn is_clean(&mut self) -> bool {
        if !self.fields.is_empty() {
            let names: Vec<String> =
                self.fields.keys().take(8).map(|name| format!("`{}`", clip(name, 64))).collect();
            let more = self.fields.len().saturating_sub(names.len());
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            let noun = if self.fields.len() == 1 { "argument" } else { "arguments" };
            self.problems.push(format!("unknown {noun} {}{more}", names.join(", ")));
            std::mem::take(&mut self.fields).into_iter().for_each(|(_, value)| dismantle(value));
        }
        self.problems.is_empty()
    }

    /// The report of a call whose arguments did not decode: `permanent`, effect `no`, nothing run;
    /// the message names every problem and the arguments the tool takes.
    pub fn refuse(self, task: &Task, spec: &ToolSpec, expected: &[&str]) -> Report<Value> {
        let mut message = format!("{} was not called: {}", spec.name(), self.problems.join("; "));
        if expected.is_empty() {
            message.push_str("; it takes no arguments");
        } else {
            message.push_str("; it takes ");
            message.push_str(&expected.join(", "));
        }
        Report {
            outcome: Outcome::Permanent,
            effect_applied: Applied::No,
            attempt_id: String::new(),
            // No intent was formed: a key derived from an empty target would be a real call's.
            idempotency_key: IntentKey::NONE,
            retry_after_s: None,
            deadline_left_s: task.remaining().as_secs(),
            message,
            value: None,
            items: Vec::new(),
            reason: crate::report::Reason::BadArguments,
        }
    }
}

/// What a parameter a model fills must be: decodable from JSON and described by a JSON Schema.
/// Implemented for every `DeserializeOwned + JsonSchema` type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be filled in by a model: a tool parameter needs `Deserialize` and `JsonSchema`",
    label = "a model sends this parameter as JSON",
    note = "derive both for `{Self}`: `#[derive(serde::Deserialize, schemars::JsonSchema)]`, or take a type that has them (`String`, a number, a `Vec`)"
)]
pub trait ModelArg: Sized {
    /// The value from a model's JSON.
    fn decode(value: Value) -> Result<Self, serde_json::Error>;

    /// Adds a parameter of this type to `params`.
    fn describe(params: &mut Params, name: &str, description: Option<&str>, required: bool);
}

impl<T: DeserializeOwned + JsonSchema> ModelArg for T {
    fn decode(value: Value) -> Result<T, serde_json::Error> {
        serde_json::from_value(value)
    }

    fn describe(params: &mut Params, name: &str, description: Option<&str>, required: bool) {
        params.param::<T>(name, description, required);
    }
}

/// What a tool's value must be for its report to have an output schema. Implemented for every
/// `JsonSchema` type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no JSON Schema, and a tool's definition describes the value its report carries",
    label = "the report's `value` is described by this type's schema",
    note = "derive it: `#[derive(schemars::JsonSchema)]` on `{Self}`"
)]
pub trait ModelValue {
    /// `definition` with its output schema's `value` of this type.
    fn describe(definition: Definition) -> Definition;
}

impl<T: JsonSchema + ?Sized> ModelValue for T {
    fn describe(definition: Definition) -> Definition {
        definition.output::<T>()
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

/// Whether `value` nests deeper than `limit` levels, found without recursion (and without allocating
/// for a scalar, the common argument).
fn deeper_than(value: &Value, limit: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    let mut next = Some((value, 0usize));
    while let Some((value, depth)) = next.take().or_else(|| stack.pop()) {
        match value {
            Value::Array(values) if !values.is_empty() => {
                if depth >= limit {
                    return true;
                }
                stack.extend(values.iter().map(|child| (child, depth + 1)));
            }
            Value::Object(map) if !map.is_empty() => {
                if depth >= limit {
                    return true;
                }
                stack.extend(map.values().map(|child| (child, depth + 1)));
            }
            _ => {}
        }
    }
    false
}

/// A hasher written to as a `std::io::Write`.
struct Hashed(sha2::Sha256);

impl std::io::Write for Hashed {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(&mut self.0, bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `value` as canonical JSON into `out`: object keys sorted, no whitespace. The arguments nest at most
/// [`MAX_DEPTH`] levels ([`Args::new`] refused deeper ones), so the recursion is bounded.
fn canonical(value: &Value, out: &mut Hashed) {
    use std::io::Write;
    match value {
        Value::Object(map) => canonical_map(map, out),
        Value::Array(values) => {
            let _ = out.write_all(b"[");
            for (i, value) in values.iter().enumerate() {
                if i > 0 {
                    let _ = out.write_all(b",");
                }
                canonical(value, out);
            }
            let _ = out.write_all(b"]");
        }
        // Scalars as serde_json writes them (a string with its escapes).
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

fn canonical_map(map: &Map<String, Value>, out: &mut Hashed) {
    use std::io::Write;
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let _ = out.write_all(b"{");
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            let _ = out.write_all(b",");
        }
        let _ = serde_json::to_writer(&mut *out, key);
        let _ = out.write_all(b":");
        canonical(&map[key], out);
    }
    let _ = out.write_all(b"}");
}

/// Drops a value without recursion, so a value nested a million deep cannot overflow the stack.
fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(values) => stack.extend(values),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, value)| value)),
            _ => {}
        }
    }
}

mod json;
#[cfg(test)]
mod tests;
