//! An MCP stdio server over an in-memory support desk with five tools: `list_notices` (read),
//! `post_notice` (send, probed), `delete_notice` (destructive, probed), `refund` (money, probed) and
//! `list_refunds` (read).
//!
//! ```text
//! cargo run -p tool-contract-mcp --example support_desk -- [--log PATH [--log-wait S]] [--budget-s N] [--instance-id ID] [--fault lost-refund|busy-refund|lost-notice]
//! cargo run -p tool-contract-mcp --features http --example support_desk -- --http 127.0.0.1:8000 [--token T] [--allow-origin O]
//! ```
//!
//! `--log PATH` keeps the attempt log in a file (default: in memory); one process holds it at a time,
//! for its life, and another waits for it up to `--log-wait S` seconds (default 30), saying so on
//! standard error (for a client that starts a server per call); `--budget-s N` is each call's
//! budget, 1 s to a year (default 60). The server prints its instance id on standard error: the task
//! of calls that name none under `_meta` `dev.tool-contract/task`, named by `--instance-id ID`; else,
//! with `--log`, drawn once and kept beside the log (`PATH.instance`), so a call repeated after a
//! restart is the same intent; else drawn at every start. With the `http`
//! feature, `--http ADDR` serves streamable HTTP at `/mcp` instead of stdio; `--token T` requires
//! `Authorization: Bearer T` (needed for an address other than loopback), `--allow-origin O` lets a
//! browser page from `O` call it. `--fault lost-refund` loses the reply of each refund's first attempt
//! after applying it and makes the refund's probe fail: the refund ends `unknown`, in doubt, for a
//! person to settle (`tool-contract settle LOG --intent KEY --attempt N --landed ...`, with `--log`,
//! or the person at a client that declared elicitation, asked on the next call). `--fault
//! busy-refund` refuses each refund's first attempt (nothing refunded): the second needs the person
//! at the client's approval,
//! or, with `--approve-in-log` (and `--log`), an operator's answer in the log (`tool-contract console
//! LOG` lists the question, with approve and deny forms).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_contract::{Call, Class, FileJournal, IntentKey, Probe, Toolbox, tool};
use tool_contract_mcp::McpServer;

#[path = "support/contract_tools.rs"]
mod contract_tools;

/// A notice posted to a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Notice {
    /// The desk's id for it.
    pub id: u64,
    /// What the customer reads.
    pub text: String,
}

/// A refund paid to an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Refund {
    /// The order refunded.
    pub order: String,
    /// How much, in cents.
    pub cents: u64,
}

/// The desk: each thread's notices, with the intent key each was posted under, and the refunds paid.
#[derive(Default)]
pub struct Desk {
    threads: Mutex<BTreeMap<String, Vec<(Notice, IntentKey)>>>,
    next: Mutex<u64>,
    refunds: Mutex<Vec<(Refund, IntentKey)>>,
    /// `--fault lost-refund`: a refund's first attempt is applied and its reply lost, and the probe
    /// that would find it fails, so the refund is left in doubt for a person to settle.
    lost_refund: bool,
    /// `--fault busy-refund`: a refund's first attempt is refused (`503`, nothing applied), so the
    /// second needs the person's approval.
    busy_refund: bool,
    /// `--fault lost-notice`: a notice's first attempt is lost on the way (nothing posted, no answer),
    /// and the probe cannot read the thread: the notice is left in doubt for an operator to settle.
    lost_notice: bool,
}

impl Desk {
    /// List the notices posted to a support thread, oldest first.
    #[tool(effect = "read", target = thread)]
    pub async fn list_notices(
        &self,
        /// The thread, like `thread-9`.
        thread: String,
    ) -> Result<Vec<Notice>, Class> {
        let threads = self.threads.lock().map_err(|_| Class::retryable("the desk is unavailable"))?;
        Ok(threads
            .get(&thread)
            .map(|notices| notices.iter().map(|(n, _)| n.clone()).collect())
            .unwrap_or_default())
    }

    /// Post a notice to a support thread. The customer sees it at once, so a task posts one notice
    /// per thread: calling again for the same thread and task returns the first notice, not a new one.
    #[tool(effect = "send", probe = Self::posted, target = thread, deadline_floor = "1s")]
    pub async fn post_notice(
        &self,
        call: &Call,
        /// The thread, like `thread-9`.
        thread: String,
        /// The notice, as the customer will read it.
        text: String,
    ) -> Result<Notice, Class> {
        if text.trim().is_empty() {
            return Err(Class::permanent("a notice needs text"));
        }
        if self.lost_notice && call.attempt() == 1 {
            return Err(Class::unknown("the connection dropped before the desk answered"));
        }
        let id = {
            let mut next = self.next.lock().map_err(|_| Class::retryable("the desk is unavailable"))?;
            *next += 1;
            *next
        };
        let notice = Notice { id, text };
        let mut threads = self.threads.lock().map_err(|_| Class::retryable("the desk is unavailable"))?;
        threads.entry(thread).or_default().push((notice.clone(), call.key()));
        Ok(notice)
    }

