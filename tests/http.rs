//! The six scenarios and the held request over real HTTP on 127.0.0.1: a reqwest client against the loopback fake, whose
//! faults happen at the socket (a connection closed after the effect was applied, a reply held back).
//! Real clock, short figures ([`Timing::REAL`]).

use tool_contract::effect::EffectKind;
use tool_contract_testing::{Conformance, Scenario, Timing, Verdict};
use tool_contract_tests::http_tools::{post, write_rows};

fn assert_pass(verdicts: &[Verdict]) {
    for v in verdicts {
        assert!(v.pass, "{}: {v:?}", v.scenario);
    }
}

#[tokio::test]
async fn send_passes_the_six_and_the_held_request_over_http() {
    let kind = EffectKind::Send;
    let verdicts = Conformance::new(kind, move |t, s| post(kind, t, s))
        .bulk(move |t, s, rows| write_rows(kind, t, s, rows))
        .timing(Timing::REAL)
        .run()
        .await;
    assert_pass(&verdicts);
    assert_eq!(verdicts.len(), 7);
}

#[tokio::test]
async fn a_connection_closed_after_applying_is_unknown_until_probed() {
    let kind = EffectKind::Destructive;
    let verdict = Conformance::new(kind, move |t, s| post(kind, t, s))
        .timing(Timing::REAL)
        .run_one(Scenario::KillMidCall)
        .await;
    assert!(verdict.pass, "{verdict:?}");
    assert_eq!((verdict.attempts, verdict.effects_at_service), (1, 1));
}

/// A server on 127.0.0.1 that answers every request with `reply`, whole, and closes the connection.
async fn answering(reply: &'static str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = socket.write_all(reply.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    url
}

/// `read` on one request to a server that answers `reply`.
async fn read_reply(kind: EffectKind, reply: &'static str) -> Result<Vec<u8>, tool_contract::Class> {
    let url = answering(reply).await;
    let sent = reqwest::Client::new().post(url).body("order").send().await;
    tool_contract::reqwest::read(kind, sent, |_| tool_contract::classify::Body::Fine).await
}

#[tokio::test]
async fn a_replayed_answer_is_the_earlier_requests_and_a_replayed_failure_is_not_retried() {
    use tool_contract::{Applied, Outcome};
    let ok = "HTTP/1.1 201 Created\r\nIdempotent-Replayed: true\r\nContent-Length: 9\r\nConnection: close\r\n\r\n{\"id\":7}\n";
    assert_eq!(read_reply(EffectKind::Create, ok).await.unwrap(), b"{\"id\":7}\n");
    // The receiver replays the failure its first request met: a resend with the key meets it again.
    let failed = "HTTP/1.1 503 Service Unavailable\r\nidempotent-replayed: True\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let class = read_reply(EffectKind::Create, failed).await.unwrap_err();
    assert_eq!(class.outcome(), Outcome::Permanent, "{}", class.message());
    assert!(class.message().contains("replayed by the receiver"), "{}", class.message());
    // Without the header, the same 503 is worth retrying.
    let fresh = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let class = read_reply(EffectKind::Create, fresh).await.unwrap_err();
    assert_eq!((class.outcome(), class.effect()), (Outcome::Retryable, Applied::No), "{}", class.message());
    let replayed_no = "HTTP/1.1 503 Service Unavailable\r\nIdempotent-Replayed: false\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    assert_eq!(read_reply(EffectKind::Create, replayed_no).await.unwrap_err().outcome(), Outcome::Retryable);
}
