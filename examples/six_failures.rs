//! The main job: an agent's notice tools, written with `#[tool]` on a reqwest client, driven through the
//! six classic failures and a held request (applied by the service after the caller let go, which the
//! tool's landing horizon covers) against the loopback HTTP fake, with the embedded attempt log.
//!
//! ```text
//! cargo run --release --bin six-failures            # a table
//! cargo run --release --bin six-failures -- --json  # one JSON object per scenario
//! cargo run --release --bin six-failures -- --trace # the table, and every call's spans on stderr
//! cargo run --release --bin six-failures --features mcp -- --mcp  # each call through the MCP server
//! ```
//!
//! With `--mcp` every call of a scenario goes through an `McpServer` over the same tools, called by
//! rmcp's client over an in-memory pipe with the task named in the request's `_meta`: a server per
//! call, each sharing the task's attempt log and turns, as replicas or a restarted server would. The
//! verdicts must be the same.
//!
//! Exit code 0 only when all seven pass.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tool_contract::classify::Body;
use tool_contract::effect::EffectKind;
use tool_contract::reqwest::{RequestBuilderExt, read};
use tool_contract::{Call, Class, FileJournal, IntentKey, Item, Probe, Report, Task, tool};
use tool_contract_testing::http::LoopbackServer;
use tool_contract_testing::{Conformance, FakeService, Timing, Verdict};

/// A support desk's notice service, reached over HTTP.
struct Notices {
    http: reqwest::Client,
    base: String,
}

impl Notices {
    /// Post a notice to a support thread.
    #[tool(effect = "send", probe = Self::notice_landed, target = thread, deadline_floor = "1s")]
    async fn post_notice(&self, call: &Call, thread: String, text: String) -> Result<u64, Class> {
        let _ = thread;
        let sent = self.http.post(format!("{}/effects", self.base)).for_call(call).body(text).send().await;
        id_of(&read(EffectKind::Send, sent, error_body).await?)
    }

    /// Find the notice carrying `key`, waiting out a request the service is still processing.
    async fn notice_landed(&self, thread: &String, text: &String, key: IntentKey) -> Probe<u64> {
        let _ = (thread, text);
        loop {
            let sent = self.http.get(format!("{}/effects/{key}", self.base)).send().await;
            let response = match sent {
                Ok(response) => response,
                Err(err) => return Probe::Failed(format!("lookup failed: {err}")),
            };
            match response.status().as_u16() {
                202 => tokio::time::sleep(Duration::from_millis(100)).await,
                404 => return Probe::NotLanded,
                200 => {
                    return match response.bytes().await {
                        Ok(bytes) => {
                            id_of(&bytes).map_or_else(|c| Probe::Failed(c.to_string()), Probe::Landed)
                        }
                        Err(err) => Probe::Failed(format!("lookup reply cut short: {err}")),
                    };
                }
                status => return Probe::Failed(format!("lookup answered {status}")),
            }
        }
    }

    /// Send one invitation per recipient of a list.
    #[tool(effect = "send", probe = Self::invites_landed, target = list, bulk = recipients, deadline_floor = "1s")]
    async fn send_invites(
        &self,
        call: &Call,
        list: String,
        recipients: Vec<String>,
    ) -> Result<Vec<Item>, Class> {
        let _ = list;
        let body = serde_json::json!({ "items": recipients }).to_string();
        let sent = self.http.post(format!("{}/batch", self.base)).for_call(call).body(body).send().await;
        let bytes = read(EffectKind::Send, sent, error_body).await?;
        let reply: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| Class::unknown(format!("unreadable batch reply: {e}")))?;
        Ok(reply["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| {
                let id = item["id"].as_str().unwrap_or_default().to_owned();
                let reason = item["reason"].as_str().unwrap_or_default().to_owned();
                match item["status"].as_str() {
                    Some("applied") => Item::ok(id),
                    Some("rejected") => Item::permanent(id, reason),
                    _ => Item::retryable(id, reason),
                }
            })
            .collect())
    }

    /// Which of `recipients` got their invitation under `key`.
    async fn invites_landed(&self, list: &String, recipients: Vec<String>, key: IntentKey) -> Vec<Item> {
        let _ = list;
        let body = serde_json::json!({ "items": recipients }).to_string();
        let url = format!("{}/batch/lookup", self.base);
        let found = async {
            let response =
                self.http.post(url).header("Idempotency-Key", key.to_string()).body(body).send().await;
            let response = response.map_err(|e| e.to_string())?;
            if !response.status().is_success() {
                return Err(format!("lookup answered {}", response.status()));
            }
            let bytes = response.bytes().await.map_err(|e| e.to_string())?;
            let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
            Ok(value["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| (i["id"].as_str().unwrap_or_default().to_owned(), i["landed"] == true))
                .collect())
        };
        tool_contract_testing::batch_probe(found.await, &recipients)
    }
}

