//! The task: the durable unit of work, its one deadline budget, and who hears about what it cannot resolve.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::budget::RetryBudgets;

use crate::journal::{BoxFuture, Journal, Recall};
use crate::key::IntentKey;
use crate::key::KeyHashing;
use crate::person::Approve;
use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;

/// One piece of work an agent does for someone: its identity, its actor, one wall-clock budget, and the
/// people or systems that hear about what it cannot resolve alone.
///
/// The budget is read from tokio's clock, so tests run it on a paused clock.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::Task;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let task = Task::new("ord-7741", "agent:billing", Duration::from_secs(30));
/// assert!(task.remaining() <= Duration::from_secs(30));
/// # }
/// ```
#[derive(Clone)]
pub struct Task {
    id: Arc<str>,
    actor: Arc<str>,
    deadline: Instant,
    escalation: Option<Arc<dyn Escalate>>,
    approver: Option<Arc<dyn Approve>>,
    journal: Option<Arc<dyn Journal>>,
    /// The intents with a side-effecting call under way, shared by the task's clones and the tasks
    /// made with [`Task::new_like`]: two calls of one intent take turns.
    turns: Arc<Turns>,
    /// The retry budget of each service, shared like the turns.
    budgets: RetryBudgets,
    /// The model's id for the tool call this task serves, when it has one.
    call_id: Option<Arc<str>>,
    /// The name the claims of this process carry in a shared store, when given.
    worker: Option<Arc<str>>,
}

/// `now + budget`, or thirty years from now for a budget too large to add.
fn deadline_after(now: Instant, budget: Duration) -> Instant {
    now.checked_add(budget).unwrap_or(now + Duration::from_secs(86400 * 365 * 30))
}

/// The longest task id or actor that comes from outside the process, in characters.
pub const MAX_NAME_CHARS: usize = 256;

/// Whether `task` has an approver of its own ([`Task::approver`]): a host that asks a person some other
/// way (an MCP server asking the person at its client) leaves such a task's approver in charge.
pub fn has_approver(task: &Task) -> bool {
    task.approver_ref().is_some()
}

/// Whether `text` may name a task or an actor when it comes from outside the process (an MCP
/// request's `_meta`, a rig context value, a command line): 1 to [`MAX_NAME_CHARS`] characters, none a
/// control character (it goes into attempt ids and log lines as it is).
pub fn is_valid_name(text: &str) -> bool {
    !text.is_empty() && text.chars().count() <= MAX_NAME_CHARS && !text.chars().any(char::is_control)
}

impl Task {
    /// A task whose budget starts now and lasts `budget`.
    pub fn new(id: impl Into<Arc<str>>, actor: impl Into<Arc<str>>, budget: Duration) -> Task {
        let now = Instant::now();
        Task {
            id: id.into(),
            actor: actor.into(),
            deadline: deadline_after(now, budget),
            escalation: None,
            approver: None,
            journal: None,
            turns: Arc::default(),
            budgets: RetryBudgets::default(),
            call_id: None,
            worker: None,
        }
    }

    /// Name the worker this task runs in: the claims its side effects take in a shared store are
    /// owned by `{worker}.{incarnation}.{serial}` (default: `{process id}-{incarnation}.{serial}`),
    /// so an operator reading a store's claims, or a call's "another worker (..) is running this
    /// intent", sees which worker it is. Each call still claims as an owner of its own, and the
    /// incarnation differs in every process started: a worker restarted under its name never renews
    /// its dead predecessor's claim as its own. Tasks made with [`Task::new_like`] keep it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_contract::Task;
    ///
    /// let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).worker("billing-w4");
    /// assert_eq!(task.worker_name(), Some("billing-w4"));
    /// ```
    pub fn worker(mut self, name: impl Into<Arc<str>>) -> Task {
        self.worker = Some(name.into());
        self
    }

    /// The worker's name given with [`Task::worker`].
    pub fn worker_name(&self) -> Option<&str> {
        self.worker.as_deref()
    }

    /// Where unresolved outcomes go (an operator queue, a ticket, a log).
    pub fn escalate_to(mut self, sink: impl Escalate + 'static) -> Task {
        self.escalation = Some(Arc::new(sink));
        self
    }

