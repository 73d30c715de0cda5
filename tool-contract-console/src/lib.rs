//! A local operator console for a tool-contract attempt log: the calls waiting for approval and the
//! intents in doubt first, each intent's timeline, each task's intents, what ended lately, settling an
//! intent in doubt and approving or denying a `money` retry (`tool_contract::person::LogApprover`), in a
//! browser, without JavaScript.
//!
//! # Features
//!
//! | feature | what it adds | default |
//! |---|---|---|
//! | `postgres` | serving a log in PostgreSQL (`tool-contract console postgres://...`) | yes |
//! | `postgres-tls` | reaching PostgreSQL over TLS (rustls): `--pg-ca-file`, `sslmode=require`; turns on `postgres` | yes |
//! | `tls` | serving the console over HTTPS (rustls): [`Options::tls`], `--tls-cert`, `--tls-key` | yes |
//! | `cli` | the `tool-contract-console` command (`cargo install --path tool-contract-console --features cli` from a checkout); turns on `postgres` | no |
//!
//! ```text
//! tool-contract console /var/lib/agent/attempts.log [--listen 127.0.0.1:0] [--read-only] [--by NAME]
//!     [--operators FILE] [--allow-remote --tls-cert FILE --tls-key FILE --host NAME...]
//! TOOL_CONTRACT_PG=postgres://ops@db/agents tool-contract console [--pg-ca-file FILE] [--read-only]
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
//! - It binds 127.0.0.1 by default; another address needs [`Options::allow_remote`], a token of the
//!   operator's own ([`Options::token`]) or named operators ([`Options::operators`]), and TLS
//!   ([`Options::tls`], feature `tls`). A wildcard address answers only to [`Options::hosts`].
//! - Logging in (the printed address with its token, or the token prompt) opens a session of its own,
//!   drawn from the operating system's random source, in a cookie named for the console's port
//!   (`HttpOnly`, `SameSite=Strict`, `Secure` over TLS). A session ends when its person logs out, after
//!   [`Options::idle_timeout`] unused, or [`Options::session_lifetime`] after its login. A printed
//!   random token logs in for [`Options::session_lifetime`] from the start.
//! - Every settlement and answer is recorded under the name of the person logged in: an operator's
//!   own, or [`Options::by`] for the console's token; every name is checked against
//!   [`tool_contract::journal::MAX_BY_BYTES`] at start.
//! - Five failed logins from one client within a minute, and the next are answered 429 with
//!   `Retry-After`.
//! - Every request's `Host` must be the console's own address or one of [`Options::hosts`] (a page of
//!   another name resolving to the console, DNS rebinding, is refused).
//! - Every `POST` needs a session and a same-origin `Origin` or `Sec-Fetch-Site`: a form posted from a
//!   page of another origin (another port of 127.0.0.1 included) is refused.
//! - Every text from the log is escaped where it is shown (a settlement's evidence is one operator's
//!   input shown to others).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, COOKIE, HOST, LOCATION, ORIGIN, RETRY_AFTER, SET_COOKIE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use maud::Markup;
use tokio::net::TcpListener;
use tool_contract::IntentKey;
use tool_contract::journal::{Approvals, LogReader, Verdict};
use tool_contract::person::{Decision, Settle};

mod door;
mod index;
mod pages;
mod source;
#[cfg(feature = "tls")]
mod tls;

pub use door::{Operator, check_name};
pub use index::{Index, Recent, WORDS};
#[cfg(feature = "tls")]
pub use tls::server_config;

/// The start of the session cookie's name; the console's port follows, so two consoles on one host
/// keep their sessions apart.
const COOKIE_PREFIX: &str = "tc_console_";

/// The address a request came from, as a host that mounts the console puts it in the request's
/// extensions (`request.extensions_mut().insert(Peer(addr))`): failed logins are counted per client.
/// Without it, every client of a mounted console shares one count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer(pub SocketAddr);

