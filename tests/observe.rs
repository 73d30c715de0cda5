//! What an operator sees: the spans of a call (feature `tracing`) and its metrics (feature `metrics`),
//! captured by a subscriber and a recorder of this test's own.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tool_contract::task::EscalationQueue;
use tool_contract::{Class, Probe, Task, tool};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span as captured: its name, its parent's name, its fields.
#[derive(Debug, Clone, Default)]
struct Captured {
    name: String,
    parent: Option<String>,
    fields: BTreeMap<String, String>,
    events: Vec<BTreeMap<String, String>>,
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// Keeps every span, in the order they were created, with what was recorded on it.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<Captured>>>,
    ids: Arc<Mutex<BTreeMap<u64, usize>>>,
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let parent = ctx.span(id).and_then(|span| span.parent()).map(|parent| parent.name().to_owned());
        let mut spans = self.spans.lock().unwrap();
        spans.push(Captured {
            name: attrs.metadata().name().to_owned(),
            parent,
            fields: fields.0,
            events: Vec::new(),
        });
        self.ids.lock().unwrap().insert(id.into_u64(), spans.len() - 1);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        values.record(&mut fields);
        if let Some(&at) = self.ids.lock().unwrap().get(&id.into_u64()) {
            self.spans.lock().unwrap()[at].fields.extend(fields.0);
        }
    }
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let Some(span) = ctx.event_span(event) else { return };
        if let Some(&at) = self.ids.lock().unwrap().get(&span.id().into_u64()) {
            self.spans.lock().unwrap()[at].events.push(fields.0);
        }
    }
}

/// The tests of this file run one at a time. tracing caches whether a callsite is enabled when the
/// callsite is first hit; a test without a subscriber (the metrics one) hitting the probe's callsite
/// on another thread while a capturing test installs its subscriber can leave that callsite cached
/// as disabled, and the capture then misses a span the engine did open.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Capture {
    /// Run `f` on a paused current-thread runtime with this capture as the subscriber.
    fn run<F: std::future::Future>(&self, f: F) -> F::Output {
        let subscriber = tracing_subscriber::registry().with(self.clone());
        let rt =
            tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        tracing::subscriber::with_default(subscriber, || rt.block_on(f))
    }

    fn spans(&self) -> Vec<Captured> {
        self.spans.lock().unwrap().clone()
    }
}

async fn posted(thread: &String, text: &String, key: tool_contract::IntentKey) -> Probe<u64> {
    let _ = (thread, text, key);
    Probe::Landed(4411)
}

/// Posts a notice; the reply never comes, the notice is posted.
#[tool(effect = "send", probe = posted, deadline_floor = "1s", probe_reserve = "1s")]
async fn post_notice(thread: String, text: String) -> Result<u64, Class> {
    let _ = (thread, text);
    std::future::pending().await
}

/// A read the service keeps refusing with a `Retry-After`.
#[tool(effect = "read", target = sku, max_attempts = 2)]
async fn read_stock(sku: String) -> Result<u64, Class> {
    let _ = sku;
    Err(Class::retryable("429 too many requests").retry_after(Duration::from_secs(2)))
}

#[test]
fn a_call_is_one_execute_tool_span_with_an_attempt_and_a_probe_inside() {
    let _serial = one_at_a_time();
    let capture = Capture::default();
    let report = capture.run(async {
        let task = Task::new("observe-1", "agent", Duration::from_secs(10)).tool_call_id("toolu_01");
        post_notice(&task, "thread-9".into(), "the secret text 5521".into()).await
    });
    assert_eq!(report.value, Some(4411), "{}", report.message);
    let spans = capture.spans();
    let names: Vec<(&str, Option<&str>)> =
        spans.iter().map(|s| (s.name.as_str(), s.parent.as_deref())).collect();
    assert_eq!(
        names,
        [("execute_tool", None), ("attempt", Some("execute_tool")), ("probe", Some("execute_tool"))]
    );
    let call = &spans[0].fields;
    for (field, value) in [
        ("otel.name", "execute_tool post_notice"),
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "post_notice"),
        ("gen_ai.tool.type", "function"),
        ("gen_ai.tool.call.id", "toolu_01"),
        ("tool_contract.effect", "send"),
        ("tool_contract.outcome", "ok"),
        ("tool_contract.effect_applied", "yes"),
        ("tool_contract.attempts", "1"),
    ] {
        assert_eq!(call.get(field).map(String::as_str), Some(value), "{field} in {call:?}");
    }
    assert_eq!(call.get("tool_contract.intent_key"), Some(&report.idempotency_key.to_string()));
    assert!(!call.contains_key("error.type"), "an ok call has no error type");
    let attempt = &spans[1].fields;
    assert_eq!(attempt.get("tool_contract.attempt").map(String::as_str), Some("1"));
    assert_eq!(attempt.get("tool_contract.outcome").map(String::as_str), Some("unknown"));
    assert_eq!(spans[2].fields.get("tool_contract.verdict").map(String::as_str), Some("landed"));
    // Arguments are never recorded: neither the text nor the thread appears anywhere.
    let everything = format!("{spans:?}");
    assert!(!everything.contains("secret text 5521"), "{everything}");
}

