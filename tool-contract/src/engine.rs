//! The attempt engine: budget check, attempt under the remaining budget, classification, probe, policy.
//!
//! [`run`] is what the `#[tool]` attribute calls; it is public so a tool can be written by hand.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::task::{Poll, Waker};
use std::time::{Duration, SystemTime};

use crate::call::Call;
use crate::classify::{self, Class, Classify};
use crate::effect::{AutoRetry, EffectKind};
use crate::journal::{Durability, LastWord, LogValue, Phase, RecordRef, rfc3339};
use crate::key::IntentKey;
use crate::probe::{Probe, ProbeMark, Prober};
use crate::report::{Applied, Item, Outcome, Report};
use crate::spec::{Dedupe, ToolSpec};
use crate::task::{Approval, ApprovalRequest, Escalation, Task};

pub use crate::bulk::run_bulk;

/// Run one call of a tool to its report.
///
/// `attempt` is called once per attempt with that attempt's [`Call`]; `probe` is asked whether an earlier
/// attempt landed before any second attempt of a side-effecting tool. The order is always probe, decide,
/// act; the rules per effect kind are in [`EffectKind::policy`].
///
/// ```
/// use std::time::Duration;
/// use tool_contract::{Class, EffectKind, NoProbe, Outcome, Task, ToolSpec, engine};
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
pub async fn run<T, E, A, AF, P>(
    task: &Task,
    spec: &ToolSpec,
    key: IntentKey,
    mut attempt: A,
    mut probe: P,
) -> Report<T>
where
    T: LogValue,
    E: Classify,
    A: FnMut(Call) -> AF,
    AF: Future<Output = Result<T, E>>,
    P: Prober<T>,
{
    let mut run = Run::new(task, spec, key);
    let side = spec.effect().has_side_effect();
    let mut last: Option<Class> = None;
    let mut resume_wait = None;
    // Two calls of one intent at once (a model that issues the same tool call twice in parallel): the
    // second waits for the first, then finds its outcome in the log.
    let _claim = if side && task.journal_ref().is_some() { Some(Claim::take(key).await) } else { None };

    // Only side effects are recognised from the log: a read is cheap to repeat and its value goes stale,
    // so of a read's history only the attempt count carries over.
    if !side {
        run.attempt = run.logged_attempts().unwrap_or(0);
    } else if let Some(recall) = run.recall() {
        run.attempt = recall.attempts;
        run.attempt_id = recall.last.attempt_id.clone();
        resume_wait = ResumeWait::of(&recall.last);
        let earlier = match recall.last_word() {
            LastWord::Ok(value) => match value.map(T::from_log) {
                Some(Ok(value)) => return run.replayed(value),
                _ => {
                    Some(format!("attempt {} is recorded ok but its value is not in the log", run.attempt_id))
                }
            },
            LastWord::Unfinished => {
                Some(format!("attempt {} started in an earlier run and never finished", run.attempt_id))
            }
            // An end that applied nothing for sure leaves nothing to resolve.
            LastWord::Ended(_) if recall.last.effect_applied == Some(Applied::No) => None,
            LastWord::Ended(outcome) => Some(format!(
                "attempt {} ended {outcome} in an earlier run with its effect {}",
                run.attempt_id,
                recall.last.effect_applied.unwrap_or(Applied::Unknown)
            )),
        };
        last = earlier.map(Class::unknown);
        run.maybe_applied = last.is_some();
    }

    let mut made = 0u32;
    loop {
        if let Some(mut class) = last.take() {
            if side && must_probe(spec, &class, probe.exists()) {
                if !probe.exists() {
                    return run.without_probe(class);
                }
                match run.probe(&mut probe).await {
                    Probe::Landed(value) => return run.landed(value, &class),
                    Probe::Failed(why) => return run.probe_failed(class, &why),
                    Probe::NotLanded => {
                        run.maybe_applied = false;
                        class = resolved_not_landed(class);
                    }
                }
            }
            match spec.effect().policy().auto_retry {
                AutoRetry::Never => {
                    return run.report(
                        class.outcome(),
                        class.effect(),
                        never_retried(spec, class.message()),
                        class.wait(),
                    );
                }
                _ if class.effect() != Applied::No && !(spec.effect() == EffectKind::Create) => {
                    // Unresolved and not a kind that may repeat itself with the same key.
                    return run.unresolved(class.message());
                }
                _ => {}
            }
            if made >= spec.attempts() {
                let msg = format!("{}; gave up after {made} attempts", class.message());
                return run.report(class.outcome(), class.effect(), msg, class.wait());
            }
            // A call resumed from the log has no earlier attempt of its own to back off from.
            if made > 0
                && let Err(stop) = run.wait_before_retry(&class).await
            {
                return run.stopped(stop);
            }
            if spec.effect() == EffectKind::Money
                && let Err(stop) = run.approve(&class).await
            {
                return run.stopped(stop);
            }
        }

        if let Some(wait) = resume_wait.take()
            && let Err(stop) = run.wait_as_asked_before(wait).await
        {
            return run.stopped(stop);
        }
        let left = task.remaining();
        if let Err(stop) = run.may_start(left) {
            return run.stopped(stop);
        }
        made += 1;
        run.next_attempt();
        let started = if task.journal_ref().is_some() { SystemTime::now() } else { SystemTime::UNIX_EPOCH };
        if let Err(err) = run.log_start(left, started, None).await
            && side
        {
            let msg = format!("{err}; the attempt was not started");
            return run.report(Outcome::Retryable, Applied::No, msg, None);
        }
        let limit =
            if side && probe.exists() { left.saturating_sub(spec.reserve()).max(spec.floor()) } else { left };
        let call = run.call(limit);
        let deadline = call.deadline;
        let class = match within(deadline, guarded(|| attempt(call)), || run.flush()).await {
            Ok(Ok(Ok(value))) => return run.succeeded(value, left, started).await,
            Ok(Ok(Err(err))) => normalise(spec.effect(), err.classify()),
            Ok(Err(panic)) if side => {
                Class::unknown(format!("the tool panicked mid-call ({panic}); the effect may have landed"))
            }
            Ok(Err(panic)) => {
                Class::permanent(format!("the tool panicked ({panic}); this is a bug in the tool"))
            }
            Err(_) => classify::no_reply(spec.effect(), format_args!("timed out after {}", secs(limit))),
        };
        if let Some(wait) = class.wait() {
            run.retry_at = Some(retry_stamp(wait));
        }
        // The log keeps the call's effect, not the attempt's: an attempt that applied nothing after one that
        // may have landed leaves the intent unresolved for the next run.
        let recorded = run.call_effect(class.effect());
        run.log_end(left, started, class.outcome(), recorded, None, class.message(), None).await;
        if class.outcome() == Outcome::Permanent {
            return run.report(class.outcome(), class.effect(), class.message().to_owned(), None);
        }
        run.maybe_applied |= class.effect() != Applied::No;
        last = Some(class);
    }
}