/// The largest form a `POST` may carry.
const MAX_FORM: usize = 16 * 1024;

/// How a console is started.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to listen on (port 0: a free one).
    pub listen: SocketAddr,
    /// Show, never change: no form, every `POST` refused.
    pub read_only: bool,
    /// Who settles through this console when logged in with its token (not an operator's own): at most
    /// [`tool_contract::journal::MAX_BY_BYTES`] bytes, checked at start.
    pub by: String,
    /// The token to use instead of a random one (required for an address other than loopback). A
    /// random token is printed at start and logs in for [`Options::session_lifetime`] from then; a
    /// token of one's own has no such end.
    pub token: Option<String>,
    /// The people who may log in, each with a token of their own and recorded as `by` under their
    /// own name. When there are any, the console's token ([`Options::token`]) logs no one in.
    pub operators: Vec<Operator>,
    /// Listen on an address other than loopback (which also needs [`Options::token`] or
    /// [`Options::operators`], and TLS).
    pub allow_remote: bool,
    /// The names the console answers to besides its address (`console.example.org`, or with a port),
    /// as the operator types them: accepted in the `Host` check and its origin. A wildcard listen
    /// (`0.0.0.0`, `[::]`) needs at least one; the first is the one printed.
    pub hosts: Vec<String>,
    /// A session unused this long ends.
    pub idle_timeout: Duration,
    /// A session ends this long after its login, however busy.
    pub session_lifetime: Duration,
    /// Serve HTTPS with this configuration (feature `tls`; see [`server_config`]): the session cookie
    /// is then `Secure`. An address other than loopback is served only over TLS.
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// How long a session may sit unused, by default.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How long a session lasts after its login, by default.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);

