//! The six scenarios over real HTTP on 127.0.0.1: a reqwest client against the loopback fake, whose
//! faults happen at the socket (a connection closed after the effect was applied, a reply held back).
//! Real clock, short figures ([`Timing::REAL`]).

use std::time::Duration;

use tool_contract::reqwest::{RequestBuilderExt, read};
use tool_contract::testing::http::LoopbackServer;
use tool_contract::testing::{Conformance, FakeService, Scenario, Timing, Verdict};
use tool_contract::{Body, Class, EffectKind, Item, Probe, Report, Task, ToolSpec, engine};

const FLOOR: Duration = Duration::from_secs(1);

fn error_body(bytes: &[u8]) -> Body {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else { return Body::Fine };
    match value.pointer("/error/kind").and_then(|k| k.as_str()) {
        Some("permanent") => Body::PermanentError(value["error"]["message"].to_string()),
        Some(_) => Body::RetryableError(value["error"]["message"].to_string()),
        None => Body::Fine,
    }
}

fn id_of(bytes: &[u8]) -> Result<u64, Class> {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v["id"].as_u64())
        .ok_or_else(|| Class::unknown("a 200 without an id: cannot tell what was created"))
}

async fn lookup(client: &reqwest::Client, base: &str, key: tool_contract::IntentKey) -> Probe<u64> {
    loop {
        let got = client.get(format!("{base}/effects/{key}")).send().await;
        match got.map(|r| r.status().as_u16()) {
            Ok(202) => tokio::time::sleep(Duration::from_millis(100)).await,
            Ok(404) => return Probe::NotLanded,
            Ok(200) => {
                let got = client.get(format!("{base}/effects/{key}")).send().await;
                let bytes = match got {
                    Ok(r) => r.bytes().await.map(|b| b.to_vec()).unwrap_or_default(),
                    Err(e) => return Probe::Failed(e.to_string()),
                };
                return id_of(&bytes).map_or_else(|c| Probe::Failed(c.message().to_owned()), Probe::Landed);
            }
            Ok(status) => return Probe::Failed(format!("lookup answered {status}")),
            Err(e) => return Probe::Failed(e.to_string()),
        }
    }
}

async fn post(kind: EffectKind, task: Task, service: FakeService) -> Report<u64> {
    let server = LoopbackServer::start(service).await.expect("a loopback port");
    let (base, client) = (server.url(), reqwest::Client::new());
    let spec = ToolSpec::new("post_notice", kind).deadline_floor(FLOOR);
    let key = task.key(&spec, &"thread-9", None);
    engine::run(
        &task,
        &spec,
        key,
        |call| {
            let sent = client.post(format!("{base}/effects")).idempotency_key(&call).body("notice").send();
            async move { id_of(&read(kind, sent.await, error_body).await?) }
        },
        |key| lookup(&client, &base, key),
    )
    .await
}

async fn write_rows(kind: EffectKind, task: Task, service: FakeService, rows: Vec<String>) -> Report<()> {
    let server = LoopbackServer::start(service).await.expect("a loopback port");
    let (base, client) = (server.url(), reqwest::Client::new());
    let spec = ToolSpec::new("write_rows", kind).deadline_floor(FLOOR);
    let key = task.key(&spec, &"sheet-1", None);
    engine::run_bulk(
        &task,
        &spec,
        key,
        rows,
        |call, rows: Vec<String>| {
            let body = serde_json::json!({ "items": rows }).to_string();
            let sent = client.post(format!("{base}/batch")).idempotency_key(&call).body(body).send();
            async move {
                let bytes = read(kind, sent.await, error_body).await?;
                let value: serde_json::Value = serde_json::from_slice(&bytes)
                    .map_err(|e| Class::unknown(format!("unreadable batch reply: {e}")))?;
                let items = value["items"].as_array().cloned().unwrap_or_default();
                Ok::<_, Class>(
                    items
                        .iter()
                        .map(|i| {
                            let id = i["id"].as_str().unwrap_or_default().to_owned();
                            let reason = i["reason"].as_str().unwrap_or_default().to_owned();
                            match i["status"].as_str() {
                                Some("applied") => Item::ok(id),
                                Some("rejected") => Item::permanent(id, reason),
                                _ => Item::retryable(id, reason),
                            }
                        })
                        .collect(),
                )
            }
        },
        |key: tool_contract::IntentKey, rows: Vec<String>| {
            let body = serde_json::json!({ "items": rows }).to_string();
            let sent = client
                .post(format!("{base}/batch/lookup"))
                .header("Idempotency-Key", key.to_string())
                .body(body)
                .send();
            async move {
                let found = match sent.await {
                    Ok(r) if r.status().is_success() => r.json_value().await,
                    Ok(r) => Err(format!("lookup answered {}", r.status())),
                    Err(e) => Err(e.to_string()),
                };
                let found = found.map(|v| {
                    v["items"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .map(|i| {
                                    (i["id"].as_str().unwrap_or_default().to_owned(), i["landed"] == true)
                                })
                                .collect()
                        })
                        .unwrap_or_default()
                });
                tool_contract::testing::batch_probe(found, &rows)
            }
        },
    )
    .await
}

trait JsonValue {
    async fn json_value(self) -> Result<serde_json::Value, String>;
}

impl JsonValue for reqwest::Response {
    async fn json_value(self) -> Result<serde_json::Value, String> {
        let bytes = self.bytes().await.map_err(|e| e.to_string())?;
        serde_json::from_slice(&bytes).map_err(|e| e.to_string())
    }
}

fn assert_pass(verdicts: &[Verdict]) {
    for v in verdicts {
        assert!(v.pass, "{}: {v:?}", v.scenario);
    }
}

#[tokio::test]
async fn send_passes_the_six_over_http() {
    let kind = EffectKind::Send;
    let verdicts = Conformance::new(kind, move |t, s| post(kind, t, s))
        .bulk(move |t, s, rows| write_rows(kind, t, s, rows))
        .timing(Timing::REAL)
        .run()
        .await;
    assert_pass(&verdicts);
    assert_eq!(verdicts.len(), 6);
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
