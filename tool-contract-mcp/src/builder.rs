//! The options of an [`McpServer`] ([`Builder`]), and the random key and instance id it falls back on.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmcp::model::RequestStateCodec;
use tool_contract::journal::Journal;
use tool_contract::person::Approve;
use tool_contract::task::{Escalate, TaskTemplate};
use tool_contract::toolbox::BudgetTooShort;
use tool_contract::{Task, Toolbox};

use crate::handler::tool;
use crate::{ASK_WITHIN, DEFAULT_ACTOR, Inner, McpServer};

/// The options of an [`McpServer`]: the same a library user gives a `Task`.
pub struct Builder {
    toolbox: Toolbox,
    template: TaskTemplate,
    budget: Duration,
    instance: Option<String>,
    name: String,
    version: String,
    own_approver: bool,
    ask_within: Duration,
    state_key: Option<[u8; 32]>,
    tasks: bool,
    task_ttl: Duration,
    task_support: std::collections::HashMap<String, crate::TaskSupport>,
    value_text: bool,
}

impl Builder {
    /// Each call's budget, from the moment the request arrives (default 60 s).
    pub fn budget(mut self, budget: Duration) -> Builder {
        self.budget = budget;
        self
    }

    /// Every call shares `task`'s attempt log, approver and escalation sink, as a library user's calls
    /// of that task would (what the other options set is applied on top). An approver of the task's
    /// answers instead of the person at the client.
    pub fn like(mut self, task: &Task) -> Builder {
        self.template = self.template.like(task);
        // The task's approver, if it has one, answers instead of the person at the client.
        self.own_approver |= tool_contract::task::has_approver(task);
        self
    }

    /// The attempt log every call writes ahead (default: one in memory, bounded as
    /// [`MemoryJournal`](tool_contract::MemoryJournal) says).
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> Builder {
        self.template = self.template.journal(journal);
        self
    }

    /// Who says yes or no before a second attempt of a `money` tool, instead of the person at the
    /// client (asked through it by default: see the crate docs).
    pub fn approver(mut self, approver: impl Approve + 'static) -> Builder {
        self.template = self.template.approver(approver);
        self.own_approver = true;
        self
    }

    /// How long to wait for the person at the client to answer a form sent with
    /// `elicitation/create` (default [`ASK_WITHIN`]); no answer by then is a no.
    pub fn ask_within(mut self, within: Duration) -> Builder {
        self.ask_within = within;
        self
    }

    /// The key that seals the state of an input-required round (2026-07-28 clients): the same on every
    /// instance behind one address, so a retried call may reach another one. Default: a random key per
    /// process, so a round is answered by the process that asked.
    pub fn request_state_key(mut self, key: [u8; 32]) -> Builder {
        self.state_key = Some(key);
        self
    }

    /// Whether a call in doubt is answered with an MCP task, for a client that declares the tasks
    /// extension (default: yes, when the attempt log keeps tasks; see the crate docs, "Tasks").
    pub fn tasks(mut self, offered: bool) -> Builder {
        self.tasks = offered;
        self
    }

    /// How long a task is kept for its client from its creation (default [`TASK_TTL`](crate::TASK_TTL);
    /// a `money` task at least as long as the person at the client is given, plus two budgets).
    pub fn task_ttl(mut self, ttl: Duration) -> Builder {
        self.task_ttl = ttl;
        self
    }

    /// When a call of the tool `name`, from a client that declares the tasks extension, is answered
    /// with a task (default: [`TaskSupport::Optional`](crate::TaskSupport) for a side effect,
    /// [`TaskSupport::Never`](crate::TaskSupport) for a read).
    pub fn task_support(mut self, name: impl Into<String>, support: crate::TaskSupport) -> Builder {
        self.task_support.insert(name.into(), support);
        self
    }

    /// Whether an `ok` report whose value is a string is sent with that string as its first text
    /// block, before the report's JSON (default: no, the report's JSON alone). For a client that shows
    /// a tool's text to a person as it is; the structured content is the report either way.
    pub fn value_text(mut self, first: bool) -> Builder {
        self.value_text = first;
        self
    }

    /// Where unresolved outcomes go.
    pub fn escalate_to(mut self, sink: impl Escalate + 'static) -> Builder {
        self.template = self.template.escalate_to(sink);
        self
    }

    /// The worker's name the calls' claims carry in a shared store ([`Task::worker`]).
    pub fn worker(mut self, name: impl Into<Arc<str>>) -> Builder {
        self.template = self.template.worker(name);
        self
    }

    /// The task of a call whose request names none. By default a random id per process start, so a
    /// call re-sent after a broken stream is recognised while the process runs; set a stable one (and a
    /// file attempt log) for keys that survive a restart.
    pub fn instance_id(mut self, id: impl Into<String>) -> Builder {
        self.instance = Some(id.into());
        self
    }

    /// The name and version the server gives in its `initialize` reply.
    pub fn server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Builder {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// The server; refused when the budget per call is too short for one of the tools (every call of
    /// it would be refused before it starts), naming the tool and its floor.
    pub fn build(self) -> Result<McpServer, BudgetTooShort> {
        self.toolbox.check_budget(self.budget)?;
        let template = self.template.build();
        let tools = self.toolbox.definitions().iter().map(tool).collect();
        let keeps_tasks = tool_contract::unstable::journal_of(&template.task("", "", Duration::ZERO))
            .is_some_and(|log| log.mcp_tasks().is_some());
        Ok(McpServer {
            connection: crate::new_connection(),
            inner: Arc::new(Inner {
                toolbox: self.toolbox,
                tools,
                template,
                budget: self.budget,
                instance: self.instance.unwrap_or_else(random_instance).into(),
                default_actor: DEFAULT_ACTOR.into(),
                name: self.name,
                version: self.version,
                ask_client: !self.own_approver,
                ask_within: self.ask_within,
                codec: RequestStateCodec::new_unchecked(self.state_key.unwrap_or_else(random_key).to_vec()),
                tasks: crate::tasks::Tasks::new(keeps_tasks && self.tasks, self.task_ttl, self.task_support),
                value_text: self.value_text,
            }),
        })
    }
}
/// 32 bytes from the operating system's random generator. Were it to fail (no supported system
/// fails it), the bytes come from std's hash keys, which the same generator seeds once per process.
fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    if getrandom::fill(&mut key).is_ok() {
        return key;
    }
    for (i, chunk) in key.chunks_mut(8).enumerate() {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_usize(i);
        chunk.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    key
}

/// `mcp-` and 16 hex digits, different at every process start.
fn random_instance() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    format!("mcp-{:016x}", hasher.finish())
}

impl McpServer {
    /// A server over `toolbox`; see [`Builder`] for its options.
    pub fn builder(toolbox: Toolbox) -> Builder {
        Builder {
            toolbox,
            template: TaskTemplate::default(),
            budget: Duration::from_secs(60),
            instance: None,
            name: "tool-contract-mcp".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            own_approver: false,
            ask_within: ASK_WITHIN,
            state_key: None,
            tasks: true,
            task_ttl: crate::TASK_TTL,
            task_support: std::collections::HashMap::new(),
            value_text: false,
        }
    }
}
