//! The `tool-contract-postgres` command: an operator's view of an attempt log in PostgreSQL, printed as
//! `tool-contract log` prints a file, and its retention.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use tool_contract::journal::inspect::{self, View};
use tool_contract::journal::settle_command as command;
use tool_contract::journal::terminal::{Terminal, escape};
use tool_contract_postgres::{PgJournal, PgOptions, redact};

const USAGE: &str = "usage:
  tool-contract-postgres log [CONNINFO|PATH] [--task T] [--unresolved] [--json]
      print each task's attempts as a timeline, as `tool-contract log` does; a PATH (anything
      but a connection string) is read as a file log, so this one command reads both
      --task T      only the attempts of task T
      --unresolved  only the intents in doubt: unfinished, unknown, or their effect unknown (the escalation queue)
      --json        one JSON document on one line, for machines
  tool-contract-postgres settle [CONNINFO] --intent KEY --attempt N|ID (--landed [--value JSON] | --not-landed)
                --evidence TEXT --by NAME [--json]
      record what a person found of an intent in doubt, as `tool-contract settle` does; safe
      while workers run (the settlement is written under the intent's claim)
      exit 0: recorded; 1: refused (the intent's state is named) or not recorded; 2: bad usage
  tool-contract-postgres forget --older-than-days N [CONNINFO]
      remove the intents resolved more than N days ago (never one in doubt, never
      one a worker holds); safe while workers run
CONNINFO is a connection string (postgres://user@host/db or host=... dbname=...); without it, the
environment variable TOOL_CONTRACT_PG, which keeps a password out of the process list. The log is
read without changing anything: no schema is created.";

/// The variable that holds the connection string when the command line does not.
const CONNINFO_VAR: &str = "TOOL_CONTRACT_PG";

enum Failure {
    Usage(String),
    Fatal(String),
    /// Standard output was closed (`| head`): what was wanted was read.
    Closed,
    /// Said on standard output already; exit with this code.
    Exit(u8),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Both streams escape control characters: what the store, a tool or a person wrote reaches the
    // terminal as text, whichever printer printed it.
    let mut warn = Terminal::new(io::stderr());
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(warn, "tool-contract-postgres: cannot start: {}", escape(&e.to_string()));
            return ExitCode::FAILURE;
        }
    };
    let stdout = io::stdout();
    let mut out = Terminal::new(io::BufWriter::new(stdout.lock()));
    let result =
        runtime.block_on(run(&args, &mut out, &mut warn)).and_then(|()| out.flush().map_err(written));
    match result {
        Ok(()) | Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::Usage(err)) => {
            let _ = writeln!(warn, "tool-contract-postgres: {}\n{USAGE}", escape(&err));
            ExitCode::from(2)
        }
        Err(Failure::Fatal(err)) => {
            let _ = writeln!(warn, "tool-contract-postgres: {}", escape(&err));
            ExitCode::FAILURE
        }
        Err(Failure::Exit(code)) => ExitCode::from(code),
    }
}

fn written(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Failure::Closed;
    }
    Failure::Fatal(format!("cannot write the output: {e}"))
}

async fn run(args: &[String], out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), Failure> {
    match args.first().map(String::as_str) {
        Some("log") => log(&args[1..], out, warn).await,
        Some("forget") => forget(&args[1..], out).await,
        Some("settle") => settle(&args[1..], out).await,
        Some("-h" | "--help" | "help") => writeln!(out, "{USAGE}").map_err(written),
        Some(other) => Err(Failure::Usage(format!("unknown command `{other}`"))),
        None => Err(Failure::Usage("missing command".to_owned())),
    }
}

/// The flags of one command, and the connection string.
#[derive(Default)]
struct Args {
    conninfo: Option<String>,
    task: Option<String>,
    unresolved: bool,
    json: bool,
    days: Option<u64>,
}

