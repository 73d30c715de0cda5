//! The contract's behaviour cases as data (the repository's `contract/` folder), run against the
//! engine: each case names a tool of `contract/tools.json`, a fault schedule at the service, the
//! calls made in one task, and what must come out (each report's outcome, effect and reason, the
//! effects counted at the service, the requests it received and the waits between them, the log's
//! records). A port in another language, or an MCP server written in one, runs the same files with its
//! own runner (`contract/runner.py` does it over MCP); a case that fails names the case and the field.
//!
//! ```no_run
//! # async fn check() -> Result<(), Box<dyn std::error::Error>> {
//! let suite = tool_contract_testing::cases::Suite::load("contract".as_ref())?;
//! for case in &suite.cases {
//!     suite.run(case).await?;
//! }
//! # Ok(()) }
//! ```
//!
//! Time in a case is in seconds. Run on tokio's paused clock, a case takes no real time.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use tool_contract::classify::Body;
use tool_contract::effect::EffectKind;
use tool_contract::journal::{MemoryJournal, Record};
use tool_contract::probe::Probe;
use tool_contract::spec::{Dedupe, ToolSpec};
use tool_contract::{Applied, IntentKey, Item, Outcome, Report, Task, engine};

use crate::fake::{FakeService, Fault, batch_probe, batch_result, single_result};

/// One tool of `contract/tools.json`: what an implementation declares, by name, with these settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    /// The tool's name, as a model calls it.
    pub name: String,
    /// Its effect kind: `read`, `create`, `send`, `money`, `destructive`.
    pub kind: String,
    /// Whether it has a probe (a lookup of its intent key at the service).
    #[serde(default)]
    pub probe: bool,
    /// `receiver` when the service deduplicates by the key; `probe` (the default) otherwise.
    #[serde(default)]
    pub dedupe: Option<String>,
    /// How long the receiver keeps an idempotency key (`dedupe = receiver` only); the engine's default
    /// when absent.
    #[serde(default)]
    pub key_lifetime_s: Option<f64>,
    /// No attempt starts with less budget left than this.
    #[serde(default)]
    pub deadline_floor_s: f64,
    /// Whether it takes a list of rows and answers per row.
    #[serde(default)]
    pub bulk: bool,
    /// What it does, for the model and for people.
    pub about: String,
}

/// One behaviour case (`contract/cases/*.json`), as `contract/case.schema.json` describes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The case's name, the file's stem.
    pub name: String,
    /// What it shows, in a sentence.
    pub about: String,
    /// The tool called, by its name in `contract/tools.json`.
    pub tool: String,
    /// The budget of the task every call runs in.
    pub budget_s: f64,
    /// The service's answers, one per request in order; requests after the schedule succeed.
    #[serde(default)]
    pub service: Vec<FaultSpec>,
    /// How the service's lookup (the tool's probe) behaves.
    #[serde(default)]
    pub lookup: LookupSpec,
    /// The calls, in order, in one task: a single call's target, or a bulk call's rows.
    pub calls: Vec<CallSpec>,
    /// What must come out.
    pub expect: Expect,
}

/// What the service does with one request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultSpec {
    /// Apply and answer.
    Fine,
    /// Apply, then close the connection without a byte of answer.
    DropReply,
    /// Refuse at the door (`503` before reading the request): nothing applied.
    Refuse,
    /// Apply after `apply_after_s`, answer after `reply_after_s`, both from the request's arrival.
    Slow {
        /// When the effect lands.
        apply_after_s: f64,
        /// When the answer leaves.
        reply_after_s: f64,
    },
    /// Answer `status` with `{"error": {"kind", "message"}}` in the body; nothing applied.
    ErrorBody {
        /// Usually 200.
        status: u16,
        /// `permanent` or `retryable`.
        kind: String,
        /// What the body says.
        message: String,
    },
    /// Answer `status` (429 or 503) with `Retry-After: {seconds}`; nothing applied.
    RetryAfter {
        /// 429 or 503.
        status: u16,
        /// The header, as delta-seconds.
        seconds: u64,
    },
    /// Answer `status` with `Retry-After` as an HTTP-date `in_s` seconds after the request arrived.
    RetryAfterDate {
        /// 429 or 503.
        status: u16,
        /// How far ahead the date is.
        in_s: u64,
    },
    /// Take the request out of sight (no answer, no lookup sees it; with `reset`, the connection is
    /// reset at once) and apply it `after_s` after its caller let go.
    Held {
        /// How long after the caller let go it is applied.
        after_s: f64,
        /// Reset the connection at once instead of leaving it hanging.
        reset: bool,
    },
    /// A batch: `reject` refused for good, `defer` answered "retry later", every other row applied.
    Batch {
        /// Rows refused for good.
        #[serde(default)]
        reject: Vec<String>,
        /// Rows to retry.
        #[serde(default)]
        defer: Vec<String>,
    },
}

