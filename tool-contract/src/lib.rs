//! Tools for AI agents that fail in a way the caller can act on.
//!
//! An agent that reads "failed" cannot tell three situations apart: the call never reached the service
//! (a retry is free), the service refused (a retry fails again), or the effect landed and the answer was
//! lost (a retry repeats it: two messages sent, a card charged twice). Every tool built with this crate
//! returns one closed contract, a [`Report`], that keeps those apart:
//!
//! - [`Outcome`]: `ok`, `retryable`, `permanent` or `unknown`;
//! - [`Applied`]: whether the effect landed, `yes`, `no`, `unknown` or `partial`, separately;
//! - the attempt id, the [`IntentKey`] sent downstream as the idempotency key, the service's
//!   `Retry-After`, the task's budget left, one line for the model, and per-item results for bulk work.
//!
//! The [`engine`] runs each call under the task's one deadline budget, classifies failures
//! ([`Classify`]), probes before any second attempt of a side effect ([`Probe`]),
//! and applies the retry policy of the tool's [`effect::EffectKind`].
//!
//! # Features
//!
//! | feature | what it adds | default |
//! |---|---|---|
//! | `reqwest` | the `reqwest` module: classification of reqwest errors and responses, and the intent key as `Idempotency-Key` | no |
//! | `tracing` | a span per call, attempt and probe (OpenTelemetry GenAI names), and events, on the `tracing` crate | no |
//! | `metrics` | counters and histograms of calls, outcomes, probes and refusals, on the `metrics` facade | no |
//! | `cli` | the `tool-contract` command (`cargo install --path tool-contract --features cli` from a checkout) and its command line | no |
//!
//! # A tool
//!
//! [`tool`] turns an async function into a tool: a wrapper that takes the [`Task`] and returns a
//! [`Report`]. Here a `send` lands and its reply is lost; the probe finds it, the report says `ok`, and
//! the same intent asked again is answered from the attempt log, not sent twice.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::time::Duration;
//! use tool_contract::{Applied, Call, Class, IntentKey, MemoryJournal, Outcome, Probe, Reason, Task, tool};
//!
//! static POSTED: AtomicU32 = AtomicU32::new(0);
//!
//! /// Post a notice to a support thread.
//! #[tool(effect = "send", probe = notice_landed, target = thread, deadline_floor = "1s")]
//! async fn post_notice(call: &Call, thread: String, text: String) -> Result<u64, Class> {
//!     // A real tool sends `call.key()` downstream as the `Idempotency-Key` header.
//!     let _ = (call.key(), thread, text);
//!     POSTED.fetch_add(1, Ordering::SeqCst);
//!     // The notice landed; the connection dropped before the answer came back.
//!     Err(Class::unknown("connection reset after the request was sent"))
//! }
//!
//! /// Find the notice carrying `key` in the thread: the read that settles an unknown.
//! async fn notice_landed(thread: &String, text: &String, key: IntentKey) -> Probe<u64> {
//!     let _ = (thread, text, key);
//!     if POSTED.load(Ordering::SeqCst) > 0 { Probe::Landed(4411) } else { Probe::NotLanded }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let task = Task::new("ticket-5", "agent:support", Duration::from_secs(30))
//!     .journal(Arc::new(MemoryJournal::new()));
//! let report = post_notice(&task, "thread-9".into(), "your refund was sent".into()).await;
//! assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes));
//! assert_eq!((report.value, report.reason), (Some(4411), Reason::Landed));
//! // The same intent again (a model that repeats itself): answered from the log, not sent again.
//! let again = post_notice(&task, "thread-9".into(), "your refund was sent".into()).await;
//! assert_eq!((again.reason, POSTED.load(Ordering::SeqCst)), (Reason::Replayed, 1));
//! # }
//! ```
//!
//! # The chapters
//!
//! The guide is in the `docs/` folder of the repository, one chapter a file: "The contract"
//! (`contract.md`: the report, the intent key, the policy per effect kind, the deadline budget), "The
//! `#[tool]` attribute" (`macro.md`), "When the answer is unknown" (`unknown.md`), "The attempt log
//! and its stores" (`attempt-log.md`), "Tools a model can call" (`agent-surface.md`), "The operator
//! console" (`console.md`), "A fleet on PostgreSQL" (`postgres.md`), "Observability and the retry
//! budget" (`observability.md`), "The testing kit" (`testing-kit.md`) and "Fuzzing" (`fuzzing.md`).
//!
//! # The public API
//!
//! The crate root holds what nearly every user names; the rest is in the module that owns it.
//!
//! | for | items |
//! |---|---|
//! | the contract a call returns | [`Report`], [`Outcome`], [`Applied`], [`Item`], [`Reason`] |
//! | writing a tool | [`tool`] (the attribute) with a [`Call`] per attempt, [`Class`], [`Probe`], [`IntentKey`]; by hand: [`engine::run`], [`engine::run_bulk`], [`engine::run_pages`] |
//! | what a tool is | [`spec`]: [`ToolSpec`](spec::ToolSpec) (with its backoff, jitter and dedupe); [`effect`]: [`effect::EffectKind`] and its [`policy`](effect::EffectKind::policy) table |
//! | failures and probes | [`classify`]: [`Classify`], [`HttpReply`](classify::HttpReply), [`RetryAfter`](classify::RetryAfter), [`Body`](classify::Body); [`probe`]: [`Prober`](probe::Prober), [`NoProbe`](probe::NoProbe); [`bulk`]: [`BulkProber`](bulk::BulkProber), [`ItemId`](bulk::ItemId) |
//! | the task an agent runs | [`Task`]; [`task`]: templates and factories, escalation ([`Escalate`](task::Escalate), [`EscalationQueue`](task::EscalationQueue)); [`key`]: [`Intent`](key::Intent) |
//! | people in the loop | [`person`]: approving a second `money` attempt ([`Approve`](person::Approve), [`LogApprover`](person::LogApprover), [`answer_approval`](person::answer_approval)), settling an intent in doubt ([`settle`](person::settle), [`person::Settle`]) |
//! | retries across tasks | [`budget`]: [`RetryBudgets`](budget::RetryBudgets), [`RetryBudget`](budget::RetryBudget) |
//! | the attempt log and its stores | [`MemoryJournal`], [`FileJournal`]; [`journal`]: the [`Journal`](journal::Journal) trait, the records ([`Record`](journal::Record), [`Settlement`](journal::Settlement)), reading a log ([`journal::read_log`], [`journal::inspect`]); [`rules`]: the rules over records |
//! | calling tools by name (a model's tool call) | [`Toolbox`], [`define`] (definitions and schemas) |
//!
//! Where each rule is decided in the code is in CONTRIBUTING.md ("Where each rule lives").
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod budget;
pub mod bulk;
mod call;
pub mod classify;
pub mod define;
pub mod effect;
pub mod engine;
pub mod journal;
pub mod key;
mod observe;
pub mod person;
// Not public API: the engine's, shared with the protocol model (policy.rs says what it holds).
#[doc(hidden)]
pub mod policy;
pub mod probe;
mod records;
mod report;
#[cfg(feature = "reqwest")]
pub mod reqwest;
pub mod rules;
pub mod spec;
pub mod task;
mod text;
pub mod toolbox;