    /// Finds the notice posted under `key`.
    #[allow(clippy::ptr_arg)]
    async fn posted(&self, thread: &String, _text: &String, key: IntentKey) -> Probe<Notice> {
        if self.lost_notice {
            return Probe::Failed("the thread list is unavailable".into());
        }
        let Ok(threads) = self.threads.lock() else { return Probe::Failed("the desk is unavailable".into()) };
        match threads.get(thread).and_then(|notices| notices.iter().find(|(_, k)| *k == key)) {
            Some((notice, _)) => Probe::Landed(notice.clone()),
            None => Probe::NotLanded,
        }
    }

    /// Delete a notice from a support thread. It cannot be undone.
    #[tool(effect = "destructive", probe = Self::gone, target = notice)]
    pub async fn delete_notice(
        &self,
        /// The thread, like `thread-9`.
        thread: String,
        /// The id of the notice to delete.
        notice: u64,
    ) -> Result<u64, Class> {
        let mut threads = self.threads.lock().map_err(|_| Class::retryable("the desk is unavailable"))?;
        let notices =
            threads.get_mut(&thread).ok_or_else(|| Class::permanent(format!("no thread `{thread}`")))?;
        let before = notices.len();
        notices.retain(|(n, _)| n.id != notice);
        if notices.len() == before {
            return Err(Class::permanent(format!("no notice {notice} in `{thread}`")));
        }
        Ok(notice)
    }

    /// Refund an order. Money leaves the desk: a second attempt needs the probe's "not landed" and an
    /// approver's yes, and a refund nobody can tell about waits for a person to settle it.
    #[tool(effect = "money", probe = Self::refunded, target = order, shows = [cents])]
    pub async fn refund(
        &self,
        call: &Call,
        /// The order, like `ord-7741`.
        order: String,
        /// How much, in cents, more than 0.
        cents: u64,
    ) -> Result<Refund, Class> {
        if cents == 0 {
            return Err(Class::permanent("a refund is of at least 1 cent"));
        }
        if self.busy_refund && call.attempt() == 1 {
            return Err(Class::retryable("503: the bank is busy; nothing was refunded"));
        }
        let refund = Refund { order, cents };
        let mut refunds = self.refunds.lock().map_err(|_| Class::retryable("the desk is unavailable"))?;
        refunds.push((refund.clone(), call.key()));
        if self.lost_refund && call.attempt() == 1 {
            return Err(Class::unknown("the connection dropped after the refund was sent"));
        }
        Ok(refund)
    }

    /// Finds the refund paid under `key`; with `--fault lost-refund`, the ledger cannot be read.
    #[allow(clippy::ptr_arg)]
    async fn refunded(&self, _order: &String, _cents: &u64, key: IntentKey) -> Probe<Refund> {
        if self.lost_refund {
            return Probe::Failed("the ledger is unavailable".into());
        }
        let Ok(refunds) = self.refunds.lock() else { return Probe::Failed("the desk is unavailable".into()) };
        match refunds.iter().find(|(_, k)| *k == key) {
            Some((refund, _)) => Probe::Landed(refund.clone()),
            None => Probe::NotLanded,
        }
    }

    /// List the refunds paid to an order, oldest first.
    #[tool(effect = "read", target = order)]
    pub async fn list_refunds(
        &self,
        /// The order, like `ord-7741`.
        order: String,
    ) -> Result<Vec<Refund>, Class> {
        let refunds = self.refunds.lock().map_err(|_| Class::retryable("the desk is unavailable"))?;
        Ok(refunds.iter().filter(|(r, _)| r.order == order).map(|(r, _)| r.clone()).collect())
    }

    /// Whether the notice is gone from the thread.
    #[allow(clippy::ptr_arg)]
    async fn gone(&self, thread: &String, notice: &u64, _key: IntentKey) -> Probe<u64> {
        let Ok(threads) = self.threads.lock() else { return Probe::Failed("the desk is unavailable".into()) };
        let present = threads.get(thread).is_some_and(|notices| notices.iter().any(|(n, _)| n.id == *notice));
        if present { Probe::NotLanded } else { Probe::Landed(*notice) }
    }
}