/// How the service's lookup answers the tool's probe.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LookupSpec {
    /// It says what has landed, waiting out a request being processed.
    #[default]
    Truthful,
    /// The next `fails` lookups fail (`500`).
    Fails {
        /// How many.
        fails: u32,
    },
    /// It reads what has landed when asked, and answers `answers_after_s` later.
    Late {
        /// How long after it looked it answers.
        answers_after_s: f64,
    },
}

/// One call of the case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    /// A single call's target (the object acted on, in the intent key).
    #[serde(default)]
    pub target: Option<String>,
    /// A bulk call's rows.
    #[serde(default)]
    pub rows: Option<Vec<String>>,
}

/// What must come out of the case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// One per call, in order.
    pub reports: Vec<ReportExpect>,
    /// Effects the service applied, over the whole case (a batch counts one per row applied).
    pub effects: u32,
    /// Requests the service received, when the case says.
    #[serde(default)]
    pub requests: Option<u32>,
    /// The least time between consecutive requests, in order, when the case says.
    #[serde(default)]
    pub waits_at_least_s: Option<Vec<f64>>,
    /// The log's records, in order, when the case says.
    #[serde(default)]
    pub log: Option<Vec<LogExpect>>,
}

/// What one report must say; a field left out is not checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportExpect {
    /// `ok`, `retryable`, `permanent`, `unknown`.
    pub outcome: String,
    /// `yes`, `no`, `unknown`, `partial`.
    pub effect_applied: String,
    /// The report's reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// `retry_after_s`, when the case says.
    #[serde(default)]
    pub retry_after_s: Option<u64>,
    /// Per row of a bulk call: its id and outcome, in order.
    #[serde(default)]
    pub items: Option<Vec<ItemExpect>>,
}

/// One row's result.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemExpect {
    /// The row's id.
    pub id: String,
    /// Its outcome.
    pub outcome: String,
}

/// One record of the log.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogExpect {
    /// `start` or `end`.
    pub phase: String,
    /// The attempt it is about.
    pub attempt: u32,
    /// An end's outcome.
    #[serde(default)]
    pub outcome: Option<String>,
    /// An end's effect.
    #[serde(default)]
    pub effect_applied: Option<String>,
    /// A probe's verdict, when the record carries one.
    #[serde(default)]
    pub probe: Option<String>,
}

/// The tools and the cases of a `contract/` folder.
#[derive(Debug, Clone)]
pub struct Suite {
    /// `tools.json`'s tools.
    pub tools: Vec<ToolDef>,
    /// `cases/*.json`, by name.
    pub cases: Vec<Case>,
}

/// A file of the folder that cannot be read as what it should be.
#[derive(Debug)]
pub struct LoadError {
    /// The file.
    pub file: String,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.why)
    }
}

impl std::error::Error for LoadError {}

/// A case whose run disagrees with it: the case, the field, what it says and what came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The case's name.
    pub case: String,
    /// The field, as a path into the case's `expect` (`reports[1].outcome`, `effects`).
    pub field: String,
    /// What the case says.
    pub expected: String,
    /// What came out.
    pub got: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "case `{}`: {}: expected {}, got {}", self.case, self.field, self.expected, self.got)
    }
}

impl std::error::Error for Mismatch {}

