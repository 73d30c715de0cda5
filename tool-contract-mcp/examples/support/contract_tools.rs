//! The contract's fixture tools (`contract/tools.json`), over HTTP against the fake service whose URL
//! `--contract-service` gives: what `contract/runner.py` calls to run the behaviour cases against this
//! server. Each sends its intent key as `Idempotency-Key`; each probe looks the key up.

use std::time::Duration;

use tool_contract::classify::Body;
use tool_contract::effect::EffectKind;
use tool_contract::reqwest::{RequestBuilderExt, read};
use tool_contract::{Call, Class, IntentKey, Item, Probe, Toolbox, tool};

/// The fixture tools, on one HTTP client.
pub struct ContractTools {
    client: reqwest::Client,
    base: String,
}

/// A `2xx` whose JSON carries `{"error": {"kind", "message"}}` is an error.
fn error_body(bytes: &[u8]) -> Body {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else { return Body::Fine };
    let message = value.pointer("/error/message").map(ToString::to_string).unwrap_or_default();
    match value.pointer("/error/kind").and_then(|k| k.as_str()) {
        Some("permanent") => Body::PermanentError(message),
        Some(_) => Body::RetryableError(message),
        None => Body::Fine,
    }
}

/// The `id` a single act answered with.
fn id_of(bytes: &[u8]) -> Result<u64, Class> {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v["id"].as_u64())
        .ok_or_else(|| Class::unknown("a 2xx without an id: cannot tell what was done"))
}

impl ContractTools {
    /// The tools, against the fake service at `base` (`http://127.0.0.1:PORT`).
    pub fn new(base: String) -> ContractTools {
        ContractTools { client: reqwest::Client::new(), base: base.trim_end_matches('/').to_owned() }
    }

    /// One single act of `kind` on `target`.
    async fn act(&self, kind: EffectKind, call: &Call, target: &str) -> Result<u64, Class> {
        let body = serde_json::json!({ "target": target }).to_string();
        let sent = self.client.post(format!("{}/effects", self.base)).for_call(call).body(body).send().await;
        id_of(&read(kind, sent, error_body).await?)
    }

    /// Whether the act carrying `key` landed, waiting out one still being processed.
    async fn look(&self, key: IntentKey) -> Probe<u64> {
        loop {
            let got = self.client.get(format!("{}/effects/{key}", self.base)).send().await;
            let response = match got {
                Ok(response) => response,
                Err(e) => return Probe::Failed(e.to_string()),
            };
            match response.status().as_u16() {
                202 => tokio::time::sleep(Duration::from_millis(100)).await,
                404 => return Probe::NotLanded,
                200 => {
                    let bytes = response.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
                    return id_of(&bytes)
                        .map_or_else(|c| Probe::Failed(c.message().to_owned()), Probe::Landed);
                }
                status => return Probe::Failed(format!("the lookup answered {status}")),
            }
        }
    }

    /// Post a notice to `target`.
    #[tool(effect = "send", probe = Self::landed, target = target, deadline_floor = "1s")]
    pub async fn contract_send(
        &self,
        call: &Call,
        /// The thread.
        target: String,
    ) -> Result<u64, Class> {
        self.act(EffectKind::Send, call, &target).await
    }

    /// Open a ticket for `target`; only the probe deduplicates.
    #[tool(effect = "create", probe = Self::landed, target = target, deadline_floor = "1s")]
    pub async fn contract_create(
        &self,
        call: &Call,
        /// The subject.
        target: String,
    ) -> Result<u64, Class> {
        self.act(EffectKind::Create, call, &target).await
    }

    /// Create an order for `target` at a service that keeps idempotency keys for 60 s; no probe.
    #[tool(effect = "create", dedupe = "receiver", key_lifetime = "60s", target = target, deadline_floor = "1s")]
    pub async fn contract_create_keyed(
        &self,
        call: &Call,
        /// The cart.
        target: String,
    ) -> Result<u64, Class> {
        self.act(EffectKind::Create, call, &target).await
    }