/// Whether the kind and the failure call for a probe before anything else.
pub(crate) fn must_probe(spec: &ToolSpec, class: &Class, has_probe: bool) -> bool {
    match spec.effect() {
        EffectKind::Read => false,
        EffectKind::Create => {
            has_probe || (spec.deduplication() == Dedupe::Probe && class.effect() != Applied::No)
        }
        EffectKind::Send | EffectKind::Money => true,
        EffectKind::Destructive => class.effect() != Applied::No,
    }
}

fn resolved_not_landed(class: Class) -> Class {
    if class.outcome() == Outcome::Unknown {
        let mut resolved = Class::retryable(format!("{}; the probe found it did not land", class.message()));
        if let Some(wait) = class.wait() {
            resolved = resolved.retry_after(wait);
        }
        resolved
    } else {
        class.with_effect(Applied::No)
    }
}

fn never_retried(spec: &ToolSpec, why: &str) -> String {
    format!("{why}; {} calls are never retried automatically: check the state and call again", spec.effect())
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

pub(crate) fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// `tokio::time::timeout_at`, with the timer set only once the future has returned `Pending`: a call that
/// is done when first polled (a cache hit, a fake) never touches the timer wheel. `Err(())` when the
/// deadline passed first; the future is then dropped, as with `timeout_at`. `on_wait` runs once, when
/// the future first has to wait.
pub(crate) async fn within<F: Future>(
    deadline: tokio::time::Instant,
    fut: F,
    on_wait: impl FnOnce(),
) -> Result<F::Output, ()> {
    let mut fut = std::pin::pin!(fut);
    let mut timer = std::pin::pin!(None::<tokio::time::Sleep>);
    let mut on_wait = Some(on_wait);
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(value) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(value));
        }
        if timer.is_none() {
            if let Some(on_wait) = on_wait.take() {
                on_wait();
            }
            timer.set(Some(tokio::time::sleep_until(deadline)));
        }
        match timer.as_mut().as_pin_mut().map(|sleep| sleep.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Err(())),
            _ => Poll::Pending,
        }
    })
    .await
}