    /// Who says yes or no before a second attempt of a `money` tool.
    pub fn approver(mut self, approver: impl Approve + 'static) -> Task {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// The attempt log every call of this task writes ahead.
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> Task {
        self.journal = Some(journal);
        self
    }

    /// The retry budgets this task's retries draw on, one per service ([`crate::budget`]): by default
    /// its own (20 % of the first attempts of the last 10 s, plus 10 retries a second), shared with its
    /// clones and the tasks made from it with [`Task::new_like`]. Give every task of a process the same
    /// one to guard the services they share; [`RetryBudget::UNLIMITED`](crate::budget::RetryBudget::UNLIMITED)
    /// turns the guard off.
    pub fn retry_budgets(mut self, budgets: RetryBudgets) -> Task {
        self.budgets = budgets;
        self
    }

    pub(crate) fn budgets(&self) -> &RetryBudgets {
        &self.budgets
    }

    /// The model's id for the tool call this task serves (the `id` of a tool-use block, an MCP
    /// request's id), recorded as `gen_ai.tool.call.id` on the call's span (feature `tracing`).
    pub fn tool_call_id(mut self, id: impl Into<Arc<str>>) -> Task {
        self.call_id = Some(id.into());
        self
    }

    /// The id set by [`Task::tool_call_id`], if any.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// A new task, `id` for `actor` with a budget of `budget` from now, that shares this one's escalation
    /// sink, approver and attempt log, its retry budgets, and its turns: two calls of one intent through either wait for each
    /// other. What a server that opens a task per request keeps as a template.
    pub fn new_like(&self, id: impl Into<Arc<str>>, actor: impl Into<Arc<str>>, budget: Duration) -> Task {
        // Built in place: a task made per request allocates no turns or budgets of its own to drop.
        let now = Instant::now();
        Task {
            id: id.into(),
            actor: actor.into(),
            deadline: deadline_after(now, budget),
            escalation: self.escalation.clone(),
            approver: self.approver.clone(),
            journal: self.journal.clone(),
            turns: Arc::clone(&self.turns),
            budgets: self.budgets.clone(),
            call_id: None,
            worker: self.worker.clone(),
        }
    }

    /// The durable identity of the work.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Who the task acts for.
    pub fn actor(&self) -> &str {
        &self.actor
    }

    /// The intent key of a call of `spec` on `target` (and `slot`) in this task.
    pub fn key(
        &self,
        spec: &crate::spec::ToolSpec,
        target: &dyn fmt::Display,
        slot: Option<&dyn fmt::Display>,
    ) -> IntentKey {
        IntentKey::derive(&self.id, &self.actor, spec.get_verb(), target, slot)
    }

    /// When the budget runs out.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The budget left now.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    pub(crate) fn escalation(&self) -> Option<&dyn Escalate> {
        self.escalation.as_deref()
    }

    pub(crate) fn approver_ref(&self) -> Option<&dyn Approve> {
        self.approver.as_deref()
    }

    pub(crate) fn turns(&self) -> &Turns {
        &self.turns
    }

    pub(crate) fn journal_ref(&self) -> Option<&dyn Journal> {
        self.journal.as_deref()
    }

    pub(crate) fn journal_arc(&self) -> Option<Arc<dyn Journal>> {
        self.journal.clone()
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id)
            .field("actor", &self.actor)
            .field("remaining", &self.remaining())
            .field("escalation", &self.escalation.is_some())
            .field("approver", &self.approver.is_some())
            .field("journal", &self.journal.is_some())
            .finish()
    }
}