    /// Refund `target`.
    #[tool(effect = "money", probe = Self::landed, target = target, deadline_floor = "1s")]
    pub async fn contract_money(
        &self,
        call: &Call,
        /// The order.
        target: String,
    ) -> Result<u64, Class> {
        self.act(EffectKind::Money, call, &target).await
    }

    /// Delete `target`.
    #[tool(effect = "destructive", probe = Self::landed, target = target, deadline_floor = "1s")]
    pub async fn contract_destructive(
        &self,
        call: &Call,
        /// The record.
        target: String,
    ) -> Result<u64, Class> {
        self.act(EffectKind::Destructive, call, &target).await
    }

    /// Read `target`.
    #[tool(effect = "read", target = target)]
    pub async fn contract_read(
        &self,
        call: &Call,
        /// The item.
        target: String,
    ) -> Result<u64, Class> {
        self.act(EffectKind::Read, call, &target).await
    }

    /// Send one message per row of `rows`.
    #[tool(effect = "send", probe = Self::rows_landed, bulk = rows, deadline_floor = "1s")]
    pub async fn contract_rows(
        &self,
        call: &Call,
        /// The rows.
        rows: Vec<String>,
    ) -> Result<Vec<Item>, Class> {
        let body = serde_json::json!({ "items": rows }).to_string();
        let sent = self.client.post(format!("{}/batch", self.base)).for_call(call).body(body).send().await;
        let bytes = read(EffectKind::Send, sent, error_body).await?;
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| Class::unknown(format!("an unreadable batch answer: {e}")))?;
        Ok(value["items"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
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
            .collect())
    }

    /// Whether the single act carrying `key` landed.
    #[allow(clippy::ptr_arg)]
    async fn landed(&self, _target: &String, key: IntentKey) -> Probe<u64> {
        self.look(key).await
    }

    /// Which rows of the batch carrying `key` landed.
    async fn rows_landed(&self, rows: Vec<String>, key: IntentKey) -> Vec<Item> {
        let body = serde_json::json!({ "items": rows }).to_string();
        let sent = self
            .client
            .post(format!("{}/batch/lookup", self.base))
            .header("Idempotency-Key", key.to_string())
            .body(body)
            .send()
            .await;
        let found = match sent {
            Ok(response) if response.status().is_success() => response.bytes().await.ok(),
            _ => None,
        };
        let found = found.and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
        let Some(found) = found else {
            return rows.into_iter().map(|row| Item::unknown(row, "the batch lookup failed")).collect();
        };
        let landed = |row: &str| {
            found["items"]
                .as_array()
                .is_some_and(|items| items.iter().any(|i| i["id"] == row && i["landed"] == true))
        };
        rows.into_iter()
            .map(|row| {
                if landed(&row) {
                    Item::ok(row)
                } else {
                    Item { applied: tool_contract::Applied::No, ..Item::retryable(row, "not found") }
                }
            })
            .collect()
    }
}

/// Add the fixture tools, against the fake service at `base`, to `toolbox`.
pub fn add(toolbox: &mut Toolbox, base: String) -> Result<(), tool_contract::toolbox::DuplicateTool> {
    let tools = std::sync::Arc::new(ContractTools::new(base));
    toolbox.add_method(tools.clone(), ContractTools::contract_send_tool())?;
    toolbox.add_method(tools.clone(), ContractTools::contract_create_tool())?;
    toolbox.add_method(tools.clone(), ContractTools::contract_create_keyed_tool())?;
    toolbox.add_method(tools.clone(), ContractTools::contract_money_tool())?;
    toolbox.add_method(tools.clone(), ContractTools::contract_destructive_tool())?;
    toolbox.add_method(tools.clone(), ContractTools::contract_read_tool())?;
    toolbox.add_method(tools, ContractTools::contract_rows_tool())?;
    Ok(())
}
