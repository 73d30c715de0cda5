//! The `tool-contract-postgres` command: an operator's view of an attempt log in PostgreSQL, printed as
//! `tool-contract log` prints a file, and its retention.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use tool_contract::journal::inspect::{self, View};
use tool_contract::journal::terminal::{Terminal, escape};
use tool_contract::unstable::settle_command::{self as command, HELP_TEMPLATE};
use tool_contract_postgres::{PgJournal, PgOptions, Transport, redact};

/// The command line: one definition, from which the help and the usage errors are printed.
#[derive(Parser)]
#[command(
    name = "tool-contract-postgres",
    version,
    propagate_version = true,
    help_template = HELP_TEMPLATE,
    about = "An operator's view of an attempt log in PostgreSQL, and its retention.",
    after_help = "CONNINFO is a connection string (postgres://user@host/db or host=... dbname=...); without \
                  it, the one in --pg-url-file FILE, else in the environment variable TOOL_CONTRACT_PG: \
                  both keep a password out of the process list. TLS: --pg-ca-file FILE, or sslmode=require \
                  (the system's certificates); a connection in clear text to another host is warned \
                  of.\nExit codes: 0 done; 1 refused or failed; 2 bad usage."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    reach: Reach,
}

/// How the store is reached, beside the connection string: flags of every command.
#[derive(clap::Args)]
struct Reach {
    /// Read the connection string from FILE (instead of CONNINFO or TOOL_CONTRACT_PG)
    #[arg(long, value_name = "FILE", global = true)]
    pg_url_file: Option<std::path::PathBuf>,
    /// Reach PostgreSQL over TLS, checking its certificate and name against the PEM certificates in
    /// FILE: TLS or nothing, unless the connection string says sslmode=prefer
    #[arg(long, value_name = "FILE", global = true)]
    pg_ca_file: Option<std::path::PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Print each task's attempts as a timeline, as `tool-contract log` does.
    ///
    /// A PATH (anything but a connection string) is read as a file log, so this one command reads
    /// both. The log is read without changing anything: no schema is created.
    #[command(help_template = HELP_TEMPLATE)]
    Log {
        /// The connection string, or a file log's path
        #[arg(value_name = "CONNINFO|PATH")]
        log: Option<String>,
        /// Only the attempts of task T
        #[arg(long, value_name = "T", allow_hyphen_values = true)]
        task: Option<String>,
        /// Only the intents in doubt: unfinished, unknown, or their effect unknown (the escalation
        /// queue)
        #[arg(long)]
        unresolved: bool,
        /// One JSON document on one line, for machines
        #[arg(long)]
        json: bool,
    },
    /// Record what a person found of an intent in doubt, as `tool-contract settle` does.
    ///
    /// Safe while workers run: the settlement is written under the intent's claim.
    #[command(
        help_template = HELP_TEMPLATE,
        after_help = "Exit codes: 0 recorded; 1 refused (the intent's state is named) or not recorded; \
                      2 bad usage."
    )]
    Settle(command::Flags),
    /// Remove the intents resolved more than N days ago.
    ///
    /// Never one in doubt, never one a worker holds; safe while workers run.
    #[command(help_template = HELP_TEMPLATE)]
    Forget {
        /// The connection string
        #[arg(value_name = "CONNINFO")]
        conninfo: Option<String>,
        /// Remove the intents resolved more than N days ago
        #[arg(long, value_name = "N", required = true)]
        older_than_days: String,
    },
}

/// The variable that holds the connection string when the command line does not.
const CONNINFO_VAR: &str = "TOOL_CONTRACT_PG";

enum Failure {
    /// The command line is wrong: the message, and the help of the command it was for.
    Usage(String, String),
    Fatal(String),
    /// Standard output was closed (`| head`): what was wanted was read.
    Closed,
    /// Said on standard output already; exit with this code.
    Exit(u8),
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
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
        Err(Failure::Usage(err, usage)) => {
            let _ = write!(warn, "tool-contract-postgres: {}\n{usage}", escape(&err));
            ExitCode::from(2)
        }
        Err(Failure::Fatal(err)) => {
            let _ = writeln!(warn, "tool-contract-postgres: {}", escape(&err));
            ExitCode::FAILURE
        }
        Err(Failure::Exit(code)) => ExitCode::from(code),
    }
}

impl Failure {
    /// A usage error found after the command line was read (no connection string), with the help
    /// `usage` adds.
    fn usage(self, usage: impl FnOnce(String) -> Failure) -> Failure {
        match self {
            Failure::Usage(err, help) if help.is_empty() => usage(err),
            other => other,
        }
    }
}

fn written(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Failure::Closed;
    }
    Failure::Fatal(format!("cannot write the output: {e}"))
}