/// The options a server that makes a task per request (an MCP server, a rig adapter) starts each task
/// from: a library user's `Task` options, set in any order. [`TaskTemplate::build`] starts from the
/// task given to [`TaskTemplate::like`] (its log, approver, sink, turns and retry budgets) or from a
/// task with an attempt log in memory, then applies the log, approver and sink set here on top.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use tool_contract::task::{Escalation, TaskTemplate};
/// use tool_contract::{MemoryJournal, Task};
///
/// let template = TaskTemplate::default()
///     .journal(Arc::new(MemoryJournal::new()))
///     .escalate_to(|escalation: Escalation| async move { eprintln!("{escalation:?}") })
///     .build();
/// let task = template.task("ticket-9", "agent:support", Duration::from_secs(30));
/// assert_eq!(task.id(), "ticket-9");
/// ```
#[derive(Default)]
pub struct TaskTemplate {
    like: Option<Task>,
    journal: Option<Arc<dyn Journal>>,
    approver: Option<Arc<dyn Approve>>,
    escalation: Option<Arc<dyn Escalate>>,
    worker: Option<Arc<str>>,
}

/// What [`TaskTemplate::build`] makes: the tasks of a server that makes one per request, each with its
/// own id, actor and budget. It is not a task itself (it has neither an id nor a budget), so it cannot
/// run a call by mistake.
#[derive(Clone)]
pub struct TaskFactory {
    base: Task,
}

impl TaskFactory {
    /// A task `id` for `actor` with a budget of `budget` from now, sharing the factory's log,
    /// approver, sink, worker name, turns and retry budgets ([`Task::new_like`]).
    pub fn task(&self, id: impl Into<Arc<str>>, actor: impl Into<Arc<str>>, budget: Duration) -> Task {
        self.base.new_like(id, actor, budget)
    }
}

impl fmt::Debug for TaskFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskFactory")
            .field("escalation", &self.base.escalation.is_some())
            .field("approver", &self.base.approver.is_some())
            .field("journal", &self.base.journal.is_some())
            .field("worker", &self.base.worker)
            .finish()
    }
}

impl TaskTemplate {
    /// Tasks share `task`'s attempt log, approver and escalation sink, its turns and retry budgets, as
    /// a library user's calls of that task would.
    pub fn like(mut self, task: &Task) -> TaskTemplate {
        self.like = Some(task.new_like("", "", Duration::ZERO));
        self
    }

    /// The attempt log every task writes ahead (default: the one of [`TaskTemplate::like`]'s task, or
    /// one in memory).
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> TaskTemplate {
        self.journal = Some(journal);
        self
    }

    /// Who says yes or no before a second attempt of a `money` tool.
    pub fn approver(mut self, approver: impl Approve + 'static) -> TaskTemplate {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Where unresolved outcomes go.
    pub fn escalate_to(mut self, sink: impl Escalate + 'static) -> TaskTemplate {
        self.escalation = Some(Arc::new(sink));
        self
    }

    /// The worker's name its tasks' claims carry ([`Task::worker`]).
    pub fn worker(mut self, name: impl Into<Arc<str>>) -> TaskTemplate {
        self.worker = Some(name.into());
        self
    }

    /// The factory each request's task is made with.
    pub fn build(self) -> TaskFactory {
        let mut task = match (self.like, self.journal) {
            (Some(like), None) => like,
            (Some(like), Some(journal)) => like.journal(journal),
            (None, journal) => {
                let journal = journal.unwrap_or_else(|| Arc::new(crate::journal::MemoryJournal::new()));
                Task::new("", "", Duration::ZERO).journal(journal)
            }
        };
        if let Some(approver) = self.approver {
            task.approver = Some(approver);
        }
        if let Some(escalation) = self.escalation {
            task.escalation = Some(escalation);
        }
        if let Some(worker) = self.worker {
            task.worker = Some(worker);
        }
        TaskFactory { base: task }
    }
}

/// What the engine could not resolve alone and hands to a person or a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// The task's id.
    pub task: String,
    /// The tool's name.
    pub call: String,
    /// The intent at stake.
    pub key: IntentKey,
    /// The last attempt.
    pub attempt_id: String,
    /// Why it is escalated.
    pub reason: String,
}

/// A sink for escalations: an async closure of [`Escalation`], a channel
/// (`tokio::sync::mpsc::UnboundedSender<Escalation>`), an [`EscalationQueue`], or a type of your own.
///
/// The engine hands the escalation over once the call's report is ready, and waits for the sink at
/// most [`ESCALATION_WAIT`] before it returns the report: a sink that takes longer (a ticketing API
/// that hangs) is dropped there, and the report's message says so. Queue the work, do not do it.
pub trait Escalate: Send + Sync {
    /// Hand over one unresolved call.
    fn escalate(&self, escalation: Escalation) -> BoxFuture<'_, ()>;
}

