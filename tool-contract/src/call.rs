//! The call context a tool's body sees during one attempt.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::key::IntentKey;
use crate::report::Item;

/// What a question to a person binds of the call it is about: the digest of the call's arguments,
/// when it came by name ([`crate::journal::Record::args`]), and the arguments the tool shows a person
/// ([`crate::spec::ToolSpec::shows`]). Not public API: what a call by name hands the engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[doc(hidden)]
pub struct Arguments {
    /// The first 32 hex characters of the SHA-256 of the arguments in canonical JSON.
    pub digest: Option<String>,
    /// The arguments the tool shows a person, by name, as JSON text cut to 240 bytes.
    pub shows: std::collections::BTreeMap<String, String>,
}

impl Arguments {
    /// A note for a report answered from `recorded` (a replay, a settlement) when these arguments
    /// differ from those the recorded attempt ran with: the intent key ignores them on purpose, so the
    /// answer is that attempt's, not one for these arguments.
    pub(crate) fn differ_from(&self, recorded: &crate::journal::Record) -> Option<String> {
        let now = self.digest.as_deref()?;
        let then = recorded.args.as_deref()?;
        (now != then).then(|| {
            format!(
                "; this call's arguments differ from those attempt {} ran with (the intent is the same, so \
                 this is that attempt's answer, not one for these arguments)",
                recorded.attempt_id
            )
        })
    }
}

/// The items an attempt of a call in parts reported before it returned.
pub(crate) type Progress = Arc<Mutex<Vec<Item>>>;

/// What the body of a tool can know about the attempt it runs in.
///
/// Send [`Call::key`] downstream as the `Idempotency-Key` header so the receiver can deduplicate.
#[derive(Debug, Clone)]
pub struct Call {
    /// The task id, then the attempt id, in one allocation (split at `task_len`): an attempt costs
    /// one string, and no reference count shared across threads.
    ids: Box<str>,
    task_len: usize,
    pub(crate) key: IntentKey,
    pub(crate) attempt: u32,
    pub(crate) deadline: Instant,
    /// Where a call in parts (bulk items, the pages of a read) keeps what the attempt reported so far.
    pub(crate) progress: Option<Progress>,
}

impl Call {
    /// A call context for driving a tool body by hand (tests, adapters).
    pub fn new(task_id: &str, key: IntentKey, attempt: u32, budget: Duration) -> Call {
        let now = Instant::now();
        let deadline = now.checked_add(budget).unwrap_or(now);
        Call::of(task_id, &attempt_id(task_id, &key, attempt), key, attempt, deadline)
    }

    pub(crate) fn of(
        task_id: &str,
        attempt_id: &str,
        key: IntentKey,
        attempt: u32,
        deadline: Instant,
    ) -> Call {
        let mut ids = String::with_capacity(task_id.len() + attempt_id.len());
        ids.push_str(task_id);
        ids.push_str(attempt_id);
        Call { ids: ids.into_boxed_str(), task_len: task_id.len(), key, attempt, deadline, progress: None }
    }

    /// The intent key, the same on every attempt of the intent.
    pub fn key(&self) -> IntentKey {
        self.key
    }

    /// The attempt number, from 1; it continues across restarts when the task has an attempt log.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// `{task}-{first 8 hex of the key}-a{attempt}`: unique across the intents of a task.
    pub fn attempt_id(&self) -> &str {
        self.ids.get(self.task_len..).unwrap_or_default()
    }

    /// The task this attempt works for.
    pub fn task_id(&self) -> &str {
        self.ids.get(..self.task_len).unwrap_or_default()
    }

    /// How long this attempt may still run before it is cancelled.
    pub fn budget_left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Report one item's result before the attempt returns, in bulk work
    /// ([`run_bulk`](crate::engine::run_bulk)): if the attempt is then cut off (its budget runs out,
    /// it panics), the items it reported keep their result, and only the others are retried or
    /// probed. The list the attempt returns, when it returns one, has the last word on every item it
    /// names. Outside a call in parts this does nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_contract::effect::EffectKind;
    /// use tool_contract::probe::NoProbe;
    /// use tool_contract::spec::ToolSpec;
    /// use tool_contract::{Class, Item, Outcome, Task, engine};
    ///
    /// const INDEX: ToolSpec = ToolSpec::new("index_docs", EffectKind::Read).max_attempts(1);
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// let task = Task::new("reindex", "agent", Duration::from_secs(3));
    /// let key = task.key(&INDEX, &"shelf-1", None);
    /// let docs = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
    /// let report = engine::run_bulk(&task, &INDEX, key, docs, |call, docs: Vec<String>| async move {
    ///     for doc in &docs {
    ///         if doc == "c" {
    ///             // This one hangs until the budget runs out.
    ///             std::future::pending::<()>().await;
    ///         }
    ///         call.report_item(Item::ok(doc.clone()));
    ///     }
    ///     Ok::<_, Class>(docs.into_iter().map(Item::ok).collect())
    /// }, NoProbe).await;
    /// assert_eq!(report.outcome, Outcome::Retryable);
    /// assert_eq!(report.items.iter().filter(|i| i.outcome == Outcome::Ok).count(), 2);
    /// # }
    /// ```
    pub fn report_item(&self, item: Item) {
        if let Some(progress) = &self.progress {
            progress.lock().unwrap_or_else(|e| e.into_inner()).push(item);
        }
    }
}