/// A `200` whose JSON carries `{"error": {"kind", "message"}}` is an error, whatever the status says.
fn error_body(bytes: &[u8]) -> Body {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else { return Body::Fine };
    let message = value.pointer("/error/message").and_then(|m| m.as_str()).unwrap_or("error").to_owned();
    match value.pointer("/error/kind").and_then(|k| k.as_str()) {
        Some("permanent") => Body::PermanentError(message),
        Some(_) => Body::RetryableError(message),
        None => Body::Fine,
    }
}

fn id_of(bytes: &[u8]) -> Result<u64, Class> {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v["id"].as_u64())
        .ok_or_else(|| Class::unknown("a 200 without an id: cannot tell what was created"))
}

async fn notices(service: FakeService) -> (LoopbackServer, Notices) {
    let server = LoopbackServer::start(service).await.unwrap_or_else(|e| {
        eprintln!("six-failures: cannot listen on 127.0.0.1: {e}");
        std::process::exit(2)
    });
    let client = Notices { http: reqwest::Client::new(), base: server.url() };
    (server, client)
}

async fn post(task: Task, service: FakeService) -> Report<u64> {
    let (_server, desk) = notices(service).await;
    desk.post_notice(&task, "thread-9".to_owned(), "your refund was sent".to_owned()).await
}

async fn invite(task: Task, service: FakeService, recipients: Vec<String>) -> Report<()> {
    let (_server, desk) = notices(service).await;
    desk.send_invites(&task, "launch-list".to_owned(), recipients).await
}

/// The same calls through the MCP server.
#[cfg(feature = "mcp")]
mod over_mcp {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, RequestMetaObject};
    use serde_json::{Map, Value, json};
    use tool_contract::{Report, Task, Toolbox};
    use tool_contract_mcp::{ACTOR_META_KEY, McpServer, TASK_META_KEY};
    use tool_contract_testing::FakeService;

    use super::{Notices, notices};

    /// One `tools/call` through a server of its own that shares `task`'s log, approver and turns.
    async fn call(task: &Task, desk: Notices, tool: &str, arguments: Value) -> Report<Value> {
        let desk = std::sync::Arc::new(desk);
        let mut toolbox = Toolbox::new();
        let added = toolbox
            .add_method(std::sync::Arc::clone(&desk), Notices::post_notice_tool())
            .and_then(|toolbox| toolbox.add_method(desk, Notices::send_invites_tool()));
        if let Err(error) = added {
            return refused(task, &error.to_string());
        }
        let server = match McpServer::builder(toolbox).like(task).budget(task.remaining()).build() {
            Ok(server) => server,
            Err(error) => return refused(task, &error.to_string()),
        };
        let (server_side, client_side) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_side).await {
                let _ = running.waiting().await;
            }
        });
        let client = match ().serve(client_side).await {
            Ok(client) => client,
            Err(error) => return refused(task, &format!("the MCP client did not connect: {error}")),
        };
        let Value::Object(arguments) = arguments else { return refused(task, "arguments are an object") };
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let meta = Map::from_iter([
            (TASK_META_KEY.to_owned(), json!(task.id())),
            (ACTOR_META_KEY.to_owned(), json!(task.actor())),
        ]);
        params.meta = Some(RequestMetaObject::from(meta));
        let result = client.call_tool(params).await;
        let _ = client.cancel().await;
        let report = result
            .map_err(|error| error.to_string())
            .and_then(|result| result.structured_content.ok_or_else(|| "no structured content".to_owned()))
            .and_then(|content| serde_json::from_value(content).map_err(|error| error.to_string()));
        report.unwrap_or_else(|why| refused(task, &format!("no report over MCP: {why}")))
    }

    /// A report that fails the scenario and says why: the MCP layer, not the tool, went wrong.
    fn refused(task: &Task, why: &str) -> Report<Value> {
        Report {
            outcome: tool_contract::Outcome::Permanent,
            effect_applied: tool_contract::Applied::Unknown,
            attempt_id: String::new(),
            idempotency_key: tool_contract::IntentKey::NONE,
            retry_after_s: None,
            deadline_left_s: task.remaining().as_secs(),
            message: why.to_owned(),
            value: None,
            items: Vec::new(),
            reason: tool_contract::Reason::Unrecorded,
        }
    }

    pub async fn post(task: Task, service: FakeService) -> Report<u64> {
        let (_server, desk) = notices(service).await;
        let arguments = json!({ "thread": "thread-9", "text": "your refund was sent" });
        call(&task, desk, "post_notice", arguments).await.map(|value| value.as_u64().unwrap_or_default())
    }

    pub async fn invite(task: Task, service: FakeService, recipients: Vec<String>) -> Report<()> {
        let (_server, desk) = notices(service).await;
        let arguments = json!({ "list": "launch-list", "recipients": recipients });
        call(&task, desk, "send_invites", arguments).await.map(|_| ())
    }
}

