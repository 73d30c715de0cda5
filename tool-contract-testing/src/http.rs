//! The fake service over real HTTP on 127.0.0.1, with faults injected at the socket.
//!
//! | request | answer |
//! |---|---|
//! | `POST /effects` with `Idempotency-Key` | `200 {"id": n}`, or the planned fault |
//! | `GET /effects/{key}` | `200 {"id": n}` landed, `202` in flight, `404` not found, `500` lookup failed |
//! | `POST /batch` with `Idempotency-Key`, body `{"items": ["a", ...]}` | `200 {"items": [{"id", "status", "reason"}]}` |
//! | `POST /batch/lookup` with `Idempotency-Key`, same body | `200 {"items": [{"id", "landed"}]}` |
//!
//! Faults at the socket: a lost reply closes the TCP connection after the effect is applied, without a
//! byte of response; a slow reply keeps the connection open while the service applies on its own
//! schedule; a refusal answers `503` before reading the body (a real "connection refused" needs no
//! listener at all, which a single port cannot show); a held request gets no answer, or a reset, and is
//! applied after the client closed its side; an error body is a `200` whose JSON says
//! `{"error": {"kind": "permanent" | "retryable", "message"}}`.

use std::net::SocketAddr;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::fake::{FakeService, ItemReply, Lookup, Reply, Transport};
use tool_contract::classify::Body;
use tool_contract::key::IntentKey;

/// A loopback HTTP server in front of a [`FakeService`]; stops when dropped.
#[derive(Debug)]
pub struct LoopbackServer {
    addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl LoopbackServer {
    /// Listen on an ephemeral port of 127.0.0.1.
    pub async fn start(service: FakeService) -> std::io::Result<LoopbackServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, service.clone()));
            }
        });
        Ok(LoopbackServer { addr, accept })
    }

    /// `http://127.0.0.1:{port}`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

struct Request {
    method: String,
    path: String,
    key: Option<String>,
    body: Vec<u8>,
}

async fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..head_end]).ok()?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let (mut length, mut key) = (0usize, None);
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().ok()?;
            } else if name.eq_ignore_ascii_case("idempotency-key") {
                key = Some(value.to_owned());
            }
        }
    }
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Request { method, path, key, body })
}

async fn respond(stream: &mut TcpStream, status: u16, headers: &[(&str, String)], body: &serde_json::Value) {
    let body = if body.is_null() { String::new() } else { body.to_string() };
    let mut out = format!("HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\n", reason(status));
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!("content-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()));
    let _ = stream.write_all(out.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn items_of(body: &[u8]) -> Option<Vec<String>> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    value.get("items")?.as_array()?.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

async fn serve(mut stream: TcpStream, service: FakeService) {
    let Some(request) = read_request(&mut stream).await else { return };
    let key = request.key.as_deref().and_then(|k| IntentKey::parse(k).ok());
    let path_key = request.path.strip_prefix("/effects/").and_then(|k| IntentKey::parse(k).ok());
    match (request.method.as_str(), request.path.as_str(), key, path_key) {
        ("POST", "/effects", Some(key), _) => {
            if let Some(answered) = until_closed(&mut stream, service.submit(key)).await {
                answer(&mut stream, answered).await;
            }
        }
        ("POST", "/batch", Some(key), _) => match items_of(&request.body) {
            Some(items) => {
                if let Some(answered) = until_closed(&mut stream, service.submit_batch(key, &items)).await {
                    answer(&mut stream, answered).await;
                }
            }
            None => respond(&mut stream, 400, &[], &json!({"error": "body must be {\"items\": [..]}"})).await,
        },
        ("POST", "/batch/lookup", Some(key), _) => match (items_of(&request.body), ()) {
            (Some(items), ()) => match service.lookup_items(key, &items) {
                Ok(found) => {
                    let items: Vec<_> =
                        found.into_iter().map(|(id, landed)| json!({"id": id, "landed": landed})).collect();
                    respond(&mut stream, 200, &[], &json!({ "items": items })).await;
                }
                Err(why) => respond(&mut stream, 500, &[], &json!({ "error": why })).await,
            },
            (None, ()) => {
                respond(&mut stream, 400, &[], &json!({"error": "body must be {\"items\": [..]}"})).await
            }
        },
        ("GET", _, _, Some(key)) => match service.lookup(key) {
            Ok(Lookup::Landed(id)) => respond(&mut stream, 200, &[], &json!({ "id": id })).await,
            Ok(Lookup::InFlight) => respond(&mut stream, 202, &[], &serde_json::Value::Null).await,
            Ok(Lookup::NotFound) => respond(&mut stream, 404, &[], &serde_json::Value::Null).await,
            Err(why) => respond(&mut stream, 500, &[], &json!({ "error": why })).await,
        },
        _ => {
            respond(&mut stream, 400, &[], &json!({"error": "unknown route or missing Idempotency-Key"}))
                .await
        }
    }
}

/// The service's answer, or `None` once the client closed its side first: the request is then dropped
/// as a server drops a request whose connection is gone (a held one is applied later all the same).
async fn until_closed<T>(stream: &mut TcpStream, work: impl std::future::Future<Output = T>) -> Option<T> {
    let mut byte = [0u8; 1];
    tokio::select! {
        biased;
        answered = work => Some(answered),
        _ = stream.read(&mut byte) => None,
    }
}

async fn answer(stream: &mut TcpStream, answer: Result<Reply, Transport>) {
    match answer {
        Ok(Reply::Done(id)) => respond(stream, 200, &[], &json!({ "id": id })).await,
        Ok(Reply::Items(items)) => {
            let items: Vec<_> = items
                .into_iter()
                .map(|(id, reply)| match reply {
                    ItemReply::Applied => json!({"id": id, "status": "applied", "reason": null}),
                    ItemReply::Rejected(why) => json!({"id": id, "status": "rejected", "reason": why}),
                    ItemReply::Deferred(why) => json!({"id": id, "status": "deferred", "reason": why}),
                })
                .collect();
            respond(stream, 200, &[], &json!({ "items": items })).await;
        }
        Ok(Reply::Status { status, retry_after, body }) => {
            let headers: Vec<(&str, String)> = retry_after.into_iter().map(|v| ("retry-after", v)).collect();
            let body = match body {
                Body::Fine => serde_json::Value::Null,
                Body::RetryableError(m) => json!({"error": {"kind": "retryable", "message": m}}),
                Body::PermanentError(m) => json!({"error": {"kind": "permanent", "message": m}}),
                other => panic!("the fake service has no reply body for {other:?}"),
            };
            respond(stream, status, &headers, &body).await;
        }
        // Applied, then the connection closes without a byte of response.
        Err(Transport::NoReply(_)) => {
            let _ = stream.shutdown().await;
        }
        Err(Transport::NotSent(_)) => respond(stream, 503, &[], &serde_json::Value::Null).await,
    }
}
