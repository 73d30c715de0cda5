//! The targets: each parser that reads what another party wrote.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tool_contract::classify::{self, Body, HttpReply, RetryAfter};
use tool_contract::effect::EffectKind;
use tool_contract::journal::{self, Recall};
use tool_contract::{Call, Class, FileJournal, IntentKey, Item, Probe, Task, Toolbox, tool};
use tool_contract_mcp::McpServer;

use crate::Target;
use crate::mutate::{self, Rng, RngExt, fnv};

/// The duration grammar of `#[tool]`, compiled here from the macro crate's own file.
#[path = "../../tool-contract-macros/src/duration.rs"]
#[allow(dead_code)]
mod duration;

/// The `tool-contract` command, compiled here from its own file so its argument parsing can be called.
#[path = "../../tool-contract/src/bin/tool-contract.rs"]
#[allow(dead_code, private_interfaces, clippy::all)]
mod cli;

/// Every target.
pub fn all() -> Vec<Box<dyn Target>> {
    vec![
        Box::new(RetryAfterHeader),
        Box::new(Durations),
        Box::new(LogBytes),
        Box::new(LogFile::new()),
        Box::new(ToolArguments::new()),
        Box::new(McpMeta::new()),
        Box::new(KeyCommand),
        Box::new(TraceParentHeader),
    ]
}

/// A directory of this process's own, distinct from every other one it asks for.
fn scratch_dir(what: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("tool-contract-fuzz-{what}-{}-{n}", std::process::id()))
}

fn signature(parts: &[u64]) -> u64 {
    let bytes: Vec<u8> = parts.iter().flat_map(|p| p.to_le_bytes()).collect();
    fnv(&bytes)
}

/// `Retry-After` values, delta-seconds or HTTP-dates, and the reply classification around them.
struct RetryAfterHeader;

impl Target for RetryAfterHeader {
    fn name(&self) -> &'static str {
        "retry_after"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        [
            "120",
            "0",
            " 7 ",
            "Wed, 21 Oct 2026 07:28:00 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "99999999999999999999999",
            "-1",
            "1.5",
            "soon",
            "",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
    }

    fn dictionary(&self) -> &'static [&'static [u8]] {
        &[b"GMT", b"Mon, ", b"Wed, ", b"Oct ", b"1994", b"9999", b"00:00:00", b"-", b"23:59:60"]
    }

    fn run(&mut self, input: &[u8]) -> u64 {
        let text = String::from_utf8_lossy(input);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        let cap = Duration::from_secs(600);
        let parsed = RetryAfter::parse(&text, now, cap);
        if let Some(wait) = parsed.wait() {
            assert!(wait <= cap, "a wait of {wait:?} passed the cap");
        }
        if let RetryAfter::Ignored(why) = &parsed {
            assert!(why.len() < 400, "the reason echoes the whole header: {} bytes", why.len());
        }
        let status =
            input.first().map_or(429, |b| [200, 408, 409, 429, 500, 502, 503, 504, 404][usize::from(*b) % 9]);
        let body = Body::Fine;
        let reply = HttpReply { status, retry_after: Some(&text), body: &body };
        let class = classify::http_at(EffectKind::Send, reply, now, cap);
        if let Some(wait) = class.as_ref().and_then(Class::wait) {
            assert!(wait <= cap, "a classified wait of {wait:?} passed the cap");
        }
        let kind = match parsed {
            RetryAfter::After(w) => 1 + w.as_secs().min(3),
            RetryAfter::Capped { .. } => 10,
            RetryAfter::Ignored(_) => 11,
            _ => 12,
        };
        signature(&[kind, u64::from(status), class.map_or(0, |c| c.outcome() as u64 + 1)])
    }
}

/// W3C `traceparent` values from a request's `_meta`: accepted only in their one shape, and then
/// written back byte for byte.
struct TraceParentHeader;

