//! Classification of `reqwest` errors and responses (feature `reqwest`), and the intent key as the
//! `Idempotency-Key` header.
//!
//! Where the failure happened decides the effect: a connection that never opened applied nothing; a
//! request that left and got no complete answer may have applied everything.
//!
//! ```no_run
//! use tool_contract::reqwest::{RequestBuilderExt, read};
//! use tool_contract::classify::Body;
//! use tool_contract::effect::EffectKind;
//! use tool_contract::{Call, Class};
//!
//! async fn post_notice(client: &::reqwest::Client, call: &Call, url: &str) -> Result<Vec<u8>, Class> {
//!     let sent = client.post(url).for_call(call).body("hello").send().await;
//!     read(EffectKind::Send, sent, |bytes| {
//!         if bytes.starts_with(b"{\"error\"") { Body::PermanentError("refused".into()) } else { Body::Fine }
//!     })
//!     .await
//! }
//! ```

use crate::call::Call;
use crate::classify::{self, Body, Class, HttpReply};
use crate::effect::EffectKind;

/// Classify an error from `reqwest`.
///
/// - the connection never opened (`is_connect`) or the request could not be built: nothing was sent,
///   effect `no` (`retryable` and `permanent` respectively);
/// - a timeout, or any failure after the request may have been written (a connection closed before the
///   response, a body cut short): `retryable` for a read, `unknown` for a side effect.
pub fn error(kind: EffectKind, err: &::reqwest::Error) -> Class {
    if err.is_builder() {
        return Class::permanent(format!("request could not be built ({err}); nothing was sent"));
    }
    if err.is_connect() {
        return classify::not_sent(chain(err));
    }
    if let Some(status) = err.status() {
        let body = Body::Fine;
        let reply = HttpReply { status: status.as_u16(), retry_after: None, body: &body };
        if let Some(class) = classify::http(kind, reply) {
            return class;
        }
    }
    let what = if err.is_timeout() { format!("timed out: {}", chain(err)) } else { chain(err) };
    classify::no_reply(kind, what)
}

fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Read a response to the end and classify it: `Ok(body)` only for a `2xx` whose body `check` finds
/// fine. A `2xx` with an error in the body is classified by the body, never `ok` on the status alone.
///
/// A response with `Idempotent-Replayed: true` is the receiver's answer to an earlier request with the
/// same `Idempotency-Key`, replayed: a `2xx` is that request's effect, applied once (`ok`, as any
/// `2xx`); any other is that request's failure, which every resend with the key gets again until the
/// receiver forgets the key, so it is `permanent`, its effect as classified, and the message says so.
pub async fn read(
    kind: EffectKind,
    sent: Result<::reqwest::Response, ::reqwest::Error>,
    check: impl FnOnce(&[u8]) -> Body,
) -> Result<Vec<u8>, Class> {
    let response = sent.map_err(|e| error(kind, &e))?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(::reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let replayed = response
        .headers()
        .get("idempotent-replayed")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let bytes = response.bytes().await.map_err(|e| error(kind, &e))?;
    let body = if (200..300).contains(&status) { check(&bytes) } else { Body::Fine };
    let reply = HttpReply { status, retry_after: retry_after.as_deref(), body: &body };
    match classify::http(kind, reply) {
        None => Ok(bytes.to_vec()),
        Some(class) if replayed => {
            let message = format!(
                "{}; replayed by the receiver (Idempotent-Replayed): the answer to an earlier request with this \
                 key, which a resend with it gets again",
                class.message()
            );
            Err(Class::permanent(message).with_effect(class.effect()))
        }
        Some(class) => Err(class),
    }
}

/// Send the intent key downstream, and keep the request within its attempt.
pub trait RequestBuilderExt {
    /// Set `Idempotency-Key` to the call's intent key (and, with the `tracing` feature, record
    /// `http.request.resend_count` on the attempt's span from the second attempt on).
    fn idempotency_key(self, call: &Call) -> Self;

    /// [`idempotency_key`](RequestBuilderExt::idempotency_key), and the request's timeout set to the
    /// attempt's time left ([`Call::budget_left`]): the request, its connection included, ends with
    /// the attempt. The engine never lets a side effect's attempt run past its deadline (a worker that
    /// stood still does not send late, when another may have taken the intent over); this keeps
    /// reqwest's own work on the request inside it too.
    fn for_call(self, call: &Call) -> Self;
}

impl RequestBuilderExt for ::reqwest::RequestBuilder {
    fn idempotency_key(self, call: &Call) -> Self {
        crate::observe::resend(call.attempt());
        self.header("Idempotency-Key", call.key().to_string())
    }

    fn for_call(self, call: &Call) -> Self {
        self.idempotency_key(call).timeout(call.budget_left())
    }
}
