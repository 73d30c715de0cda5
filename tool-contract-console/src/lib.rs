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
//! - Logging in is a same-origin `POST`: the printed address's page posts its one-time ticket (it
//!   logs in once), the prompt posts a token; a link or an image logs no one in. A login opens a
//!   session of its own, drawn from the operating system's random source, in a cookie named for the
//!   console's port (`HttpOnly`, `SameSite=Strict`; over TLS `Secure` and `__Host-`). Two different
//!   cookies of that name on one request (one set by a page of another port of the host) are refused.
//!   A session ends when its person logs out, after [`Options::idle_timeout`] unused, or
//!   [`Options::session_lifetime`] after its login. A token drawn here ([`Console::login_token`]) and
//!   the ticket log in for [`Options::session_lifetime`] from the start.
//! - Every settlement and answer is recorded under the name of the person logged in: an operator's
//!   own (their token kept as a slow salted hash, [`Operator::line`]), or [`Options::by`] for the
//!   console's token; every name is checked against [`tool_contract::journal::MAX_BY_BYTES`] at start.
//! - Past five failed logins from one client within a minute, each of its logins waits a second and a
//!   wrong one is answered 429 with `Retry-After`; a right token still logs in.
//! - Every request's `Host` must be the console's own address or one of [`Options::hosts`] (a page of
//!   another name resolving to the console, DNS rebinding, is refused).
//! - Every `POST` needs a session and a same-origin `Origin` or `Sec-Fetch-Site`: a form posted from a
//!   page of another origin (another port of 127.0.0.1 included) is refused.
//! - Every text from the log is escaped where it is shown (a settlement's evidence is one operator's
//!   input shown to others); a tool's words are quoted, cut and labelled as the tool's.
//! - Every answer carries a content security policy with no script and no framing, `Referrer-Policy`,
//!   `X-Content-Type-Options`, `Cache-Control: no-store`, and HSTS over TLS. At most
//!   [`MAX_CONNECTIONS`] connections are served at once.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tool_contract::journal::{Approvals, LogReader};

mod actions;
mod door;
mod http;
mod index;
mod login;
mod options;
mod pages;
#[cfg(feature = "postgres")]
mod postgres;
mod route;
mod source;
#[cfg(feature = "tls")]
mod tls;

pub use door::{Operator, TOKEN_ROUNDS, check_name};
pub use index::{Index, Recent, WORDS};
pub use options::{IDLE_TIMEOUT, Options, SESSION_LIFETIME};
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
    /// Whether the token was drawn here (and so is the console's to show: [`Console::login_token`]).
    drawn: bool,
    /// The printed address's ticket: it logs in once.
    ticket: door::Ticket,
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
    /// The address to open in a browser: with a ticket that logs in once (without one when there are
    /// operators, who log in with their own tokens).
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
    /// with its one-time ticket. The host hands every request under `at` to [`Console::answer`], with
    /// the client's address in the request's extensions ([`Peer`]).
    ///
    /// Away from loopback the same rules hold as for a console serving itself: a token of one's own
    /// or operators, and TLS: the host serves the console over TLS and says so by setting
    /// [`Options::tls`] (feature `tls`) to its configuration; a host that serves plain HTTP there is
    /// refused.
    pub fn mounted(
        log: &Path,
        options: Options,
        addr: SocketAddr,
        at: &str,
    ) -> Result<(Console, String), String> {
        options.check(addr, true)?;
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

    /// The path the console is mounted at (`""`: the root).
    pub fn base(&self) -> &str {
        &self.inner.base
    }

    /// The token the console drew for itself (no [`Options::token`], no operators), for the login
    /// page once the printed address has been used: `None` when the token is one's own, or there are
    /// operators.
    pub fn login_token(&self) -> Option<&str> {
        self.inner.token.as_ref().filter(|_| self.inner.drawn).map(|(token, _)| token.as_str())
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
        let until = tokio::time::Instant::now() + options.session_lifetime;
        let token = match (&options.token, options.operators.is_empty()) {
            (_, false) => None,
            (Some(own), true) => Some((own.clone(), None)),
            (None, true) => Some((door::random_token()?, Some(until))),
        };
        let drawn = token.is_some() && options.token.is_none();
        // The printed address carries a ticket, not the token: once used it logs no one in, and a
        // token of one's own never appears in an address.
        let (ticket, url) = match &token {
            Some(_) => {
                let (ticket, text) = door::Ticket::new(Some(until))?;
                (ticket, format!("{origin}{base}/login?ticket={text}"))
            }
            None => (door::Ticket::none(), format!("{origin}{base}/")),
        };
        // Over TLS the cookie is `__Host-`: a browser takes it only from this host over TLS, for `/`,
        // so no page of another port or name can set one in its place.
        let cookie =
            if secure { format!("__Host-{COOKIE_PREFIX}{port}") } else { format!("{COOKIE_PREFIX}{port}") };
        let console = Console {
            inner: Arc::new(Inner {
                source,
                token,
                drawn,
                ticket,
                operators: options.operators,
                sessions: door::Sessions::new(options.idle_timeout, options.session_lifetime),
                logins: door::Logins::new(),
                cookie,
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
}

impl Running {
    /// Serve until the process ends (over TLS when [`Options::tls`] says so: a client that does not
    /// speak TLS gets no answer).
    pub async fn serve(self) {
        let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        loop {
            // At most MAX_CONNECTIONS at once: the next is accepted when one closes.
            let Ok(permit) = Arc::clone(&open).acquire_owned().await else { return };
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
                    drop(permit);
                });
                continue;
            }
            tokio::spawn(async move {
                serve_connection(console, stream, peer).await;
                drop(permit);
            });
        }
    }

    /// The console, to mount elsewhere.
    pub fn console(&self) -> &Console {
        &self.console
    }
}

/// The most connections a console serves at once (a client holding more waits for one to close).
pub const MAX_CONNECTIONS: usize = 64;

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