/// Run `start` and the future it returns, turning a panic in either into an `Err` with its message.
pub(crate) async fn guarded<F: Future>(start: impl FnOnce() -> F) -> Result<F::Output, String> {
    let fut = std::panic::catch_unwind(AssertUnwindSafe(start)).map_err(panic_message)?;
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(move |cx| {
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload))),
        }
    })
    .await
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

/// The intents of this process with a side-effecting call under way, each behind its own lock.
#[allow(clippy::type_complexity)]
static CLAIMS: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<IntentKey, std::sync::Arc<tokio::sync::Mutex<()>>>>,
> = std::sync::LazyLock::new(Default::default);

/// The right to run one intent's side effect in this process; released when dropped.
pub(crate) struct Claim {
    key: IntentKey,
    lock: std::sync::Arc<tokio::sync::Mutex<()>>,
    _held: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Claim {
    /// Wait until no other call of `key` runs in this process, then hold the intent.
    pub(crate) async fn take(key: IntentKey) -> Claim {
        let lock = {
            let mut claims = CLAIMS.lock().unwrap_or_else(|e| e.into_inner());
            std::sync::Arc::clone(claims.entry(key).or_default())
        };
        // Built before the wait, so a call dropped while waiting still leaves the registry clean.
        let mut claim = Claim { key, lock, _held: None };
        claim._held = Some(std::sync::Arc::clone(&claim.lock).lock_owned().await);
        claim
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self._held = None;
        let mut claims = CLAIMS.lock().unwrap_or_else(|e| e.into_inner());
        // The last holder of the lock (ours, and the registry's) removes the intent.
        if std::sync::Arc::strong_count(&self.lock) == 2 {
            claims.remove(&self.key);
        }
    }
}

/// The instant a wait ends, as the log writes it: RFC 3339, rounded up to the second.
pub(crate) fn retry_stamp(wait: Duration) -> String {
    let at = SystemTime::now() + wait;
    let rounded = match at.duration_since(std::time::UNIX_EPOCH) {
        Ok(since) if since.subsec_nanos() > 0 => {
            at + Duration::from_nanos(u64::from(1_000_000_000 - since.subsec_nanos()))
        }
        _ => at,
    };
    rfc3339(rounded)
}

/// A wait an earlier run was asked for (`retry_at` on its last record) that has not yet passed.
pub(crate) struct ResumeWait {
    until: String,
    left: Duration,
}

impl ResumeWait {
    pub(crate) fn of(last: &crate::journal::Record) -> Option<ResumeWait> {
        let until = last.retry_at.as_deref()?;
        let left = crate::journal::parse_rfc3339(until)?.duration_since(SystemTime::now()).ok()?;
        Some(ResumeWait { until: until.to_owned(), left })
    }
}

/// Why the engine stopped before another attempt.
pub(crate) struct Stop {
    pub(crate) outcome: Outcome,
    pub(crate) applied: Applied,
    pub(crate) message: String,
    pub(crate) wait: Option<Duration>,
}

impl Stop {
    /// A stop that keeps the last attempt's outcome and effect.
    fn from_class(class: &Class, message: String, wait: Option<Duration>) -> Stop {
        Stop { outcome: class.outcome(), applied: class.effect(), message, wait }
    }
}

/// The state of one call, shared by the single and the bulk engine.
pub(crate) struct Run<'a> {
    pub(crate) task: &'a Task,
    pub(crate) spec: &'a ToolSpec,
    pub(crate) key: IntentKey,
    pub(crate) attempt: u32,
    pub(crate) attempt_id: String,
    /// An earlier attempt of this call may have applied its effect and no probe has said otherwise;
    /// a later attempt that applied nothing does not make the call's effect `no`.
    pub(crate) maybe_applied: bool,
    /// The earliest instant for the next attempt the service asked for (RFC 3339), written on the end
    /// records of the attempt that was told to wait, so a restarted process waits too.
    pub(crate) retry_at: Option<String>,
}

