//! A [`Toolbox`] as rig tools: each tool a [`DynamicTool`] whose output is the report's JSON for every
//! outcome.
//!
//! rig marks a tool error retryable (a timeout is, by default) for whatever drives the agent loop to act
//! on: a host's retry policy, a hook, the model. On a side effect whose reply was lost, acting on that
//! mark is the duplicate this project exists to stop. So no outcome reaches rig as an error. `unknown`, `retryable` and `permanent` are reports the model reads, with the effect
//! said separately, and the engine has already probed, waited and retried as the tool's effect kind
//! allows.
//!
//! The task of a call comes from rig's [`ToolContext`]: a [`Task`] attached as a scope
//! (`ToolContext::with_scope(Arc::new(task))`: its budget, attempt log, approver and escalation sink),
//! else a [`TaskName`] inserted as a context value (run under this adapter's options; each part 1 to
//! 256 characters, none a control character, or the call is an error rig does not retry and nothing
//! runs), else the adapter's instance id. A [`ToolCallId`] in the context (the model's id for the tool-use block) becomes
//! the call's `gen_ai.tool.call.id` (the `tracing` feature of `tool-contract`); rig does not pass its
//! own to tools.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use rig_core::tool::ToolContext;
//! use tool_contract::{Class, Task, Toolbox, tool};
//! use tool_contract_rig::RigToolbox;
//!
//! /// Read the price of one item, in cents.
//! #[tool(effect = "read", target = sku)]
//! async fn read_price(sku: String) -> Result<u64, Class> {
//!     Ok(1299)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let mut toolbox = Toolbox::new();
//! toolbox.add(read_price_tool()).unwrap();
//! let tools = RigToolbox::new(toolbox).tools().unwrap();
//!
//! let task = Task::new("quote-1", "agent:sales", Duration::from_secs(30));
//! let mut context = ToolContext::default().with_scope(Arc::new(task));
//! let output = tools[0].execute_with(&mut context, serde_json::json!({ "sku": "sku-1" })).await.unwrap();
//! assert_eq!(output.as_json().unwrap()["value"], 1299);
//! # }
//! ```

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rig_core::completion::message::ToolName;
use rig_core::tool::{ContextValue, DynamicTool, ToolContext, ToolErrorKind, ToolExecutionError, ToolOutput};
use rig_core::wasm_compat::WasmBoxedFuture;
use serde::{Deserialize, Serialize};
use tool_contract::journal::Journal;
use tool_contract::person::Approve;
use tool_contract::task::{Escalate, TaskFactory, TaskTemplate};
pub use tool_contract::toolbox::BudgetTooShort;
use tool_contract::{Task, Toolbox};

/// The task and actor of a call, as a rig context value (key `dev.tool-contract/task`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskName {
    /// The durable identity of the work (the ticket, the order).
    pub task: String,
    /// Who the task acts for.
    pub actor: String,
}

impl ContextValue for TaskName {
    const KEY: &'static str = "dev.tool-contract/task";
}

/// The model's id for one tool call (the `id` of its tool-use block), as a rig context value (key
/// `dev.tool-contract/tool_call_id`): recorded on the call's span as `gen_ai.tool.call.id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallId(pub String);

impl ContextValue for ToolCallId {
    const KEY: &'static str = "dev.tool-contract/tool_call_id";
}

/// The actor of a call whose context names none.
pub const DEFAULT_ACTOR: &str = "rig-agent";

/// The adapter's options, and the tools it makes.
pub struct RigToolbox {
    toolbox: Toolbox,
    template: TaskTemplate,
    budget: Duration,
    instance: Option<String>,
}

struct Shared {
    toolbox: Toolbox,
    template: TaskFactory,
    budget: Duration,
    instance: String,
}

impl RigToolbox {
    /// The adapter for `toolbox`: 60 s per call, an attempt log in memory, a random instance id.
    pub fn new(toolbox: Toolbox) -> RigToolbox {
        RigToolbox {
            toolbox,
            template: TaskTemplate::default(),
            budget: Duration::from_secs(60),
            instance: None,
        }
    }

    /// Each call's budget when the context carries no [`Task`].
    pub fn budget(mut self, budget: Duration) -> RigToolbox {
        self.budget = budget;
        self
    }

    /// Calls whose context carries no [`Task`] share `task`'s attempt log, approver and escalation
    /// sink, its turns and retry budgets, as a library user's calls of that task would (what the other
    /// options set is applied on top).
    pub fn like(mut self, task: &Task) -> RigToolbox {
        self.template = self.template.like(task);
        self
    }

    /// The attempt log of calls whose context carries no [`Task`] (default: one in memory).
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> RigToolbox {
        self.template = self.template.journal(journal);
        self
    }

    /// Who says yes or no before a second attempt of a `money` tool, for calls whose context carries
    /// no [`Task`]: without one such a call stops after its first attempt.
    pub fn approver(mut self, approver: impl Approve + 'static) -> RigToolbox {
        self.template = self.template.approver(approver);
        self
    }

    /// Where the unresolved outcomes of calls whose context carries no [`Task`] go.
    pub fn escalate_to(mut self, sink: impl Escalate + 'static) -> RigToolbox {
        self.template = self.template.escalate_to(sink);
        self
    }

    /// The worker's name the calls' claims carry in a shared store ([`Task::worker`]).
    pub fn worker(mut self, name: impl Into<Arc<str>>) -> RigToolbox {
        self.template = self.template.worker(name);
        self
    }

    /// The task of calls whose context names none (default: random per process start).
    pub fn instance_id(mut self, id: impl Into<String>) -> RigToolbox {
        self.instance = Some(id.into());
        self
    }