impl Suite {
    /// Read `tools.json` and every `cases/*.json` of `dir`, checking each case names a tool there and
    /// is named as its file.
    pub fn load(dir: &Path) -> Result<Suite, LoadError> {
        let read = |path: &Path| {
            std::fs::read_to_string(path)
                .map_err(|e| LoadError { file: path.display().to_string(), why: e.to_string() })
        };
        let tools_file = dir.join("tools.json");
        #[derive(Deserialize)]
        struct Tools {
            tools: Vec<ToolDef>,
        }
        let tools: Tools = serde_json::from_str(&read(&tools_file)?)
            .map_err(|e| LoadError { file: tools_file.display().to_string(), why: e.to_string() })?;
        let mut files: Vec<_> = std::fs::read_dir(dir.join("cases"))
            .map_err(|e| LoadError { file: dir.join("cases").display().to_string(), why: e.to_string() })?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        files.sort();
        let mut cases = Vec::with_capacity(files.len());
        for file in files {
            let shown = file.display().to_string();
            let case: Case = serde_json::from_str(&read(&file)?)
                .map_err(|e| LoadError { file: shown.clone(), why: e.to_string() })?;
            let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
            if case.name != stem {
                let why =
                    format!("the case is named `{}`, its file `{stem}`: name it as its file", case.name);
                return Err(LoadError { file: shown, why });
            }
            if !tools.tools.iter().any(|tool| tool.name == case.tool) {
                let why = format!("the case calls `{}`, which tools.json does not declare", case.tool);
                return Err(LoadError { file: shown, why });
            }
            cases.push(case);
        }
        Ok(Suite { tools: tools.tools, cases })
    }

    /// Run `case` against the engine, on the fake service, and compare what came out with what it
    /// says. Run it on tokio's paused clock.
    pub async fn run(&self, case: &Case) -> Result<(), Mismatch> {
        let miss = |field: String, expected: String, got: String| Mismatch {
            case: case.name.clone(),
            field,
            expected,
            got,
        };
        let tool = self
            .tools
            .iter()
            .find(|tool| tool.name == case.tool)
            .ok_or_else(|| miss("tool".into(), "a tool of tools.json".into(), case.tool.clone()))?;
        let spec = spec_of(tool).map_err(|why| miss("tool".into(), why, tool.kind.clone()))?;
        let service = FakeService::new();
        service.dedupe_by_key(tool.dedupe.as_deref() == Some("receiver"));
        service.plan(case.service.iter().map(fault_of));
        if let LookupSpec::Fails { fails } = case.lookup {
            service.fail_probes(fails);
        }
        let journal = Arc::new(MemoryJournal::new());
        let task =
            Task::new(format!("case-{}", case.name), "agent", secs(case.budget_s)).journal(journal.clone());
        let began = tokio::time::Instant::now();
        let mut reports = Vec::with_capacity(case.calls.len());
        for call in &case.calls {
            reports.push(one_call(&task, spec, tool.probe, &service, &case.lookup, call).await);
        }
        service.settle().await;
        check(case, &reports, &service, &journal.records(), began)
            .map_err(|(field, expected, got)| miss(field, expected, got))
    }
}

/// What one call reported: the fields a case checks.
struct Said {
    outcome: Outcome,
    effect: Applied,
    reason: String,
    retry_after_s: Option<u64>,
    items: Vec<Item>,
}

impl<T> From<Report<T>> for Said {
    fn from(report: Report<T>) -> Said {
        Said {
            outcome: report.outcome,
            effect: report.effect_applied,
            reason: snake(&format!("{:?}", report.reason)),
            retry_after_s: report.retry_after_s,
            items: report.items,
        }
    }
}

