//! The fault-injection kit (feature `testing`): prove the six classic failures against your own tools.
//!
//! - [`FakeService`]: a service with a programmable fault plan that counts the effects it really applied,
//!   per idempotency key, on tokio's clock;
//! - [`Conformance`]: runs the six [`Scenario`]s against a tool wired to the fake and returns a
//!   [`Verdict`] per scenario, with what was expected and what happened;
//! - [`sim`]: a seeded simulation that draws fault schedules across all five effect kinds and checks the
//!   contract's invariants on every run.

pub mod fake;
pub mod http;
pub mod scenario;
pub mod sim;

pub use fake::{
    FakeService, Fault, ItemReply, Lookup, Reply, Transport, batch_probe, batch_result, single_result,
};
pub use scenario::{ApproveAll, BulkTool, Conformance, NoBulk, Scenario, SingleTool, Timing, Verdict};
