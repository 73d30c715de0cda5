//! MCP over streamable HTTP (feature `http`), safe by default as the MCP specification asks: it binds
//! 127.0.0.1 unless told otherwise, refuses a request whose `Origin` is neither a loopback origin nor
//! one it allows (DNS rebinding), and requires `Authorization: Bearer <token>` (the scheme in any case)
//! when a token is set. A refused request reaches no tool. Serving on an address other than loopback
//! needs a token, and a token may not be empty.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, HeaderValue, ORIGIN, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use crate::McpServer;

/// Where and how the HTTP transport listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    addr: SocketAddr,
    path: String,
    origins: Vec<String>,
    tokens: Vec<String>,
    header_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 8000)),
            path: "/mcp".to_owned(),
            origins: Vec::new(),
            tokens: Vec::new(),
            header_timeout: Duration::from_secs(30),
        }
    }
}

impl HttpOptions {
    /// The address to listen on (default `127.0.0.1:8000`; port 0 picks a free one).
    pub fn addr(mut self, addr: SocketAddr) -> HttpOptions {
        self.addr = addr;
        self
    }

    /// The path of the MCP endpoint (default `/mcp`).
    pub fn path(mut self, path: impl Into<String>) -> HttpOptions {
        self.path = path.into();
        self
    }

    /// An `Origin` a browser page may call from: `scheme://host[:port]` (`https://app.example.com`),
    /// compared without case and without a trailing `/`; anything else is refused by
    /// [`McpServer::bind_http`]. Requests without `Origin` (not from a browser) always pass this check.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> HttpOptions {
        self.origins.push(origin.into());
        self
    }

    /// Requires `Authorization: Bearer <token>` on every request. Given more than once, each token is
    /// a client of its own, any of which may call: where the 2026-07-28 protocol has no session, a
    /// question to the person at a client is bound to the credential it was asked with, so a state one
    /// client received is refused when another sends it (give each client its own token for that).
    pub fn bearer_token(mut self, token: impl Into<String>) -> HttpOptions {
        self.tokens.push(token.into());
        self
    }

    /// How long a connection may take to send a request's headers before it is closed (default 30 s):
    /// a client that opens connections and sends nothing cannot hold them.
    pub fn header_read_timeout(mut self, timeout: Duration) -> HttpOptions {
        self.header_timeout = timeout;
        self
    }
}

/// An allowed origin as [`Gate::origin_allowed`] compares it: lowercase, no trailing `/`; `None` for
/// what is not `http(s)://host[:port]`.
fn origin_key(origin: &str) -> Option<String> {
    let origin = origin.strip_suffix('/').unwrap_or(origin).to_ascii_lowercase();
    let host = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"))?;
    let bare = !host.is_empty() && !host.contains(['/', '?', '#', '@', ' ']);
    bare.then_some(origin)
}

/// A bound HTTP transport, ready to serve.
pub struct HttpServer {
    listener: TcpListener,
    gate: Arc<Gate>,
}

struct Gate {
    path: String,
    /// The allowed origins as `origin_key` writes them.
    origins: Vec<String>,
    tokens: Vec<String>,
    header_timeout: Duration,
    /// The largest request body read, as rmcp's service reads it.
    max_body: usize,
    service: StreamableHttpService<McpServer, LocalSessionManager>,
    /// The operator console, at its own path (feature `console`).
    #[cfg(feature = "console")]
    console: Option<tool_contract_console::Console>,
}

impl McpServer {
    /// Binds the HTTP transport; [`HttpServer::serve`] then answers requests.
    pub async fn bind_http(self, options: HttpOptions) -> io::Result<HttpServer> {
        if options
            .tokens
            .iter()
            .any(|token| token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a bearer token is one word of visible characters: an empty one guards nothing",
            ));
        }
        if !options.addr.ip().is_loopback() && options.tokens.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "refusing to serve MCP on {} without a bearer token; set one, or bind 127.0.0.1",
                    options.addr
                ),
            ));
        }
        let origins = options
            .origins
            .iter()
            .map(|origin| {
                origin_key(origin).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("allowed origin {origin:?}: an origin is http(s)://host[:port], as a browser sends it"),
                    )
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        let listener = TcpListener::bind(options.addr).await?;
        let mut config = StreamableHttpServerConfig::default();
        if !options.addr.ip().is_loopback() {
            // The bearer token guards a public address; rmcp's own Host check knows loopback names only.
            config = config.disable_allowed_hosts();
        }
        let server = self;
        let max_body = config.max_request_body_bytes;
        let service = StreamableHttpService::new(move || Ok(server.clone()), Arc::default(), config);
        let gate = Gate {
            path: options.path,
            origins,
            tokens: options.tokens,
            header_timeout: options.header_timeout,
            max_body,
            service,
            #[cfg(feature = "console")]
            console: None,
        };
        Ok(HttpServer { listener, gate: Arc::new(gate) })
    }
}