    /// One rig tool per toolbox tool, sorted by name; refused when the budget per call is too short
    /// for one of them (every call of it would be refused before it starts), naming the tool.
    pub fn tools(self) -> Result<Vec<DynamicTool>, BudgetTooShort> {
        self.toolbox.check_budget(self.budget)?;
        let shared = Arc::new(Shared {
            template: self.template.build(),
            budget: self.budget,
            instance: self.instance.unwrap_or_else(random_instance),
            toolbox: self.toolbox,
        });
        let mut tools = Vec::new();
        for definition in shared.toolbox.definitions() {
            let Ok(name) = ToolName::new(definition.name()) else { continue };
            let shared = Arc::clone(&shared);
            let tool_name = definition.name();
            let parameters = serde_json::Value::Object(definition.input_schema().clone());
            let callback = pinned(move |context, arguments| {
                let shared = Arc::clone(&shared);
                let task = shared.task(context);
                Box::pin(async move {
                    match task {
                        Ok(task) => shared.call(&task, tool_name, arguments).await,
                        // The host's mistake, not the model's: nothing ran, and retrying cannot help.
                        Err(why) => {
                            Err(ToolExecutionError::new(ToolErrorKind::Other, why).with_retryable(false))
                        }
                    }
                })
            });
            tools.push(DynamicTool::new_with_context(name, definition.description(), parameters, callback));
        }
        Ok(tools)
    }
}

impl Shared {
    /// The task of a call: the context's, or one named by its [`TaskName`] (each name 1 to 256
    /// characters, none a control character, as an MCP request's), or the instance's.
    fn task(&self, context: &ToolContext) -> Result<Arc<Task>, String> {
        let call_id = context.get::<ToolCallId>().ok().flatten();
        if let Some(task) = context.scope::<Task>() {
            return Ok(match call_id {
                Some(ToolCallId(id)) => Arc::new(Task::clone(&task).tool_call_id(id)),
                None => task,
            });
        }
        let named = context.get::<TaskName>().ok().flatten();
        let (id, actor) = match &named {
            Some(name) => (checked("task", &name.task)?, checked("actor", &name.actor)?),
            None => (self.instance.as_str(), DEFAULT_ACTOR),
        };
        let task = self.template.task(id, actor, self.budget);
        Ok(Arc::new(match call_id {
            Some(ToolCallId(id)) => task.tool_call_id(id),
            None => task,
        }))
    }

    /// The report's JSON, whatever the outcome: never an error rig could retry.
    async fn call(
        &self,
        task: &Task,
        name: &str,
        arguments: serde_json::Value,
    ) -> Result<ToolOutput, ToolExecutionError> {
        let report = match self.toolbox.call(task, name, arguments).await {
            Ok(report) => report,
            // Each rig tool is made from a toolbox tool of its name.
            Err(unknown) => return Err(ToolExecutionError::invalid_args(unknown.to_string())),
        };
        match serde_json::to_value(&report) {
            Ok(json) => Ok(ToolOutput::json(json)),
            Err(error) => Ok(ToolOutput::text(format!("{report:?}: {error}"))),
        }
    }
}

/// A [`TaskName`] part that can name a task ([`tool_contract::task::is_valid_name`]).
fn checked<'t>(part: &str, text: &'t str) -> Result<&'t str, String> {
    if !tool_contract::task::is_valid_name(text) {
        return Err(format!(
            "the TaskName's {part} {:?} is not one: 1 to 256 characters, none a control character",
            text.chars().take(64).collect::<String>()
        ));
    }
    Ok(text)
}

type Called<'a> = WasmBoxedFuture<'a, Result<ToolOutput, ToolExecutionError>>;

/// Pins a closure to the higher-ranked signature rig's callbacks have.
fn pinned<F>(f: F) -> F
where
    F: for<'a> Fn(&'a mut ToolContext, serde_json::Value) -> Called<'a> + Send + Sync + 'static,
{
    f
}

fn random_instance() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher
        .write_u128(SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos());
    format!("rig-{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared() -> Shared {
        Shared {
            toolbox: Toolbox::new(),
            template: TaskTemplate::default().build(),
            budget: Duration::from_secs(5),
            instance: "rig-test".to_owned(),
        }
    }

    #[test]
    fn the_task_comes_from_the_context_with_the_models_call_id() {
        let shared = shared();
        let mut named = ToolContext::default();
        named.insert(TaskName { task: "order-7".to_owned(), actor: "agent:ops".to_owned() }).unwrap();
        named.insert(ToolCallId("toolu_01".to_owned())).unwrap();
        let task = shared.task(&named).unwrap();
        assert_eq!((task.id(), task.actor(), task.call_id()), ("order-7", "agent:ops", Some("toolu_01")));

        let mut scoped = ToolContext::default().with_scope(Arc::new(Task::new(
            "order-8",
            "agent:x",
            Duration::from_secs(1),
        )));
        assert_eq!(shared.task(&scoped).unwrap().call_id(), None);
        scoped.insert(ToolCallId("call_2".to_owned())).unwrap();
        let task = shared.task(&scoped).unwrap();
        assert_eq!((task.id(), task.call_id()), ("order-8", Some("call_2")));

        let bare = shared.task(&ToolContext::default()).unwrap();
        assert_eq!((bare.id(), bare.actor(), bare.call_id()), ("rig-test", DEFAULT_ACTOR, None));

        for (task, actor) in
            [("", "agent"), ("order-9", ""), ("a\nb", "agent"), (&"x".repeat(257)[..], "agent")]
        {
            let mut wrong = ToolContext::default();
            wrong.insert(TaskName { task: task.to_owned(), actor: actor.to_owned() }).unwrap();
            let why = shared.task(&wrong).err().unwrap_or_else(|| panic!("{task:?} {actor:?} named a task"));
            assert!(why.contains("1 to 256 characters"), "{why}");
        }
    }
}
