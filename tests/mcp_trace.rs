//! A `tools/call` continues the client's trace: the request's `_meta` `traceparent` is the parent of the
//! server's `tools/call {tool}` span, whose child is the tool's `execute_tool` span, then its attempt.
//! The spans go through tracing-opentelemetry to an in-memory exporter and are read back by id.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::trace::{SpanId, SpanKind, TraceId, TracerProvider as _};
use opentelemetry::{KeyValue, Value as Attr};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value, json};
use tool_contract::{Call, Class, IntentKey, Probe, Toolbox, tool};
use tool_contract_mcp::{McpServer, TASK_META_KEY, TOOL_CALL_ID_META_KEY};
use tracing_subscriber::layer::SubscriberExt;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// A thread of notices.
#[derive(Default)]
struct Thread(Mutex<Vec<IntentKey>>);

impl Thread {
    /// Post a notice.
    #[tool(effect = "send", probe = Self::landed, target = thread)]
    async fn post(&self, call: &Call, thread: String) -> Result<u64, Class> {
        let _ = thread;
        let mut posted = self.0.lock().unwrap();
        posted.push(call.key());
        Ok(posted.len() as u64)
    }

    #[allow(clippy::ptr_arg)]
    async fn landed(&self, _: &String, key: IntentKey) -> Probe<u64> {
        if self.0.lock().unwrap().contains(&key) { Probe::Landed(1) } else { Probe::NotLanded }
    }
}

async fn connect() -> RunningService<RoleClient, ()> {
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::new(Thread::default()), Thread::post_tool()).unwrap();
    let server = McpServer::builder(toolbox).budget(Duration::from_secs(30)).build().unwrap();
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_side).await.expect("the client connects")
}

fn params(arguments: Value, meta: &[(&str, &str)]) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else { panic!("an object") };
    let mut params = CallToolRequestParams::new("post").with_arguments(arguments);
    let meta: Map<String, Value> = meta.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect();
    params.meta = Some(RequestMetaObject::from(meta));
    params
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Attr> {
    span.attributes.iter().find(|KeyValue { key: k, .. }| k.as_str() == key).map(|kv| &kv.value)
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|span| span.name == name).collect()
}

/// One test: the subscriber is the process's global one, and the runtime has one thread.
#[tokio::test(flavor = "current_thread")]
async fn a_call_continues_the_clients_trace_and_nests_the_tools_spans() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("mcp-trace-test"));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).unwrap();
    let client = connect().await;

    // 1. With the client's trace context, a task and the model's tool-call id.
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let meta = [
        ("traceparent", traceparent.as_str()),
        ("tracestate", "vendor=opaque"),
        (TASK_META_KEY, "trace-task-1"),
        (TOOL_CALL_ID_META_KEY, "call_7Qx"),
    ];
    let result = client.call_tool(params(json!({ "thread": "t-1" }), &meta)).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let server = named(&spans, "tools/call post");
    assert_eq!(server.len(), 1, "one server span: {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    let server = server[0];
    assert_eq!(server.span_context.trace_id(), TraceId::from_hex(TRACE).unwrap(), "the client's trace");
    assert_eq!(server.parent_span_id, SpanId::from_hex(PARENT).unwrap(), "the client's span is the parent");
    assert_eq!(server.span_kind, SpanKind::Server);
    assert_eq!(server.span_context.trace_state().get("vendor"), Some("opaque"));
    assert_eq!(attribute(server, "mcp.method.name").map(Attr::as_str).as_deref(), Some("tools/call"));
    assert_eq!(attribute(server, "gen_ai.tool.name").map(Attr::as_str).as_deref(), Some("post"));
    assert!(attribute(server, "jsonrpc.request.id").is_some(), "the request's id");
    assert!(attribute(server, "error.type").is_none(), "an ok call has no error type");
    // The span the request arrived in (rmcp's session span) is linked, not the parent.
    assert_eq!(server.links.links.len(), 1, "the ambient span is linked");
    assert_ne!(server.links.links[0].span_context.trace_id(), TraceId::from_hex(TRACE).unwrap());

    let execute = named(&spans, "execute_tool post");
    assert_eq!(execute.len(), 1);
    let execute = execute[0];
    assert_eq!(execute.parent_span_id, server.span_context.span_id(), "execute_tool inside tools/call");
    assert_eq!(execute.span_context.trace_id(), server.span_context.trace_id());
    assert_eq!(attribute(execute, "gen_ai.tool.call.id").map(Attr::as_str).as_deref(), Some("call_7Qx"));
    assert_eq!(attribute(execute, "tool_contract.outcome").map(Attr::as_str).as_deref(), Some("ok"));
    let attempts = named(&spans, "attempt");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].parent_span_id, execute.span_context.span_id());
    assert!(!spans.iter().any(|span| attribute(span, "thread").is_some()), "arguments are never recorded");
    exporter.reset();

    // 2. No trace context, or one that cannot be read: the call runs, in the trace of the span the
    //    request arrived in (rmcp's session span), not in any client's.
    for meta in [
        vec![(TASK_META_KEY, "trace-task-2")],
        vec![(TASK_META_KEY, "trace-task-3"), ("traceparent", "00-zz")],
    ] {
        let result = client.call_tool(params(json!({ "thread": "t-2" }), &meta)).await.unwrap();
        assert_eq!(result.is_error, Some(false), "{meta:?}");
        provider.force_flush().unwrap();
        let spans = exporter.get_finished_spans().unwrap();
        let server = named(&spans, "tools/call post");
        assert_eq!(server.len(), 1);
        assert_ne!(server[0].parent_span_id, SpanId::from_hex(PARENT).unwrap(), "{meta:?}");
        assert_ne!(server[0].span_context.trace_id(), TraceId::from_hex(TRACE).unwrap());
        assert!(server[0].links.links.is_empty(), "nothing to link: the ambient span is the parent");
        let execute = named(&spans, "execute_tool post");
        assert!(attribute(execute[0], "gen_ai.tool.call.id").is_none(), "no id when the host gave none");
        exporter.reset();
    }

    // 3. Arguments that do not decode: a report with `isError`, so the server span's error type is
    //    the convention's `tool_error`.
    let result =
        client.call_tool(params(json!({ "thread": 7 }), &[(TASK_META_KEY, "trace-task-4")])).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let server = named(&spans, "tools/call post");
    assert_eq!(attribute(server[0], "error.type").map(Attr::as_str).as_deref(), Some("tool_error"));
}
