//! Classification: from what went wrong to what the caller can do about it.

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::effect::EffectKind;
use crate::report::{Applied, Outcome};

/// A failure, classified: the outcome it leads to, whether the effect landed, how long the service asked
/// to wait, and one line for the model.
///
/// A `Class` never says `ok`: success is a tool's `Ok` value, not a classification.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::{Applied, Class, Outcome};
///
/// let class = Class::retryable("card network busy").retry_after(Duration::from_secs(5));
/// assert_eq!(class.outcome(), Outcome::Retryable);
/// assert_eq!(class.effect(), Applied::No);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    outcome: Outcome,
    applied: Applied,
    retry_after: Option<Duration>,
    message: String,
}

impl Class {
    /// Did not complete, nothing applied, likely to change.
    pub fn retryable(message: impl Into<String>) -> Class {
        Class {
            outcome: Outcome::Retryable,
            applied: Applied::No,
            retry_after: None,
            message: message.into(),
        }
    }

    /// Refused for good, nothing applied: the same call gives the same answer.
    pub fn permanent(message: impl Into<String>) -> Class {
        Class {
            outcome: Outcome::Permanent,
            applied: Applied::No,
            retry_after: None,
            message: message.into(),
        }
    }

    /// The request may have been acted on and the answer was lost.
    pub fn unknown(message: impl Into<String>) -> Class {
        Class {
            outcome: Outcome::Unknown,
            applied: Applied::Unknown,
            retry_after: None,
            message: message.into(),
        }
    }

    /// Say what is known of the effect, when it differs from the constructor's default. `Unknown` makes
    /// the outcome `unknown` too, since nobody can act on a retry before the effect is resolved.
    pub fn with_effect(mut self, applied: Applied) -> Class {
        self.applied = applied;
        if applied == Applied::Unknown {
            self.outcome = Outcome::Unknown;
        }
        self
    }

    /// The wait the service asked for.
    pub fn retry_after(mut self, wait: Duration) -> Class {
        self.retry_after = Some(wait);
        self
    }

    /// The outcome: `retryable`, `permanent` or `unknown`.
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// What is known of the effect.
    pub fn effect(&self) -> Applied {
        self.applied
    }

    /// The wait the service asked for, if any.
    pub fn wait(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The one line for the model.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Maps a tool's error to a [`Class`].
///
/// Implement it for each tool error type; the engine calls it on every failed attempt.
///
/// ```
/// use tool_contract::classify::Classify;
/// use tool_contract::Class;
///
/// enum ThreadError { Locked, Gone, Dropped }
///
/// impl Classify for ThreadError {
///     fn classify(&self) -> Class {
///         match self {
///             ThreadError::Locked => Class::retryable("thread is locked by a moderator"),
///             ThreadError::Gone => Class::permanent("thread was deleted; pick another thread"),
///             ThreadError::Dropped => Class::unknown("connection dropped after the notice was sent"),
///         }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool error: implement `tool_contract::Classify` for it",
    label = "a tool's error type must say what the failure means for the caller",
    note = "`tool_contract::Classify::classify` maps the error to retryable, permanent or unknown; or return `Result<T, tool_contract::Class>`"
)]
pub trait Classify {
    /// Classify this error.
    fn classify(&self) -> Class;
}

impl Classify for Class {
    fn classify(&self) -> Class {
        self.clone()
    }
}

impl Classify for std::convert::Infallible {
    fn classify(&self) -> Class {
        match *self {}
    }
}

/// What a response body says, for services that report errors inside a `2xx`.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// The body reports no error.
    Fine,
    /// The body reports an error worth retrying (a transient failure behind a `200`).
    RetryableError(String),
    /// The body reports an error that will not change (a validation failure behind a `200`).
    PermanentError(String),
}

/// One HTTP reply, as much as classification needs of it.
#[derive(Debug, Clone, Copy)]
pub struct HttpReply<'a> {
    /// The status code.
    pub status: u16,
    /// The raw `Retry-After` header, if present.
    pub retry_after: Option<&'a str>,
    /// What the body says.
    pub body: &'a Body,
}