/// One call of `spec` on `service`.
async fn one_call(
    task: &Task,
    spec: &'static ToolSpec,
    has_probe: bool,
    service: &FakeService,
    lookup: &LookupSpec,
    call: &CallSpec,
) -> Said {
    let kind = spec.effect();
    let late = match lookup {
        LookupSpec::Late { answers_after_s } => secs(*answers_after_s),
        _ => Duration::ZERO,
    };
    if let Some(rows) = &call.rows {
        let key = task.key(spec, &"rows", None);
        let attempt =
            |_, rows: Vec<String>| async move { batch_result(kind, service.submit_batch(key, &rows).await) };
        let probe = |_key, asked: Vec<String>| async move {
            let found = service.lookup_items_landed(key, &asked);
            tokio::time::sleep(late).await;
            batch_probe(found, &asked)
        };
        return if has_probe {
            engine::run_bulk(task, spec, key, rows.clone(), attempt, probe).await.into()
        } else {
            engine::run_bulk(task, spec, key, rows.clone(), attempt, tool_contract::probe::NoProbe)
                .await
                .into()
        };
    }
    let target = call.target.clone().unwrap_or_default();
    let key = task.key(spec, &target, None);
    let attempt = |_| async move { single_result(kind, service.submit(key).await) };
    let probe = |key: IntentKey| async move {
        let found = match late.is_zero() {
            true => service.lookup_settled(key).await,
            false => service.lookup(key).map(crate::fake::Lookup::landed_only),
        };
        tokio::time::sleep(late).await;
        match found {
            Ok(found) => found.into_probe(),
            Err(why) => Probe::Failed(why),
        }
    };
    if has_probe {
        engine::run(task, spec, key, attempt, probe).await.into()
    } else {
        engine::run(task, spec, key, attempt, tool_contract::probe::NoProbe).await.into()
    }
}

/// What disagrees, as (field, expected, got).
type Miss = (String, String, String);

fn check(
    case: &Case,
    reports: &[Said],
    service: &FakeService,
    log: &[Record],
    began: tokio::time::Instant,
) -> Result<(), Miss> {
    let expect = &case.expect;
    same("reports.length".into(), expect.reports.len(), reports.len())?;
    for (n, (want, got)) in expect.reports.iter().zip(reports).enumerate() {
        same(format!("reports[{n}].outcome"), want.outcome.as_str(), got.outcome.as_str())?;
        same(format!("reports[{n}].effect_applied"), want.effect_applied.as_str(), got.effect.as_str())?;
        if let Some(reason) = &want.reason {
            same(format!("reports[{n}].reason"), reason.as_str(), got.reason.as_str())?;
        }
        if let Some(wait) = want.retry_after_s {
            same(format!("reports[{n}].retry_after_s"), Some(wait), got.retry_after_s)?;
        }
        if let Some(items) = &want.items {
            same(format!("reports[{n}].items.length"), items.len(), got.items.len())?;
            for (i, (want, got)) in items.iter().zip(&got.items).enumerate() {
                same(format!("reports[{n}].items[{i}].id"), want.id.as_str(), got.id.as_str())?;
                same(
                    format!("reports[{n}].items[{i}].outcome"),
                    want.outcome.as_str(),
                    got.outcome.as_str(),
                )?;
            }
        }
    }
    same("effects".into(), expect.effects as usize, service.total_effects())?;
    if let Some(requests) = expect.requests {
        same("requests".into(), requests, service.requests())?;
    }
    if let Some(waits) = &expect.waits_at_least_s {
        let arrivals = service.arrivals();
        let gaps: Vec<Duration> = std::iter::once(began)
            .chain(arrivals.iter().copied())
            .zip(arrivals.iter().copied())
            .map(|(a, b)| b.saturating_duration_since(a))
            .collect();
        for (n, wait) in waits.iter().enumerate() {
            let gap = gaps.get(n).copied();
            if gap.is_none_or(|gap| gap < secs(*wait)) {
                let got =
                    gap.map_or("no such request".to_owned(), |gap| format!("{:.3} s", gap.as_secs_f64()));
                return Err((format!("waits_at_least_s[{n}]"), format!("at least {wait} s"), got));
            }
        }
    }
    if let Some(records) = &expect.log {
        same("log.length".into(), records.len(), log.len())
            .map_err(|(f, e, g)| (f, e, format!("{g}: {}", shown(log))))?;
        for (n, (want, got)) in records.iter().zip(log).enumerate() {
            let field = |name: &str| format!("log[{n}].{name}");
            same(field("phase"), want.phase.as_str(), got.phase.as_str())?;
            same(field("attempt"), want.attempt, got.attempt)?;
            same(field("outcome"), want.outcome.as_deref(), got.outcome.map(Outcome::as_str))?;
            same(
                field("effect_applied"),
                want.effect_applied.as_deref(),
                got.effect_applied.map(Applied::as_str),
            )?;
            same(field("probe"), want.probe.as_deref(), got.probe.map(|p| p.as_str()))?;
        }
    }
    Ok(())
}

