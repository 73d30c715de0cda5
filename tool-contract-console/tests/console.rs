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
// A person's word, given seconds after the attempt, is the story here: with no landing horizon to
// wait for, it counts at once (see `held_log`).
#[tool(effect = "send", target = thread, probe = check, horizon = "0s")]
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
    // The log's stamps are whole seconds, perhaps from a clock a second apart: a person who looks
    // within three seconds of the probe that found the attempt over is looked at again.
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    (log, report.idempotency_key.to_string())
}

/// When the intent's page showed its attempt, as its settle form carries it.
fn shown(page: &str) -> String {
    let at = page.find("name=\"shown\" value=\"").expect("the settle form says when it was shown");
    let rest = &page[at + "name=\"shown\" value=\"".len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

/// Log in with the printed address's ticket, by the form its page posts: the session cookie.
async fn login(addr: std::net::SocketAddr, url: &str) -> String {
    let host = addr.to_string();
    let query = url.split_once('?').unwrap().1;
    let reply = send(addr, post(&host, "/login", "", Some(&format!("http://{host}")), query)).await;
    assert_eq!(reply.status, 303, "{}", reply.head);
    let cookie = reply.head.lines().find(|l| l.to_ascii_lowercase().starts_with("set-cookie:")).unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    cookie.split_once(':').unwrap().1.trim().split(';').next().unwrap().to_owned()
}

/// Where a reply sends the browser.
fn location(reply: &Reply) -> String {
    let line = reply.head.lines().find(|l| l.to_ascii_lowercase().starts_with("location:")).unwrap();
    line.split_once(':').unwrap().1.trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_guards_its_door_shows_the_intent_and_settles_through_the_agent() {
    let dir = std::env::temp_dir().join(format!("tc-console-{}", std::process::id()));
    let (log, key) = held_log(&dir).await;
    let options = Options { by: "ops <alice>".into(), ..Options::default() };
    let running = Console::bind(&dir.join("attempts.log"), options).await.unwrap();
    let (addr, url) = (running.addr, running.url.clone());
    let console_token = running.console().login_token().unwrap().to_owned();
    tokio::spawn(running.serve());
    let host = addr.to_string();

    // A wrong Host (DNS rebinding) is refused; no cookie gets the token prompt; a wrong token too.
    assert_eq!(send(addr, get("evil.example", "/", None)).await.status, 403);
    let prompt = send(addr, get(&host, "/", None)).await;
    assert_eq!(prompt.status, 401);
    assert!(prompt.body.contains("needs its token"), "{}", prompt.body);
    assert_eq!(send(addr, get(&host, "/login?token=nope", None)).await.status, 401);
    let cookie = login(addr, &url).await;
    // What an action said is the console's own, kept in the session: a link's `?said=` shows nothing.
    let planted =
        send(addr, get(&host, "/?said=The+first+refund+was+reversed%3A+safe+to+approve", Some(&cookie)))
            .await;
    assert_eq!(planted.status, 200);
    assert!(
        !planted.body.contains("safe to approve") && !planted.body.contains("reversed"),
        "{}",
        planted.body
    );

    // The overview lists the intent in doubt; names are escaped.
    let overview = send(addr, get(&host, "/", Some(&cookie))).await;
    assert_eq!(overview.status, 200);
    assert!(overview.body.contains("In doubt: 1") && overview.body.contains(&key), "{}", overview.body);
    assert!(overview.body.contains("ticket-&lt;b&gt;7&lt;/b&gt;") && !overview.body.contains("<b>7</b>"));
    let found = send(addr, get(&host, &format!("/?q={}", &key[..8]), Some(&cookie))).await;
    assert!(found.body.contains("Found for"), "{}", found.body);
    let page = send(addr, get(&host, &format!("/intent/{key}"), Some(&cookie))).await;
    assert!(page.body.contains("<svg") && page.body.contains("name=\"evidence\""), "{}", page.body);
    assert!(
        page.body.contains("name=\"attempt\" value=\"1\""),
        "the form names the attempt shown: {}",
        page.body
    );
    assert!(page.body.contains("A file log records when each attempt started, not when it ended"));

    // A form from another origin (another port of 127.0.0.1), or with no origin at all, is refused.
    let path = format!("/intent/{key}/settle");
    // A `not_landed` is judged by when the page showed the attempt: a form that does not say is refused.
    let unsaid = "attempt=1&verdict=not_landed&evidence=gone";
    let refused = send(addr, post(&host, &path, &cookie, Some(&format!("http://{host}")), unsaid)).await;
    let told = send(addr, get(&host, &location(&refused), Some(&cookie))).await;
    assert!(told.body.contains("does not say when its page showed"), "{}", told.body);
    // That page's address shows its words to this session alone.
    let other = login(addr, &format!("?token={}", console_token)).await;
    let elsewhere = send(addr, get(&host, &location(&refused), Some(&other))).await;
    assert!(!elsewhere.body.contains("does not say when"), "{}", elsewhere.body);
    let form = format!(
        "attempt=1&verdict=not_landed&evidence=%3Cscript%3Ealert(1)%3C%2Fscript%3E+not+in+thread-9&shown={}",
        shown(&page.body)
    );
    let form = form.as_str();
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
        log.recall_now(&tool_contract::IntentKey::parse(&key).unwrap()).unwrap().settlement().is_none(),
        "nothing settled so far"
    );

    // From its own page: settled through the agent holding the log.
    let done = send(addr, post(&host, &path, &cookie, Some(&format!("http://{host}")), form)).await;
    assert_eq!(done.status, 303, "{}", done.head);
    // Given right after the attempt, the word is told it comes early: the next call probes again
    // once the attempt could no longer land by the default horizon (this tool declares none).
    let told = send(addr, get(&host, &location(&done), Some(&cookie))).await;
    assert!(told.body.contains("Note: attempt 1 could still land until"), "{}", told.body);
    let recall = log.recall_now(&tool_contract::IntentKey::parse(&key).unwrap()).unwrap();
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
    let form = "attempt=1&verdict=landed&evidence=seen";
    let refused = send(
        addr,
        post(&host, &format!("/intent/{key}/settle"), &cookie, Some(&format!("http://{host}")), form),
    )
    .await;
    assert_eq!(refused.status, 403);
    assert!(log.recall_now(&tool_contract::IntentKey::parse(&key).unwrap()).unwrap().is_unresolved());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_remote_address_needs_a_token_of_ones_own() {
    let options = Options { listen: "0.0.0.0:0".parse().unwrap(), ..Options::default() };
    let refused = Console::bind(std::path::Path::new("/nonexistent.log"), options).await;
    assert!(refused.err().is_some_and(|why| why.contains("--allow-remote")));
}

/// The settle form names the attempt its page showed. A form with none settles nothing; a form about
/// attempt 1 posted after the agent made attempt 2 (which ended in doubt too) is refused, naming
/// attempt 2, and nothing is recorded on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_about_an_attempt_that_is_no_longer_the_last_settles_nothing() {
    let dir = std::env::temp_dir().join(format!("tc-console-stale-{}", std::process::id()));
    let (log, key) = held_log(&dir).await;
    let intent = tool_contract::IntentKey::parse(&key).unwrap();
    let running = Console::bind(&dir.join("attempts.log"), Options::default()).await.unwrap();
    let (addr, url) = (running.addr, running.url.clone());
    tokio::spawn(running.serve());
    let (host, cookie) = (addr.to_string(), login(addr, &url).await);
    let (path, origin) = (format!("/intent/{key}/settle"), format!("http://{host}"));
    let bare =
        send(addr, post(&host, &path, &cookie, Some(&origin), "verdict=not_landed&evidence=gone")).await;
    let said = send(addr, get(&host, &location(&bare), Some(&cookie))).await.body;
    assert!(said.contains("names no attempt"), "{said}");
    assert!(log.recall_now(&intent).unwrap().settlement().is_none());
    // Attempt 1 settled not landed; the agent makes attempt 2, lost again.
    let page = send(addr, get(&host, &format!("/intent/{key}"), Some(&cookie))).await;
    let form =
        format!("attempt=1&verdict=not_landed&evidence=nothing+in+thread-9&shown={}", shown(&page.body));
    let form = form.as_str();
    assert_eq!(send(addr, post(&host, &path, &cookie, Some(&origin), form)).await.status, 303);
    let task = Task::new("ticket-<b>7</b>", "agent", Duration::from_secs(30)).journal(log.clone());
    let second = post_notice(&task, "thread-9", true).await;
    assert!(second.attempt_id.ends_with("-a2"), "{}", second.attempt_id);
    // The same form again (a second tab, a resubmission): about attempt 1, refused, naming attempt 2.
    let stale = send(addr, post(&host, &path, &cookie, Some(&origin), form)).await;
    let said = send(addr, get(&host, &location(&stale), Some(&cookie))).await.body;
    assert!(said.contains("Not settled") && said.contains("but attempt 2 ("), "{said}");
    let last = log.recall_now(&intent).unwrap().last;
    assert_eq!((last.phase, last.attempt), (Phase::End, 2), "nothing recorded on attempt 2");
    let _ = std::fs::remove_dir_all(&dir);
}

static REFUND_ATTEMPTS: AtomicU32 = AtomicU32::new(0);

/// Refund an order: the bank refuses each order's first attempt (`503`, nothing paid).
// A person's word, given right after the attempt, is the story here: with no landing horizon to
// wait for, it counts at once.
#[tool(effect = "money", target = order, probe = find_refund, horizon = "0s")]
async fn refund(order: &str) -> Result<u64, Class> {
    if REFUND_ATTEMPTS.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
        Err(Class::retryable("503 from the bank"))
    } else {
        Ok(7700)
    }
}

async fn find_refund(_order: &&str, _key: tool_contract::IntentKey) -> Probe<u64> {
    Probe::NotLanded
}

/// The overview, once it shows `needle` (an agent's question arrives in the log a moment after the
/// call starts).
async fn overview_with(addr: std::net::SocketAddr, cookie: &str, needle: &str) -> String {
    let host = addr.to_string();
    let mut body = String::new();
    for _ in 0..100 {
        body = send(addr, get(&host, "/", Some(cookie))).await.body;
        if body.contains(needle) {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the overview never showed {needle:?}: {body}");
}

/// The first intent a page links to: on the overview, the oldest question waiting.
fn first_key(body: &str) -> String {
    let at = body.find("/intent/").expect("a link to an intent") + "/intent/".len();
    body[at..at + 32].to_owned()
}

/// Issue 25: approving or denying a pending `money` retry from the console. The agent holds the log
/// and waits (`LogApprover`); the console, reading the same file, lists the question and answers it
/// through the agent; the answer is journaled with who and why, and counts once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_money_retry_waits_for_the_console_and_counts_one_answer() {
    use tool_contract::journal::ApprovalStep;
    let dir = std::env::temp_dir().join(format!("tc-console-approve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("attempts.log");
    let log = Arc::new(FileJournal::open(&path).unwrap());
    let task = Task::new("ticket-12", "agent", Duration::from_secs(60))
        .journal(log.clone())
        .approver(tool_contract::person::LogApprover::new(log.clone()).wait(Duration::from_secs(30)));
    let running =
        Console::bind(&path, Options { by: "ops-alice".into(), ..Options::default() }).await.unwrap();
    let (addr, url) = (running.addr, running.url.clone());
    tokio::spawn(running.serve());
    let read_only = Console::bind(&path, Options { read_only: true, ..Options::default() }).await.unwrap();
    let (ro_addr, ro_url) = (read_only.addr, read_only.url.clone());
    tokio::spawn(read_only.serve());
    let (host, cookie) = (addr.to_string(), login(addr, &url).await);
    let origin = format!("http://{host}");

    // Approved: the call goes on to attempt 2, once.
    let call = tokio::spawn({
        let task = task.clone();
        async move { refund(&task, "order-1").await }
    });
    let body = overview_with(addr, &cookie, "Waiting for approval: 1").await;
    let key = first_key(&body);
    assert!(body.contains(&key) && body.contains("503 from the bank"), "{body}");
    assert!(body.contains("name=\"attempt\" value=\"2\""), "the form names the attempt it approves: {body}");
    let path_of = format!("/intent/{key}/approval");
    let form = "attempt=2&decision=approve&why=the+bank+shows+no+charge";
    assert_eq!(
        send(addr, post(&host, &path_of, &cookie, Some("http://127.0.0.1:1"), form)).await.status,
        403
    );
    let ro_cookie = login(ro_addr, &ro_url).await;
    let ro_host = ro_addr.to_string();
    let ro_page = overview_with(ro_addr, &ro_cookie, "Waiting for approval: 1").await;
    let forms = ro_page.matches("method=\"post\"").count();
    assert!(
        forms == 1 && ro_page.contains("/logout\""),
        "a read-only console shows no form but logging out: {ro_page}"
    );
    let refused =
        send(ro_addr, post(&ro_host, &path_of, &ro_cookie, Some(&format!("http://{ro_host}")), form)).await;
    assert_eq!(refused.status, 403);
    let done = send(addr, post(&host, &path_of, &cookie, Some(&origin), form)).await;
    assert_eq!(done.status, 303, "{}", done.head);
    let told = send(addr, get(&host, &location(&done), Some(&cookie))).await.body;
    assert!(told.contains("Answered"), "{told}");
    let report = call.await.unwrap();
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(7700)), "{}", report.message);
    assert_eq!(REFUND_ATTEMPTS.load(Ordering::SeqCst), 2, "one refused attempt, one approved");
    // A second answer to the same question is told the first counts.
    let again = send(addr, post(&host, &path_of, &cookie, Some(&origin), form)).await;
    let told = send(addr, get(&host, &location(&again), Some(&cookie))).await.body;
    assert!(told.contains("Not answered"), "{told}");
    overview_with(addr, &cookie, "Waiting for approval: 0").await;

    // Denied: the call stops with the operator's reason, and makes no second attempt.
    let call = tokio::spawn({
        let task = task.clone();
        async move { refund(&task, "order-2").await }
    });
    let key2 = first_key(&overview_with(addr, &cookie, "Waiting for approval: 1").await);
    assert_ne!(key, key2);
    let deny = "attempt=2&decision=deny&why=refunded+by+hand+%3Cb%3Eyesterday%3C%2Fb%3E";
    let done =
        send(addr, post(&host, &format!("/intent/{key2}/approval"), &cookie, Some(&origin), deny)).await;
    assert_eq!(done.status, 303, "{}", done.head);
    let report = call.await.unwrap();
    assert_eq!(report.reason, tool_contract::Reason::Denied, "{}", report.message);
    assert!(
        report.message.contains("ops-alice said no: refunded by hand <b>yesterday</b>"),
        "{}",
        report.message
    );
    assert_eq!(REFUND_ATTEMPTS.load(Ordering::SeqCst), 3, "no attempt after a no");
    let page = send(addr, get(&host, &format!("/intent/{key2}"), Some(&cookie))).await.body;
    assert!(page.contains("denied by ops-alice") && page.contains("&lt;b&gt;yesterday"), "{page}");

    // Journaled: each question and each answer is a line, with who and why.
    drop(task);
    let records = tool_contract::journal::read_log(&path).unwrap().records;
    let steps: Vec<(ApprovalStep, String)> =
        records.iter().filter_map(|r| r.approval.as_ref().map(|n| (n.step, n.by.clone()))).collect();
    assert_eq!(steps.len(), 4, "{steps:?}");
    assert_eq!(steps[1], (ApprovalStep::Approved, "ops-alice".to_owned()));
    assert_eq!(steps[3], (ApprovalStep::Denied, "ops-alice".to_owned()));
    let start = records.iter().find(|r| r.phase == Phase::Start && r.attempt == 2).unwrap();
    assert_eq!(
        start.message.as_deref(),
        Some("approved by ops-alice (the bank shows no charge) before attempt 2")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