tokio::task_local! {
    /// Who answers a tool's questions during the calls this scope runs ([`Call::ask`]).
    static ASKER: Arc<dyn Asker>;
}

/// What answers a tool's questions to the client that made its call ([`Call::ask`]): the MCP
/// server's, for a call it runs. Not public API: reached through `tool_contract::unstable`.
pub trait Asker: Send + Sync {
    /// The client's answer to `request` under `key`, or the class the tool's attempt ends with when
    /// there is none (yet).
    fn ask(
        &self,
        key: String,
        request: serde_json::Value,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<serde_json::Value, crate::Class>> + Send + '_>,
    >;

    /// A call in this scope formed its intent, `key`, and is about to claim it.
    fn began(&self, key: IntentKey) {
        let _ = key;
    }

    /// [`Asker::ask`] for a question that must be answered while the call waits (a person's approval
    /// or settlement, which the engine records with the question it asked): never sent with the
    /// call's answer instead.
    fn ask_now(
        &self,
        key: String,
        request: serde_json::Value,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<serde_json::Value, crate::Class>> + Send + '_>,
    > {
        self.ask(key, request)
    }
}

/// Ask the client of the call this scope runs, through its asker ([`Asker::ask_now`]); `Err` when the
/// scope has none.
pub async fn ask_now(key: &str, request: serde_json::Value) -> Result<serde_json::Value, crate::Class> {
    let Ok(asker) = ASKER.try_with(Arc::clone) else {
        return Err(crate::Class::permanent(format!(
            "nobody can be asked for `{key}`: no client takes questions here"
        )));
    };
    asker.ask_now(key.to_owned(), request).await
}

/// Tell the asker of this scope, if any, that a call formed its intent `key`.
pub(crate) fn began(key: IntentKey) {
    let _ = ASKER.try_with(|asker| asker.began(key));
}

/// Run `call` with `asker` answering its tools' questions.
pub async fn with_asker<F: std::future::Future>(asker: Arc<dyn Asker>, call: F) -> F::Output {
    ASKER.scope(asker, call).await
}

impl Call {
    /// Ask the client that made this call for input (over MCP, a form the person at the client fills
    /// in: `request` is the request the client gets, such as an `elicitation/create` with its
    /// `requestedSchema`), under `key`, a name unique within the call; the client's answer.
    ///
    /// The wait counts against the attempt's budget. A call that no client can be asked in (a call
    /// made in the process, a client that takes no questions) gets `Err`: a `permanent` class that says
    /// so, which the tool returns as it is (`?`). Before an MCP call is a task, the question goes to
    /// the client with the call's answer (2026-07-28, input required): `ask` gets `Err`, a class with
    /// nothing applied that ends the call, and the call made again with the answer gets it here. So a
    /// tool asks before it applies anything.
    ///
    /// ```
    /// use tool_contract::{Call, Class, tool};
    ///
    /// /// Look a file up, and say whether the person wants it kept.
    /// #[tool(effect = "read", target = name)]
    /// async fn confirm(call: &Call, name: String) -> Result<String, Class> {
    ///     let form = serde_json::json!({
    ///         "method": "elicitation/create",
    ///         "params": {
    ///             "mode": "form",
    ///             "message": format!("Keep {name}?"),
    ///             "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}},
    ///         },
    ///     });
    ///     let answer = call.ask("confirm", form).await?;
    ///     let keep = answer["content"]["confirm"] == true;
    ///     Ok(if keep { format!("keep {name}") } else { format!("let {name} go") })
    /// }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let call = Call::new("t", tool_contract::IntentKey::NONE, 1, std::time::Duration::from_secs(1));
    /// // Outside a client's call, nobody can be asked.
    /// let refused = call.ask("confirm", serde_json::json!({})).await.unwrap_err();
    /// assert_eq!(refused.outcome(), tool_contract::Outcome::Permanent);
    /// # }
    /// ```
    pub async fn ask(
        &self,
        key: &str,
        request: serde_json::Value,
    ) -> Result<serde_json::Value, crate::Class> {
        let Ok(asker) = ASKER.try_with(Arc::clone) else {
            return Err(crate::Class::permanent(format!(
                "nobody can be asked for `{key}`: this call did not come from a client that takes questions"
            )));
        };
        asker.ask(key.to_owned(), request).await
    }
}

/// `{task}-{first 8 hex of the key}-a{n}`.
pub(crate) fn attempt_id(task: &str, key: &IntentKey, attempt: u32) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    // `-`, 8 hex digits, `-a` and up to 10 decimal ones, all ASCII: written as bytes, checked once.
    let mut tail = [0u8; 21];
    tail[0] = b'-';
    for (i, b) in key.as_bytes()[..4].iter().enumerate() {
        tail[1 + 2 * i] = DIGITS[usize::from(b >> 4)];
        tail[2 + 2 * i] = DIGITS[usize::from(b & 0xf)];
    }
    tail[9] = b'-';
    tail[10] = b'a';
    let mut digits = [0u8; 20];
    let n = crate::text::decimal(u64::from(attempt), &mut digits);
    tail[11..11 + n.len()].copy_from_slice(n);
    let mut id = String::with_capacity(task.len() + 11 + n.len());
    id.push_str(task);
    id.push_str(std::str::from_utf8(&tail[..11 + n.len()]).unwrap_or_default());
    id
}