/// The longest the engine waits for an escalation sink before it returns the report without it.
pub const ESCALATION_WAIT: Duration = Duration::from_secs(5);

impl<F, Fut> Escalate for F
where
    F: Fn(Escalation) -> Fut + Send + Sync,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    fn escalate(&self, escalation: Escalation) -> BoxFuture<'_, ()> {
        Box::pin(self(escalation))
    }
}

/// A channel another task drains (an operator's queue, a ticketing client): each escalation is sent at
/// once and never waits; one the receiver can no longer take (it was dropped) is lost.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
/// use tool_contract::task::Escalation;
/// use tool_contract::Task;
///
/// let (sink, mut escalations) = tokio::sync::mpsc::unbounded_channel::<Escalation>();
/// let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).escalate_to(sink);
/// tokio::spawn(async move {
///     while let Some(escalation) = escalations.recv().await {
///         println!("to resolve: {} {}", escalation.call, escalation.attempt_id);
///     }
/// });
/// # let _ = task;
/// # }
/// ```
impl Escalate for tokio::sync::mpsc::UnboundedSender<Escalation> {
    fn escalate(&self, escalation: Escalation) -> BoxFuture<'_, ()> {
        let _ = self.send(escalation);
        Box::pin(std::future::ready(()))
    }
}

/// An in-memory escalation queue: keeps every escalation for the caller to read.
#[derive(Debug, Clone, Default)]
pub struct EscalationQueue(Arc<Mutex<Vec<Escalation>>>);

impl EscalationQueue {
    /// An empty queue.
    pub fn new() -> EscalationQueue {
        EscalationQueue::default()
    }