fn parse(args: &[String], flags: &[&str]) -> Result<Args, Failure> {
    let mut parsed = Args::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let flag = arg.as_str();
        if flag.starts_with("--") && !flags.contains(&flag) {
            return Err(Failure::Usage(format!("unknown flag `{flag}`")));
        }
        match flag {
            "--task" => {
                let value = it.next().ok_or_else(|| Failure::Usage("`--task` needs a value".to_owned()))?;
                if parsed.task.replace(value.clone()).is_some() {
                    return Err(Failure::Usage("`--task` given twice".to_owned()));
                }
            }
            "--unresolved" => parsed.unresolved = true,
            "--json" => parsed.json = true,
            "--older-than-days" => {
                let value = it
                    .next()
                    .ok_or_else(|| Failure::Usage("`--older-than-days` needs a value".to_owned()))?;
                let days = value.parse::<u64>().ok().filter(|d| *d <= 36_500).ok_or_else(|| {
                    Failure::Usage(format!("`--older-than-days` takes a number of days, not `{value}`"))
                })?;
                parsed.days = Some(days);
            }
            value => {
                if parsed.conninfo.replace(value.to_owned()).is_some() {
                    return Err(Failure::Usage("one log at a time: two connection strings given".to_owned()));
                }
            }
        }
    }
    Ok(parsed)
}

/// `settle`: a settlement written through the store, under the intent's claim.
async fn settle(args: &[String], out: &mut dyn Write) -> Result<(), Failure> {
    // The connection string may come from the environment: the command line's log is then absent.
    let mut args = args.to_vec();
    let given = args.iter().any(|a| is_conninfo(a));
    if !given {
        args.push(
            std::env::var(CONNINFO_VAR).map_err(|_| {
                Failure::Usage(format!("no connection string: give one, or set {CONNINFO_VAR}"))
            })?,
        );
    }
    let asked = command::parse(&args).map_err(Failure::Usage)?;
    let (journal, _) = open(Some(asked.log.clone()), false).await?;
    let done = tool_contract::settle(&journal, &asked.key, asked.attempt, &asked.settle).await;
    let (line, code) = command::outcome(done, asked.json);
    match code {
        0 => writeln!(out, "{line}").map_err(written),
        _ if asked.json => {
            writeln!(out, "{line}").map_err(written)?;
            Err(Failure::Exit(1))
        }
        _ => Err(Failure::Fatal(line)),
    }
}

/// The store named by the command line, or by [`CONNINFO_VAR`], opened to read.
async fn open(conninfo: Option<String>, read_only: bool) -> Result<(PgJournal, String), Failure> {
    let conninfo = match conninfo {
        Some(given) => given,
        None => std::env::var(CONNINFO_VAR)
            .map_err(|_| Failure::Usage(format!("no connection string: give one, or set {CONNINFO_VAR}")))?,
    };
    let options = PgOptions::default().pool_size(1).read_only(read_only);
    let journal =
        PgJournal::connect_with(&conninfo, options).await.map_err(|e| Failure::Fatal(e.to_string()))?;
    Ok((journal, redact(&conninfo)))
}

/// A connection string rather than a file's path: a URL, or `key=value` pairs naming a host or a
/// database.
fn is_conninfo(text: &str) -> bool {
    text.starts_with("postgres://")
        || text.starts_with("postgresql://")
        || text
            .split_whitespace()
            .any(|pair| ["host=", "dbname=", "user=", "port="].iter().any(|k| pair.starts_with(k)))
}

async fn log(args: &[String], out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), Failure> {
    let args = parse(args, &["--task", "--unresolved", "--json"])?;
    let view = View { task: args.task.as_deref(), unresolved: args.unresolved, json: args.json };
    if let Some(path) = args.conninfo.as_deref().filter(|given| !is_conninfo(given)) {
        let contents = tool_contract::journal::read_log(path).map_err(|e| Failure::Fatal(e.to_string()))?;
        for warning in &contents.warnings {
            let _ =
                writeln!(warn, "tool-contract-postgres: warning: {}", escape(&format!("{path} {warning}")));
        }
        return inspect::render(path, &contents.records, &contents.warnings, &view, out).map_err(written);
    }
    let (journal, name) = open(args.conninfo, true).await?;
    let records = journal.records(args.task.as_deref()).await.map_err(|e| Failure::Fatal(e.to_string()))?;
    inspect::render(&name, &records, &[], &view, out).map_err(written)
}

async fn forget(args: &[String], out: &mut dyn Write) -> Result<(), Failure> {
    let args = parse(args, &["--older-than-days"])?;
    let days = args.days.ok_or_else(|| Failure::Usage("missing `--older-than-days N`".to_owned()))?;
    let (journal, name) = open(args.conninfo, true).await?;
    let removed = journal
        .remove_resolved_older_than(Duration::from_secs(days * 86_400))
        .await
        .map_err(|e| Failure::Fatal(e.to_string()))?;
    let name = escape(&name);
    writeln!(out, "{name}: removed {removed} intents resolved more than {days} days ago").map_err(written)
}
