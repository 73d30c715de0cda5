//! Hand-written tools over HTTP (reqwest), against the loopback fake: a single `send`/any-kind call on
//! `/effects` and a bulk call on `/batch`, each with its probe. Shared by the HTTP scenarios and the
//! crash scenarios' child process.

use std::time::Duration;

use tool_contract::classify::Body;
use tool_contract::effect::EffectKind;
use tool_contract::reqwest::{RequestBuilderExt, read};
use tool_contract::spec::ToolSpec;
use tool_contract::{Class, IntentKey, Item, Probe, Report, Task, engine};
use tool_contract_testing::FakeService;
use tool_contract_testing::http::LoopbackServer;

/// The floor of both tools.
pub const FLOOR: Duration = Duration::from_secs(1);

/// A `200` whose JSON carries `{"error": {"kind", "message"}}` is an error.
pub fn error_body(bytes: &[u8]) -> Body {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else { return Body::Fine };
    match value.pointer("/error/kind").and_then(|k| k.as_str()) {
        Some("permanent") => Body::PermanentError(value["error"]["message"].to_string()),
        Some(_) => Body::RetryableError(value["error"]["message"].to_string()),
        None => Body::Fine,
    }
}

/// The `id` of a created thing.
pub fn id_of(bytes: &[u8]) -> Result<u64, Class> {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v["id"].as_u64())
        .ok_or_else(|| Class::unknown("a 200 without an id: cannot tell what was created"))
}

/// Find the effect of `key`, waiting out a request in flight.
pub async fn lookup(client: &reqwest::Client, base: &str, key: IntentKey) -> Probe<u64> {
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

/// One call of the single-act tool, with a loopback server of its own in front of `service`.
pub async fn post(kind: EffectKind, task: Task, service: FakeService) -> Report<u64> {
    let server = LoopbackServer::start(service).await.expect("a loopback port");
    post_at(kind, &task, &reqwest::Client::new(), &server.url()).await
}

/// One call of the single-act tool against the server at `base`.
pub async fn post_at(kind: EffectKind, task: &Task, client: &reqwest::Client, base: &str) -> Report<u64> {
    let spec = ToolSpec::new("post_notice", kind).deadline_floor(FLOOR);
    let key = task.key(&spec, &"thread-9", None);
    engine::run(
        task,
        &spec,
        key,
        |call| {
            let sent = client.post(format!("{base}/effects")).idempotency_key(&call).body("notice").send();
            async move { id_of(&read(kind, sent.await, error_body).await?) }
        },
        |key| lookup(client, base, key),
    )
    .await
}

/// One call of the bulk tool, with a loopback server of its own in front of `service`.
pub async fn write_rows(kind: EffectKind, task: Task, service: FakeService, rows: Vec<String>) -> Report<()> {
    let server = LoopbackServer::start(service).await.expect("a loopback port");
    write_rows_at(kind, &task, &reqwest::Client::new(), &server.url(), rows).await
}

/// One call of the bulk tool against the server at `base`.
pub async fn write_rows_at(
    kind: EffectKind,
    task: &Task,
    client: &reqwest::Client,
    base: &str,
    rows: Vec<String>,
) -> Report<()> {
    let spec = ToolSpec::new("write_rows", kind).deadline_floor(FLOOR);
    let key = task.key(&spec, &"sheet-1", None);
    engine::run_bulk(
        task,
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
        |key: IntentKey, rows: Vec<String>| {
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
                tool_contract_testing::batch_probe(found, &rows)
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
