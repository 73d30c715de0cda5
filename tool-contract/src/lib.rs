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
//! ([`Classify`]), probes before any second attempt of a side effect ([`Probe`]), and applies the retry
//! policy of the tool's [`EffectKind`].
//!
//! ```
//! use std::time::Duration;
//! use tool_contract::{Applied, Class, EffectKind, Outcome, Probe, Task, ToolSpec, engine};
//!
//! const POST_NOTICE: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send)
//!     .deadline_floor(Duration::from_secs(2));
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let task = Task::new("ord-7741", "agent:support", Duration::from_secs(30));
//! let key = task.key(&POST_NOTICE, &"thread-9", None);
//! let report = engine::run(
//!     &task,
//!     &POST_NOTICE,
//!     key,
//!     // The attempt: the connection drops after the notice was sent.
//!     |_call| async { Err::<u64, _>(Class::unknown("connection reset after the request was sent")) },
//!     // The probe: a read of the thread finds the notice carrying this key.
//!     |_key| async { Probe::Landed(4411u64) },
//! )
//! .await;
//! assert_eq!(report.outcome, Outcome::Ok);
//! assert_eq!(report.effect_applied, Applied::Yes);
//! assert_eq!(report.value, Some(4411));
//! # }
//! ```
//!
//! # The public API
//!
//! | for | items |
//! |---|---|
//! | the contract a call returns | [`Report`], [`Outcome`], [`Applied`], [`Item`], [`Reason`] |
//! | what a tool is | [`ToolSpec`] (with [`Backoff`], [`Jitter`], [`Dedupe`]), [`EffectKind`] and its [`EffectKind::policy`] table |
//! | writing a tool | [`tool`] (the attribute), or by hand: [`engine::run`], [`engine::run_bulk`], [`engine::run_pages`] with a [`Call`] per attempt |
//! | failures and probes | [`Classify`], [`Class`], [`HttpReply`], [`RetryAfter`], [`Body`]; [`Probe`], [`Prober`], [`NoProbe`], [`BulkProber`], [`ItemId`] |
//! | the task an agent runs | [`Task`], [`TaskTemplate`], [`TaskFactory`], [`IntentKey`], [`Intent`]; people in the loop: [`Approve`], [`Approval`], [`ApprovalRequest`], [`InDoubt`], [`Escalate`], [`Escalation`], [`EscalationQueue`] |
//! | retries across tasks | [`RetryBudgets`], [`RetryBudget`] |
//! | settling an intent in doubt (a person's verdict) | [`settle`], [`Settle`], [`Verdict`], [`Via`], [`Settlement`], [`SettleError`] |
//! | the attempt log and its stores | [`journal::Journal`], [`MemoryJournal`], [`FileJournal`], [`Record`], [`Durability`], [`JournalError`], [`LogValue`]; reading a log: [`journal::read_log`], [`journal::inspect`] |
//! | calling tools by name (a model's tool call) | [`Toolbox`], [`define`] (definitions and schemas) |
//!
//! Where each rule is decided in the code is in CONTRIBUTING.md ("Where each rule lives").
#![deny(missing_docs)]

pub mod budget;
pub mod bulk;
pub mod call;
pub mod classify;
pub mod define;
pub mod effect;
pub mod engine;
pub mod journal;
pub mod key;
mod observe;
pub(crate) mod policy;
pub mod probe;
pub mod report;
#[cfg(feature = "reqwest")]
pub mod reqwest;
pub mod rules;
pub mod spec;
pub mod task;
mod text;
pub mod toolbox;

pub use budget::{RetryBudget, RetryBudgets};
pub use bulk::{BulkProber, ItemId};
pub use call::Call;
pub use classify::{Body, Class, Classify, HttpReply, RetryAfter};
pub use effect::EffectKind;
pub use engine::run;
pub use journal::{
    CompactMemoryJournal, Decision, Durability, FileJournal, Journal, JournalError, LogApprover, LogValue,
    MemoryJournal, Record, Settle, SettleError, Settlement, Verdict, Via, answer_approval, settle,
};
pub use key::{Intent, IntentKey};
pub use probe::{NoProbe, Probe, Prober};
pub use report::{Applied, Item, Outcome, Reason, Report};
pub use spec::{Backoff, Dedupe, Jitter, ToolSpec};
pub use task::{
    Approval, ApprovalRequest, Approve, Escalate, Escalation, EscalationQueue, InDoubt, Task, TaskFactory,
    TaskTemplate,
};
pub use tool_contract_macros::tool;
pub use toolbox::Toolbox;

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
        assert!(ATTEMPT_LOG.contains("settle window, plus a second"), "docs/attempt-log.md: the lease");
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