impl HttpServer {
    /// Serve the operator console over the file log at `log` at `/console`, beside the MCP endpoint
    /// (feature `console`): the address to open, which logs in once ([`HttpServer::console_token`]
    /// after it). Refused when the server listens away from loopback: it serves plain HTTP. The console keeps its own
    /// guards (its token and cookie, its `Host` allow-list, same-origin forms); the MCP endpoint's
    /// bearer token and origins are not asked of it.
    #[cfg(feature = "console")]
    pub fn console(
        &mut self,
        log: &std::path::Path,
        options: tool_contract_console::Options,
    ) -> Result<String, String> {
        let addr = self.local_addr().map_err(|e| e.to_string())?;
        if !addr.ip().is_loopback() {
            // This server speaks plain HTTP: a token and a session cookie would cross the network.
            return Err(format!(
                "{addr} is not a loopback address, and this server serves plain HTTP: the console's token \
                 and session cookie would cross the network in the clear; bind 127.0.0.1 and reach it \
                 through an SSH tunnel, or serve the console by itself over TLS (tool-contract console \
                 --tls-cert)"
            ));
        }
        let (console, url) = tool_contract_console::Console::mounted(log, options, addr, "/console")?;
        let gate = Arc::get_mut(&mut self.gate).ok_or("the server is serving already")?;
        gate.console = Some(console);
        Ok(url)
    }