fn table(verdicts: &[Verdict]) {
    let probe = |v: &Verdict| match serde_json::to_value(v.probe) {
        Ok(serde_json::Value::String(mark)) => mark,
        _ => "-".to_owned(),
    };
    println!(
        "{:<20} {:<10} {:<8} {:>8} {:<10} {:>7}  {:<4}  expected",
        "scenario", "outcome", "effect", "attempts", "probe", "effects", "pass"
    );
    for v in verdicts {
        println!(
            "{:<20} {:<10} {:<8} {:>8} {:<10} {:>7}  {:<4}  {}",
            v.scenario,
            v.outcome.as_str(),
            v.effect_applied.as_str(),
            v.attempts,
            probe(v),
            v.effects_at_service,
            if v.pass { "yes" } else { "NO" },
            v.expected
        );
        if !v.pass {
            println!("{:<20} {}", "", v.detail);
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    const USAGE: &str = "usage: six-failures [--json | --trace] [--mcp]";
    let (mut json, mut mcp) = (false, false);
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--json" => json = true,
            "--trace" => {
                // Each span printed when it closes, with its fields: `execute_tool` per call, `attempt`
                // and `probe` inside it, and the events (waits, refusals, escalations, replays).
                tracing_subscriber::fmt()
                    .with_writer(std::io::stderr)
                    .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
                    .with_target(false)
                    .init();
            }
            "--mcp" if cfg!(feature = "mcp") => mcp = true,
            "--mcp" => {
                eprintln!(
                    "six-failures: --mcp needs the `mcp` feature: cargo run --release --bin six-failures --features mcp -- --mcp"
                );
                return ExitCode::from(2);
            }
            "--help" | "-h" => {
                println!(
                    "{USAGE}\n\nThe six classic failures and a held request against a notice tool over loopback HTTP; exit 0 when all pass."
                );
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("six-failures: unknown argument `{other}`\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let nonce =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let log_path = std::env::temp_dir().join(format!("six-failures-{}-{nonce}.jsonl", std::process::id()));
    let journal = match FileJournal::open(&log_path) {
        Ok(journal) => Arc::new(journal),
        Err(err) => {
            eprintln!("six-failures: cannot open the attempt log {}: {err}", log_path.display());
            return ExitCode::from(2);
        }
    };
    let verdicts = if mcp {
        run_over_mcp(journal).await
    } else {
        Conformance::new(EffectKind::Send, post)
            .bulk(invite)
            .timing(Timing::REAL)
            .journal(journal)
            .task_prefix("six-failures")
            .run()
            .await
    };
    if json {
        for v in &verdicts {
            let line = serde_json::json!({
                "scenario": v.scenario,
                "outcome": v.outcome,
                "effect_applied": v.effect_applied,
                "attempts": v.attempts,
                "probe": v.probe,
                "effects_at_service": v.effects_at_service,
                "expected": v.expected,
                "pass": v.pass,
            });
            println!("{line}");
        }
    } else {
        table(&verdicts);
        let passed = verdicts.iter().filter(|v| v.pass).count();
        println!("\n{passed} of {} scenarios pass", verdicts.len());
    }
    eprintln!("attempt log: {}", log_path.display());
    eprintln!(
        "read it:     cargo run -q -p tool-contract --features cli --bin tool-contract -- log {}",
        log_path.display()
    );
    if verdicts.iter().all(|v| v.pass) { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

#[cfg(feature = "mcp")]
async fn run_over_mcp(journal: Arc<FileJournal>) -> Vec<Verdict> {
    Conformance::new(EffectKind::Send, over_mcp::post)
        .bulk(over_mcp::invite)
        .timing(Timing::REAL)
        .journal(journal)
        .task_prefix("six-failures-mcp")
        .run()
        .await
}

#[cfg(not(feature = "mcp"))]
async fn run_over_mcp(_: Arc<FileJournal>) -> Vec<Verdict> {
    // Refused with the arguments already; kept whole rather than trusted to that.
    eprintln!("six-failures: --mcp needs the `mcp` feature");
    std::process::exit(2)
}