impl<'a> Run<'a> {
    pub(crate) fn new(task: &'a Task, spec: &'a ToolSpec, key: IntentKey) -> Self {
        Run { task, spec, key, attempt: 0, attempt_id: String::new(), maybe_applied: false, retry_at: None }
    }

    /// Number the next attempt: `{task}-{first 8 hex of the key}-a{n}`, unique across the task's intents.
    pub(crate) fn next_attempt(&mut self) {
        self.attempt += 1;
        self.retry_at = None;
        self.attempt_id = attempt_id(self.task.id(), &self.key, self.attempt);
    }

    pub(crate) fn recall(&self) -> Option<crate::journal::Recall> {
        self.task.journal_ref().and_then(|j| j.recall(&self.key))
    }

    /// Hand a read's held start record to the log once the read has to wait: a hung read is visible.
    pub(crate) fn flush(&self) {
        if let Some(journal) = self.task.journal_ref() {
            // A read's record: a failure here only loses attempt numbering, which the next append reports.
            let _ = journal.flush();
        }
    }

    /// The highest attempt number the log holds for the intent, without reading its last record.
    pub(crate) fn logged_attempts(&self) -> Option<u32> {
        self.task.journal_ref().and_then(|j| j.attempts(&self.key))
    }

    pub(crate) fn call(&self, limit: Duration) -> Call {
        let now = tokio::time::Instant::now();
        Call {
            task_id: self.task.id_arc(),
            key: self.key,
            attempt: self.attempt,
            attempt_id: self.attempt_id.as_str().into(),
            deadline: now.checked_add(limit).unwrap_or(now),
        }
    }

    fn record<'r>(&'r self, phase: Phase, left: Duration, started: &'r str) -> RecordRef<'r> {
        RecordRef {
            phase,
            task: self.task.id(),
            call: self.spec.name(),
            intent_key: self.key,
            attempt: self.attempt,
            attempt_id: &self.attempt_id,
            started,
            budget_left_s: left.as_secs(),
            outcome: None,
            effect_applied: None,
            probe: None,
            message: None,
            retry_at: None,
            value: None,
        }
    }