impl Target for TraceParentHeader {
    fn name(&self) -> &'static str {
        "traceparent"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
    }

    fn dictionary(&self) -> &'static [&'static [u8]] {
        &[b"-", b"00", b"ff", b"0000000000000000", b"4bf92f3577b34da6"]
    }

    fn run(&mut self, input: &[u8]) -> u64 {
        let text = String::from_utf8_lossy(input);
        let Some(parent) = tool_contract_mcp::trace::TraceParent::parse(&text) else { return 0 };
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let written = format!("{}-{}-{:02x}", hex(&parent.trace_id), hex(&parent.parent_id), parent.flags);
        assert_eq!(text.get(3..55), Some(written.as_str()), "`{text}` read as {parent:?}");
        assert!(parent.trace_id != [0; 16] && parent.parent_id != [0; 8], "`{text}`: a zero id accepted");
        assert!(!text.starts_with("ff"), "`{text}`: version ff accepted");
        1 + u64::from(parent.flags & 1) + 2 * u64::from(text.len() > 55)
    }
}

/// `deadline_floor`, `probe_reserve` and `backoff` values of `#[tool]`.
struct Durations;

impl Target for Durations {
    fn name(&self) -> &'static str {
        "duration"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        ["250ms", "2s", "1m", "1h", "0s", "200ms..5s", "1s..1s", "18446744073709551615ms", "2 s", "1.5s"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect()
    }

    fn dictionary(&self) -> &'static [&'static [u8]] {
        &[b"ms", b"s", b"m", b"h", b"..", b"...", b"0", b"18446744073709551"]
    }

    fn run(&mut self, input: &[u8]) -> u64 {
        let text = String::from_utf8_lossy(input);
        let one = duration::millis(&text);
        if let Some(ms) = one {
            assert!(text.bytes().next().is_some_and(|b| b.is_ascii_digit()), "`{text}` read as {ms} ms");
            assert_eq!(duration::millis(&format!("{ms}ms")), Some(ms), "`{text}` does not round-trip");
        }
        let range = duration::range(&text);
        if let Ok((first, cap)) = range {
            assert!(first <= cap, "`{text}` read as {first}..{cap}");
        }
        signature(&[one.map_or(0, |ms| 1 + ms.min(3)), range.map_or_else(|e| e as u64 + 10, |_| 1)])
    }
}

/// Real logs, written by the engine through a `FileJournal`: reads, sends whose reply was lost and
/// were probed, a refused call, bulk rows. Then pieces of them: single lines, a torn tail, junk.
fn log_seeds() -> Vec<Vec<u8>> {
    let dir = scratch_dir("seed");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("seed.log");
    let _ = std::fs::remove_file(&path);
    let journal = std::sync::Arc::new(FileJournal::open(&path).expect("a fresh log"));
    let task = Task::new("t-1", "agent:seed", Duration::from_secs(30)).journal(journal.clone());
    runtime().block_on(async {
        let _ = lookup(&task, "sku-1".to_owned(), Some(2), vec!["a".to_owned()]).await;
        let _ = post_notice(&task, "thread-1".to_owned(), "hello").await;
        let _ = post_notice(&task, "thread-2".to_owned(), "").await;
        let _ = lost_reply(&task, "thread-3".to_owned()).await;
        let rows =
            vec![Row { id: "r1".to_owned(), cells: vec![1] }, Row { id: "r2".to_owned(), cells: vec![] }];
        let _ = write_rows(&task, "sheet-1".to_owned(), rows).await;
    });
    drop(task);
    drop(journal);
    let whole = std::fs::read(&path).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let lines: Vec<&[u8]> = whole.split_inclusive(|b| *b == b'\n').collect();
    let mut seeds =
        vec![whole.clone(), Vec::new(), b"\x7fELF\x02\x01\x01\n".to_vec(), b"not a log\n".to_vec()];
    seeds.extend(lines.iter().map(|line| line.to_vec()));
    if whole.len() > 2 {
        seeds.push(whole[..whole.len() - 2].to_vec());
    }
    seeds
}

const LOG_WORDS: &[&[u8]] = &[
    b"\"phase\":\"start\"",
    b"\"phase\":\"end\"",
    b"\"phase\":\"probe\"",
    b"\"outcome\":\"unknown\"",
    b"\"outcome\":\"ok\"",
    b"\"effect\":\"partial\"",
    b"\"attempt\":4294967295",
    b"\"attempt\":0",
    b"\"key\":\"ffffffffffffffffffffffffffffffff\"",
    b"\"items\":[{\"id\":\"a\",\"outcome\":\"ok\",\"effect\":\"yes\"}]",
    b"\"v\":2",
    b"\"value\":",
    b"\n",
];