    /// The token the mounted console drew for itself (feature `console`): for its login page once the
    /// address [`HttpServer::console`] returned has logged in (it does so once). `None` with no
    /// console, or one given a token of its own or operators.
    #[cfg(feature = "console")]
    pub fn console_token(&self) -> Option<&str> {
        self.gate.console.as_ref().and_then(|console| console.login_token())
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Answers requests until the future is dropped. A failed accept is waited out, never the end: a
    /// client that opens connections until the process has no file descriptor left stops nothing but
    /// its own connections, which close when they send no headers in time.
    pub async fn serve(self) -> io::Result<()> {
        loop {
            let (stream, peer) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                // Gone before it was accepted: on to the next.
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    continue;
                }
                // Out of file descriptors or memory: wait for connections to close.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let gate = Arc::clone(&self.gate);
            tokio::spawn(async move {
                let timeout = gate.header_timeout;
                let service = hyper::service::service_fn(move |request| {
                    let gate = Arc::clone(&gate);
                    async move { Ok::<_, Infallible>(gate.answer(request, peer).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(timeout)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }
}

impl Gate {
    async fn answer(
        &self,
        #[cfg_attr(not(feature = "console"), allow(unused_mut))] mut request: Request<Incoming>,
        #[cfg_attr(not(feature = "console"), allow(unused_variables))] peer: SocketAddr,
    ) -> Response<BoxBody<Bytes, Infallible>> {
        #[cfg(feature = "console")]
        if let Some(console) = &self.console {
            let path = request.uri().path();
            let below = path
                .strip_prefix(console.base())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
            if below {
                // The console counts failed logins per client: it is told who this one is.
                request.extensions_mut().insert(tool_contract_console::Peer(peer));
                return console.answer(request).await.map(|body| body.boxed());
            }
        }
        if request.uri().path() != self.path {
            return refuse(StatusCode::NOT_FOUND, format!("the MCP endpoint is {}", self.path));
        }
        if let Some(origin) = request.headers().get(ORIGIN) {
            let allowed = origin.to_str().is_ok_and(|origin| self.origin_allowed(origin));
            if !allowed {
                return refuse(StatusCode::FORBIDDEN, "this Origin may not call the server".to_owned());
            }
        }
        if !self.tokens.is_empty() {
            let given = request.headers().get(AUTHORIZATION).and_then(|value| value.to_str().ok());
            let known = |given: &str| {
                // Every token compared whole, so the time taken tells nothing of which, or how much, matched.
                self.tokens
                    .iter()
                    .fold(false, |found, token| same(given.as_bytes(), token.as_bytes()) | found)
            };
            if !given.and_then(bearer).is_some_and(known) {
                let mut response = refuse(StatusCode::UNAUTHORIZED, "a bearer token is required".to_owned());
                response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return response;
            }
        }
        if request.method() != hyper::Method::POST || !is_json(request.headers()) {
            return self.service.handle(request).await;
        }
        // A body that is not a JSON-RPC message is answered as the reference SDKs answer it: 400 with
        // a JSON-RPC error (-32700 when it is not JSON, -32600 when it is JSON of the wrong shape)
        // carrying the request's id when one can be read. rmcp would answer 415 in plain text.
        let (parts, body) = request.into_parts();
        let body = match http_body_util::Limited::new(body, self.max_body).collect().await {
            Ok(body) => body.to_bytes(),
            Err(e) => {
                let status = if e.is::<http_body_util::LengthLimitError>() {
                    StatusCode::PAYLOAD_TOO_LARGE
                } else {
                    StatusCode::BAD_REQUEST
                };
                return refuse(status, format!("the request body could not be read: {e}"));
            }
        };
        if let Some(refusal) = not_json_rpc(&body) {
            return refusal;
        }
        self.service.handle(Request::from_parts(parts, Full::new(body))).await
    }

    /// A loopback origin (`localhost`, `127.0.0.1`, `[::1]`, any port: a page the machine's own user
    /// serves, not a name a rebinding DNS points here), and the ones the operator allowed.
    fn origin_allowed(&self, origin: &str) -> bool {
        if origin_key(origin).is_some_and(|origin| self.origins.contains(&origin)) {
            return true;
        }
        let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
            return false;
        };
        let host = rest
            .rsplit_once(':')
            .map_or(rest, |(host, port)| if port.bytes().all(|b| b.is_ascii_digit()) { host } else { rest });
        matches!(host, "localhost" | "127.0.0.1" | "[::1]")
    }
}

/// Whether the request says its body is JSON (`application/json`, parameters allowed).
fn is_json(headers: &hyper::HeaderMap) -> bool {
    headers.get(hyper::header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).is_some_and(|value| {
        let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
        essence.trim().eq_ignore_ascii_case("application/json")
    })
}

/// The answer to a body that is not a JSON-RPC message a client sends, if it is not one.
fn not_json_rpc(body: &[u8]) -> Option<Response<BoxBody<Bytes, Infallible>>> {
    let (id, code, message) = match serde_json::from_slice::<serde_json::Value>(body) {
        Err(e) => (serde_json::Value::Null, -32700, format!("Parse error: the body is not JSON ({e})")),
        Ok(value) => match serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(value.clone()) {
            Ok(_) => return None,
            Err(e) => {
                let id = match value.get("id") {
                    Some(id @ (serde_json::Value::String(_) | serde_json::Value::Number(_))) => id.clone(),
                    _ => serde_json::Value::Null,
                };
                (id, -32600, format!("Invalid Request: not a JSON-RPC request or notification ({e})"))
            }
        },
    };
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    });
    let mut response = Response::new(Full::new(Bytes::from(error.to_string())).boxed());
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(hyper::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Some(response)
}

/// The credentials of an `Authorization` value in the `Bearer` scheme, whose name is case-insensitive
/// (RFC 9110, section 11.1).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| credentials.trim_start_matches(' '))
}

/// Compares without stopping at the first difference, so the time taken tells nothing of the token.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn refuse(status: StatusCode, message: String) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from(message)).boxed());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_is_read_without_case_and_the_token_as_given() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer abc"), Some("abc"));
        assert_eq!(bearer("BEARER  abc"), Some("abc"));
        assert_eq!(bearer("Bearer ABC"), Some("ABC"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearerabc"), None);
        assert_eq!(bearer("abc"), None);
    }

    #[test]
    fn origins_are_keyed_as_browsers_send_them() {
        assert_eq!(origin_key("https://App.Example.com/").as_deref(), Some("https://app.example.com"));
        assert_eq!(origin_key("http://127.0.0.1:5173").as_deref(), Some("http://127.0.0.1:5173"));
        for wrong in ["app.example.com", "https://", "https://a/b", "https://a?b", "https://u@a", "null"] {
            assert_eq!(origin_key(wrong), None, "{wrong}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"Bearer abc", b"Bearer abc"));
        assert!(!same(b"Bearer abd", b"Bearer abc"));
        assert!(!same(b"Bearer ab", b"Bearer abc"));
    }
}
