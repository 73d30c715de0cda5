//! Who may come in, spoken to in HTTP by hand: a session per login that logging out ends, a cookie
//! named per console, the printed address good once, no login by a link, named operators recorded as
//! `by`, a name too long refused at start, failed logins slowed per client (never locking out the right
//! token), the security headers on every answer, and an address away from loopback served only over
//! TLS to the names it is given.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tool_contract::{Class, FileJournal, Outcome, Probe, Task, tool};
use tool_contract_console::{Console, Operator, Options, Peer};

/// Post a notice; the reply is lost, and the probe cannot tell.
// A person's word, given right after the attempt, is the story here: with no landing horizon to
// wait for, it counts at once.
#[tool(effect = "send", target = thread, probe = check, horizon = "0s")]
async fn post_notice(thread: &str) -> Result<u64, Class> {
    Err(Class::unknown(format!("connection reset after posting to {thread}")))
}

async fn check(_thread: &&str, _key: tool_contract::IntentKey) -> Probe<u64> {
    Probe::Failed("the thread's API is down".into())
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, raw: &str) -> Reply {
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes).await;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Reply { status, head: head.to_owned(), body: body.to_owned() }
}

async fn send(addr: std::net::SocketAddr, raw: String) -> Reply {
    exchange(tokio::net::TcpStream::connect(addr).await.unwrap(), &raw).await
}

fn get(host: &str, path: &str, cookie: Option<&str>) -> String {
    let cookie = cookie.map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{cookie}Connection: close\r\n\r\n")
}

fn post(host: &str, path: &str, cookie: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}\r\nOrigin: http://{host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The cookie a reply sets (`name=value`) and its attributes.
fn set_cookie(reply: &Reply) -> (String, String) {
    let line = reply.head.lines().find(|l| l.to_ascii_lowercase().starts_with("set-cookie:")).unwrap();
    let value = line.split_once(':').unwrap().1.trim();
    let (pair, attributes) = value.split_once(';').unwrap();
    (pair.to_owned(), attributes.to_owned())
}

/// Log in with what the printed address `path` carries (its ticket, or a token), by the form its page
/// posts: the session cookie.
async fn login_at(addr: std::net::SocketAddr, path: &str) -> String {
    let reply = send(addr, post(&addr.to_string(), "/login", "", login_form(path))).await;
    assert_eq!(reply.status, 303, "{}", reply.head);
    set_cookie(&reply).0
}

/// The form a login page posts for the address `path`: its query (`ticket=...` or `token=...`).
fn login_form(path: &str) -> &str {
    path.split_once('?').map_or("", |(_, query)| query)
}