/// Classify an HTTP reply that is not a success, or a success whose body reports an error.
///
/// Returns `None` for a `2xx` whose body is [`Body::Fine`]: that is a success, the tool's to return.
///
/// - `408`, `429`, `503`: retryable, nothing applied, with the `Retry-After` wait when given;
/// - `500`, `502`, `504`: retryable for a read, `unknown` for a side effect (the request may have been
///   processed behind the gateway);
/// - `409`: the same key is still in flight: retryable later with the same key for a read, `unknown` for
///   a side effect until it settles;
/// - other `4xx`: permanent;
/// - a `2xx` whose body reports an error: classified by the body, never `ok` on the status alone.
///
/// A `Retry-After` HTTP-date is measured from [`crate::journal::wall_clock`].
///
/// ```
/// use tool_contract::classify::{Body, HttpReply};
/// use tool_contract::effect::EffectKind;
/// use tool_contract::{Applied, Outcome, classify};
///
/// let reply = HttpReply { status: 502, retry_after: None, body: &Body::Fine };
/// let class = classify::http(EffectKind::Send, reply).unwrap();
/// assert_eq!((class.outcome(), class.effect()), (Outcome::Unknown, Applied::Unknown));
///
/// let busy = HttpReply { status: 429, retry_after: Some("30"), body: &Body::Fine };
/// let class = classify::http(EffectKind::Send, busy).unwrap();
/// assert_eq!(class.wait(), Some(std::time::Duration::from_secs(30)));
/// ```
pub fn http(kind: EffectKind, reply: HttpReply<'_>) -> Option<Class> {
    http_at(kind, reply, crate::journal::wall_clock(), DEFAULT_RETRY_AFTER_CAP)
}

/// [`http`] with an explicit clock for HTTP-dates and an explicit cap on `Retry-After`.
pub fn http_at(kind: EffectKind, reply: HttpReply<'_>, now: SystemTime, cap: Duration) -> Option<Class> {
    let status = reply.status;
    let mut class = match (status, reply.body) {
        (200..=299, Body::Fine) => return None,
        (200..=299, Body::RetryableError(msg)) => {
            Class::retryable(format!("{status} with an error in the body: {msg}"))
        }
        (200..=299, Body::PermanentError(msg)) => {
            Class::permanent(format!("{status} with an error in the body: {msg}"))
        }
        (_, Body::PermanentError(msg)) => Class::permanent(format!("{status}: {msg}")),
        (408 | 429 | 503, _) => Class::retryable(format!("{status} {}; nothing was applied", reason(status))),
        (409, _) if kind.has_side_effect() => Class::unknown(
            "409: a request with the same key is still in flight; retry later with the same key",
        ),
        (409, _) => Class::retryable("409: a request with the same key is still in flight"),
        (500 | 502 | 504, _) if kind.has_side_effect() => Class::unknown(format!(
            "{status} {}; the request may have been processed behind the gateway",
            reason(status)
        )),
        (500 | 502 | 504, _) => Class::retryable(format!("{status} {}", reason(status))),
        (400..=499, Body::RetryableError(msg)) => Class::permanent(format!("{status}: {msg}")),
        (400..=499, _) => Class::permanent(format!("{status} {}; change the request", reason(status))),
        (_, Body::RetryableError(msg)) => Class::retryable(format!("{status}: {msg}")),
        (_, Body::Fine) if kind.has_side_effect() && status >= 500 => {
            Class::unknown(format!("{status} from the service; the effect may have landed"))
        }
        _ => Class::retryable(format!("unexpected status {status}")),
    };
    if let Some(raw) = reply.retry_after {
        match RetryAfter::parse(raw, now, cap) {
            RetryAfter::Ignored(why) => class.message.push_str(&format!(" (Retry-After ignored: {why})")),
            parsed => {
                if let Some(wait) = parsed.wait() {
                    class.retry_after = Some(wait);
                }
                if let RetryAfter::Capped { asked, .. } = parsed {
                    class.message.push_str(&format!(" (Retry-After of {}s capped)", asked.as_secs()));
                }
            }
        }
    }
    Some(class)
}