/// Runs the command line `args` (the program's name first).
async fn run(args: &[std::ffi::OsString], out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), Failure> {
    let mut cli = Cli::command();
    cli.build();
    // The help of the command named, or else of them all: what a usage error shows.
    let help_of = |cli: &mut clap::Command| match args.get(1).and_then(|name| cli.find_subcommand_mut(name)) {
        Some(sub) => sub.render_help().to_string(),
        None => cli.render_help().to_string(),
    };
    let matches = match cli.try_get_matches_from_mut(args) {
        Ok(matches) => matches,
        Err(err) if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            return write!(out, "{}", err.render()).map_err(written);
        }
        Err(err) => return Err(Failure::Usage(command::usage_error(&err), help_of(&mut cli))),
    };
    let mut usage = |err: String| Failure::Usage(err, help_of(&mut cli));
    let Cli { command, reach } =
        Cli::from_arg_matches(&matches).map_err(|err| usage(command::usage_error(&err)))?;
    match command {
        Command::Log { log: conninfo, task, unresolved, json } => {
            let view = View { task: task.as_deref(), unresolved, json };
            self::log(conninfo, &reach, &view, out, warn).await.map_err(|e| e.usage(usage))
        }
        Command::Forget { conninfo, older_than_days } => {
            let days = older_than_days.parse::<u64>().ok().filter(|d| *d <= 36_500).ok_or_else(|| {
                usage(format!("`--older-than-days` takes a number of days, not `{older_than_days}`"))
            })?;
            forget(conninfo, &reach, days, out, warn).await.map_err(|e| e.usage(usage))
        }
        Command::Settle(mut flags) => {
            // The connection string may come from a file or the environment.
            flags.log = Some(reach.conninfo(flags.log.take()).map_err(|e| e.usage(&mut usage))?);
            let asked = flags.check().map_err(&mut usage)?;
            settle(&asked, &reach, out, warn).await.map_err(|e| e.usage(usage))
        }
    }
}

impl Reach {
    /// The connection string: `given` on the command line, else the one in --pg-url-file, else the
    /// one in [`CONNINFO_VAR`].
    fn conninfo(&self, given: Option<String>) -> Result<String, Failure> {
        match (given, &self.pg_url_file) {
            (Some(_), Some(_)) => {
                Err(Failure::Usage("a connection string or `--pg-url-file`, not both".into(), String::new()))
            }
            (Some(given), None) => Ok(given),
            (None, Some(file)) => std::fs::read_to_string(file)
                .map(|text| text.trim().to_owned())
                .map_err(|e| Failure::Fatal(format!("`--pg-url-file {}`: {e}", file.display()))),
            (None, None) => {
                std::env::var(CONNINFO_VAR).map_err(|_| Failure::Usage(no_conninfo(), String::new()))
            }
        }
    }
}

/// Why the command line names no store.
fn no_conninfo() -> String {
    format!("no connection string: give one, --pg-url-file FILE, or set {CONNINFO_VAR}")
}

/// `settle`: a settlement written through the store, under the intent's claim.
async fn settle(
    asked: &command::Args,
    reach: &Reach,
    out: &mut dyn Write,
    warn: &mut dyn Write,
) -> Result<(), Failure> {
    // A settler never creates or migrates the schema: its role needs no CREATE (docs/postgres.md).
    let (journal, _) = open(asked.log.clone(), reach, true, warn).await?;
    let done = tool_contract::person::settle(&journal, &asked.key, asked.attempt, &asked.settle).await;
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

/// The store at `conninfo`, reached as `reach` says; a connection in clear text across a network is
/// warned of before it is made.
async fn open(
    conninfo: String,
    reach: &Reach,
    read_only: bool,
    warn: &mut dyn Write,
) -> Result<(PgJournal, String), Failure> {
    let transport = Transport::plan(&conninfo, reach.pg_ca_file.as_deref()).map_err(Failure::Fatal)?;
    if let Some(warning) = transport.warning() {
        let _ = writeln!(warn, "tool-contract-postgres: warning: {}", escape(&warning));
    }
    let options = PgOptions::default().pool_size(1).read_only(read_only);
    let journal =
        PgJournal::connect_over(&transport, options).await.map_err(|e| Failure::Fatal(e.to_string()))?;
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

/// `log`: the timeline of the store named, or of a file log.
async fn log(
    conninfo: Option<String>,
    reach: &Reach,
    view: &View<'_>,
    out: &mut dyn Write,
    warn: &mut dyn Write,
) -> Result<(), Failure> {
    if let Some(path) = conninfo.as_deref().filter(|given| !is_conninfo(given)) {
        let contents = tool_contract::journal::read_log(path).map_err(|e| Failure::Fatal(e.to_string()))?;
        for warning in &contents.warnings {
            let _ =
                writeln!(warn, "tool-contract-postgres: warning: {}", escape(&format!("{path} {warning}")));
        }
        return inspect::render(path, &contents.records, &contents.warnings, view, out).map_err(written);
    }
    let (journal, name) = open(reach.conninfo(conninfo)?, reach, true, warn).await?;
    let records = journal.records(view.task).await.map_err(|e| Failure::Fatal(e.to_string()))?;
    inspect::render(&name, &records, &[], view, out).map_err(written)
}

/// `forget`: the intents resolved more than `days` days ago removed.
async fn forget(
    conninfo: Option<String>,
    reach: &Reach,
    days: u64,
    out: &mut dyn Write,
    warn: &mut dyn Write,
) -> Result<(), Failure> {
    let (journal, name) = open(reach.conninfo(conninfo)?, reach, true, warn).await?;
    let removed = journal
        .remove_resolved_older_than(Duration::from_secs(days * 86_400))
        .await
        .map_err(|e| Failure::Fatal(e.to_string()))?;
    let name = escape(&name);
    writeln!(out, "{name}: removed {removed} intents resolved more than {days} days ago").map_err(written)
}
