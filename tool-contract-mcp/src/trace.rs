//! Trace context from a request's `_meta`: the W3C `traceparent` and `tracestate` an MCP client puts
//! there (the 2026-07-28 protocol reserves the two keys for it), and the server span each `tools/call`
//! runs in (feature `tracing`), continued from the client's trace (feature `otel`).
//!
//! The server span follows the OpenTelemetry convention for MCP: named `tools/call {tool}` (in
//! `otel.name`), kind `server`, with `mcp.method.name`, `gen_ai.tool.name`, `gen_ai.operation.name`
//! and `jsonrpc.request.id`; `error.type` is `tool_error` when the result has `isError`. The tool's own
//! `execute_tool` span (from `tool-contract`'s feature `tracing`) is its child.

/// The request `_meta` key of the W3C trace context's parent (`00-{trace id}-{span id}-{flags}`).
pub const TRACEPARENT_META_KEY: &str = "traceparent";
/// The request `_meta` key of the W3C trace state that goes with [`TRACEPARENT_META_KEY`].
pub const TRACESTATE_META_KEY: &str = "tracestate";

/// A parsed W3C `traceparent`: the caller's trace and the span the call continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace id: 16 bytes, never all zero.
    pub trace_id: [u8; 16],
    /// The caller's span: 8 bytes, never all zero.
    pub parent_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// Parses a `traceparent` value as W3C Trace Context level 1 reads it: version `00` is exactly
    /// `00-{32 hex}-{16 hex}-{2 hex}`; a later version may add fields after a `-`; version `ff`,
    /// upper-case hex, all-zero ids or any other shape is `None` (the call then starts a trace of
    /// its own, as the recommendation says a receiver does with a value it cannot read).
    ///
    /// ```
    /// use tool_contract_mcp::trace::TraceParent;
    /// let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    /// assert_eq!(parent.trace_id[0], 0x4b);
    /// assert_eq!(parent.flags & 1, 1);
    /// assert!(TraceParent::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none());
    /// ```
    pub fn parse(text: &str) -> Option<TraceParent> {
        let bytes = text.as_bytes();
        // version (2) - trace id (32) - parent id (16) - flags (2)
        if bytes.len() < 55 || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let version = hex_byte(&bytes[0..2])?;
        if version == 0xff || (version == 0 && bytes.len() != 55) || (bytes.len() > 55 && bytes[55] != b'-') {
            return None;
        }
        let mut trace_id = [0u8; 16];
        for (i, byte) in trace_id.iter_mut().enumerate() {
            *byte = hex_byte(&bytes[3 + 2 * i..5 + 2 * i])?;
        }
        let mut parent_id = [0u8; 8];
        for (i, byte) in parent_id.iter_mut().enumerate() {
            *byte = hex_byte(&bytes[36 + 2 * i..38 + 2 * i])?;
        }
        let flags = hex_byte(&bytes[53..55])?;
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceParent { trace_id, parent_id, flags })
    }
}

/// Two lower-case hex digits.
fn hex_byte(pair: &[u8]) -> Option<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    Some(digit(pair[0])? << 4 | digit(pair[1])?)
}

/// The span a `tools/call` runs in. Its parent is the client's span when the request carries a
/// `traceparent` and the feature `otel` is on (the span it arrived in is then linked), else the span
/// current where the request arrived.
#[cfg(feature = "tracing")]
pub(crate) fn server_span(
    tool: &str,
    request_id: Option<&str>,
    meta: &serde_json::Map<String, serde_json::Value>,
) -> tracing::Span {
    let span = tracing::info_span!(
        "tools/call",
        otel.name = %format_args!("tools/call {tool}"),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        jsonrpc.request.id = request_id,
        error.type = tracing::field::Empty,
    );
    #[cfg(feature = "otel")]
    continue_trace(&span, meta);
    #[cfg(not(feature = "otel"))]
    let _ = meta;
    span
}

/// Makes the client's span, named by the request's `traceparent`, the parent of `span`.
#[cfg(feature = "otel")]
fn continue_trace(span: &tracing::Span, meta: &serde_json::Map<String, serde_json::Value>) {
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    let Some(parent) = meta.get(TRACEPARENT_META_KEY).and_then(|v| v.as_str()).and_then(TraceParent::parse)
    else {
        return;
    };
    let state = meta
        .get(TRACESTATE_META_KEY)
        .and_then(|v| v.as_str())
        .and_then(|text| text.parse::<TraceState>().ok())
        .unwrap_or_default();
    let remote = SpanContext::new(
        TraceId::from_bytes(parent.trace_id),
        SpanId::from_bytes(parent.parent_id),
        TraceFlags::new(parent.flags),
        true,
        state,
    );
    // The span the request arrived in (the transport's, the session's) stays linked, as the
    // convention asks, while the client's span becomes the parent.
    let ambient = tracing::Span::current().context().span().span_context().clone();
    // Without an OpenTelemetry layer there is no trace to continue: nothing happens.
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
    if ambient.is_valid() {
        span.add_link(ambient);
    }
}

#[cfg(test)]
mod tests {
    use super::TraceParent;

    #[test]
    fn the_recommendations_examples_and_what_it_rejects() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parent = TraceParent::parse(good).expect("the W3C example");
        assert_eq!(parent.parent_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert_eq!(parent.trace_id[15], 0x36);
        // A later version may carry more fields; version 00 may not.
        assert!(TraceParent::parse(&format!("01-{}-extra", &good[3..])).is_some());
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            "00-4bf92f3577b34da6a3ce929d0e0e473é-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
    }
}
