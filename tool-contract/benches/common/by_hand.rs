//! Row 1's baseline: the same `ok` read written by hand, without the contract (shared by the bench
//! and `examples/row1_instructions.rs`).

use std::hint::black_box;

use backon::{ExponentialBuilder, Retryable};
use serde::Serialize;
use sha2::{Digest, Sha256};
use tool_contract::{Class, Outcome};

/// The tool's body, shared by every variant.
pub fn price(sku: &str) -> u64 {
    black_box(sku).len() as u64 + 4406
}

/// The same body, called bare.
pub async fn read_price_bare(sku: &'static str) -> Result<u64, Class> {
    Ok(price(sku))
}

/// The 6-field report the by-hand version serialises.
#[derive(Serialize)]
struct HandReport<'a> {
    outcome: &'static str,
    effect_applied: &'static str,
    attempt_id: &'a str,
    idempotency_key: &'a str,
    deadline_left_s: u64,
    message: &'a str,
}

/// What a careful author writes without the contract: the intent key with sha2, the call under
/// `tokio::time::timeout`, a backon retry, and a 6-field report serialised with serde_json.
pub async fn read_price_by_hand(
    task_id: &str,
    actor: &str,
    sku: &'static str,
    deadline: tokio::time::Instant,
) -> String {
    let mut hasher = Sha256::new();
    for part in [task_id, "|", actor, "|", "read_price", "|", sku, "|"] {
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    let mut hex = [0u8; 32];
    for (i, b) in digest[..16].iter().enumerate() {
        hex[2 * i] = b"0123456789abcdef"[usize::from(b >> 4)];
        hex[2 * i + 1] = b"0123456789abcdef"[usize::from(b & 0xf)];
    }
    let key = std::str::from_utf8(&hex).unwrap_or_default();
    let mut attempts = 0u32;
    let value = (|| {
        attempts += 1;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        async move {
            match tokio::time::timeout(left, read_price_bare(sku)).await {
                Ok(done) => done,
                Err(_) => Err(Class::retryable("timed out")),
            }
        }
    })
    .retry(ExponentialBuilder::default().with_jitter().with_max_times(2))
    .sleep(tokio::time::sleep)
    .when(|class: &Class| class.outcome() == Outcome::Retryable)
    .await;
    let attempt_id = format!("{task_id}-{}-a{attempts}", &key[..8]);
    let message = format!("read_price done on attempt {attempts}");
    let report = HandReport {
        outcome: if value.is_ok() { "ok" } else { "retryable" },
        effect_applied: "no",
        attempt_id: &attempt_id,
        idempotency_key: key,
        deadline_left_s: deadline.saturating_duration_since(tokio::time::Instant::now()).as_secs(),
        message: &message,
    };
    serde_json::to_string(&report).unwrap_or_default()
}
