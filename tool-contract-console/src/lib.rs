//! A local operator console for a tool-contract attempt log: the calls waiting for approval and the
//! intents in doubt first, each intent's timeline, each task's intents, what ended lately, settling an
//! intent in doubt and approving or denying a `money` retry (`tool_contract::LogApprover`), in a
//! browser, without JavaScript.
//!
//! ```text
//! tool-contract console /var/lib/agent/attempts.log [--listen 127.0.0.1:0] [--read-only] [--by NAME]
//! ```
//!
//! The console reads a file log while an agent holds it (the log is append-only: it indexes what was
//! appended since its last look, and answers every page from that index) and settles through the
//! agent (`tool_contract::journal::file::request_settlement`), so the settlement is written under the
//! agent's own lock, and journaled with who and why; an answer to an approval goes the same way
//! (`request_approval`).
//!
//! # Security
//!
//! - It binds 127.0.0.1 by default; another address needs [`Options::allow_remote`] and a token of
//!   the operator's own ([`Options::token`]).
//! - It prints one address with a random token at start. Opening it exchanges the token for a session
//!   cookie (`HttpOnly`, `SameSite=Strict`); a browser without the cookie gets the token prompt.
//! - Every request's `Host` must be the console's own address (a page of another name resolving to
//!   127.0.0.1, DNS rebinding, is refused).
//! - Every `POST` needs the cookie and a same-origin `Origin` or `Sec-Fetch-Site`: a form posted from a
//!   page of another origin (another port of 127.0.0.1 included) is refused.
//! - Every text from the log is escaped where it is shown (a settlement's evidence is one operator's
//!   input shown to others).

#![deny(missing_docs)]

use std::collections::hash_map::RandomState;
use std::convert::Infallible;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, COOKIE, HOST, LOCATION, ORIGIN, SET_COOKIE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use maud::Markup;
use tokio::net::TcpListener;
use tool_contract::{Decision, IntentKey, Settle, Verdict};

mod index;
mod pages;
mod source;

pub use index::{Index, Recent, WORDS};

/// The session cookie's name.
const COOKIE_NAME: &str = "tc_console";

/// The largest form a `POST` may carry.
const MAX_FORM: usize = 16 * 1024;

/// How a console is started.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to listen on (port 0: a free one).
    pub listen: SocketAddr,
    /// Show, never change: no form, every `POST` refused.
    pub read_only: bool,
    /// Who settles through this console.
    pub by: String,
    /// The token to use instead of a random one (required for an address other than loopback).
    pub token: Option<String>,
    /// Listen on an address other than loopback.
    pub allow_remote: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            read_only: false,
            by: "operator".to_owned(),
            token: None,
            allow_remote: false,
        }
    }
}

/// A console over one file log. Cheap to clone.
#[derive(Clone)]
pub struct Console {
    inner: Arc<Inner>,
}

struct Inner {
    source: source::Source,
    token: String,
    session: String,
    read_only: bool,
    by: String,
    /// The `Host` values this console answers to.
    hosts: Vec<String>,
    /// Its own origin, as a browser sends it.
    origin: String,
    /// The path it is mounted at (`""`: the root).
    base: String,
}

fn file_source(log: &Path, index: Index) -> source::Source {
    source::Source::File { log: log.to_path_buf(), index: Mutex::new(index) }
}

