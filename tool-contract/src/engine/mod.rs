//! The attempt engine: budget check, attempt under the remaining budget, classification, probe, policy.
//!
//! [`run`] is what the `#[tool]` attribute calls; it is public so a tool can be written by hand.

use std::future::Future;

use crate::call::Call;
use crate::classify::{Class, Classify};
use crate::effect::EffectKind;
use crate::journal::LogValue;
use crate::key::IntentKey;
use crate::probe::Prober;
use crate::report::{Applied, Outcome, Report};
use crate::spec::ToolSpec;
use crate::task::Task;

mod ask;
mod attempts;
mod claim;
mod ending;
mod execute;
mod guard;
pub(crate) mod ledger;
mod log;
pub(crate) mod machine;
mod state;
mod stop;
mod wait;
mod work;

#[cfg(test)]
pub(crate) use claim::LEASE_MARGIN;
pub(crate) use claim::take_claim;
pub(crate) use guard::{guarded, secs, within};
pub(crate) use state::{Run, ceil_secs};
pub(crate) use stop::Stop;
pub(crate) use wait::{ResumeWait, retry_stamp};
// A call by name (`toolbox::run_json`) runs the single engine with its attempt loop apart.
pub(crate) use attempts::drive_in_parts;
pub(crate) use single::One;

mod bulk;
mod items;
mod pages;
mod single;

pub use bulk::run_bulk;
pub use pages::run_pages;

/// Run one call of a tool to its report.
///
/// `attempt` is called once per attempt with that attempt's [`Call`]; `probe` is asked whether an earlier
/// attempt landed before any second attempt of a side-effecting tool. The order is always probe, decide,
/// act; the rules per effect kind are in [`EffectKind::policy`], and one executor carries them
/// out for every shape of call.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::effect::EffectKind;
/// use tool_contract::probe::NoProbe;
/// use tool_contract::spec::ToolSpec;
/// use tool_contract::{Class, Outcome, Task, engine};
///
/// const PRICE: ToolSpec = ToolSpec::new("read_price", EffectKind::Read);
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let task = Task::new("ord-7741", "agent", Duration::from_secs(10));
/// let key = task.key(&PRICE, &"sku-1", None);
/// let report = engine::run(&task, &PRICE, key, |_call| async { Ok::<u32, Class>(1299) }, NoProbe).await;
/// assert_eq!(report.outcome, Outcome::Ok);
/// assert_eq!(report.value, Some(1299));
/// # }
/// ```
pub fn run<T, E, A, AF, P>(
    task: &Task,
    spec: &ToolSpec,
    key: IntentKey,
    attempt: A,
    probe: P,
) -> impl Future<Output = Report<T>>
where
    T: LogValue,
    E: Classify,
    A: FnMut(Call) -> AF,
    AF: Future<Output = Result<T, E>>,
    P: Prober<T>,
{
    // The call's future as the loop builds it: no `async fn` around it to keep `attempt` and `probe`
    // a second time.
    attempts::drive(task, spec, key, single::One::new(attempt, probe))
}

/// `1 attempt`, `3 attempts`.
pub(crate) fn attempts_text(n: u32) -> String {
    if n == 1 { "1 attempt".to_owned() } else { format!("{n} attempts") }
}