fn path_of(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    rest[rest.find('/').unwrap()..].to_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tc-door-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_login_is_a_session_of_its_own_that_logging_out_ends() {
    let dir = scratch("sessions");
    let log = dir.join("attempts.log");
    std::fs::write(&log, "").unwrap();
    let first = Console::bind(&log, Options::default()).await.unwrap();
    let second = Console::bind(&log, Options::default()).await.unwrap();
    let (addr, url) = (first.addr, first.url.clone());
    let token = first.console().login_token().expect("a token drawn for itself").to_owned();
    let (other_addr, other_url) = (second.addr, second.url.clone());
    tokio::spawn(first.serve());
    tokio::spawn(second.serve());
    let host = addr.to_string();

    // Two logins, two sessions, under a cookie named for this console's port: the printed address
    // once, then the token the console drew at the prompt.
    let a = login_at(addr, &path_of(&url)).await;
    let used = send(addr, post(&host, "/login", "", login_form(&path_of(&url)))).await;
    assert_eq!(used.status, 401, "the printed address logs in once: {}", used.head);
    assert!(!used.head.to_ascii_lowercase().contains("set-cookie"), "{}", used.head);
    let b = login_at(addr, &format!("/login?token={token}")).await;
    assert_ne!(a, b, "each login has a session of its own");
    let name = format!("tc_console_{}", addr.port());
    assert!(a.starts_with(&format!("{name}=")) && a.len() == name.len() + 1 + 64, "{a}");
    // Another console on the host has a cookie of its own: a browser keeps both.
    let other = login_at(other_addr, &path_of(&other_url)).await;
    assert!(other.starts_with(&format!("tc_console_{}=", other_addr.port())), "{other}");
    assert_eq!(send(addr, get(&host, "/", Some(&other))).await.status, 401, "another console's session");
    assert_eq!(send(addr, get(&host, "/", Some(&format!("{a}; {other}")))).await.status, 200);

    // Logging out ends that session, and only that one; its cookie is cleared.
    let out = send(addr, post(&host, "/logout", &a, "")).await;
    assert_eq!(out.status, 303, "{}", out.head);
    let (cleared, attributes) = set_cookie(&out);
    assert_eq!(cleared, format!("{name}="));
    assert!(attributes.contains("Max-Age=0"), "{attributes}");
    assert_eq!(send(addr, get(&host, "/", Some(&a))).await.status, 401, "logged out");
    assert_eq!(send(addr, get(&host, "/", Some(&b))).await.status, 200, "the other session lives on");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_logs_no_one_in_and_every_answer_carries_the_security_headers() {
    let dir = scratch("link");
    let log = dir.join("attempts.log");
    std::fs::write(&log, "").unwrap();
    let running =
        Console::bind(&log, Options { token: Some("a-token-of-our-own-0123".into()), ..Options::default() })
            .await
            .unwrap();
    let (addr, url) = (running.addr, running.url.clone());
    tokio::spawn(running.serve());
    let host = addr.to_string();
    // The printed address carries a ticket, never the token of one's own.
    assert!(url.contains("/login?ticket=") && !url.contains("a-token-of-our-own"), "{url}");
    // A GET (a link on anyone's page, an image) logs no one in, the right token and ticket included.
    for path in ["/login?token=a-token-of-our-own-0123".to_owned(), path_of(&url)] {
        let reply = send(addr, get(&host, &path, None)).await;
        assert_ne!(reply.status, 303, "{path}: {}", reply.head);
        assert!(!reply.head.to_ascii_lowercase().contains("set-cookie"), "{path}: {}", reply.head);
    }
    // The printed address's page is a button posting its ticket to this origin.
    let page = send(addr, get(&host, &path_of(&url), None)).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("name=\"ticket\"") && page.body.contains("method=\"post\""), "{}", page.body);
    // A login form posted from another origin is refused, the right token included.
    let forged = post(&host, "/login", "", "token=a-token-of-our-own-0123")
        .replace(&format!("Origin: http://{host}"), "Origin: http://evil.example");
    assert_eq!(send(addr, forged).await.status, 403);
    let cookie = login_at(addr, &path_of(&url)).await;

    // Every answer, whatever it is, carries the headers: a page, a redirect, a refusal, a 404.
    let answers = [
        send(addr, get(&host, "/", Some(&cookie))).await,
        send(addr, get(&host, "/", None)).await,
        send(addr, get("evil.example", "/", None)).await,
        send(addr, get(&host, "/nowhere", Some(&cookie))).await,
        send(addr, post(&host, "/login", "", "token=a-token-of-our-own-0123")).await,
        send(addr, get(&host, &path_of(&url), None)).await,
    ];
    for reply in &answers {
        let head = reply.head.to_ascii_lowercase();
        assert!(
            head.contains("content-security-policy:") && head.contains("frame-ancestors 'none'"),
            "{head}"
        );
        assert!(head.contains("referrer-policy: same-origin"), "{head}");
        assert!(head.contains("x-content-type-options: nosniff"), "{head}");
        assert!(head.contains("cache-control: no-store"), "{head}");
        assert!(!head.contains("strict-transport-security"), "no HSTS over plain HTTP: {head}");
    }
    let statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 401, 403, 404, 303, 200]);

    // Two cookies of the console's name (one tossed by a page of another port of this host): nothing
    // is done under either.
    let name = cookie.split('=').next().unwrap();
    let tossed = format!("{name}=0123456789abcdef; {cookie}");
    let reply = send(addr, get(&host, "/", Some(&tossed))).await;
    assert_eq!(reply.status, 403, "{}", reply.head);
    assert!(reply.body.contains("Two session cookies"), "{}", reply.body);
    // The same cookie sent twice is still one session.
    assert_eq!(send(addr, get(&host, "/", Some(&format!("{cookie}; {cookie}")))).await.status, 200);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_five_failures_a_client_waits_and_is_answered_429_but_the_right_token_still_logs_in() {
    let dir = scratch("limit");
    let log = dir.join("attempts.log");
    std::fs::write(&log, "").unwrap();
    let running = Console::bind(&log, Options::default()).await.unwrap();
    let addr = running.addr;
    let token = running.console().login_token().unwrap().to_owned();
    tokio::spawn(running.serve());
    let host = addr.to_string();
    for _ in 0..5 {
        assert_eq!(send(addr, post(&host, "/login", "", "token=guess")).await.status, 401);
    }
    // The sixth wrong try within the minute waits a second, and is answered 429 with Retry-After.
    let started = std::time::Instant::now();
    let limited = send(addr, post(&host, "/login", "", "token=guess")).await;
    assert_eq!(limited.status, 429, "{}", limited.head);
    assert!(started.elapsed() >= Duration::from_secs(1), "a throttled try waits");
    let retry = limited
        .head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("retry-after: ").map(str::to_owned));
    let secs: u64 = retry.expect("a Retry-After").parse().unwrap();
    assert!((1..=60).contains(&secs), "{secs}");
    // Whoever failed from this address (on loopback: every local account), the right token still
    // logs in.
    let ok = send(addr, post(&host, "/login", "", &format!("token={token}"))).await;
    assert_eq!(ok.status, 303, "{}", ok.head);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A request from `peer` to a mounted console: a login (`/console/login?...`) as the form its page