/// 32 hex characters from the operating system's randomness (which seeds every `RandomState`).
fn random_hex() -> String {
    let mut out = String::with_capacity(32);
    for i in 0..2u8 {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u8(i);
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out
}

/// A running console: where it listens and the address to open.
pub struct Running {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The address to open in a browser, with the token.
    pub url: String,
    listener: TcpListener,
    console: Console,
}

impl Console {
    /// Bind a console over the log at `log`, indexing it.
    pub async fn bind(log: &Path, options: Options) -> Result<Running, String> {
        let remote_allowed = options.allow_remote && options.token.is_some();
        if !options.listen.ip().is_loopback() && !remote_allowed {
            return Err(format!(
                "{} is not a loopback address: listening there needs --allow-remote and --token-file FILE \
                 (a token of your own, kept out of the process list)",
                options.listen
            ));
        }
        let index = Index::open(log).map_err(|e| format!("cannot read {}: {e}", log.display()))?;
        let listener = TcpListener::bind(options.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (console, url) = Console::with_source(file_source(log, index), options, addr, "");
        Ok(Running { addr, url, listener, console })
    }

    /// A console for a host that serves it under the path `at` (`/console`) on its own listener at
    /// `addr` (an MCP server's HTTP mode, an agent's own server): the console and the address to open,
    /// with its token. The host hands every request under `at` to [`Console::answer`].
    pub fn mounted(
        log: &Path,
        options: Options,
        addr: SocketAddr,
        at: &str,
    ) -> Result<(Console, String), String> {
        let remote_allowed = options.allow_remote && options.token.is_some();
        if !addr.ip().is_loopback() && !remote_allowed {
            return Err(format!(
                "{addr} is not a loopback address: a console there needs allow_remote and a token of one's own"
            ));
        }
        let at = at.trim_end_matches('/');
        if !at.starts_with('/') || at.contains(['?', '#', ' ']) {
            return Err(format!("a console is mounted at a path like /console, not {at:?}"));
        }
        let index = Index::open(log).map_err(|e| format!("cannot read {}: {e}", log.display()))?;
        Ok(Console::with_source(file_source(log, index), options, addr, at))
    }

    /// Bind a console over a fleet's store in PostgreSQL (feature `postgres`): every page is a few
    /// queries; settling takes the intent's claim as a worker would, while the fleet runs.
    #[cfg(feature = "postgres")]
    pub async fn bind_postgres(
        journal: tool_contract_postgres::PgJournal,
        options: Options,
    ) -> Result<Running, String> {
        let remote_allowed = options.allow_remote && options.token.is_some();
        if !options.listen.ip().is_loopback() && !remote_allowed {
            return Err(format!(
                "{} is not a loopback address: it needs --allow-remote and --token-file FILE",
                options.listen
            ));
        }
        let listener = TcpListener::bind(options.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (console, url) = Console::with_source(source::Source::postgres(journal), options, addr, "");
        Ok(Running { addr, url, listener, console })
    }

    /// The path the console is mounted at (`""`: the root).
    pub fn base(&self) -> &str {
        &self.inner.base
    }

    fn with_source(
        source: source::Source,
        options: Options,
        addr: SocketAddr,
        base: &str,
    ) -> (Console, String) {
        let token = options.token.clone().unwrap_or_else(random_hex);
        let port = addr.port();
        let mut hosts = vec![addr.to_string()];
        if addr.ip().is_loopback() {
            hosts.extend([format!("localhost:{port}"), format!("127.0.0.1:{port}"), format!("[::1]:{port}")]);
        }
        let origin = format!("http://{addr}");
        let url = format!("{origin}{base}/login?token={token}");
        let console = Console {
            inner: Arc::new(Inner {
                source,
                token,
                session: random_hex(),
                read_only: options.read_only,
                by: options.by,
                hosts,
                origin,
                base: base.to_owned(),
            }),
        };
        (console, url)
    }

    /// Answer one request: what a host of its own mounts (its path as this console's, from `/`).
    pub async fn answer<B>(&self, request: Request<B>) -> Response<Full<Bytes>>
    where
        B: hyper::body::Body<Data = Bytes> + Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let host = request.headers().get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        if !self.inner.hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(host)) {
            return text(StatusCode::FORBIDDEN, "this console answers only to its own address (Host)");
        }
        let base = self.inner.base.as_str();
        let Some(path) = request.uri().path().strip_prefix(base).map(str::to_owned) else {
            return text(StatusCode::NOT_FOUND, "not the console's path");
        };
        if path.is_empty() {
            return redirect(&format!("{base}/"));
        }
        let query = request.uri().query().unwrap_or("").to_owned();
        if request.method() == Method::GET && path == "/login" {
            return self.login(&query);
        }
        if !self.has_session(&request) {
            return html(StatusCode::UNAUTHORIZED, pages::token_prompt(&self.inner.base));
        }
        match *request.method() {
            Method::GET => self.get(&path, &query).await,
            Method::POST => self.post(request, &path).await,
            _ => text(StatusCode::METHOD_NOT_ALLOWED, "GET or POST"),
        }
    }

    fn login(&self, query: &str) -> Response<Full<Bytes>> {
        let given = form_value(query, "token").unwrap_or_default();
        if !constant_time_eq(given.as_bytes(), self.inner.token.as_bytes()) {
            return html(StatusCode::UNAUTHORIZED, pages::token_prompt(&self.inner.base));
        }
        let base = &self.inner.base;
        let cookie = format!("{COOKIE_NAME}={}; HttpOnly; SameSite=Strict; Path={base}/", self.inner.session);
        let mut response = redirect(&format!("{base}/"));
        if let Ok(cookie) = cookie.parse() {
            response.headers_mut().insert(SET_COOKIE, cookie);
        }
        response
    }

    fn has_session<B>(&self, request: &Request<B>) -> bool {
        request.headers().get_all(COOKIE).iter().filter_map(|v| v.to_str().ok()).any(|cookies| {
            cookies.split(';').filter_map(|c| c.trim().split_once('=')).any(|(name, value)| {
                name == COOKIE_NAME && constant_time_eq(value.as_bytes(), self.inner.session.as_bytes())
            })
        })
    }

    async fn get(&self, path: &str, query: &str) -> Response<Full<Bytes>> {
        let base = self.inner.base.as_str();
        let failed = |why: String| {
            html(StatusCode::INTERNAL_SERVER_ERROR, pages::problem("The store cannot be read", &why, base))
        };
        let now = SystemTime::now();
        let source = &self.inner.source;
        if path == "/" {
            let q = form_value(query, "q").map(|q| q.trim().to_owned()).filter(|q| !q.is_empty());
            let found = match &q {
                Some(q) => match source.search(q).await {
                    Ok(found) => Some(found),
                    Err(why) => return failed(why),
                },
                None => None,
            };
            let view = match source.overview(now).await {
                Ok(view) => view,
                Err(why) => return failed(why),
            };
            let found = q.as_deref().zip(found.as_ref()).map(|(q, f)| (q, f.iter().collect()));
            let said = form_value(query, "said");
            let settling = self.settling(said.as_deref());
            return html(StatusCode::OK, pages::overview(&view, now, found, &settling));
        }
        if let Some(task) = path.strip_prefix("/task/") {
            let task = decode(task);
            return match source.task(&task).await {
                Ok(recalls) => html(StatusCode::OK, pages::task(&recalls, &task, now, base)),
                Err(why) => failed(why),
            };
        }
        if let Some(key) = path.strip_prefix("/intent/") {
            let Ok(key) = IntentKey::parse(key) else {
                return html(
                    StatusCode::NOT_FOUND,
                    pages::problem("No such intent", "an intent key is 32 hex characters", base),
                );
            };
            let (recall, records) = match source.intent(&key).await {
                Ok(Some(found)) => found,
                Ok(None) => {
                    return html(
                        StatusCode::NOT_FOUND,
                        pages::problem("No such intent", "the log holds nothing of it", base),
                    );
                }
                Err(why) => return failed(why),
            };
            let said = form_value(query, "said");
            let settling = self.settling(said.as_deref());
            return html(StatusCode::OK, pages::intent(&recall, &records, &settling, now));
        }
        html(StatusCode::NOT_FOUND, pages::problem("Not found", "no such page", base))
    }

    async fn post<B>(&self, request: Request<B>, path: &str) -> Response<Full<Bytes>>
    where
        B: hyper::body::Body<Data = Bytes> + Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if self.inner.read_only {
            return text(StatusCode::FORBIDDEN, "this console is read-only");
        }
        if !self.same_origin(&request) {
            return text(StatusCode::FORBIDDEN, "a form of another origin is refused");
        }
        let Some((key, action)) = path.strip_prefix("/intent/").and_then(|p| p.split_once('/')) else {
            return text(StatusCode::NOT_FOUND, "no such action");
        };
        if action != "settle" && action != "approval" {
            return text(StatusCode::NOT_FOUND, "no such action");
        }
        let Ok(key) = IntentKey::parse(key) else { return text(StatusCode::NOT_FOUND, "no such intent") };
        let body = match Limited::new(request.into_body(), MAX_FORM).collect().await {
            Ok(body) => body.to_bytes(),
            Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large"),
        };
        let form = String::from_utf8_lossy(&body).into_owned();
        if action == "approval" {
            return self.approval(&key, &form).await;
        }
        let verdict = match form_value(&form, "verdict").as_deref() {
            Some("landed") => Verdict::Landed,
            Some("not_landed") => Verdict::NotLanded,
            _ => return self.back(&key, "Nothing settled: say landed or not landed."),
        };
        // The attempt the page showed: a settlement is recorded on it, or refused if another started.
        let Some(attempt) = form_value(&form, "attempt").and_then(|a| a.parse::<u32>().ok()) else {
            return self
                .back(&key, "Nothing settled: the form names no attempt; open the intent's page again.");
        };
        let evidence = form_value(&form, "evidence").unwrap_or_default();
        let settle = Settle::new(verdict, self.inner.by.clone(), evidence);
        let said = match self.inner.source.settle(key, attempt, settle).await {
            Ok(record) => format!("Settled: {}", record.message.unwrap_or_default()),
            Err(e) => format!("Not settled: {e}"),
        };
        self.back(&key, &said)
    }

    /// What this console's forms may do, saying `said` at the top of the page.
    fn settling<'a>(&'a self, said: Option<&'a str>) -> pages::Settling<'a> {
        pages::Settling { read_only: self.inner.read_only, by: &self.inner.by, said, base: &self.inner.base }
    }

    /// Answer a question from the approval form: yes or no to the attempt it names, with why.
    async fn approval(&self, key: &IntentKey, form: &str) -> Response<Full<Bytes>> {
        let attempt = form_value(form, "attempt").and_then(|a| a.parse::<u32>().ok());
        let why = form_value(form, "why").unwrap_or_default();
        let by = self.inner.by.clone();
        let decision = match (form_value(form, "decision").as_deref(), attempt) {
            (Some("approve"), Some(_)) => Decision::approve(by, why),
            (Some("deny"), Some(_)) => Decision::deny(by, why),
            _ => return self.back(key, "Nothing answered: approve or deny the attempt the form names."),
        };
        let said = match self.inner.source.answer(*key, attempt.unwrap_or(0), decision).await {
            Ok(record) => format!("Answered: {}", record.message.unwrap_or_default()),
            Err(e) => format!("Not answered: {e}"),
        };
        self.back(key, &said)
    }

    /// Back to the intent's page, saying `said`.
    fn back(&self, key: &IntentKey, said: &str) -> Response<Full<Bytes>> {
        redirect(&format!("{}/intent/{key}?said={}", self.inner.base, pages::encode(said)))
    }

    /// A `POST` from this console's own pages: `Origin` is its own, or `Sec-Fetch-Site` says
    /// same-origin; one of them must be there, and neither may say otherwise. (`Origin: null`, which a
    /// browser sends when a page's referrer policy withholds it, says nothing.)
    fn same_origin<B>(&self, request: &Request<B>) -> bool {
        let origin = request.headers().get(ORIGIN).and_then(|v| v.to_str().ok()).filter(|o| *o != "null");
        let site = request.headers().get("sec-fetch-site").and_then(|v| v.to_str().ok());
        let origin_ok = origin.map(|o| o.eq_ignore_ascii_case(&self.inner.origin) || self.own_host_origin(o));
        let site_ok = site.map(|s| s == "same-origin");
        match (origin_ok, site_ok) {
            (None, None) => false,
            (o, s) => o.unwrap_or(true) && s.unwrap_or(true),
        }
    }

    fn own_host_origin(&self, origin: &str) -> bool {
        origin
            .strip_prefix("http://")
            .is_some_and(|host| self.inner.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
    }
}

impl Running {
    /// Serve until the process ends.
    pub async fn serve(self) {
        loop {
            let Ok((stream, _)) = self.listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let console = self.console.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let console = console.clone();
                    async move { Ok::<_, Infallible>(console.answer(request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(Duration::from_secs(10))
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }

    /// The console, to mount elsewhere.
    pub fn console(&self) -> &Console {
        &self.console
    }
}

fn html(status: StatusCode, markup: Markup) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(markup.into_string())));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, "text/html; charset=utf-8".parse().expect("a content type"));
    headers.insert("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'".parse().expect("a policy"));
    headers.insert("x-content-type-options", "nosniff".parse().expect("a value"));
    headers.insert("cache-control", "no-store".parse().expect("a value"));
    response
}

/// `303 See Other` to `location`.
fn redirect(location: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(location) = location.parse() {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}

fn text(status: StatusCode, why: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{why}\n"))));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, "text/plain; charset=utf-8".parse().expect("a content type"));
    response
}

/// The value of `name` in a query string or a form body, decoded.
fn form_value(form: &str, name: &str) -> Option<String> {
    form.split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(n, _)| decode(n) == name)
        .map(|(_, v)| decode(v))
}

/// Percent-decoding, with `+` as a space, as forms are sent; bytes that are not UTF-8 replaced.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |c: u8| char::from(c).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_decode_as_browsers_send_them() {
        assert_eq!(decode("a+b%20c%3Cscript%3E"), "a b c<script>");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
        assert_eq!(decode("%e2%82%ac"), "€");
        assert_eq!(
            form_value("verdict=landed&evidence=on+the+statement", "evidence").as_deref(),
            Some("on the statement")
        );
        assert_eq!(form_value("verdict=landed", "evidence"), None);
    }
}