/// No reply came: the request left but the connection dropped or the time ran out.
///
/// Retryable for a read; `unknown` for a side effect.
pub fn no_reply(kind: EffectKind, detail: impl fmt::Display) -> Class {
    if kind.has_side_effect() {
        Class::unknown(format!("no reply after the request was sent ({detail}); the effect may have landed"))
    } else {
        Class::retryable(format!("no reply ({detail})"))
    }
}

/// The request never left (connection refused, DNS failure): retryable, nothing applied.
pub fn not_sent(detail: impl fmt::Display) -> Class {
    Class::retryable(format!("request not sent ({detail}); nothing was applied"))
}

fn reason(status: u16) -> &'static str {
    match status {
        408 => "request timeout",
        409 => "conflict",
        429 => "too many requests",
        500 => "internal server error",
        502 => "bad gateway",
        503 => "service unavailable",
        504 => "gateway timeout",
        400 => "bad request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not found",
        422 => "unprocessable content",
        _ => "error",
    }
}

/// The longest `Retry-After` honoured by default: one hour. Longer waits are capped and said so.
pub const DEFAULT_RETRY_AFTER_CAP: Duration = Duration::from_secs(3600);

/// A parsed `Retry-After` header.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryAfter {
    /// Wait this long.
    After(Duration),
    /// The service asked for more than the cap; the cap is used.
    Capped {
        /// What the service asked for.
        asked: Duration,
        /// What will be used.
        cap: Duration,
    },
    /// Not a delta-seconds value nor an HTTP-date: the header is ignored, for this reason.
    Ignored(String),
}