/// Attempt-log bytes parsed in memory, then indexed as a restarted process indexes them.
struct LogBytes;

impl Target for LogBytes {
    fn name(&self) -> &'static str {
        "log_bytes"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        log_seeds()
    }

    fn dictionary(&self) -> &'static [&'static [u8]] {
        LOG_WORDS
    }

    fn run(&mut self, input: &[u8]) -> u64 {
        match journal::parse_log("fuzz", input) {
            Ok(contents) => {
                let lines = input.split(|b| *b == b'\n').count() as u64;
                assert!(contents.records.len() as u64 + contents.warnings.len() as u64 <= lines);
                let mut index: HashMap<IntentKey, Recall> = HashMap::new();
                for record in &contents.records {
                    tool_contract::unstable::index_record(&mut index, record);
                }
                let unresolved = index.values().filter(|recall| recall.is_unresolved()).count();
                for recall in index.values() {
                    let _ = recall.last_word();
                }
                signature(&[
                    1,
                    (contents.records.len() as u64).min(4),
                    (contents.warnings.len() as u64).min(4),
                    (unresolved as u64).min(4),
                ])
            }
            Err(error) => {
                assert!(error.to_string().len() < 1024, "an error echoes the input: {error}");
                2
            }
        }
    }
}

/// Attempt-log files opened for appends, then read by the `tool-contract log` inspector.
struct LogFile {
    dir: PathBuf,
}

impl LogFile {
    fn new() -> LogFile {
        let dir = scratch_dir("log");
        let _ = std::fs::create_dir_all(&dir);
        LogFile { dir }
    }
}