    /// Everything escalated so far.
    pub fn drain(&self) -> Vec<Escalation> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// How many escalations wait.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// No escalation waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Escalate for EscalationQueue {
    fn escalate(&self, escalation: Escalation) -> BoxFuture<'_, ()> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(escalation);
        Box::pin(std::future::ready(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::person::{Approval, ApprovalRequest};

    #[tokio::test(start_paused = true)]
    async fn remaining_follows_the_paused_clock() {
        let task = Task::new("t", "a", Duration::from_secs(30));
        assert_eq!(task.remaining(), Duration::from_secs(30));
        tokio::time::advance(Duration::from_secs(12)).await;
        assert_eq!(task.remaining(), Duration::from_secs(18));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(task.remaining(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_closure_approves_and_a_closure_escalates() {
        let task = Task::new("t", "a", Duration::from_secs(30))
            .approver(|request: ApprovalRequest| async move {
                if request.next_attempt < 3 { Approval::Approved } else { Approval::Denied("enough".into()) }
            })
            .escalate_to(|escalation: Escalation| async move { assert_eq!(escalation.task, "t") });
        let approver = task.approver_ref().expect("set");
        let mut request = ApprovalRequest::new(
            "t",
            "charge_card",
            crate::key::Intent::new("t", "a", "charge_card", "card-1").key(),
            2,
            "502 after the request was sent",
            Duration::from_secs(30),
        );
        assert_eq!(approver.approve(&request).await, Approval::Approved);
        request.next_attempt = 3;
        assert_eq!(approver.approve(&request).await, Approval::Denied("enough".into()));
    }

    #[test]
    fn a_template_starts_from_the_task_it_is_like_and_sets_its_own_on_top() {
        let made = |factory: TaskFactory| factory.task("ticket-1", "agent", Duration::from_secs(30));
        let bare = made(TaskTemplate::default().build());
        assert_eq!(bare.id(), "ticket-1");
        assert!(bare.remaining() > Duration::from_secs(29), "its own budget");
        assert!(bare.journal_ref().is_some(), "an attempt log in memory by default");
        assert!(bare.approver_ref().is_none() && bare.escalation().is_none());

        let original = Task::new("t", "a", Duration::from_secs(30))
            .approver(|_: ApprovalRequest| async { Approval::Approved });
        let like = made(TaskTemplate::default().like(&original).worker("w4").build());
        assert_eq!(like.worker_name(), Some("w4"));
        assert!(like.approver_ref().is_some() && like.journal_ref().is_none(), "the original's, as it is");
        assert!(std::ptr::eq(like.turns(), original.turns()));

        let journal: Arc<dyn Journal> = Arc::new(crate::journal::MemoryJournal::new());
        let set = made(
            TaskTemplate::default()
                .escalate_to(|_: Escalation| async {})
                .like(&original)
                .journal(Arc::clone(&journal))
                .build(),
        );
        assert!(set.journal_ref().is_some() && set.escalation().is_some() && set.approver_ref().is_some());
        assert!(
            original.journal_ref().is_none() && original.escalation().is_none(),
            "the original untouched"
        );
    }

    #[test]
    fn a_turn_keeps_its_last_word_apart() {
        // Every side-effecting call in flight holds a turn; a recall inline would add over 600 bytes
        // to each (row 4 of BENCHMARKS.md).
        assert!(std::mem::size_of::<super::Turn>() <= 64, "{}", std::mem::size_of::<super::Turn>());
    }

    #[tokio::test(start_paused = true)]
    async fn an_absurd_budget_does_not_overflow() {
        let task = Task::new("t", "a", Duration::MAX);
        assert!(task.remaining() > Duration::from_secs(86400 * 365));
    }
}

/// One intent's turn in a task family, and its last word while no store keeps it.
#[derive(Default)]
pub(crate) struct Turn {
    pub(crate) lock: Arc<tokio::sync::Mutex<()>>,
    /// The calls holding or waiting for the turn; changed only under the [`Turns`]'s lock.
    pub(crate) users: AtomicUsize,
    /// Boxed: a recall is over 600 bytes, and only a task with no attempt log keeps one here; every
    /// side-effecting call in flight holds a turn.
    pub(crate) word: Mutex<Option<Box<Recall>>>,
}

/// How many finished intents a task family without an attempt log remembers: a repeated call of one of
/// them is answered as with a log; an older one is a new call.
pub(crate) const REMEMBERED: usize = 1024;

/// The intents of a task family with a side-effecting call under way or waiting, and, with no attempt
/// log, the last words of the most recent finished ones.
#[derive(Default)]
pub(crate) struct Turns(Mutex<TurnsState>);

#[derive(Default)]
pub(crate) struct TurnsState {
    pub(crate) active: HashMap<IntentKey, Arc<Turn>, KeyHashing>,
    finished: HashMap<IntentKey, Box<Recall>, KeyHashing>,
    order: std::collections::VecDeque<IntentKey>,
}

impl TurnsState {
    /// The turn of `key`, made (with what is remembered of it) when no call of it runs.
    pub(crate) fn enter(&mut self, key: IntentKey) -> Arc<Turn> {
        if let Some(turn) = self.active.get(&key) {
            return Arc::clone(turn);
        }
        let turn = Turn { word: Mutex::new(self.finished.remove(&key)), ..Turn::default() };
        Arc::clone(self.active.entry(key).or_insert_with(|| Arc::new(turn)))
    }

    /// The last call of `key` left: remember its last word, within [`REMEMBERED`] intents.
    pub(crate) fn leave(&mut self, key: IntentKey) {
        let Some(turn) = self.active.remove(&key) else { return };
        let Some(word) = turn.word.lock().unwrap_or_else(|e| e.into_inner()).take() else { return };
        if self.finished.insert(key, word).is_none() {
            self.order.push_back(key);
        }
        while self.finished.len() > REMEMBERED {
            let Some(oldest) = self.order.pop_front() else { break };
            self.finished.remove(&oldest);
        }
        // Keys taken back by `enter` stay in `order` until they come round; keep it bounded too.
        if self.order.len() > 2 * REMEMBERED {
            let finished = &self.finished;
            self.order.retain(|key| finished.contains_key(key));
        }
    }
}

impl Turns {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, TurnsState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