/// The desk's tools in one toolbox.
pub fn toolbox(desk: Arc<Desk>) -> Result<Toolbox, tool_contract::toolbox::DuplicateTool> {
    let mut toolbox = Toolbox::new();
    toolbox.add_method(Arc::clone(&desk), Desk::list_notices_tool())?;
    toolbox.add_method(Arc::clone(&desk), Desk::post_notice_tool())?;
    toolbox.add_method(Arc::clone(&desk), Desk::delete_notice_tool())?;
    toolbox.add_method(Arc::clone(&desk), Desk::refund_tool())?;
    toolbox.add_method(desk, Desk::list_refunds_tool())?;
    Ok(toolbox)
}

const USAGE: &str = "usage: support_desk [--log PATH [--log-wait S] [--approve-in-log]] [--budget-s N] [--instance-id ID] [--fault lost-refund|busy-refund|lost-notice] [--contract-service URL] [--http ADDR [--token T] [--allow-origin O] [--console]]";

/// What `--help` says after the usage line.
const HELP: &str = "
An MCP server (stdio, or streamable HTTP with --http) over an in-memory support desk:
list_notices (read), post_notice (send, probed), delete_notice (destructive, probed),
refund (money, probed) and list_refunds (read).

  --log PATH          keep the attempt log in a file (default: in memory)
  --log-wait S        while another process holds the --log file, wait up to S seconds for it,
                      0 to a day (default 30); a process holds the log until it exits
  --approve-in-log    ask before a refund's second attempt in the --log file, for an operator
                      to answer (`tool-contract console LOG`), instead of the person at the client
  --budget-s N        each call's budget in seconds, 1 to a year (default 60)
  --instance-id ID    the task of calls that name none (default: with --log, drawn once and kept in
                      LOG.instance, so their keys survive a restart; without, random at every start)
  --http ADDR         serve streamable HTTP at /mcp (feature `http`)
  --token T           require `Authorization: Bearer T` (with --http); given more than once, each
                      token is a client of its own, and a question asked through one is answered
                      through it alone
  --allow-origin O    let a browser page from O (http(s)://host[:port]) call it (with --http)
  --console           serve the operator console over the --log file at /console (with --http;
                      feature `console`)
  --fault lost-refund lose the reply of each refund's first attempt after applying it, and make
                      the refund's probe fail: the refund is left in doubt for a person to settle
  --fault busy-refund refuse each refund's first attempt (503, nothing refunded): the second
                      attempt needs the approval of the person at the client
  --fault lost-notice lose each notice's first attempt on the way (nothing posted, no answer) and
                      make the notice's probe fail: the notice is left in doubt for an operator
  --contract-service URL
                      also serve the contract's fixture tools (contract/tools.json), against the
                      fake service at URL: what contract/runner.py runs the behaviour cases with
";

/// How long a server waits for a `--log` file another process holds, unless `--log-wait` says.
const LOG_WAIT_S: u64 = 30;

/// The longest `--log-wait`: a day.
const MAX_LOG_WAIT_S: u64 = 86_400;

/// The longest budget a call may be given: a year.
const MAX_BUDGET_S: u64 = 365 * 86_400;

/// What the command line asked for instead of a server.
enum Asked {
    /// `--help`: the usage, and a success.
    Help,
    /// A mistake, and what to do instead.
    Wrong(String),
}

impl From<String> for Asked {
    fn from(why: String) -> Asked {
        Asked::Wrong(why)
    }
}

/// What the command line asks for: the server, and the HTTP address and options when not stdio.
// Without the `http` feature only `server` is read: the others are refused while parsing.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
struct Setup {
    server: McpServer,
    http: Option<String>,
    tokens: Vec<String>,
    origins: Vec<String>,
    /// `--console`: the operator console over the `--log` file, at `/console`.
    #[cfg_attr(not(feature = "console"), allow(dead_code))]
    console: Option<String>,
    /// Where the instance id came from.
    instance: Instance,
}

fn server(args: &[String]) -> Result<Setup, Asked> {
    let (mut http, mut tokens, mut origins) = (None, Vec::new(), Vec::new());
    let (mut log_path, mut console, mut in_log) = (None::<String>, false, false);
    let mut log_wait = None;
    let mut instance = Instance::Drawn;
    let fault =
        args.iter().position(|a| a == "--fault").map(|at| args.get(at + 1).map_or("", String::as_str));
    let desk = match fault {
        None => Desk::default(),
        Some("lost-refund") => Desk { lost_refund: true, ..Desk::default() },
        Some("busy-refund") => Desk { busy_refund: true, ..Desk::default() },
        Some("lost-notice") => Desk { lost_notice: true, ..Desk::default() },
        Some(other) => {
            let faults = "`lost-refund`, `busy-refund` or `lost-notice`";
            return Err(format!("--fault takes {faults}, not `{other}`\n{USAGE}").into());
        }
    };
    let desk = Arc::new(desk);
    let mut tools = toolbox(desk).map_err(|e| e.to_string())?;
    if let Some(at) = args.iter().position(|a| a == "--contract-service") {
        let url = args.get(at + 1).ok_or_else(|| format!("--contract-service needs a value\n{USAGE}"))?;
        if !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(
                format!("--contract-service {url}: the fake service's http:// or https:// URL").into()
            );
        }
        contract_tools::add(&mut tools, url.clone()).map_err(|e| e.to_string())?;
    }
    let mut builder = McpServer::builder(tools).server_info("support_desk", "0.1.0");
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--log" => {
                log_path = Some(value()?.clone());
            }
            "--log-wait" => {
                let text = value()?;
                match text.parse() {
                    Ok(seconds @ 0..=MAX_LOG_WAIT_S) => log_wait = Some(seconds),
                    _ => {
                        return Err(format!(
                            "--log-wait {text}: a whole number of seconds from 0 to {MAX_LOG_WAIT_S} (a day)"
                        )
                        .into());
                    }
                }
            }
            "--budget-s" => {
                let text = value()?;
                let seconds: u64 = match text.parse() {
                    Ok(seconds @ 1..=MAX_BUDGET_S) => seconds,
                    _ => {
                        return Err(format!(
                            "--budget-s {text}: a whole number of seconds from 1 to {MAX_BUDGET_S} (a year)"
                        )
                        .into());
                    }
                };
                builder = builder.budget(Duration::from_secs(seconds));
            }
            "--instance-id" => {
                let id = value()?;
                if !tool_contract::task::is_valid_name(id) {
                    return Err(format!(
                        "--instance-id {id:?}: 1 to 256 characters, none a control character"
                    )
                    .into());
                }
                instance = Instance::Given;
                builder = builder.instance_id(id.clone());
            }
            "--fault" | "--contract-service" => {
                value()?;
            }
            "--http" => http = Some(value()?.clone()),
            "--console" => console = true,
            "--approve-in-log" => in_log = true,
            "--token" => tokens.push(value()?.clone()),
            "--allow-origin" => origins.push(value()?.clone()),
            "--help" | "-h" => return Err(Asked::Help),
            _ => return Err(format!("{arg}: not an option\n{USAGE}").into()),
        }
    }
    if http.is_none() && (!tokens.is_empty() || !origins.is_empty()) {
        return Err(
            "--token and --allow-origin go with --http ADDR; over stdio there is no request to check"
                .to_owned()
                .into(),
        );
    }
    if http.is_some() && !cfg!(feature = "http") {
        let build = "cargo run -p tool-contract-mcp --features http --example support_desk";
        return Err(format!("--http needs the `http` feature: {build}").into());
    }
    if log_wait.is_some() && log_path.is_none() {
        return Err(format!("--log-wait waits for the --log file: give --log PATH\n{USAGE}").into());
    }
    let journal = match &log_path {
        Some(path) => {
            // A client that starts a server per call starts the next while the last still holds the
            // log: this one waits for it, within the bound, and says so once.
            let wait = log_wait.unwrap_or(LOG_WAIT_S);
            let log = FileJournal::open_waiting(path, Duration::from_secs(wait), || {
                eprintln!("support_desk: waiting up to {wait}s for {path}, open by another process");
            })
            .map_err(|error| format!("{path}: {error}"))?;
            let log = Arc::new(log);
            builder = builder.journal(log.clone());
            // A durable log keeps its instance id beside it: after a restart, a call that names no task
            // is the same intent as before, and an effect in doubt is resolved, not repeated.
            if instance == Instance::Drawn {
                let kept = kept_instance(path);
                match std::fs::read_to_string(&kept) {
                    Ok(id) if tool_contract::task::is_valid_name(id.trim()) => {
                        builder = builder.instance_id(id.trim().to_owned());
                        instance = Instance::Kept(kept);
                    }
                    Ok(_) => {
                        return Err(format!(
                            "{}: not an instance id; remove it, or give --instance-id",
                            kept.display()
                        )
                        .into());
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => instance = Instance::ToKeep(kept),
                    Err(e) => return Err(format!("{}: {e}", kept.display()).into()),
                }
            }
            Some(log)
        }
        None => None,
    };
    if in_log {
        let Some(journal) = journal else {
            return Err(format!("--approve-in-log asks in the --log file: give --log PATH\n{USAGE}").into());
        };
        // The question waits as long as the call's budget lets it.
        let approver =
            tool_contract::person::LogApprover::new(journal).wait(Duration::from_secs(MAX_BUDGET_S));
        builder = builder.approver(approver);
    }
    let server = builder.build().map_err(|e| e.to_string())?;
    if let Instance::ToKeep(kept) = &instance {
        // Written whole, by a rename: a crash leaves the old state or the new, never half an id.
        let part = kept.with_extension("instance.part");
        std::fs::write(&part, format!("{}\n", server.instance_id()))
            .and_then(|()| std::fs::rename(&part, kept))
            .map_err(|e| format!("cannot keep the instance id in {}: {e}", kept.display()))?;
    }
    if console && (http.is_none() || log_path.is_none() || !cfg!(feature = "console")) {
        let build = "cargo run -p tool-contract-mcp --features console --example support_desk";
        return Err(format!(
            "--console goes with --http ADDR and --log PATH, and needs the `console` feature: {build}"
        )
        .into());
    }
    let console = if console { log_path } else { None };
    Ok(Setup { server, http, tokens, origins, console, instance })
}