impl Drop for LogFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Target for LogFile {
    fn name(&self) -> &'static str {
        "log_file"
    }

    fn weight(&self) -> u32 {
        2
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        log_seeds()
    }

    fn dictionary(&self) -> &'static [&'static [u8]] {
        LOG_WORDS
    }

    fn run(&mut self, input: &[u8]) -> u64 {
        let path = self.dir.join("attempts.log");
        // Half the inputs get the header in front, so the mutants that lose it still test what follows.
        let header = journal::HEADER.as_bytes();
        let input = &if !input.starts_with(header) && fnv(input).is_multiple_of(2) {
            [header, b"\n", input].concat()
        } else {
            input.to_vec()
        };
        std::fs::write(&path, input).expect("the fuzz directory is writable");
        let opened = FileJournal::open(&path);
        let shape = match &opened {
            Ok(log) => {
                let unresolved = log.unresolved_now();
                for recall in &unresolved {
                    assert!(recall.is_unresolved());
                    let _ = log.recall_now(&recall.last.intent_key);
                }
                1 + (unresolved.len() as u64).min(3)
            }
            Err(_) => {
                let after = std::fs::read(&path).expect("readable");
                assert_eq!(after, *input, "a file refused as a log was changed");
                0
            }
        };
        drop(opened);
        let path_arg = path.to_string_lossy().into_owned();
        let flags: &[&[&str]] = &[&[], &["--unresolved"], &["--json"], &["--task", "t-1", "--json"]];
        let flag = flags[(fnv(input) % flags.len() as u64) as usize];
        let mut args = vec!["tool-contract".into(), "log".into(), path_arg.into()];
        args.extend(flag.iter().map(std::ffi::OsString::from));
        let mut out = Vec::new();
        let inspected = cli::run(&args, &mut out, &mut Vec::new()).is_ok();
        signature(&[shape, u64::from(inspected)])
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Filter {
    mode: Mode,
    limit: u8,
    label: Option<String>,
    and: Option<Box<Filter>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Exact,
    Prefix { min: u16 },
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Row {
    id: String,
    cells: Vec<i64>,
}

impl tool_contract::bulk::ItemId for Row {
    fn item_id(&self) -> String {
        self.id.clone()
    }
}

/// Looks up an item.
#[tool(effect = "read", target = sku)]
async fn lookup(sku: String, count: Option<u32>, tags: Vec<String>) -> Result<u64, Class> {
    Ok(sku.len() as u64 + u64::from(count.unwrap_or(0)) + tags.len() as u64)
}

/// Searches with a filter.
#[tool(effect = "read")]
async fn search(filter: Filter, ids: HashMap<String, u64>) -> Result<Vec<String>, Class> {
    Ok(ids.into_keys().take(usize::from(filter.limit)).collect())
}

async fn posted(thread: &String, text: &&str, key: IntentKey) -> Probe<u64> {
    let _ = (thread, text, key);
    Probe::NotLanded
}

/// Posts a notice.
#[tool(effect = "send", probe = posted, target = thread)]
async fn post_notice(thread: String, text: &str) -> Result<u64, Class> {
    if text.is_empty() { Err(Class::permanent("empty notice")) } else { Ok(thread.len() as u64) }
}

/// Sends a notice whose first reply is lost (by attempt number, so every run writes the same log).
#[tool(effect = "send", probe = posted_once, target = thread)]
async fn lost_reply(call: &Call, thread: String) -> Result<u64, Class> {
    let _ = thread;
    if call.attempt() == 1 {
        Err(Class::unknown("connection reset after the request was sent"))
    } else {
        Ok(7)
    }
}

async fn posted_once(thread: &String, key: IntentKey) -> Probe<u64> {
    let _ = (thread, key);
    Probe::NotLanded
}

async fn rows_written(sheet: &String, rows: Vec<Row>, key: IntentKey) -> Vec<Item> {
    let _ = (sheet, key);
    rows.iter().map(|row| Item::ok(row.id.clone())).collect()
}

/// Writes rows.
#[tool(effect = "create", probe = rows_written, target = sheet, bulk = rows)]
async fn write_rows(sheet: String, rows: Vec<Row>) -> Result<Vec<Item>, Class> {
    let _ = sheet;
    Ok(rows.iter().map(|row| Item::ok(row.id.clone())).collect())
}

const TOOL_NAMES: [&str; 5] = ["lookup", "search", "post_notice", "write_rows", "no_such_tool"];

fn toolbox() -> Toolbox {
    let mut toolbox = Toolbox::new();
    toolbox.add(lookup_tool()).expect("unique");
    toolbox.add(search_tool()).expect("unique");
    toolbox.add(post_notice_tool()).expect("unique");
    toolbox.add(write_rows_tool()).expect("unique");
    toolbox
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a runtime")
}

/// JSON from the input: parsed when it is JSON, else generated from it (so every input is a call).
fn json_of(input: &[u8]) -> Value {
    match serde_json::from_slice::<Value>(input) {
        Ok(value) => value,
        Err(_) => mutate::json(&mut Rng::new(fnv(input)), 5),
    }
}

const JSON_WORDS: &[&[u8]] = &[
    b"\"sku\":",
    b"\"count\":",
    b"\"tags\":",
    b"\"filter\":",
    b"\"mode\":",
    b"\"exact\"",
    b"{\"prefix\":{\"min\":",
    b"\"limit\":",
    b"\"and\":",
    b"\"ids\":",
    b"\"thread\":",
    b"\"text\":",
    b"\"sheet\":",
    b"\"rows\":",
    b"\"cells\":",
    b"\"id\":",
    b"[[[[[[[[",
    b"{\"a\":{\"a\":",
    b"1e400",
    b"\"\\ud83d\"",
];

fn json_seeds() -> Vec<Vec<u8>> {
    [
        r#"{"tool":0,"args":{"sku":"sku-1","count":2,"tags":["a"]}}"#,
        r#"{"tool":1,"args":{"filter":{"mode":"exact","limit":3,"label":null,"and":{"mode":{"prefix":{"min":2}},"limit":1}},"ids":{"a":1}}}"#,
        r#"{"tool":2,"args":{"thread":"thread-1","text":"hello"}}"#,
        r#"{"tool":3,"args":{"sheet":"s","rows":[{"id":"r1","cells":[1,2]},{"id":"r1","cells":[]}]}}"#,
        r#"{"tool":4,"args":{}}"#,
        r#"{"tool":0,"args":[]}"#,
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// Splits an input into a tool name and its arguments.
fn call_of(input: &[u8]) -> (&'static str, Value) {
    let value = json_of(input);
    let tool = value.get("tool").and_then(Value::as_u64).unwrap_or(fnv(input)) as usize % TOOL_NAMES.len();
    let args = match value {
        Value::Object(mut map) if map.contains_key("args") => map.remove("args").unwrap_or(Value::Null),
        other => other,
    };
    (TOOL_NAMES[tool], args)
}

/// A model's JSON arguments, dispatched through a `Toolbox`.
struct ToolArguments {
    runtime: tokio::runtime::Runtime,
    toolbox: Toolbox,
}

impl ToolArguments {
    fn new() -> ToolArguments {
        ToolArguments { runtime: runtime(), toolbox: toolbox() }
    }
}

impl Target for ToolArguments {
    fn name(&self) -> &'static str {
        "tool_arguments"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        json_seeds()
    }

    fn dictionary(&self) -> &'static [&'static [u8]] {
        JSON_WORDS
    }

    fn generate(&self, rng: &mut Rng) -> Option<Vec<u8>> {
        let mut call = Map::new();
        call.insert("tool".to_owned(), Value::from(rng.below(TOOL_NAMES.len() as u64)));
        call.insert("args".to_owned(), mutate::json(rng, 6));
        serde_json::to_vec(&Value::Object(call)).ok()
    }

    fn run(&mut self, input: &[u8]) -> u64 {
        let (name, args) = call_of(input);
        let task = Task::new("fuzz", "agent:fuzz", Duration::from_secs(30));
        let called = self.runtime.block_on(self.toolbox.call(&task, name, args));
        match called {
            Ok(report) => {
                assert!(
                    report.message.len() <= 8 << 10,
                    "a report message of {} bytes",
                    report.message.len()
                );
                let json = serde_json::to_value(&report).expect("a report is JSON");
                assert!(json.get("outcome").is_some());
                if report.outcome == tool_contract::Outcome::Permanent && report.message.contains("argument")
                {
                    assert_eq!(report.effect_applied, tool_contract::Applied::No, "{}", report.message);
                }
                let problems = report.message.matches("argument").count().min(6) as u64;
                signature(&[
                    1,
                    fnv(name.as_bytes()),
                    report.outcome as u64,
                    report.items.len().min(3) as u64,
                    problems,
                ])
            }
            Err(unknown) => {
                assert_eq!(name, "no_such_tool", "{unknown}");
                2
            }
        }
    }
}

/// An MCP `tools/call`: the request's `_meta` (task, actor) and arguments, through the MCP server.
struct McpMeta {
    runtime: tokio::runtime::Runtime,
    server: McpServer,
    calls: u32,
}

impl McpMeta {
    fn new() -> McpMeta {
        McpMeta { runtime: runtime(), server: server(), calls: 0 }
    }
}

fn server() -> McpServer {
    McpServer::builder(toolbox())
        .budget(Duration::from_secs(30))
        .instance_id("fuzz")
        .build()
        .expect("30 s holds every tool")
}

impl Target for McpMeta {
    fn name(&self) -> &'static str {
        "mcp_meta"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        [
            r#"{"meta":{"dev.tool-contract/task":"t-1","dev.tool-contract/actor":"a"},"tool":2,"args":{"thread":"x","text":"y"}}"#,
            r#"{"meta":{"dev.tool-contract/task":""},"tool":0,"args":{"sku":"s","tags":[]}}"#,
            r#"{"meta":{"dev.tool-contract/task":7,"dev.tool-contract/actor":null},"tool":1}"#,
            r#"{"meta":{"dev.tool-contract/task":"é|\u0000"},"tool":4}"#,
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
    }

    fn dictionary(&self) -> &'static [&'static [u8]] {
        &[
            b"\"dev.tool-contract/task\":",
            b"\"dev.tool-contract/actor\":",
            b"\"meta\":",
            b"\"args\":",
            b"\"progressToken\":",
        ]
    }

    fn generate(&self, rng: &mut Rng) -> Option<Vec<u8>> {
        let mut meta = Map::new();
        for key in ["dev.tool-contract/task", "dev.tool-contract/actor"] {
            if !rng.one_in(4) {
                meta.insert(key.to_owned(), mutate::json(rng, 2));
            }
        }
        let mut call = Map::new();
        call.insert("meta".to_owned(), Value::Object(meta));
        call.insert("tool".to_owned(), Value::from(rng.below(TOOL_NAMES.len() as u64)));
        call.insert("args".to_owned(), mutate::json(rng, 4));
        serde_json::to_vec(&Value::Object(call)).ok()
    }

    fn run(&mut self, input: &[u8]) -> u64 {
        // The server's in-memory log keeps every call; a fresh server now and then keeps memory flat.
        self.calls += 1;
        if self.calls.is_multiple_of(2_000) {
            self.server = server();
        }
        let value = json_of(input);
        let meta = match value.get("meta") {
            Some(Value::Object(meta)) => meta.clone(),
            _ => Map::new(),
        };
        let (name, args) = call_of(input);
        let args = match args {
            Value::Object(map) => Some(map),
            _ => None,
        };
        match self.runtime.block_on(self.server.call(name, args, &meta)) {
            Ok(result) => {
                let structured = result.structured_content.expect("every result carries the report");
                assert!(structured.get("outcome").is_some());
                let outcome =
                    structured.get("outcome").and_then(Value::as_str).map_or(0, |o| fnv(o.as_bytes()));
                signature(&[1, fnv(name.as_bytes()), u64::from(result.is_error.unwrap_or(false)), outcome])
            }
            Err(error) => {
                assert!(error.message.len() < 1024, "an error of {} bytes", error.message.len());
                signature(&[2, fnv(error.message.split(':').next().unwrap_or("").as_bytes())])
            }
        }
    }
}

/// `tool-contract key --task T --actor A --verb V --target X [--slot S]`.
struct KeyCommand;

impl Target for KeyCommand {
    fn name(&self) -> &'static str {
        "key_command"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        [
            &b"--task\0t-1\0--actor\0a\0--verb\0post_notice\0--target\0thread-9"[..],
            b"--task\0t|a\0--actor\0b\0--verb\0v\0--target\0x\0--slot\0s",
            b"--task\0t\0--task\0u",
            b"--slot",
            b"",
        ]
        .iter()
        .map(|s| s.to_vec())
        .collect()
    }

    fn dictionary(&self) -> &'static [&'static [u8]] {
        &[b"--task\0", b"--actor\0", b"--verb\0", b"--target\0", b"--slot\0", b"\0", b"|", b"--"]
    }

    fn run(&mut self, input: &[u8]) -> u64 {
        let mut args: Vec<std::ffi::OsString> = vec!["tool-contract".into(), "key".into()];
        if !input.is_empty() {
            args.extend(input.split(|b| *b == 0).map(|arg| String::from_utf8_lossy(arg).into_owned().into()));
        }
        let mut out = Vec::new();
        match cli::run(&args, &mut out, &mut Vec::new()) {
            Ok(()) => {
                let text = String::from_utf8(out).expect("the key is text");
                // Asked for the help or the version (`-h`, `--help`, or `h` in a cluster of short flags
                // such as `-Vx`): that is printed instead.
                let asked = |long: &str, short: char| {
                    args.iter().filter_map(|arg| arg.to_str()).any(|arg| {
                        arg == long || (arg.starts_with('-') && !arg.starts_with("--") && arg.contains(short))
                    })
                };
                if text.starts_with("usage: tool-contract key ") && asked("--help", 'h') {
                    return 2;
                }
                if text.starts_with("tool-contract-key ") && asked("--version", 'V') {
                    return 3;
                }
                let hex = text.trim_end();
                assert_eq!(hex.len(), 32, "`{hex}`");
                assert_eq!(IntentKey::parse(hex).ok().map(|key| key.to_string()).as_deref(), Some(hex));
                1
            }
            Err(_) => 4 + (args.len() as u64).min(12),
        }
    }
}