impl Default for Options {
    fn default() -> Options {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            read_only: false,
            by: "operator".to_owned(),
            token: None,
            operators: Vec::new(),
            allow_remote: false,
            hosts: Vec::new(),
            idle_timeout: IDLE_TIMEOUT,
            session_lifetime: SESSION_LIFETIME,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl Options {
    /// Whether the console is served over TLS.
    fn over_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// What is wrong with these options for a console listening on `addr` (`served`: by its own
    /// listener, which must then be TLS away from loopback; a mounted console's host serves it).
    fn check(&self, addr: SocketAddr, served: bool) -> Result<(), String> {
        check_name(&self.by).map_err(|why| format!("the name to record (--by) {why}"))?;
        for operator in &self.operators {
            check_name(&operator.name).map_err(|why| format!("the operator's name {why}"))?;
        }
        for host in &self.hosts {
            if host.is_empty()
                || host.contains(['/', '@', '?', '#', ' ', ','])
                || host.chars().any(char::is_control)
            {
                return Err(format!("{host:?} is not a host name (--host console.example.org)"));
            }
        }
        if addr.ip().is_loopback() {
            return Ok(());
        }
        if !self.allow_remote || (self.token.is_none() && self.operators.is_empty()) {
            return Err(format!(
                "{addr} is not a loopback address: listening there needs --allow-remote and --token-file FILE \
                 or --operators FILE (tokens of your own, kept out of the process list)"
            ));
        }
        if served && !self.over_tls() {
            return Err(format!(
                "{addr} is not a loopback address: a token and a session cookie would cross the network in \
                 the clear; serve it over TLS (--tls-cert FILE --tls-key FILE), or listen on 127.0.0.1 and \
                 reach it through an SSH tunnel (docs/console.md)"
            ));
        }
        if addr.ip().is_unspecified() && self.hosts.is_empty() {
            return Err(format!(
                "{addr} listens on every address: say the names it is opened by with --host NAME, which \
                 the Host check accepts"
            ));
        }
        Ok(())
    }
}

/// A console over one file log. Cheap to clone.
#[derive(Clone)]
pub struct Console {
    inner: Arc<Inner>,
}

struct Inner {
    source: source::Source,
    /// The console's token, if it logs anyone in (not when there are operators), and until when (a
    /// random one, printed: [`Options::session_lifetime`] after the start).
    token: Option<(String, Option<tokio::time::Instant>)>,
    operators: Vec<Operator>,
    sessions: door::Sessions,
    logins: door::Logins,
    cookie: String,
    secure: bool,
    read_only: bool,
    by: String,
    /// The `Host` values this console answers to.
    hosts: Vec<String>,
    /// Its own origin, as a browser sends it.
    origin: String,
    /// The path it is mounted at (`""`: the root).
    base: String,
}

/// A running console: where it listens and the address to open.
pub struct Running {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The address to open in a browser, with the token (without it when there are operators).
    pub url: String,
    listener: TcpListener,
    console: Console,
    #[cfg(feature = "tls")]
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl Console {
    /// Bind a console over the log at `log`, indexing it.
    pub async fn bind(log: &Path, options: Options) -> Result<Running, String> {
        options.check(options.listen, true)?;
        Console::listen(source::Source::file(log.to_path_buf())?, options).await
    }

    async fn listen(source: source::Source, options: Options) -> Result<Running, String> {
        let listener = TcpListener::bind(options.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        #[cfg(feature = "tls")]
        let tls = options.tls.clone().map(tokio_rustls::TlsAcceptor::from);
        let (console, url) = Console::with_source(source, options, addr, "")?;
        Ok(Running {
            addr,
            url,
            listener,
            console,
            #[cfg(feature = "tls")]
            tls,
        })
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
        options.check(addr, false)?;
        let at = at.trim_end_matches('/');
        if !at.starts_with('/') || at.contains(['?', '#', ' ']) {
            return Err(format!("a console is mounted at a path like /console, not {at:?}"));
        }
        Console::with_source(source::Source::file(log.to_path_buf())?, options, addr, at)
    }

    /// Bind a console over a store it reads through `reader` and writes a person's word to itself
    /// (`store`: an answer where the caller waiting looks for it, a settlement under a claim, as a
    /// worker's), while the store's writers run. Every page folds in what `reader` read since the
    /// last one.
    pub async fn bind_store(
        reader: Arc<dyn LogReader>,
        store: Arc<dyn Approvals>,
        options: Options,
    ) -> Result<Running, String> {
        options.check(options.listen, true)?;
        Console::listen(source::Source::store(reader, store), options).await
    }

    /// Bind a console over a fleet's store in PostgreSQL (feature `postgres`): [`Console::bind_store`]
    /// with the store's [`PgReader`](tool_contract_postgres::PgReader); every page is a few queries.
    #[cfg(feature = "postgres")]
    pub async fn bind_postgres(
        journal: tool_contract_postgres::PgJournal,
        options: Options,
    ) -> Result<Running, String> {
        Console::bind_store(Arc::new(journal.reader()), Arc::new(journal), options).await
    }

    /// Open a fleet's store in PostgreSQL for a console (feature `postgres`). A read-only console
    /// (`read_only`) checks the store's schema and never changes it: a database without the attempt
    /// log, or with an older schema, is refused with a message saying so, where a console that may
    /// write migrates it as a worker does.
    ///
    /// With `ca_file` (PEM certificates to trust, feature `postgres-tls`) the connection is made over
    /// TLS with rustls, which checks the server's certificate and name; the connection string's
    /// `sslmode` says whether TLS is required (`require`) or tried first (`prefer`, the default). A
    /// connection string with `sslmode=require` and no `ca_file` trusts the system's certificates
    /// (`SSL_CERT_FILE`, else `/etc/ssl/certs/ca-certificates.crt`).
    #[cfg(feature = "postgres")]
    pub async fn connect_postgres(
        conninfo: &str,
        read_only: bool,
        ca_file: Option<&Path>,
    ) -> Result<tool_contract_postgres::PgJournal, String> {
        use tool_contract_postgres::{PgJournal, PgOptions};
        let options = PgOptions::default().read_only(read_only);
        let required = conninfo.split(['?', '&', ' ']).any(|p| p.trim() == "sslmode=require");
        let system = std::env::var_os("SSL_CERT_FILE")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| "/etc/ssl/certs/ca-certificates.crt".into());
        let roots = match ca_file {
            Some(file) => Some(file.to_path_buf()),
            None if required => Some(system),
            None => None,
        };
        let opened = match roots {
            None => PgJournal::connect_with(conninfo, options).await,
            #[cfg(feature = "postgres-tls")]
            Some(file) => {
                use rustls::pki_types::{CertificateDer, pem::PemObject};
                use tool_contract_postgres::rustls;
                let mut store = rustls::RootCertStore::empty();
                let certs = CertificateDer::pem_file_iter(&file)
                    .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| format!("the certificates to trust, {}: {e}", file.display()))?;
                let (added, _) = store.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(format!("the certificates to trust, {}: none in it", file.display()));
                }
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let tls = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| e.to_string())?
                    .with_root_certificates(store)
                    .with_no_client_auth();
                PgJournal::connect_tls(conninfo, options, tls).await
            }
            #[cfg(not(feature = "postgres-tls"))]
            Some(_) => {
                return Err(
                    "TLS to PostgreSQL needs the feature `postgres-tls` of tool-contract-console".into()
                );
            }
        };
        opened.map_err(|e| e.to_string())
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
    ) -> Result<(Console, String), String> {
        let secure = options.over_tls();
        let scheme = if secure { "https" } else { "http" };
        let port = addr.port();
        let mut hosts = Vec::new();
        for host in &options.hosts {
            // `name` or `name:port` (`[::1]` or `[::1]:port`): a bare name is taken at the console's port,
            // and also without one when that is the scheme's own.
            let has_port = host.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok())
                && (!host.starts_with('[') || host.contains("]:"));
            if has_port {
                hosts.push(host.clone());
            } else {
                hosts.push(format!("{host}:{port}"));
                if port == if secure { 443 } else { 80 } {
                    hosts.push(host.clone());
                }
            }
        }
        if !addr.ip().is_unspecified() {
            hosts.push(addr.to_string());
        }
        if addr.ip().is_loopback() {
            hosts.extend([format!("localhost:{port}"), format!("127.0.0.1:{port}"), format!("[::1]:{port}")]);
        }
        let origin = format!("{scheme}://{}", hosts.first().cloned().unwrap_or_else(|| addr.to_string()));
        let token = match (&options.token, options.operators.is_empty()) {
            (_, false) => None,
            (Some(own), true) => Some((own.clone(), None)),
            (None, true) => {
                let until = tokio::time::Instant::now() + options.session_lifetime;
                Some((door::random_token()?, Some(until)))
            }
        };
        let url = match &token {
            Some((token, _)) => format!("{origin}{base}/login?token={token}"),
            None => format!("{origin}{base}/"),
        };
        let console = Console {
            inner: Arc::new(Inner {
                source,
                token,
                operators: options.operators,
                sessions: door::Sessions::new(options.idle_timeout, options.session_lifetime),
                logins: door::Logins::new(),
                cookie: format!("{COOKIE_PREFIX}{port}"),
                secure,
                read_only: options.read_only,
                by: options.by,
                hosts,
                origin,
                base: base.to_owned(),
            }),
        };
        Ok((console, url))
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
        let peer = request.extensions().get::<Peer>().map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.0.ip());
        if path == "/login" && request.method() == Method::GET {
            return self.login(&query, peer);
        }
        if path == "/login" && request.method() == Method::POST {
            if !self.same_origin(&request) {
                return text(StatusCode::FORBIDDEN, "a form of another origin is refused");
            }
            return match read_form(request).await {
                Ok(form) => self.login(&form, peer),
                Err(response) => response,
            };
        }
        let session = self.session_of(&request);
        if path == "/logout" && request.method() == Method::POST {
            return self.logout(&request, session.as_ref().map(|(id, _)| id.as_str()));
        }
        let Some((_, by)) = session else {
            return html(StatusCode::UNAUTHORIZED, pages::token_prompt(&self.inner.base));
        };
        match *request.method() {
            Method::GET => self.get(&path, &query, &by).await,
            Method::POST => self.post(request, &path, by).await,
            _ => text(StatusCode::METHOD_NOT_ALLOWED, "GET or POST"),
        }
    }

    /// Exchange the token in `form` (a query string or a form body) for a session: the console's
    /// token, under the console's `by`, or an operator's, under their name. Too many failures from
    /// one client lately are answered 429 without looking at the token.
    fn login(&self, form: &str, peer: IpAddr) -> Response<Full<Bytes>> {
        if let Some(wait) = self.inner.logins.wait(peer) {
            let mut response = text(
                StatusCode::TOO_MANY_REQUESTS,
                "too many failed logins from this address: wait a minute, then try again",
            );
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            if let Ok(value) = secs.max(1).to_string().parse() {
                response.headers_mut().insert(RETRY_AFTER, value);
            }
            return response;
        }
        let given = form_value(form, "token").unwrap_or_default();
        let Some(by) = self.who(&given) else {
            self.inner.logins.failed(peer);
            return html(StatusCode::UNAUTHORIZED, pages::token_prompt(&self.inner.base));
        };
        self.inner.logins.succeeded(peer);
        let id = match self.inner.sessions.open(&by) {
            Ok(id) => id,
            Err(why) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("no session could be opened: {why}"),
                );
            }
        };
        let mut response = redirect(&format!("{}/", self.inner.base));
        self.set_cookie(&mut response, &id, None);
        response
    }

    /// Whose token `given` is: the name a session of it records as `by`.
    fn who(&self, given: &str) -> Option<String> {
        if given.is_empty() {
            return None;
        }
        if let Some((token, until)) = &self.inner.token {
            let fresh = until.is_none_or(|until| tokio::time::Instant::now() < until);
            return (fresh && constant_time_eq(given.as_bytes(), token.as_bytes()))
                .then(|| self.inner.by.clone());
        }
        let given = door::digest(given.as_bytes());
        // Every digest is compared, whichever matches.
        let mut found = None;
        for operator in &self.inner.operators {
            if constant_time_eq(&given, &operator.token_sha256) {
                found = Some(operator.name.clone());
            }
        }
        found
    }

    /// End the session (if there is one) and clear its cookie.
    fn logout<B>(&self, request: &Request<B>, session: Option<&str>) -> Response<Full<Bytes>> {
        if !self.same_origin(request) {
            return text(StatusCode::FORBIDDEN, "a form of another origin is refused");
        }
        if let Some(id) = session {
            self.inner.sessions.end(id);
        }
        let mut response = redirect(&format!("{}/", self.inner.base));
        self.set_cookie(&mut response, "", Some(0));
        response
    }

    fn set_cookie(&self, response: &mut Response<Full<Bytes>>, value: &str, max_age: Option<u64>) {
        let (name, base) = (&self.inner.cookie, &self.inner.base);
        let mut cookie = format!("{name}={value}; HttpOnly; SameSite=Strict; Path={base}/");
        if self.inner.secure {
            cookie.push_str("; Secure");
        }
        if let Some(age) = max_age {
            cookie.push_str(&format!("; Max-Age={age}"));
        }
        if let Ok(cookie) = cookie.parse() {
            response.headers_mut().insert(SET_COOKIE, cookie);
        }
    }

    /// The live session the request's cookie names, and who holds it.
    fn session_of<B>(&self, request: &Request<B>) -> Option<(String, String)> {
        let cookies = request.headers().get_all(COOKIE).iter().filter_map(|v| v.to_str().ok());
        for pair in cookies.flat_map(|c| c.split(';')).filter_map(|c| c.trim().split_once('=')) {
            if pair.0 == self.inner.cookie
                && let Some(by) = self.inner.sessions.find(pair.1)
            {
                return Some((pair.1.to_owned(), by));
            }
        }
        None
    }

    async fn get(&self, path: &str, query: &str, by: &str) -> Response<Full<Bytes>> {
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
            let settling = self.settling(said.as_deref(), by);
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
            let settling = self.settling(said.as_deref(), by);
            return html(StatusCode::OK, pages::intent(&recall, &records, &settling, now));
        }
        html(StatusCode::NOT_FOUND, pages::problem("Not found", "no such page", base))
    }

    async fn post<B>(&self, request: Request<B>, path: &str, by: String) -> Response<Full<Bytes>>
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
        let form = match read_form(request).await {
            Ok(form) => form,
            Err(response) => return response,
        };
        if action == "approval" {
            return self.approval(&key, &form, by).await;
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
        let settle = Settle::new(verdict, by, evidence);
        let said = match self.inner.source.settle(key, attempt, settle).await {
            Ok(record) => format!("Settled: {}", record.message.unwrap_or_default()),
            Err(e) => format!("Not settled: {e}"),
        };
        self.back(&key, &said)
    }

    /// What this console's forms may do, saying `said` at the top of the page.
    fn settling<'a>(&'a self, said: Option<&'a str>, by: &'a str) -> pages::Settling<'a> {
        pages::Settling { read_only: self.inner.read_only, by, said, base: &self.inner.base }
    }

    /// Answer a question from the approval form: yes or no to the attempt it names, with why.
    async fn approval(&self, key: &IntentKey, form: &str, by: String) -> Response<Full<Bytes>> {
        let attempt = form_value(form, "attempt").and_then(|a| a.parse::<u32>().ok());
        let why = form_value(form, "why").unwrap_or_default();
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
        let scheme = if self.inner.secure { "https://" } else { "http://" };
        origin
            .strip_prefix(scheme)
            .is_some_and(|host| self.inner.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
    }
}