/// The log, one record a line, for a message.
fn shown(log: &[Record]) -> String {
    let line = |r: &Record| {
        let mut line = format!("{} {}", r.phase.as_str(), r.attempt);
        for part in [
            r.outcome.map(Outcome::as_str),
            r.effect_applied.map(Applied::as_str),
            r.probe.map(|p| p.as_str()),
        ]
        .into_iter()
        .flatten()
        {
            line.push(' ');
            line.push_str(part);
        }
        line
    };
    log.iter().map(line).collect::<Vec<_>>().join("; ")
}

/// `NoProbe` as `no_probe`: a reason as a case names it.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn same<T: PartialEq + fmt::Debug>(field: String, expected: T, got: T) -> Result<(), Miss> {
    if expected == got { Ok(()) } else { Err((field, format!("{expected:?}"), format!("{got:?}"))) }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::ZERO)
}

/// The fake's fault for a case's.
fn fault_of(fault: &FaultSpec) -> Fault {
    match fault {
        FaultSpec::Fine => Fault::None,
        FaultSpec::DropReply => Fault::DropReplyAfterApplying,
        FaultSpec::Refuse => Fault::RefuseBeforeApplying,
        FaultSpec::Slow { apply_after_s, reply_after_s } => {
            Fault::Slow { apply_after: secs(*apply_after_s), reply_after: secs(*reply_after_s) }
        }
        FaultSpec::ErrorBody { status, kind, message } => Fault::ErrorBody {
            status: *status,
            body: if kind == "permanent" {
                Body::PermanentError(message.clone())
            } else {
                Body::RetryableError(message.clone())
            },
        },
        FaultSpec::RetryAfter { status, seconds } => {
            Fault::RetryAfter { status: *status, header: seconds.to_string() }
        }
        FaultSpec::RetryAfterDate { status, in_s } => {
            // Written when the schedule is planned, at the case's start: the request arrives then.
            let at = tool_contract::unstable::wall_clock() + Duration::from_secs(*in_s);
            Fault::RetryAfter { status: *status, header: httpdate::fmt_http_date(at) }
        }
        FaultSpec::Held { after_s, reset } => Fault::Held { after: secs(*after_s), reset: *reset },
        FaultSpec::Batch { reject, defer } => Fault::Batch { reject: reject.clone(), defer: defer.clone() },
    }
}

/// The engine's description of a tool of tools.json. A tool's name is `'static` in a `ToolSpec`:
/// each name is kept once for the life of the process.
fn spec_of(tool: &ToolDef) -> Result<&'static ToolSpec, String> {
    static SPECS: OnceLock<Mutex<BTreeMap<String, &'static ToolSpec>>> = OnceLock::new();
    let mut specs = SPECS.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    let kind: EffectKind =
        tool.kind.parse().map_err(|_| "read, create, send, money or destructive".to_owned())?;
    let dedupe = match tool.dedupe.as_deref() {
        None | Some("probe") => Dedupe::Probe,
        Some("receiver") => Dedupe::Receiver,
        Some(_) => return Err("dedupe `probe` or `receiver`".to_owned()),
    };
    let mut spec =
        ToolSpec::new(intern(&tool.name), kind).dedupe(dedupe).deadline_floor(secs(tool.deadline_floor_s));
    if let Some(lifetime) = tool.key_lifetime_s {
        spec = spec.key_lifetime(secs(lifetime));
    }
    let held = specs.entry(tool.name.clone()).or_insert_with(|| Box::leak(Box::new(spec)));
    if **held != spec {
        *held = Box::leak(Box::new(spec));
    }
    Ok(*held)
}

/// `name`, kept once for the life of the process.
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    match names.get(name) {
        Some(kept) => kept,
        None => {
            let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
            names.insert(kept);
            kept
        }
    }
}
