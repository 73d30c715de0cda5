//! The console over a file log an agent holds, spoken to in HTTP by hand: its guards (Host, token,
//! cookie, origin, read-only), its pages, and settling through the agent.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tool_contract::journal::Phase;
use tool_contract::{Class, FileJournal, Outcome, Probe, Task, tool};
use tool_contract_console::{Console, Options};

static SENT: AtomicU32 = AtomicU32::new(0);

/// Post a notice; the reply is lost while `lose`, and the probe cannot tell.
#[tool(effect = "send", target = thread, probe = check)]
async fn post_notice(thread: &str, lose: bool) -> Result<u64, Class> {
    SENT.fetch_add(1, Ordering::SeqCst);
    if lose { Err(Class::unknown("connection reset after the request was sent")) } else { Ok(4411) }
}

async fn check(_thread: &&str, _lose: &bool, _key: tool_contract::IntentKey) -> Probe<u64> {
    Probe::Failed("the thread's API is down".into())
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

async fn send(addr: std::net::SocketAddr, raw: String) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Reply { status, head: head.to_owned(), body: body.to_owned() }
}

fn get(host: &str, path: &str, cookie: Option<&str>) -> String {
    let cookie = cookie.map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{cookie}Connection: close\r\n\r\n")
}

fn post(host: &str, path: &str, cookie: &str, origin: Option<&str>, body: &str) -> String {
    let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}\r\n{origin}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A log held by an agent, with one `send` in doubt; its key.
async fn held_log(dir: &PathBuf) -> (Arc<FileJournal>, String) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let log = Arc::new(FileJournal::open(dir.join("attempts.log")).unwrap());
    let task = Task::new("ticket-<b>7</b>", "agent", Duration::from_secs(30)).journal(log.clone());
    let report = post_notice(&task, "thread-9", true).await;
    assert_eq!(report.outcome, Outcome::Unknown);
    log.sync().await.unwrap();
    (log, report.idempotency_key.to_string())
}

