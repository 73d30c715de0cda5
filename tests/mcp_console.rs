//! The operator console mounted at `/console` beside the MCP endpoint of the server's HTTP mode: its
//! own guards, its pages under the path, and the MCP endpoint left as it was.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tool_contract::{FileJournal, Toolbox};
use tool_contract_mcp::McpServer;
use tool_contract_mcp::http::HttpOptions;

async fn send(addr: std::net::SocketAddr, raw: String) -> (u16, String, String) {
    send_from("127.0.0.1", addr, raw).await
}

/// `raw` sent from the local address `from` (any of 127.0.0.0/8 is this host on Linux).
async fn send_from(from: &str, addr: std::net::SocketAddr, raw: String) -> (u16, String, String) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

fn get(host: &str, path: &str, cookie: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n")
}

/// The login form the console's page posts, with `form` (`ticket=...` or `token=...`).
fn login(host: &str, form: &str) -> String {
    format!(
        "POST /console/login HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nContent-Type: \
         application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_is_mounted_beside_the_mcp_endpoint() {
    let dir = std::env::temp_dir().join(format!("tc-mcp-console-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = Arc::new(FileJournal::open(dir.join("attempts.log")).unwrap());
    let server = McpServer::builder(Toolbox::new())
        .journal(log.clone())
        .budget(Duration::from_secs(10))
        .build()
        .unwrap();
    let options = HttpOptions::default().addr("127.0.0.1:0".parse().unwrap()).bearer_token("mcp-secret");
    let mut http = server.bind_http(options).await.unwrap();
    let url = http.console(&dir.join("attempts.log"), tool_contract_console::Options::default()).unwrap();
    let addr = http.local_addr().unwrap();
    tokio::spawn(http.serve());
    let host = addr.to_string();
    assert!(url.starts_with(&format!("http://{host}/console/login?ticket=")), "{url}");

    // The console's own door: no cookie, the prompt (no bearer token asked); the token, a cookie for /console/.
    let (status, _, body) = send(addr, get(&host, "/console/", "")).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("needs its token") && body.contains("action=\"/console/login\""), "{body}");
    let (status, head, _) = send(addr, login(&host, url.split_once('?').unwrap().1)).await;
    assert_eq!(status, 303, "{head}");
    assert!(head.contains("Path=/console/") && head.contains("location: /console/"), "{head}");
    let cookie = head.lines().find(|l| l.starts_with("set-cookie:")).unwrap()[12..]
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, _, body) = send(addr, get(&host, "/console/", &cookie)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Attempt log") && body.contains("href=\"/console/\""), "{body}");
    // A wrong Host is refused by the console too.
    assert_eq!(send(addr, get("evil.example", "/console/", &cookie)).await.0, 403);
    // The MCP endpoint still wants its bearer token; a path beside the console's is not the console.
    assert_eq!(send(addr, get(&host, "/mcp", "")).await.0, 401);
    assert_eq!(send(addr, get(&host, "/consoles", &cookie)).await.0, 404);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_over_the_mount_are_counted_per_client() {
    let dir = std::env::temp_dir().join(format!("tc-mcp-console-limit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("attempts.log"), "").unwrap();
    let server = McpServer::builder(Toolbox::new()).budget(Duration::from_secs(10)).build().unwrap();
    let options = HttpOptions::default().addr("127.0.0.1:0".parse().unwrap());
    let mut http = server.bind_http(options).await.unwrap();
    http.console(&dir.join("attempts.log"), tool_contract_console::Options::default()).unwrap();
    let addr = http.local_addr().unwrap();
    tokio::spawn(http.serve());
    let host = addr.to_string();
    // A local account fails six times from 127.0.0.2: its sixth is held back.
    for _ in 0..5 {
        assert_eq!(send_from("127.0.0.2", addr, login(&host, "token=guess")).await.0, 401);
    }
    assert_eq!(send_from("127.0.0.2", addr, login(&host, "token=guess")).await.0, 429);
    // The operator, another client of the same server, is not.
    let started = std::time::Instant::now();
    assert_eq!(send(addr, login(&host, "token=my-typo")).await.0, 401);
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "not slowed by another's failures");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_is_not_mounted_on_plain_http_away_from_loopback() {
    let dir = std::env::temp_dir().join(format!("tc-mcp-console-remote-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("attempts.log"), "").unwrap();
    let server = McpServer::builder(Toolbox::new()).budget(Duration::from_secs(10)).build().unwrap();
    let options = HttpOptions::default().addr("0.0.0.0:0".parse().unwrap()).bearer_token("mcp-secret");
    let mut http = server.bind_http(options).await.unwrap();
    let console = tool_contract_console::Options {
        allow_remote: true,
        token: Some("a-token-of-our-own-0123".into()),
        hosts: vec!["agents.example".into()],
        ..tool_contract_console::Options::default()
    };
    let refused = http.console(&dir.join("attempts.log"), console).unwrap_err();
    assert!(refused.contains("plain HTTP") && refused.contains("in the clear"), "{refused}");
    let _ = std::fs::remove_dir_all(&dir);
}