/// Where the instance id came from.
#[derive(PartialEq, Eq)]
enum Instance {
    /// `--instance-id`.
    Given,
    /// Drawn at this start: no log keeps it.
    Drawn,
    /// Read from the file beside the log.
    Kept(std::path::PathBuf),
    /// Drawn at this start, and written to the file beside the log.
    ToKeep(std::path::PathBuf),
}

/// The file beside the log `path` that keeps its instance id: `{path}.instance`.
fn kept_instance(path: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{path}.instance"))
}

#[cfg(feature = "http")]
async fn serve(setup: Setup) -> Result<(), String> {
    use tool_contract_mcp::http::HttpOptions;
    let Some(addr) = setup.http else { return setup.server.serve_stdio().await.map_err(|e| e.to_string()) };
    let addr = addr.parse().map_err(|_| format!("--http {addr}: not an address like 127.0.0.1:8000"))?;
    let mut options = HttpOptions::default().addr(addr);
    for token in setup.tokens {
        options = options.bearer_token(token);
    }
    for origin in setup.origins {
        options = options.allow_origin(origin);
    }
    #[allow(unused_mut)]
    let mut server = setup.server.bind_http(options).await.map_err(|e| e.to_string())?;
    #[cfg(feature = "console")]
    if let Some(log) = &setup.console {
        let url = server.console(std::path::Path::new(log), tool_contract_console::Options::default())?;
        eprintln!("support_desk: the operator console: open {url}");
        if let Some(token) = server.console_token() {
            eprintln!("support_desk: that address logs in once; after it, log in with the token {token}");
        }
    }
    eprintln!(
        "support_desk: MCP over HTTP at http://{}/mcp",
        server.local_addr().map_err(|e| e.to_string())?
    );
    server.serve().await.map_err(|e| e.to_string())
}

#[cfg(not(feature = "http"))]
async fn serve(setup: Setup) -> Result<(), String> {
    setup.server.serve_stdio().await.map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let setup = match server(&args) {
        Ok(setup) => setup,
        Err(Asked::Help) => {
            println!("{USAGE}\n\n{}", HELP.trim());
            return ExitCode::SUCCESS;
        }
        Err(Asked::Wrong(error)) => {
            eprintln!("support_desk: {error}");
            return ExitCode::from(2);
        }
    };
    let id = setup.server.instance_id().to_owned();
    match &setup.instance {
        Instance::Given => eprintln!("support_desk: instance {id} (the task of calls that name none)"),
        Instance::Drawn => eprintln!(
            "support_desk: instance {id} (the task of calls that name none), drawn at this start: with no \
             log, nothing is kept"
        ),
        Instance::Kept(kept) | Instance::ToKeep(kept) => eprintln!(
            "support_desk: instance {id} (the task of calls that name none), kept in {}: a restart on this \
             log keeps it, so a call repeated after a restart is the same intent, never paid twice",
            kept.display()
        ),
    }
    match serve(setup).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("support_desk: {error}");
            ExitCode::FAILURE
        }
    }
}
