//! Running a tool's future: under a deadline whose timer is set only when needed, and with panics caught.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::machine::Machine;

/// A duration in seconds to a tenth, rounded down: "0.9s left" for 999 ms, never "1.0s left" beside a
/// floor of 1.0s it fails to reach.
pub(crate) fn secs(d: Duration) -> String {
    let tenths = d.as_millis() / 100;
    format!("{}.{}s", tenths / 10, tenths % 10)
}

/// `tokio::time::timeout_at`, with the timer set only once the future has returned `Pending`: a call that
/// is done when first polled (a cache hit, a fake) never touches the timer wheel. `Err(())` when the
/// deadline passed first; the future is then dropped, as with `timeout_at`. `on_wait` runs once, when
/// the future first has to wait.
///
/// With `strict`, the call's machine (a side effect, whose request may leave on any poll), the future is
/// not polled at all once the machine says no request may leave ([`Budget::may_leave`]: at or past the
/// deadline): a worker that stood still (a stopped process, a frozen machine) and finds its connection
/// ready when it runs again would otherwise send after its deadline, when another worker may have taken
/// the intent over. The deadline is the last instant a request may leave; the claim's lease outlasts it
/// by the landing horizon and a margin, so this is the lease's check too. What no library closes is a
/// stop between this check and the wire, inside one poll: a receiver that honours the intent key closes
/// it.
///
/// A future of its own rather than an `async fn`: an `async fn` keeps its argument and the pinned copy
/// it polls side by side, and `fut` is the tool's whole attempt.
///
/// [`Budget::may_leave`]: super::machine::Budget::may_leave
pub(crate) fn within<'m, F: Future, W: FnOnce()>(
    deadline: tokio::time::Instant,
    fut: F,
    strict: Option<&'m Machine<tokio::time::Instant>>,
    on_wait: W,
) -> Within<'m, F, W> {
    Within { fut, deadline, timer: None, on_wait: Some(on_wait), strict }
}

pin_project_lite::pin_project! {
    /// The future [`within`] returns.
    pub(crate) struct Within<'m, F, W> {
        #[pin]
        fut: F,
        deadline: tokio::time::Instant,
        // Boxed once set: a call done at its first poll does not carry room for a timer.
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
        on_wait: Option<W>,
        strict: Option<&'m Machine<tokio::time::Instant>>,
    }
}

impl<F: Future, W: FnOnce()> Future for Within<'_, F, W> {
    /// The future's output, or the deadline it was given up at.
    type Output = Result<F::Output, tokio::time::Instant>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Some(machine) = this.strict
            && !machine.budget().may_leave(tokio::time::Instant::now(), *this.deadline)
        {
            return Poll::Ready(Err(*this.deadline));
        }
        if let Poll::Ready(value) = this.fut.poll(cx) {
            return Poll::Ready(Ok(value));
        }
        let deadline = *this.deadline;
        let on_wait = this.on_wait;
        let sleep = this.timer.get_or_insert_with(|| {
            if let Some(on_wait) = on_wait.take() {
                on_wait();
            }
            Box::pin(tokio::time::sleep_until(deadline))
        });
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(deadline)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Run `start` and the future it returns, turning a panic in either into an `Err` with its message.
/// `start` runs at the first poll. A future of its own rather than an `async fn`: `start` (which holds
/// the attempt's call context) and the future it makes then share their room.
pub(crate) fn guarded<S: FnOnce() -> F, F: Future>(start: S) -> Guarded<S, F> {
    Guarded::Start { start: Some(start) }
}

pin_project_lite::pin_project! {
    /// The future [`guarded`] returns: the start, then the future it made.
    #[project = GuardedNow]
    #[project_replace = GuardedWas]
    pub(crate) enum Guarded<S, F> {
        Start { start: Option<S> },
        Running { #[pin] fut: F },
        Done,
    }
}

impl<S: FnOnce() -> F, F: Future> Future for Guarded<S, F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let start = match self.as_mut().project() {
            GuardedNow::Start { start } => start.take(),
            _ => None,
        };
        if let Some(start) = start {
            match std::panic::catch_unwind(AssertUnwindSafe(start)) {
                Ok(fut) => {
                    self.as_mut().project_replace(Guarded::Running { fut });
                }
                Err(payload) => {
                    self.as_mut().project_replace(Guarded::Done);
                    return Poll::Ready(Err(panic_message(payload)));
                }
            }
        }
        let GuardedNow::Running { fut } = self.as_mut().project() else { return Poll::Pending };
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll(cx)));
        match polled {
            Ok(Poll::Ready(value)) => {
                self.project_replace(Guarded::Done);
                Poll::Ready(Ok(value))
            }
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => {
                self.project_replace(Guarded::Done);
                Poll::Ready(Err(panic_message(payload)))
            }
        }
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

/// `fut`'s output when it is ready at its first poll (a store's answer given at once costs no clock
/// read and no timer), else when it comes within `budget`; `None` past it, the future dropped.
pub(crate) async fn ready_or_within<F: Future + Unpin>(
    mut fut: F,
    budget: impl FnOnce() -> Duration,
) -> Option<F::Output> {
    if let Poll::Ready(out) = std::pin::Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop())) {
        return Some(out);
    }
    // Boxed: an answer given at once (an embedded store's) does not carry room for a timer.
    Box::pin(tokio::time::timeout(budget(), fut)).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_written_to_a_tenth_rounded_down() {
        let cases = [
            (Duration::ZERO, "0.0s"),
            (Duration::from_millis(99), "0.0s"),
            (Duration::from_millis(300), "0.3s"),
            (Duration::from_millis(999), "0.9s"),
            (Duration::from_secs(1), "1.0s"),
            (Duration::from_millis(8_150), "8.1s"),
            (Duration::MAX, "18446744073709551615.9s"),
        ];
        for (duration, written) in cases {
            assert_eq!(secs(duration), written, "{duration:?}");
        }
    }
}