impl Running {
    /// Serve until the process ends (over TLS when [`Options::tls`] says so: a client that does not
    /// speak TLS gets no answer).
    pub async fn serve(self) {
        loop {
            let Ok((stream, peer)) = self.listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let console = self.console.clone();
            #[cfg(feature = "tls")]
            if let Some(acceptor) = self.tls.clone() {
                tokio::spawn(async move {
                    let handshake = tokio::time::timeout(HANDSHAKE_WAIT, acceptor.accept(stream)).await;
                    if let Ok(Ok(stream)) = handshake {
                        serve_connection(console, stream, peer).await;
                    }
                });
                continue;
            }
            tokio::spawn(serve_connection(console, stream, peer));
        }
    }

    /// The console, to mount elsewhere.
    pub fn console(&self) -> &Console {
        &self.console
    }
}

/// How long a client has to finish the TLS handshake.
#[cfg(feature = "tls")]
const HANDSHAKE_WAIT: Duration = Duration::from_secs(10);

/// Answer the requests of one connection from `peer`.
async fn serve_connection<S>(console: Console, stream: S, peer: SocketAddr)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        let console = console.clone();
        request.extensions_mut().insert(Peer(peer));
        async move { Ok::<_, Infallible>(console.answer(request).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10))
        .serve_connection(TokioIo::new(stream), service)
        .await;
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

/// A form body of at most [`MAX_FORM`] bytes, as text; or the answer refusing it.
async fn read_form<B>(request: Request<B>) -> Result<String, Response<Full<Bytes>>>
where
    B: hyper::body::Body<Data = Bytes> + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match Limited::new(request.into_body(), MAX_FORM).collect().await {
        Ok(body) => Ok(String::from_utf8_lossy(&body.to_bytes()).into_owned()),
        Err(_) => Err(text(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large")),
    }
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