impl RetryAfter {
    /// Parse delta-seconds (`"120"`) or an HTTP-date (`"Wed, 21 Oct 2026 07:28:00 GMT"`), relative to
    /// `now`, capped at `cap`. A date in the past means no wait. Never panics.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use tool_contract::classify::RetryAfter;
    ///
    /// let cap = Duration::from_secs(600);
    /// assert_eq!(RetryAfter::parse("7", SystemTime::now(), cap).wait(), Some(Duration::from_secs(7)));
    /// assert!(matches!(RetryAfter::parse("soon", SystemTime::now(), cap), RetryAfter::Ignored(_)));
    /// ```
    pub fn parse(raw: &str, now: SystemTime, cap: Duration) -> RetryAfter {
        let text = raw.trim();
        let asked = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            match text.parse::<u64>() {
                Ok(secs) => Duration::from_secs(secs),
                // All digits but too large for u64: an absurd wait, which the cap handles.
                Err(_) => Duration::MAX,
            }
        } else {
            match httpdate::parse_http_date(text) {
                Ok(at) => at.duration_since(now).unwrap_or(Duration::ZERO),
                Err(_) => {
                    let shown: String = text.chars().take(40).collect();
                    return RetryAfter::Ignored(format!(
                        "`{shown}` is neither delta-seconds nor an HTTP-date"
                    ));
                }
            }
        };
        if asked > cap { RetryAfter::Capped { asked, cap } } else { RetryAfter::After(asked) }
    }

    /// The wait to honour, if any.
    pub fn wait(&self) -> Option<Duration> {
        match self {
            RetryAfter::After(wait) => Some(*wait),
            RetryAfter::Capped { cap, .. } => Some(*cap),
            RetryAfter::Ignored(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, body: &Body) -> HttpReply<'_> {
        HttpReply { status, retry_after: None, body }
    }

    fn of(kind: EffectKind, status: u16) -> (Outcome, Applied) {
        let class = http(kind, reply(status, &Body::Fine)).expect("a failure");
        (class.outcome(), class.effect())
    }

    #[test]
    fn http_status_table() {
        use Applied as A;
        use Outcome as O;
        for kind in EffectKind::ALL {
            for status in [408, 429, 503] {
                assert_eq!(of(kind, status), (O::Retryable, A::No), "{kind} {status}");
            }
            for status in [400, 401, 403, 404, 422] {
                assert_eq!(of(kind, status), (O::Permanent, A::No), "{kind} {status}");
            }
        }
        for status in [500, 502, 504] {
            assert_eq!(of(EffectKind::Read, status), (O::Retryable, A::No));
            for kind in [EffectKind::Create, EffectKind::Send, EffectKind::Money, EffectKind::Destructive] {
                assert_eq!(of(kind, status), (O::Unknown, A::Unknown), "{kind} {status}");
            }
        }
        assert_eq!(of(EffectKind::Create, 409), (O::Unknown, A::Unknown));
        assert!(http(EffectKind::Send, reply(200, &Body::Fine)).is_none());
        assert!(http(EffectKind::Send, reply(204, &Body::Fine)).is_none());
    }

    #[test]
    fn a_2xx_with_an_error_body_is_never_a_success() {
        let body = Body::PermanentError("card declined".into());
        let class = http(EffectKind::Money, reply(200, &body)).unwrap();
        assert_eq!(class.outcome(), Outcome::Permanent);
        assert!(class.message().contains("card declined"));
        let body = Body::RetryableError("upstream busy".into());
        assert_eq!(http(EffectKind::Send, reply(200, &body)).unwrap().outcome(), Outcome::Retryable);
    }

    #[test]
    fn retry_after_forms() {
        let now = httpdate::parse_http_date("Mon, 30 Nov 2026 05:12:04 GMT").unwrap();
        let cap = Duration::from_secs(600);
        assert_eq!(RetryAfter::parse("30", now, cap), RetryAfter::After(Duration::from_secs(30)));
        assert_eq!(RetryAfter::parse(" 0 ", now, cap), RetryAfter::After(Duration::ZERO));
        assert_eq!(
            RetryAfter::parse("Mon, 30 Nov 2026 05:12:49 GMT", now, cap),
            RetryAfter::After(Duration::from_secs(45))
        );
        assert_eq!(
            RetryAfter::parse("Mon, 30 Nov 2026 05:00:00 GMT", now, cap),
            RetryAfter::After(Duration::ZERO)
        );
        assert_eq!(
            RetryAfter::parse("86400", now, cap),
            RetryAfter::Capped { asked: Duration::from_secs(86400), cap }
        );
        assert_eq!(RetryAfter::parse("99999999999999999999999", now, cap).wait(), Some(cap));
        for garbage in ["", "-5", "1.5", "soon", "Mon, 99 Nov 2026", "\u{1F600}"] {
            assert!(matches!(RetryAfter::parse(garbage, now, cap), RetryAfter::Ignored(_)), "{garbage:?}");
        }
    }

    #[test]
    fn http_carries_or_ignores_retry_after() {
        let now = SystemTime::UNIX_EPOCH;
        let cap = Duration::from_secs(60);
        let busy = HttpReply { status: 429, retry_after: Some("12"), body: &Body::Fine };
        assert_eq!(http_at(EffectKind::Read, busy, now, cap).unwrap().wait(), Some(Duration::from_secs(12)));
        let absurd = HttpReply { status: 503, retry_after: Some("31536000"), body: &Body::Fine };
        let class = http_at(EffectKind::Read, absurd, now, cap).unwrap();
        assert_eq!(class.wait(), Some(cap));
        assert!(class.message().contains("capped"), "{}", class.message());
        let garbage = HttpReply { status: 503, retry_after: Some("later"), body: &Body::Fine };
        let class = http_at(EffectKind::Read, garbage, now, cap).unwrap();
        assert_eq!(class.wait(), None);
        assert!(class.message().contains("Retry-After ignored"), "{}", class.message());
    }

    #[test]
    fn transport_failures() {
        assert_eq!(no_reply(EffectKind::Read, "timed out").outcome(), Outcome::Retryable);
        let class = no_reply(EffectKind::Send, "connection reset");
        assert_eq!((class.outcome(), class.effect()), (Outcome::Unknown, Applied::Unknown));
        let class = not_sent("connection refused");
        assert_eq!((class.outcome(), class.effect()), (Outcome::Retryable, Applied::No));
    }

    #[test]
    fn applied_unknown_forces_outcome_unknown() {
        let class = Class::retryable("x").with_effect(Applied::Unknown);
        assert_eq!(class.outcome(), Outcome::Unknown);
    }
}
