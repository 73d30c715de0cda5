//! Probes: reads that reveal whether an earlier attempt landed.

use std::future::Future;

use crate::key::IntentKey;

/// What a probe found.
///
/// A probe is a read of the world (the thread's messages, the card's charges) that tells whether the
/// attempt carrying a given intent key landed. The engine runs it before any second attempt of a
/// side-effecting call, and whenever an attempt ends `unknown`.
///
/// **What a probe cannot see.** A probe sees what has landed, not what is on its way: a request the
/// service still holds (queued behind a gateway, held by a worker that was killed and will restart, a
/// tool timeout shorter than the service's processing) reads as not landed, and lands later. If the
/// service can hold a request, the tool's landing horizon covers it (`#[tool(horizon = "30s")]`,
/// [`ToolSpec::horizon`](crate::spec::ToolSpec::horizon); 5 s by default for `send`, `money` and
/// `destructive`): `NotLanded` is trusted only once that long has passed since the attempt's request
/// could last reach the service; until then the engine waits within the budget and probes again, and
/// when the budget cannot hold the wait the call ends `unknown`. With `horizon = "0s"`, `NotLanded` is
/// trusted at once, and a held request can land beside a second attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe<T> {
    /// It landed; here is the value the tool would have returned.
    Landed(T),
    /// It did not land; a second attempt is safe (once the attempt's landing horizon has passed).
    NotLanded,
    /// The probe itself could not tell (it errored or timed out): the outcome stays `unknown`.
    Failed(String),
}

impl<T> Probe<T> {
    /// The verdict's name in the attempt log.
    pub fn mark(&self) -> ProbeMark {
        match self {
            Probe::Landed(_) => ProbeMark::Landed,
            Probe::NotLanded => ProbeMark::NotLanded,
            Probe::Failed(_) => ProbeMark::Failed,
        }
    }
}

/// A probe verdict without its value, as the attempt log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeMark {
    /// The attempt landed.
    Landed,
    /// The attempt did not land.
    NotLanded,
    /// The probe could not tell.
    Failed,
}

impl ProbeMark {
    /// The snake_case wire name, as the log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeMark::Landed => "landed",
            ProbeMark::NotLanded => "not_landed",
            ProbeMark::Failed => "failed",
        }
    }
}

/// Something the engine can run as a probe: an `FnMut(IntentKey) -> impl Future<Output = Probe<T>>`,
/// or [`NoProbe`] for a tool that has none.
pub trait Prober<T> {
    /// Run the probe for the intent `key`.
    fn probe(&mut self, key: IntentKey) -> impl Future<Output = Probe<T>>;

    /// `false` only for [`NoProbe`].
    fn exists(&self) -> bool {
        true
    }
}

impl<T, F, Fut> Prober<T> for F
where
    F: FnMut(IntentKey) -> Fut,
    Fut: Future<Output = Probe<T>>,
{
    fn probe(&mut self, key: IntentKey) -> impl Future<Output = Probe<T>> {
        self(key)
    }
}

/// The probe of a tool that has none: a read, or a `create` whose receiver deduplicates by the key.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProbe;

impl<T> Prober<T> for NoProbe {
    fn probe(&mut self, _key: IntentKey) -> impl Future<Output = Probe<T>> {
        std::future::ready(Probe::Failed("this tool has no probe".to_owned()))
    }

    fn exists(&self) -> bool {
        false
    }
}