#[test]
fn a_failed_call_sets_error_type_and_says_why_it_waited_and_stopped() {
    let _serial = one_at_a_time();
    let capture = Capture::default();
    let report = capture.run(async {
        let task =
            Task::new("observe-2", "agent", Duration::from_secs(10)).escalate_to(EscalationQueue::new());
        read_stock(&task, "sku-1".into()).await
    });
    let spans = capture.spans();
    let call = &spans[0];
    assert_eq!(call.fields.get("error.type").map(String::as_str), Some("retryable"), "{}", report.message);
    assert_eq!(call.fields.get("tool_contract.attempts").map(String::as_str), Some("2"));
    let attempts = spans.iter().filter(|s| s.name == "attempt").count();
    assert_eq!(attempts, 2);
    let waited =
        call.events.iter().find(|e| e.get("tool_contract.event").map(String::as_str) == Some("wait"));
    let waited = waited.unwrap_or_else(|| panic!("a wait event in {:?}", call.events));
    assert_eq!(waited.get("tool_contract.retry_after").map(String::as_str), Some("true"));
}

/// Counts every counter and histogram sample by its name and labels.
#[derive(Default, Clone)]
struct Recorded(Arc<Mutex<BTreeMap<String, Arc<AtomicU64>>>>);

impl Recorded {
    fn slot(&self, key: &metrics::Key) -> Arc<AtomicU64> {
        let mut labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        labels.sort();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        Arc::clone(self.0.lock().unwrap().entry(name).or_default())
    }
    fn get(&self, name: &str) -> u64 {
        self.0.lock().unwrap().get(name).map_or(0, |n| n.load(Ordering::Relaxed))
    }
}

struct Count(Arc<AtomicU64>);

impl metrics::CounterFn for Count {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::Relaxed);
    }
    fn absolute(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }
}

impl metrics::HistogramFn for Count {
    fn record(&self, _value: f64) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl metrics::Recorder for Recorded {
    fn describe_counter(&self, _: metrics::KeyName, _: Option<metrics::Unit>, _: metrics::SharedString) {}
    fn describe_gauge(&self, _: metrics::KeyName, _: Option<metrics::Unit>, _: metrics::SharedString) {}
    fn describe_histogram(&self, _: metrics::KeyName, _: Option<metrics::Unit>, _: metrics::SharedString) {}
    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        metrics::Counter::from_arc(Arc::new(Count(self.slot(key))))
    }
    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }
    fn register_histogram(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Histogram {
        metrics::Histogram::from_arc(Arc::new(Count(self.slot(key))))
    }
}

#[test]
fn calls_outcomes_probes_and_refusals_are_counted_by_tool_never_by_task() {
    let _serial = one_at_a_time();
    let recorded = Recorded::default();
    metrics::with_local_recorder(&recorded, || {
        let rt =
            tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        rt.block_on(async {
            for i in 0..3 {
                let task = Task::new(format!("metrics-{i}"), "agent", Duration::from_secs(10));
                post_notice(&task, "thread-9".into(), "hello".into()).await;
                read_stock(&task, "sku-1".into()).await;
            }
            // Nothing left for an attempt: refused before it starts.
            let task = Task::new("metrics-empty", "agent", Duration::ZERO);
            read_stock(&task, "sku-1".into()).await;
        });
    });
    assert_eq!(recorded.get("tool_contract_calls_total{effect=send,outcome=ok,tool=post_notice}"), 3);
    assert_eq!(recorded.get("tool_contract_calls_total{effect=read,outcome=retryable,tool=read_stock}"), 4);
    assert_eq!(recorded.get("tool_contract_probes_total{tool=post_notice,verdict=landed}"), 3);
    assert_eq!(recorded.get("tool_contract_budget_refusals_total{tool=read_stock}"), 1);
    assert_eq!(recorded.get("tool_contract_attempts{tool=read_stock}"), 4, "one sample per call");
    assert_eq!(recorded.get("tool_contract_call_duration_seconds{tool=post_notice}"), 3);
    // Low cardinality: no label holds a task id or an intent key.
    let names: Vec<String> = recorded.0.lock().unwrap().keys().cloned().collect();
    assert!(names.iter().all(|n| !n.contains("metrics-") && !n.contains("task")), "{names:?}");
}