pub use call::Call;
pub use classify::{Class, Classify};
pub use journal::{FileJournal, MemoryJournal};
pub use key::IntentKey;
pub use probe::Probe;
pub use report::{Applied, Item, Outcome, Reason, Report};
pub use task::Task;
pub use tool_contract_macros::tool;
pub use toolbox::Toolbox;

// Shorthands for the crate's own unit tests; not public (each item's public path is in its module).
#[cfg(test)]
pub(crate) use {key::Intent, person::Approval, spec::ToolSpec, task::EscalationQueue};

/// Not public API: what the crates of this workspace share with this one.
#[doc(hidden)]
pub mod unstable;

/// Not public API: the paths the `#[tool]` attribute's generated code uses.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// The figures the docs/ chapters quote that this crate defines: a test fails when one changes and
/// the chapter does not.
#[cfg(test)]
mod docs_figures {
    const ATTEMPT_LOG: &str = include_str!("../../docs/attempt-log.md");
    const AGENT_SURFACE: &str = include_str!("../../docs/agent-surface.md");
    const CONTRACT: &str = include_str!("../../docs/contract.md");

    fn thousands(n: usize) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, d) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(d);
        }
        out
    }

    #[test]
    fn each_figure_the_chapters_quote_is_the_codes() {
        let chunk = format!("streamed {} MiB of whole lines", crate::journal::file::CHUNK_BYTES >> 20);
        assert!(ATTEMPT_LOG.contains(&chunk), "docs/attempt-log.md: {chunk}");
        let remembered = format!("its {} most recent intents", thousands(crate::task::REMEMBERED));
        assert!(ATTEMPT_LOG.contains(&remembered), "docs/attempt-log.md: {remembered}");
        assert_eq!(crate::engine::LEASE_MARGIN, std::time::Duration::from_secs(1));
        assert!(ATTEMPT_LOG.contains("landing horizon, plus a second"), "docs/attempt-log.md: the lease");
        let depth = format!("nested deeper than {} levels", crate::toolbox::MAX_DEPTH);
        assert!(AGENT_SURFACE.contains(&depth), "docs/agent-surface.md: {depth}");
        let names = format!("1 to {} characters", crate::task::MAX_NAME_CHARS);
        assert!(AGENT_SURFACE.contains(&names), "docs/agent-surface.md: {names}");
        let wait = format!("at most {} s", crate::task::ESCALATION_WAIT.as_secs());
        assert!(CONTRACT.contains(&wait), "docs/contract.md: {wait}");
        assert!(ATTEMPT_LOG.contains(crate::journal::HEADER), "docs/attempt-log.md: the header");
        let bound = format!("past {} intents", thousands(crate::MemoryJournal::DEFAULT_MAX_INTENTS));
        assert!(AGENT_SURFACE.contains(&bound), "docs/agent-surface.md: {bound}");
    }
}