/// A read has no effect: whatever its error says, nothing was applied and a retry is harmless.
pub(crate) fn normalise(kind: EffectKind, class: Class) -> Class {
    if kind.has_side_effect() || class.effect() == Applied::No && class.outcome() != Outcome::Unknown {
        return class;
    }
    let mut read = if class.outcome() == Outcome::Permanent {
        Class::permanent(class.message())
    } else {
        Class::retryable(class.message())
    };
    if let Some(wait) = class.wait() {
        read = read.retry_after(wait);
    }
    read
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    use std::time::Duration;

    use crate::ToolSpec;
    use crate::classify::Class;
    use crate::effect::EffectKind;
    use crate::probe::Probe;
    use crate::report::Outcome;
    use crate::task::Task;

    #[tokio::test(start_paused = true)]
    async fn a_side_effect_without_a_floor_keeps_part_of_the_budget_for_its_probe() {
        const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
        let task = Task::new("reserve-quarter", "agent", Duration::from_secs(4));
        let probes = AtomicU32::new(0);
        let began = tokio::time::Instant::now();
        let report = super::run(
            &task,
            &SEND,
            task.key(&SEND, &"thread-9", None),
            // The reply never comes; the notice was posted.
            |_| std::future::pending::<Result<u64, Class>>(),
            |_| async {
                probes.fetch_add(1, SeqCst);
                Probe::Landed(4411u64)
            },
        )
        .await;
        assert_eq!(probes.load(SeqCst), 1, "{}", report.message);
        assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(4411)));
        assert!(report.message.contains("timed out after 3.0s"), "{}", report.message);
        assert_eq!(began.elapsed(), Duration::from_secs(3), "a quarter of the budget kept for the probe");
    }

    /// A service that holds a request for 8 s before applying it (a queue behind the gateway); the
    /// connection drops at 3 s and a probe then finds nothing.
    async fn held_for_8s(
        task: &str,
        spec: &ToolSpec,
        budget_s: u64,
    ) -> (crate::report::Report<u64>, u32, u32) {
        // Each test its own task: calls of one intent take turns across the whole process.
        let task = Task::new(task, "agent", Duration::from_secs(budget_s));
        let began = tokio::time::Instant::now();
        let (sent, probes) = (AtomicU32::new(0), AtomicU32::new(0));
        let landed = |sent: &AtomicU32| {
            // Each request sent lands 8 s after it was sent.
            let n = sent.load(SeqCst);
            let first_lands = began + Duration::from_secs(8);
            if n > 0 && tokio::time::Instant::now() >= first_lands { Some(4411u64) } else { None }
        };
        let report = super::run(
            &task,
            spec,
            task.key(spec, &"thread-9", None),
            |_| {
                sent.fetch_add(1, SeqCst);
                async move {
                    // The connection drops after 3 s, the request still queued at the service.
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    Err::<u64, Class>(Class::unknown("connection reset after the request was sent"))
                }
            },
            |_| async {
                probes.fetch_add(1, SeqCst);
                match landed(&sent) {
                    Some(id) => Probe::Landed(id),
                    None => Probe::NotLanded,
                }
            },
        )
        .await;
        (report, sent.load(SeqCst), probes.load(SeqCst))
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_the_service_still_holds_is_waited_for_not_sent_again() {
        const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send)
            .deadline_floor(Duration::from_secs(3))
            .probe_reserve(Duration::from_secs(1))
            .horizon(Duration::from_secs(10));
        let (report, sent, probes) = held_for_8s("horizon-waited", &SEND, 30).await;
        assert_eq!(sent, 1, "{}", report.message);
        assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(4411)), "{}", report.message);
        assert_eq!(probes, 2, "a probe at the timeout found nothing; one past the landing horizon found it");
    }

    #[tokio::test(start_paused = true)]
    async fn with_a_horizon_of_zero_the_held_request_is_sent_twice() {
        // The limit the landing horizon exists for, shown: the probe's "not landed" is trusted at once.
        const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send)
            .deadline_floor(Duration::from_secs(3))
            .probe_reserve(Duration::from_secs(1))
            .horizon(Duration::ZERO);
        let (_, sent, _) = held_for_8s("horizon-none", &SEND, 30).await;
        assert!(sent >= 2, "each probe before 8 s found nothing, so the notice went out {sent} times");
    }

    #[tokio::test(start_paused = true)]
    async fn a_horizon_longer_than_the_budget_ends_unknown() {
        const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send)
            .deadline_floor(Duration::from_secs(3))
            .probe_reserve(Duration::from_secs(1))
            .horizon(Duration::from_secs(60));
        let (report, sent, probes) = held_for_8s("horizon-too-long", &SEND, 5).await;
        assert_eq!((sent, probes), (1, 1));
        assert_eq!(report.outcome, Outcome::Unknown, "{}", report.message);
        assert!(report.message.contains("may stay in flight"), "{}", report.message);
        // Reported at 3 s: the horizon runs from when the request could last reach the service, the
        // connection's drop at 3 s.
        assert_eq!(report.retry_after_s, Some(60));
    }
}

/// The futures the engine keeps small on purpose: the probe runs in a box of its own, so the future a
/// call awaits carries no room for it, however large the tool's probe is. A box taken out, or the probe
/// awaited in place, makes the call's future grow with its probe and fails here.
#[cfg(test)]
mod future_sizes {
    use std::time::Duration;

    use crate::ToolSpec;
    use crate::classify::Class;
    use crate::effect::EffectKind;
    use crate::probe::Probe;
    use crate::task::Task;

    const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);

    #[test]
    fn a_calls_future_does_not_grow_with_its_probe() {
        let task = Task::new("sizes", "agent", Duration::from_secs(5));
        let key = task.key(&SEND, &"thread-9", None);
        let attempt = |_| async { Ok::<u64, Class>(1) };
        let small = super::run(&task, &SEND, key, attempt, |_| async { Probe::Landed(1u64) });
        let large = super::run(&task, &SEND, key, attempt, |_| async {
            // 4 KiB held across an await: the probe's own future is that much larger.
            let pad = [0u8; 4096];
            tokio::task::yield_now().await;
            std::hint::black_box(&pad);
            Probe::Landed(1u64)
        });
        let (small, large) = (std::mem::size_of_val(&small), std::mem::size_of_val(&large));
        assert_eq!(small, large, "a call's future grew by {} bytes with a larger probe", large - small);
    }

    /// The tool's closures (what `#[tool]` passes the engine: the attempt and the probe, with whatever
    /// they capture) are kept once in a call's future. Each `async fn` between the call and its loop
    /// would keep them twice more: its argument, and the local it is moved into.
    #[test]
    fn a_calls_future_keeps_the_tools_closures_once() {
        let task = Task::new("sizes", "agent", Duration::from_secs(5));
        let key = task.key(&SEND, &"thread-9", None);
        let probe = |_| async { Probe::Landed(1u64) };
        let small = super::run(&task, &SEND, key, |_| async { Ok::<u64, Class>(1) }, probe);
        let pad = [7u8; 1024];
        // 1 KiB captured by the attempt's closure, none of it by the future it returns.
        let attempt = move |_| {
            let first = u64::from(std::hint::black_box(&pad)[0]);
            async move { Ok::<u64, Class>(first) }
        };
        let large = super::run(&task, &SEND, key, attempt, probe);
        let grew = std::mem::size_of_val(&large) - std::mem::size_of_val(&small);
        assert!((1024..1024 + 64).contains(&grew), "a 1 KiB closure grew a call's future by {grew} bytes");
    }
}