/// posts, anything else a `GET`.
fn request(path: &str, cookie: Option<&str>, peer: &str) -> hyper::Request<Full<Bytes>> {
    let login = path.strip_prefix("/console/login?");
    let mut builder = match login {
        Some(_) => hyper::Request::post("/console/login").header("origin", "http://127.0.0.1:8080"),
        None => hyper::Request::get(path),
    }
    .header("host", "127.0.0.1:8080");
    if let Some(cookie) = cookie {
        builder = builder.header("cookie", cookie);
    }
    let body = Bytes::from(login.unwrap_or("").to_owned());
    let mut request = builder.body(Full::new(body)).unwrap();
    request.extensions_mut().insert(Peer(peer.parse().unwrap()));
    request
}

#[tokio::test(start_paused = true)]
async fn sessions_expire_and_failed_logins_wait_on_the_clock() {
    let dir = scratch("clock");
    let log = dir.join("attempts.log");
    std::fs::write(&log, "").unwrap();
    let options = Options {
        idle_timeout: Duration::from_secs(10 * 60),
        session_lifetime: Duration::from_secs(3600),
        ..Options::default()
    };
    let (console, url) =
        Console::mounted(&log, options, "127.0.0.1:8080".parse().unwrap(), "/console").unwrap();
    let token = console.login_token().unwrap().to_owned();
    let login = format!("/console/login?token={token}");
    let (me, attacker) = ("127.0.0.1:5000", "127.0.0.2:5000");
    let status = |reply: hyper::Response<Full<Bytes>>| reply.status().as_u16();

    // The printed address logs in once.
    assert_eq!(status(console.answer(request(&path_of(&url), None, me)).await), 303);
    assert_eq!(status(console.answer(request(&path_of(&url), None, me)).await), 401, "used");
    // Five failures from one address: its next tries wait a second each, and a wrong one is 429
    // until the first failure is a minute old; another address does not wait.
    for _ in 0..5 {
        assert_eq!(status(console.answer(request("/console/login?token=x", None, attacker)).await), 401);
    }
    let waited = tokio::time::Instant::now();
    let limited = console.answer(request("/console/login?token=x", None, attacker)).await;
    assert_eq!(limited.status(), 429);
    assert_eq!(waited.elapsed(), Duration::from_secs(1));
    assert_eq!(limited.headers()["retry-after"], "59");
    let waited = tokio::time::Instant::now();
    assert_eq!(status(console.answer(request(&login, None, me)).await), 303);
    assert_eq!(waited.elapsed(), Duration::ZERO, "another client is not slowed");
    let waited = tokio::time::Instant::now();
    assert_eq!(status(console.answer(request(&login, None, attacker)).await), 303, "the right token");
    assert_eq!(waited.elapsed(), Duration::from_secs(1));

    let reply = console.answer(request(&login, None, me)).await;
    assert_eq!(reply.status(), 303);
    let cookie = reply.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    assert_eq!(status(console.answer(request("/console/", Some(&cookie), me)).await), 200);
    // Idle for less than ten minutes, then ten.
    tokio::time::advance(Duration::from_secs(9 * 60)).await;
    assert_eq!(status(console.answer(request("/console/", Some(&cookie), me)).await), 200);
    tokio::time::advance(Duration::from_secs(10 * 60)).await;
    assert_eq!(status(console.answer(request("/console/", Some(&cookie), me)).await), 401, "idle");

    // Used every five minutes, a session still ends an hour after its login.
    let reply = console.answer(request(&login, None, me)).await;
    let cookie = reply.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    for _ in 0..11 {
        tokio::time::advance(Duration::from_secs(5 * 60)).await;
        assert_eq!(status(console.answer(request("/console/", Some(&cookie), me)).await), 200);
    }
    tokio::time::advance(Duration::from_secs(5 * 60)).await;
    assert_eq!(status(console.answer(request("/console/", Some(&cookie), me)).await), 401, "an hour old");

    // The token drawn at start logs in until a session's lifetime after the start, and no longer.
    assert_eq!(status(console.answer(request(&login, None, me)).await), 401, "the drawn token expired");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_too_long_to_record_is_refused_at_start() {
    let dir = scratch("names");
    let log = dir.join("attempts.log");
    std::fs::write(&log, "").unwrap();
    let by = "x".repeat(tool_contract::journal::MAX_BY_BYTES + 1);
    let refused = Console::bind(&log, Options { by: by.clone(), ..Options::default() }).await;
    assert!(refused.err().is_some_and(|why| why.contains("at most 200")));
    let operators = vec![Operator::with_token(by, "a token of sixteen+").unwrap()];
    let refused = Console::bind(&log, Options { operators, ..Options::default() }).await;
    assert!(refused.err().is_some_and(|why| why.contains("operator's name")));
    let fits = "é".repeat(100);
    assert!(Console::bind(&log, Options { by: fits, ..Options::default() }).await.is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_log_in_with_their_own_tokens_and_settle_under_their_names() {
    let dir = scratch("operators");
    let log = Arc::new(FileJournal::open(dir.join("attempts.log")).unwrap());
    let task = Task::new("ticket-ops", "agent", Duration::from_secs(30)).journal(log.clone());
    let report = post_notice(&task, "thread-1").await;
    assert_eq!(report.outcome, Outcome::Unknown);
    log.sync().await.unwrap();
    let key = report.idempotency_key;

    let (alice_token, alice_line) = Operator::line("alice").unwrap();
    let (bob_token, bob_line) = Operator::line("bob").unwrap();
    let file = format!("{alice_line}\n{}\n", bob_line.replacen("bob", "Bob Smith", 1));
    let options = Options {
        operators: Operator::parse_file(&file).unwrap(),
        token: Some("the-console's-own-token".into()),
        by: "console".into(),
        ..Options::default()
    };
    let running = Console::bind(&dir.join("attempts.log"), options).await.unwrap();
    let (addr, url) = (running.addr, running.url.clone());
    tokio::spawn(running.serve());
    let host = addr.to_string();
    assert!(!url.contains("token=") && !url.contains("ticket="), "nothing to print: {url}");
    let own = send(addr, post(&host, "/login", "", "token=the-console's-own-token")).await;
    assert_eq!(own.status, 401, "operators: the console's own token logs no one in");
    let bob = login_at(addr, &format!("/login?token={bob_token}")).await;
    let page = send(addr, get(&host, &format!("/intent/{key}"), Some(&bob))).await;
    assert!(page.body.contains("Bob Smith"), "{}", page.body);

    // Alice logs in through the prompt's form, and settles: the record names her.
    let alice = send(addr, post(&host, "/login", "", &format!("token={alice_token}"))).await;
    assert_eq!(alice.status, 303, "{}", alice.head);
    let alice = set_cookie(&alice).0;
    let form = "attempt=1&verdict=not_landed&evidence=thread-1+holds+nothing&shown=2026-01-01T00:00:00Z";
    let done = send(addr, post(&host, &format!("/intent/{key}/settle"), &alice, form)).await;
    assert_eq!(done.status, 303, "{}", done.head);
    let settled = log.recall_now(&key).unwrap().settlement().expect("settled").clone();
    assert_eq!(settled.by, "alice");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "tls")]
/// A self-signed certificate for `localhost`, written as PEM files in `dir`: the certificate, the
/// key, and the certificate as a client trusts it.
fn certificate(dir: &std::path::Path) -> (PathBuf, PathBuf, rustls::pki_types::CertificateDer<'static>) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.join("console.crt"), dir.join("console.key"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key, made.cert.der().clone())
}

#[cfg(feature = "tls")]
async fn over_tls(
    addr: std::net::SocketAddr,
    trusted: &rustls::pki_types::CertificateDer<'static>,
    raw: &str,
) -> Reply {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(trusted.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", addr.port())).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    exchange(connector.connect(name, tcp).await.unwrap(), raw).await
}

#[cfg(feature = "tls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn away_from_loopback_the_console_is_served_over_tls_to_the_names_it_is_given() {
    let dir = scratch("tls");
    let log = dir.join("attempts.log");
    std::fs::write(&log, "").unwrap();
    let (cert, key, trusted) = certificate(&dir);
    let remote = Options {
        listen: "0.0.0.0:0".parse().unwrap(),
        allow_remote: true,
        token: Some("a-token-of-our-own-0123".into()),
        ..Options::default()
    };
    // Plain HTTP away from loopback is refused at start; so is a wildcard listen without a name.
    let plain = Console::bind(&log, remote.clone()).await.err().unwrap();
    assert!(plain.contains("over TLS") && plain.contains("SSH tunnel"), "{plain}");
    // So is a console mounted in a host that serves plain HTTP there.
    let mounted = Console::mounted(&log, remote.clone(), "192.0.2.10:8080".parse().unwrap(), "/console");
    let mounted = mounted.err().unwrap();
    assert!(mounted.contains("over TLS"), "{mounted}");
    let tls = tool_contract_console::server_config(&cert, &key).unwrap();
    let nameless =
        Console::bind(&log, Options { tls: Some(tls.clone()), ..remote.clone() }).await.err().unwrap();
    assert!(nameless.contains("--host"), "{nameless}");

    let options = Options { tls: Some(tls), hosts: vec!["localhost".into()], ..remote };
    let running = Console::bind(&log, options).await.unwrap();
    let (addr, url) = (running.addr, running.url.clone());
    tokio::spawn(running.serve());
    let host = format!("localhost:{}", addr.port());
    assert!(url.starts_with(&format!("https://{host}/login?ticket=")), "{url}");

    let login =
        post(&host, "/login", "", login_form(&path_of(&url))).replace("Origin: http://", "Origin: https://");
    let reply = over_tls(addr, &trusted, &login).await;
    assert_eq!(reply.status, 303, "{}", reply.head);
    let (cookie, attributes) = set_cookie(&reply);
    assert!(attributes.contains("Secure") && attributes.contains("HttpOnly"), "{attributes}");
    // A `__Host-` cookie for `/`: no page of another port or name of the host can set one in its place.
    assert!(cookie.starts_with(&format!("__Host-tc_console_{}=", addr.port())), "{cookie}");
    assert!(attributes.contains("Path=/") && !attributes.contains("Domain"), "{attributes}");
    assert!(
        reply.head.to_ascii_lowercase().contains("strict-transport-security: max-age="),
        "{}",
        reply.head
    );
    let page = over_tls(addr, &trusted, &get(&host, "/", Some(&cookie))).await;
    assert_eq!(page.status, 200, "{}", page.body);
    // A name it was not given is refused (DNS rebinding), the address included.
    let other =
        over_tls(addr, &trusted, &get(&format!("127.0.0.1:{}", addr.port()), "/", Some(&cookie))).await;
    assert_eq!(other.status, 403);
    // A client speaking plain HTTP to it gets no answer.
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], addr.port()));
    let clear = send(local, get(&host, "/", Some(&cookie))).await;
    assert_eq!(clear.status, 0, "{}", clear.head);
    let _ = std::fs::remove_dir_all(&dir);
}
