//! The testing kit of `tool-contract`, a dev-dependency: prove the six classic failures and a held
//! request against your own tools, and run the store conformance suite against your own store.
//!
//! - [`FakeService`]: a service with a programmable fault plan that counts the effects it really applied,
//!   per idempotency key, on tokio's clock;
//! - [`Conformance`]: runs the six classic failures and the held request (a request the service applies
//!   after its caller let go, which the tool's landing horizon must cover) against a tool wired to the
//!   fake, and returns a [`Verdict`] per [`Scenario`], with what was expected and what happened;
//! - [`sim`]: a seeded simulation that draws fault schedules across all five effect kinds and checks the
//!   contract's invariants on every run.
//!   [`sim::check_on`] runs it on a store of your own (PostgreSQL, say), with lost connections, slow
//!   commits and leases cut short;
//! - [`stores`]: the conformance suite every [`Journal`](tool_contract::journal::Journal) runs (claims, the fence on
//!   starts and on every record about an attempt).
//!
//! Wire your tool to the fake (its client talks to [`FakeService`] instead of the network, its probe
//! looks the intent up there), and the runner tells you, per scenario, whether it keeps the contract:
//!
//! ```
//! use std::time::Duration;
//! use tool_contract_testing::{Conformance, FakeService, single_result};
//! use tool_contract::effect::EffectKind;
//! use tool_contract::{Call, Class, IntentKey, Probe, Report, Task, tool};
//!
//! /// The author's tool, on a client that here is the fake service.
//! struct Notices(FakeService);
//!
//! impl Notices {
//!     /// Post a notice to a thread.
//!     #[tool(effect = "send", probe = Self::landed, target = thread, deadline_floor = "1s")]
//!     async fn post_notice(&self, call: &Call, thread: String) -> Result<u64, Class> {
//!         single_result(EffectKind::Send, self.0.submit(call.key()).await)
//!     }
//!
//!     /// Find the notice carrying `key`, waiting out a request still in flight.
//!     async fn landed(&self, thread: &String, key: IntentKey) -> Probe<u64> {
//!         match self.0.lookup_settled(key).await {
//!             Ok(found) => found.into_probe(),
//!             Err(why) => Probe::Failed(why),
//!         }
//!     }
//! }
//!
//! async fn post(task: Task, service: FakeService) -> Report<u64> {
//!     Notices(service).post_notice(&task, "thread-9".to_owned()).await
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! let verdicts = Conformance::new(EffectKind::Send, post).run().await;
//! for verdict in &verdicts[..4] {
//!     assert!(verdict.pass, "{}: {}", verdict.scenario, verdict.detail);
//! }
//! // No bulk tool was given: the partial-batch scenario says it did not run.
//! assert!(!verdicts[4].pass);
//! assert!(verdicts[5].pass, "{}", verdicts[5].detail);
//! // The held request: the default landing horizon (5 s for a send) outlasts the service's 3 s hold.
//! assert!(verdicts[6].pass, "{}", verdicts[6].detail);
//! # }
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod cases;
pub mod fake;
pub mod http;
pub mod scenario;
pub mod sim;
pub mod stores;

pub use fake::{
    FakeService, Fault, ItemReply, Lookup, Reply, Transport, batch_probe, batch_result, single_result,
};
pub use scenario::{ApproveAll, BulkTool, Conformance, NoBulk, Scenario, SingleTool, Timing, Verdict};