    /// Write the start record ahead of the attempt; `value` carries what a bulk call knew of its items.
    pub(crate) async fn log_start(
        &self,
        left: Duration,
        started: SystemTime,
        value: Option<serde_json::Value>,
    ) -> Result<(), crate::JournalError> {
        let Some(journal) = self.task.journal_ref() else { return Ok(()) };
        let durability =
            if self.spec.effect().has_side_effect() { Durability::Synced } else { Durability::Lazy };
        let stamp = rfc3339(started);
        let mut record = self.record(Phase::Start, left, &stamp);
        record.value = value.as_ref();
        let mut appended = journal.append_ref(record, durability);
        // Most appends are done when first polled (a buffered record is written at once): no timer then.
        if let Poll::Ready(done) = appended.as_mut().poll(&mut std::task::Context::from_waker(Waker::noop()))
        {
            return done;
        }
        // A store that hangs (a stuck disk) must not hold the call past its deadline; a start record that
        // lands late reads as unfinished and is probed next time.
        match tokio::time::timeout(left, appended).await {
            Ok(appended) => appended,
            Err(_) => Err(crate::JournalError::Io {
                context: "attempt log: the start record was not stored within the budget".to_owned(),
                source: std::io::ErrorKind::TimedOut.into(),
            }),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn log_end(
        &self,
        left: Duration,
        started: SystemTime,
        outcome: Outcome,
        applied: Applied,
        probe: Option<ProbeMark>,
        message: &str,
        value: Option<serde_json::Value>,
    ) {
        let Some(journal) = self.task.journal_ref() else { return };
        let stamp = rfc3339(started);
        let mut record = self.record(Phase::End, left, &stamp);
        record.outcome = Some(outcome);
        record.effect_applied = Some(applied);
        record.probe = probe;
        record.message = Some(message);
        record.retry_at = self.retry_at.as_deref();
        record.value = value.as_ref();
        // Losing an end record is safe: the attempt then reads as unfinished and is probed next time.
        let appended = journal.append_ref(record, Durability::Buffered);
        let _ = appended.await;
    }

    /// The call's effect given this attempt's: never `no` while an earlier attempt may have landed.
    pub(crate) fn call_effect(&self, attempt: Applied) -> Applied {
        if self.maybe_applied && attempt == Applied::No { Applied::Unknown } else { attempt }
    }

    pub(crate) fn report<T>(
        &self,
        outcome: Outcome,
        applied: Applied,
        message: String,
        wait: Option<Duration>,
    ) -> Report<T> {
        let mut message = message;
        if outcome == Outcome::Unknown {
            message = self.escalate(message);
        }
        let call_effect = self.call_effect(applied);
        if call_effect != applied {
            message.push_str("; an earlier attempt may have landed");
        }
        let applied = call_effect;
        Report {
            outcome,
            effect_applied: applied,
            attempt_id: self.attempt_id.clone(),
            idempotency_key: self.key,
            retry_after_s: wait.map(ceil_secs),
            deadline_left_s: self.task.remaining().as_secs(),
            message,
            value: None,
            items: Vec::new(),
        }
    }

    /// Hand the call to the task's escalation sink; the message says where it went.
    fn escalate(&self, message: String) -> String {
        match self.task.escalation() {
            Some(sink) => {
                sink.escalate(Escalation {
                    task: self.task.id().to_owned(),
                    call: self.spec.name().to_owned(),
                    key: self.key,
                    attempt_id: self.attempt_id.clone(),
                    reason: message.clone(),
                });
                format!("{message}; escalated")
            }
            None => format!("{message}; no escalation sink is configured: resolve it by reading the world"),
        }
    }

    fn ok<T>(&self, value: T, applied: Applied, message: String) -> Report<T> {
        Report {
            outcome: Outcome::Ok,
            effect_applied: applied,
            attempt_id: self.attempt_id.clone(),
            idempotency_key: self.key,
            retry_after_s: None,
            deadline_left_s: self.task.remaining().as_secs(),
            message,
            value: Some(value),
            items: Vec::new(),
        }
    }

    fn applied_on_ok(&self) -> Applied {
        if self.spec.effect().has_side_effect() { Applied::Yes } else { Applied::No }
    }

    async fn succeeded<T: LogValue>(&self, value: T, left: Duration, started: SystemTime) -> Report<T> {
        let mut message = String::with_capacity(self.spec.name().len() + 28);
        message.push_str(self.spec.name());
        message.push_str(" done on attempt ");
        push_decimal(&mut message, u64::from(self.attempt));
        if self.task.journal_ref().is_some() {
            let json = value.to_log().ok();
            self.log_end(left, started, Outcome::Ok, self.applied_on_ok(), None, &message, json).await;
        }
        self.ok(value, self.applied_on_ok(), message)
    }

    fn replayed<T>(&self, value: T) -> Report<T> {
        let message = format!(
            "{} already done by attempt {} (recorded in the attempt log); not repeated",
            self.spec.name(),
            self.attempt_id
        );
        self.ok(value, self.applied_on_ok(), message)
    }

    /// Whether an attempt may start with `left` of the budget: never on an empty budget, floor or none
    /// (it could land and never be resolved), never below the floor.
    pub(crate) fn may_start(&self, left: Duration) -> Result<(), Stop> {
        if left.is_zero() || left < self.spec.floor() { Err(self.refusal(left)) } else { Ok(()) }
    }

    /// Why an attempt may not start with `left` of the budget.
    fn refusal(&self, left: Duration) -> Stop {
        let message = if left.is_zero() {
            format!("budget spent: nothing left for {}; not started", self.spec.name())
        } else {
            format!(
                "budget spent: {} left, {} needs at least {} to start; not started",
                secs(left),
                self.spec.name(),
                secs(self.spec.floor())
            )
        };
        Stop { outcome: Outcome::Retryable, applied: Applied::No, message, wait: None }
    }

    fn landed<T>(&self, value: T, class: &Class) -> Report<T> {
        let message = format!(
            "{}; the probe found attempt {} landed, so it was not repeated",
            class.message(),
            self.attempt_id
        );
        self.ok(value, Applied::Yes, message)
    }

    fn without_probe<T>(&self, class: Class) -> Report<T> {
        if class.effect() == Applied::No {
            let msg =
                format!("{}; not retried: {} has no probe to check first", class.message(), self.spec.name());
            self.report(class.outcome(), Applied::No, msg, class.wait())
        } else {
            self.unresolved(&format!("{}; {} has no probe to resolve it", class.message(), self.spec.name()))
        }
    }

    fn probe_failed<T>(&self, class: Class, why: &str) -> Report<T> {
        if class.effect() == Applied::No {
            let msg =
                format!("{}; not retried: the probe before a second attempt failed ({why})", class.message());
            self.report(class.outcome(), Applied::No, msg, class.wait())
        } else {
            self.unresolved(&format!("{}; the probe could not tell ({why})", class.message()))
        }
    }

    pub(crate) fn unresolved<T>(&self, why: &str) -> Report<T> {
        self.report(Outcome::Unknown, Applied::Unknown, why.to_owned(), None)
    }

    /// Run the probe under the budget left and log its verdict against the attempt it resolves.
    async fn probe<T: LogValue, P: Prober<T>>(&self, probe: &mut P) -> Probe<T> {
        let left = self.task.remaining();
        let started = SystemTime::now();
        let verdict = if left.is_zero() {
            Probe::Failed("no budget left to run it".to_owned())
        } else {
            match tokio::time::timeout(left, guarded(|| probe.probe(self.key))).await {
                Ok(Ok(verdict)) => verdict,
                Ok(Err(panic)) => Probe::Failed(format!("the probe panicked: {panic}")),
                Err(_) => Probe::Failed(format!("the probe timed out after {}", secs(left))),
            }
        };
        let (outcome, applied, msg, value) = match &verdict {
            Probe::Landed(v) => (Outcome::Ok, Applied::Yes, "probe: landed".to_owned(), v.to_log().ok()),
            Probe::NotLanded => (Outcome::Retryable, Applied::No, "probe: not landed".to_owned(), None),
            Probe::Failed(why) => (Outcome::Unknown, Applied::Unknown, format!("probe failed: {why}"), None),
        };
        self.log_end(left, started, outcome, applied, Some(verdict.mark()), &msg, value).await;
        verdict
    }

    /// Wait out Retry-After and backoff inside the budget, or say why the budget cannot hold them.
    pub(crate) async fn wait_before_retry(&self, class: &Class) -> Result<(), Stop> {
        let left = self.task.remaining();
        let floor = self.spec.floor();
        if let Some(asked) = class.wait()
            && asked.saturating_add(floor) > left
        {
            let message = format!(
                "{}; the service asked to wait {}, longer than the {} left: not retried",
                class.message(),
                secs(asked),
                secs(left)
            );
            return Err(Stop::from_class(class, message, Some(asked)));
        }
        let seed = u64::from_le_bytes(self.key.as_bytes()[..8].try_into().unwrap_or([0; 8]));
        let backoff = self.spec.waits().wait(self.attempt.max(1), seed);
        let wait = class.wait().map_or(backoff, |asked| asked.max(backoff));
        if wait.saturating_add(floor) > left || left < floor {
            let message = format!(
                "{}; not retried: {} left cannot hold the next wait and attempt",
                class.message(),
                secs(left)
            );
            return Err(Stop::from_class(class, message, class.wait()));
        }
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// Honour, in a restarted process, the wait the service asked of an earlier one.
    pub(crate) async fn wait_as_asked_before(&self, wait: ResumeWait) -> Result<(), Stop> {
        let left = self.task.remaining();
        if wait.left.saturating_add(self.spec.floor()) > left {
            let message = format!(
                "the service asked an earlier run to wait until {}, longer than the {} left: not started",
                wait.until,
                secs(left)
            );
            let (outcome, applied) = (Outcome::Retryable, Applied::No);
            return Err(Stop { outcome, applied, message, wait: Some(wait.left) });
        }
        tokio::time::sleep(wait.left).await;
        Ok(())
    }

    /// Ask the approver before a second attempt of a `money` call.
    pub(crate) async fn approve(&self, class: &Class) -> Result<(), Stop> {
        let Some(approver) = self.task.approver_ref() else {
            let message = self.escalate(format!(
                "{}; a second attempt of a money call needs an approver and none is configured",
                class.message()
            ));
            return Err(Stop {
                outcome: class.outcome(),
                applied: class.effect(),
                message,
                wait: class.wait(),
            });
        };
        let request = ApprovalRequest {
            task: self.task.id().to_owned(),
            call: self.spec.name().to_owned(),
            key: self.key,
            next_attempt: self.attempt + 1,
            history: class.message().to_owned(),
        };
        match approver.approve(&request).await {
            Approval::Approved => Ok(()),
            Approval::Denied(why) => Err(Stop {
                outcome: Outcome::Permanent,
                applied: Applied::No,
                message: format!("{}; the approver refused a second attempt: {why}", class.message()),
                wait: None,
            }),
        }
    }

    /// The report of a call the engine stopped before another attempt.
    /// `deadline_left_s` is the budget left, as in every report: the caller stops when it is `0` or
    /// when `retry_after_s` is larger.
    pub(crate) fn stopped<T>(&self, stop: Stop) -> Report<T> {
        self.report(stop.outcome, stop.applied, stop.message, stop.wait)
    }

    pub(crate) fn bulk_report(&self, items: Vec<Item>, noun: &str) -> Report<()> {
        crate::bulk::summarise(self, items, noun)
    }
}

/// `{task}-{first 8 hex of the key}-a{n}`.
pub(crate) fn attempt_id(task: &str, key: &IntentKey, attempt: u32) -> String {
    let hex = key.hex();
    let mut id = String::with_capacity(task.len() + 12 + 10);
    id.push_str(task);
    id.push('-');
    // The digits are ASCII by construction.
    id.push_str(std::str::from_utf8(&hex[..8]).unwrap_or_default());
    id.push_str("-a");
    push_decimal(&mut id, u64::from(attempt));
    id
}

/// Append `n` in decimal, without the formatting machinery.
pub(crate) fn push_decimal(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    // The digits are ASCII by construction.
    out.push_str(std::str::from_utf8(decimal(n, &mut digits)).unwrap_or_default());
}

/// `n` in decimal, written at the end of `digits`: the shared number writer of attempt ids, messages and
/// log records.
pub(crate) fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &digits[at..]
}

/// Whole seconds, rounded up: a wait is never reported shorter than it is.
pub(crate) fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(key: &IntentKey) -> bool {
        CLAIMS.lock().unwrap_or_else(|e| e.into_inner()).contains_key(key)
    }

    #[tokio::test(start_paused = true)]
    async fn a_claim_is_released_by_its_last_holder_even_one_dropped_while_waiting() {
        let key = crate::Intent::new("claims", "test", "post", "x").key();
        let first = Claim::take(key).await;
        assert!(held(&key));
        // A second call waits; the first finishes; the second is dropped (cancelled) before its turn.
        let mut waiting = Box::pin(Claim::take(key));
        let noop = &mut std::task::Context::from_waker(Waker::noop());
        assert!(waiting.as_mut().poll(noop).is_pending(), "the second call waits for the first");
        drop(first);
        assert!(held(&key), "handed to the waiting call");
        drop(waiting);
        assert!(!held(&key), "nobody holds the intent: the registry forgets it");
        let again = Claim::take(key).await;
        drop(again);
        assert!(!held(&key));
    }
}