/// Log in: the session cookie.
async fn login(addr: std::net::SocketAddr, url: &str) -> String {
    let path = url.split_once(&addr.to_string()).unwrap().1;
    let reply = send(addr, get(&addr.to_string(), path, None)).await;
    assert_eq!(reply.status, 303, "{}", reply.head);
    let cookie = reply.head.lines().find(|l| l.to_ascii_lowercase().starts_with("set-cookie:")).unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    cookie.split_once(':').unwrap().1.trim().split(';').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_guards_its_door_shows_the_intent_and_settles_through_the_agent() {
    let dir = std::env::temp_dir().join(format!("tc-console-{}", std::process::id()));
    let (log, key) = held_log(&dir).await;
    let options = Options { by: "ops <alice>".into(), ..Options::default() };
    let running = Console::bind(&dir.join("attempts.log"), options).await.unwrap();
    let (addr, url) = (running.addr, running.url.clone());
    tokio::spawn(running.serve());
    let host = addr.to_string();

    // A wrong Host (DNS rebinding) is refused; no cookie gets the token prompt; a wrong token too.
    assert_eq!(send(addr, get("evil.example", "/", None)).await.status, 403);
    let prompt = send(addr, get(&host, "/", None)).await;
    assert_eq!(prompt.status, 401);
    assert!(prompt.body.contains("needs its token"), "{}", prompt.body);
    assert_eq!(send(addr, get(&host, "/login?token=nope", None)).await.status, 401);
    let cookie = login(addr, &url).await;

    // The overview lists the intent in doubt; names are escaped.
    let overview = send(addr, get(&host, "/", Some(&cookie))).await;
    assert_eq!(overview.status, 200);
    assert!(overview.body.contains("In doubt: 1") && overview.body.contains(&key), "{}", overview.body);
    assert!(overview.body.contains("ticket-&lt;b&gt;7&lt;/b&gt;") && !overview.body.contains("<b>7</b>"));
    let found = send(addr, get(&host, &format!("/?q={}", &key[..8]), Some(&cookie))).await;
    assert!(found.body.contains("Found for"), "{}", found.body);
    let page = send(addr, get(&host, &format!("/intent/{key}"), Some(&cookie))).await;
    assert!(page.body.contains("<svg") && page.body.contains("name=\"evidence\""), "{}", page.body);

    // A form from another origin (another port of 127.0.0.1), or with no origin at all, is refused.
    let path = format!("/intent/{key}/settle");
    let form = "verdict=not_landed&evidence=%3Cscript%3Ealert(1)%3C%2Fscript%3E+not+in+thread-9";
    let foreign = send(addr, post(&host, &path, &cookie, Some("http://127.0.0.1:1"), form)).await;
    assert_eq!(foreign.status, 403);
    assert_eq!(send(addr, post(&host, &path, &cookie, None, form)).await.status, 403);
    assert_eq!(
        send(addr, post(&host, &path, "tc_console=forged", Some(&format!("http://{host}")), form))
            .await
            .status,
        401
    );
    assert!(
        log.recall(&tool_contract::IntentKey::parse(&key).unwrap()).unwrap().settlement().is_none(),
        "nothing settled so far"
    );

    // From its own page: settled through the agent holding the log.
    let done = send(addr, post(&host, &path, &cookie, Some(&format!("http://{host}")), form)).await;
    assert_eq!(done.status, 303, "{}", done.head);
    let recall = log.recall(&tool_contract::IntentKey::parse(&key).unwrap()).unwrap();
    let settled = recall.settlement().expect("settled").clone();
    assert_eq!(
        (settled.by.as_str(), settled.evidence.as_str()),
        ("ops <alice>", "<script>alert(1)</script> not in thread-9")
    );
    let page = send(addr, get(&host, &format!("/intent/{key}"), Some(&cookie))).await;
    assert!(
        page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !page.body.contains("<script>"),
        "{}",
        page.body
    );
    assert!(page.body.contains("settled"), "{}", page.body);

    // The agent's next call of the intent sends exactly once.
    let task = Task::new("ticket-<b>7</b>", "agent", Duration::from_secs(30)).journal(log.clone());
    let sent = SENT.load(Ordering::SeqCst);
    let report = post_notice(&task, "thread-9", false).await;
    assert_eq!((report.outcome, SENT.load(Ordering::SeqCst) - sent), (Outcome::Ok, 1), "{}", report.message);
    let records = tool_contract::journal::read_log(dir.join("attempts.log")).unwrap().records;
    assert_eq!(records.iter().filter(|r| r.phase == Phase::Settled).count(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_console_shows_no_form_and_refuses_every_post() {
    let dir = std::env::temp_dir().join(format!("tc-console-ro-{}", std::process::id()));
    let (log, key) = held_log(&dir).await;
    let options = Options { read_only: true, ..Options::default() };
    let running = Console::bind(&dir.join("attempts.log"), options).await.unwrap();
    let (addr, url) = (running.addr, running.url.clone());
    tokio::spawn(running.serve());
    let host = addr.to_string();
    let cookie = login(addr, &url).await;
    let page = send(addr, get(&host, &format!("/intent/{key}"), Some(&cookie))).await;
    assert!(!page.body.contains("<form method=\"post\""), "{}", page.body);
    assert!(page.body.contains("read-only"), "{}", page.body);
    let form = "verdict=landed&evidence=seen";
    let refused = send(
        addr,
        post(&host, &format!("/intent/{key}/settle"), &cookie, Some(&format!("http://{host}")), form),
    )
    .await;
    assert_eq!(refused.status, 403);
    assert!(log.recall(&tool_contract::IntentKey::parse(&key).unwrap()).unwrap().is_unresolved());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_remote_address_needs_a_token_of_ones_own() {
    let options = Options { listen: "0.0.0.0:0".parse().unwrap(), ..Options::default() };
    let refused = Console::bind(std::path::Path::new("/nonexistent.log"), options).await;
    assert!(refused.err().is_some_and(|why| why.contains("--allow-remote")));
}
