//! The retry budget against a storm: every task calls one service that fails every request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tool_contract::budget::{RetryBudget, RetryBudgets};
use tool_contract::effect::EffectKind;
use tool_contract::probe::NoProbe;
use tool_contract::spec::{Backoff, Jitter, ToolSpec};
use tool_contract::{Class, Outcome, Probe, Task, engine};

const NO_JITTER: Backoff =
    Backoff { base: Duration::from_millis(100), max: Duration::from_secs(1), jitter: Jitter::None };
const READ: ToolSpec = ToolSpec::new("read_stock", EffectKind::Read).service("inventory").backoff(NO_JITTER);
const SEND: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send).service("inventory").backoff(NO_JITTER);

/// First attempts and retries of `tasks` tasks, each calling `spec` once against a service that answers
/// every request with a 503, all at once, sharing `budgets`; and the reports.
async fn storm(tasks: usize, spec: &'static ToolSpec, budgets: RetryBudgets) -> (u64, u64, Vec<String>) {
    let (firsts, retries) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut set = tokio::task::JoinSet::new();
    for i in 0..tasks {
        let (firsts, retries) = (Arc::clone(&firsts), Arc::clone(&retries));
        let task =
            Task::new(format!("storm-{i}"), "agent", Duration::from_secs(5)).retry_budgets(budgets.clone());
        set.spawn(async move {
            let key = task.key(spec, &"sku-1", None);
            let attempt = |call: tool_contract::Call| {
                let counter = if call.attempt() == 1 { &firsts } else { &retries };
                counter.fetch_add(1, Relaxed);
                async { Err::<u64, Class>(Class::retryable("503 service unavailable")) }
            };
            let report = if spec.effect().has_side_effect() {
                engine::run(&task, spec, key, attempt, |_| async { Probe::<u64>::NotLanded }).await
            } else {
                engine::run(&task, spec, key, attempt, NoProbe).await
            };
            assert_eq!(report.outcome, Outcome::Retryable, "{}", report.message);
            report.message
        });
    }
    let mut messages = Vec::new();
    while let Some(message) = set.join_next().await {
        messages.push(message.expect("a task"));
    }
    (firsts.load(Relaxed), retries.load(Relaxed), messages)
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_tasks_against_a_dead_service_retry_within_the_budget() {
    for spec in [&READ, &SEND] {
        let (firsts, retries, messages) = storm(10_000, spec, RetryBudgets::default()).await;
        // First attempts are never refused.
        assert_eq!(firsts, 10_000, "{}", spec.name());
        // 20 % of the first attempts, plus 10 retries a second over the 10 s window; the storm lasts
        // under a second of the paused clock, so one window holds it.
        assert!(retries <= 2_000 + 100, "{}: {retries} retries", spec.name());
        assert!(retries >= 2_000, "{}: the budget is used, not refused outright: {retries}", spec.name());
        let refused = messages.iter().filter(|m| m.contains("retry budget spent for inventory")).count();
        eprintln!("{}: {firsts} first attempts, {retries} retries, {refused} retries refused", spec.name());
        assert!(refused >= 7_000, "{}: {refused} calls told why they stopped", spec.name());
    }
}

#[tokio::test(start_paused = true)]
async fn without_the_budget_every_task_retries_to_its_limit() {
    let (firsts, retries, _) = storm(1_000, &READ, RetryBudgets::new(RetryBudget::UNLIMITED)).await;
    assert_eq!((firsts, retries), (1_000, 2_000), "three attempts each");
}

#[tokio::test(start_paused = true)]
async fn a_refused_retry_reports_the_effect_as_known_and_when_to_come_back() {
    // No room at all: no floor, no share.
    let budgets = RetryBudgets::new(RetryBudget::new(Duration::from_secs(10), 0, 0));
    let task = Task::new("storm-refused", "agent", Duration::from_secs(30)).retry_budgets(budgets);
    let key = task.key(&SEND, &"thread-9", None);
    let report = engine::run(
        &task,
        &SEND,
        key,
        |_| async { Err::<u64, Class>(Class::unknown("connection reset after the request was sent")) },
        |_| async { Probe::<u64>::NotLanded },
    )
    .await;
    // The probe ran (probes are never refused) and found nothing: the effect is known to be `no`.
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Retryable, tool_contract::Applied::No));
    assert!(report.message.contains("not retried: retry budget spent for inventory"), "{}", report.message);
    assert_eq!(report.retry_after_s, None, "only new first attempts can make room");
}

/// Reads stock from the inventory service.
#[tool_contract::tool(effect = "read", target = sku, service = "inventory", max_attempts = 2)]
async fn read_stock_level(sku: String) -> Result<u64, Class> {
    let _ = sku;
    Err(Class::retryable("503 service unavailable"))
}

/// Reads prices from the inventory service.
#[tool_contract::tool(effect = "read", target = sku, service = "inventory", max_attempts = 2)]
async fn read_price(sku: String) -> Result<u64, Class> {
    let _ = sku;
    Err(Class::retryable("503 service unavailable"))
}

/// Reads reviews from its own service (by default, the tool's name).
#[tool_contract::tool(effect = "read", target = sku, max_attempts = 2)]
async fn read_reviews(sku: String) -> Result<u64, Class> {
    let _ = sku;
    Err(Class::retryable("503 service unavailable"))
}

#[tokio::test(start_paused = true)]
async fn tools_naming_one_service_share_its_budget() {
    // Room for exactly one retry per service: a floor of 1 a second over a 1 s window, no share.
    let budgets = RetryBudgets::new(RetryBudget::new(Duration::from_secs(1), 1, 0));
    let task = Task::new("storm-shared", "agent", Duration::from_secs(30)).retry_budgets(budgets);
    let first = read_stock_level(&task, "sku-1".to_owned()).await;
    assert!(first.message.contains("gave up after 2 attempts"), "{}", first.message);
    let second = read_price(&task, "sku-1".to_owned()).await;
    assert!(second.message.contains("retry budget spent for inventory"), "{}", second.message);
    let other = read_reviews(&task, "sku-1".to_owned()).await;
    assert!(other.message.contains("gave up after 2 attempts"), "{}", other.message);
}
