//! The `tool-contract` command: operator tools for intents and attempt logs.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use tool_contract::journal::inspect::{self, View};
use tool_contract::journal::read_log;
use tool_contract::journal::terminal::{Terminal, escape};
use tool_contract::key::Intent;
use tool_contract::unstable::settle_command::{self as command, HELP_TEMPLATE};
use tool_contract::{FileJournal, IntentKey};

/// The command line: one definition, from which the help and the usage errors are printed.
#[derive(Parser)]
#[command(
    name = "tool-contract",
    version,
    propagate_version = true,
    help_template = HELP_TEMPLATE,
    about = "Operator tools for intents and attempt logs.",
    after_help = "Exit codes: 0 done; 1 refused or failed (said on standard error, or on standard output \
                  with --json); 2 bad usage."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the intent key of one intent (32 hex characters).
    #[command(help_template = HELP_TEMPLATE)]
    Key(KeyFlags),
    /// Print each task's attempts in an attempt log as a timeline.
    ///
    /// A log in PostgreSQL (a postgres:// connection string, or --pg-url-file FILE, with --pg-ca-file
    /// FILE for TLS) is read by the `tool-contract-postgres` command, with the same arguments.
    #[command(help_template = HELP_TEMPLATE)]
    Log(LogFlags),
    /// Record what a person found of an intent in doubt.
    ///
    /// It landed (later calls answer ok with the value, nothing repeated) or it did not (the next
    /// call makes the next attempt). Works while an agent holds the log: the agent picks the request
    /// up (--wait). A log in PostgreSQL is settled by the `tool-contract-postgres` command, with the
    /// same arguments (and its --pg-url-file, --pg-ca-file).
    #[command(
        help_template = HELP_TEMPLATE,
        after_help = "Exit codes: 0 recorded; 1 refused (the intent's state is named) or not recorded; \
                      2 bad usage."
    )]
    Settle(command::Flags),
    /// Serve a local page over an attempt log, to settle the intents in doubt.
    ///
    /// The page (while an agent holds the log) shows the intents in doubt and their timelines, and
    /// settles them. Run by the `tool-contract-console` command, which is given these arguments
    /// (`tool-contract-console --help` lists its flags).
    #[command(help_template = HELP_TEMPLATE)]
    Console {
        /// The log and the console's flags, passed on as given
        #[arg(value_name = "ARGS", trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Rewrite an attempt log keeping each intent's latest attempt.
    ///
    /// The log is replaced atomically; run it while no process has the log open.
    #[command(help_template = HELP_TEMPLATE)]
    Compact {
        /// The attempt log's path
        #[arg(value_name = "PATH")]
        path: String,
    },
}

#[derive(clap::Args)]
struct KeyFlags {
    /// The task
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    task: String,
    /// The actor
    #[arg(long, value_name = "A", allow_hyphen_values = true)]
    actor: String,
    /// The verb
    #[arg(long, value_name = "V", allow_hyphen_values = true)]
    verb: String,
    /// The target
    #[arg(long, value_name = "X", allow_hyphen_values = true)]
    target: String,
    /// The slot, when one task does the same thing more than once
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    slot: Option<String>,
}

#[derive(clap::Args)]
struct LogFlags {
    /// The attempt log: a file's path, or a PostgreSQL connection string
    #[arg(value_name = "PATH|postgres://...")]
    path: String,
    /// Only the attempts of task T
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    task: Option<String>,
    /// Only the intents in doubt: unfinished, unknown, or their effect unknown (the escalation queue)
    #[arg(long)]
    unresolved: bool,
    /// One JSON document on one line, for machines
    #[arg(long)]
    json: bool,
}

/// Why the command stopped.
pub(crate) enum Failure {
    /// The command line is wrong: the message, and the help of the command it was for.
    Usage(String, String),
    /// The work failed: one line.
    Fatal(String),
    /// Standard output was closed (`| head`): not an error.
    Closed,
    /// A command run on this one's behalf failed with this exit code (it said why).
    Exit(i32),
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let stdout = io::stdout();
    // Both streams escape control characters: what a log, a tool or a person wrote reaches the
    // terminal as text, whichever printer printed it.
    let mut out = Terminal::new(io::BufWriter::new(stdout.lock()));
    let mut warn = Terminal::new(io::stderr());
    let result = run(&args, &mut out, &mut warn).and_then(|()| out.flush().map_err(written));
    match result {
        Ok(()) | Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::Usage(err, usage)) => {
            let _ = write!(warn, "tool-contract: {}\n{usage}", escape(&err));
            ExitCode::from(2)
        }
        Err(Failure::Fatal(err)) => {
            let _ = writeln!(warn, "tool-contract: {}", escape(&err));
            ExitCode::FAILURE
        }
        Err(Failure::Exit(code)) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
    }
}

/// Runs the command line `args` (the program's name first); its output goes to `out`, warnings to
/// `warn`.
pub(crate) fn run(
    args: &[std::ffi::OsString],
    out: &mut dyn Write,
    warn: &mut dyn Write,
) -> Result<(), Failure> {
    // The flags that say how PostgreSQL is reached (--pg-url-file, --pg-ca-file) are the PostgreSQL
    // command's: a log or settle naming one is handed to it whole.
    let reaches_postgres =
        args.iter().skip(2).any(|arg| arg.to_str().is_some_and(|a| a.starts_with("--pg-")));
    if reaches_postgres && matches!(args.get(1).and_then(|a| a.to_str()), Some("log" | "settle")) {
        return postgres("tool-contract-postgres");
    }
    let mut cli = Cli::command();
    cli.build();
    // The help of the command named, or else of them all: what a usage error shows.
    let help_of = |cli: &mut clap::Command, name: Option<&std::ffi::OsString>| match name
        .and_then(|name| cli.find_subcommand_mut(name))
    {
        Some(sub) => sub.render_help().to_string(),
        None => cli.render_help().to_string(),
    };
    let matches = match cli.try_get_matches_from_mut(args) {
        Ok(matches) => matches,
        Err(err) if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            return write!(out, "{}", err.render()).map_err(written);
        }
        Err(err) => return Err(Failure::Usage(command::usage_error(&err), help_of(&mut cli, args.get(1)))),
    };
    let mut usage = |err: String| Failure::Usage(err, help_of(&mut cli, args.get(1)));
    let parsed = Cli::from_arg_matches(&matches).map_err(|err| usage(command::usage_error(&err)))?;
    match parsed.command {
        Command::Key(flags) => writeln!(out, "{}", key(&flags)).map_err(written),
        Command::Log(flags) => log(&flags, out, warn),
        Command::Compact { path } => compact(&path, out, warn),
        Command::Settle(flags) => settle(&flags.check().map_err(usage)?, out),
        Command::Console { .. } => {
            helper("tool-contract-console", "the console", "tool-contract-console --features cli")
        }
    }
}

fn written(err: io::Error) -> Failure {
    if err.kind() == io::ErrorKind::BrokenPipe {
        Failure::Closed
    } else {
        Failure::Fatal(format!("cannot write the output: {err}"))
    }
}

fn key(flags: &KeyFlags) -> IntentKey {
    let mut intent = Intent::new(&flags.task, &flags.actor, &flags.verb, &flags.target);
    if let Some(slot) = &flags.slot {
        intent = intent.slot(slot);
    }
    intent.key()
}

fn log(flags: &LogFlags, out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), Failure> {
    log_with(flags, out, warn, "tool-contract-postgres")
}

/// `log`, reading a PostgreSQL log with the command `pg_command`.
fn log_with(
    args: &LogFlags,
    out: &mut dyn Write,
    warn: &mut dyn Write,
    pg_command: &str,
) -> Result<(), Failure> {
    if is_postgres(&args.path) {
        return postgres(pg_command);
    }
    let contents = read_log(&args.path).map_err(|e| Failure::Fatal(e.to_string()))?;
    for warning in &contents.warnings {
        // A warning that cannot be written is no reason to withhold the log.
        let _ = writeln!(warn, "tool-contract: warning: {}", escape(&format!("{} {warning}", args.path)));
    }
    let view = View { task: args.task.as_deref(), unresolved: args.unresolved, json: args.json };
    inspect::render(&args.path, &contents.records, &contents.warnings, &view, out).map_err(written)
}

/// A PostgreSQL connection string rather than a path.
fn is_postgres(log: &str) -> bool {
    log.starts_with("postgres://") || log.starts_with("postgresql://")
}

/// A log in PostgreSQL is read by `tool-contract-postgres`, the command of the store's crate (this
/// crate does not depend on it): run it with the same arguments, found beside this command or on `PATH`.
fn postgres(name: &str) -> Result<(), Failure> {
    helper(
        name,
        "the log given is a PostgreSQL database: reading it",
        "tool-contract-postgres --features cli",
    )
}

/// Run the command `name` of another crate of this project (`what` needs it; it is installed from
/// `package`, with its features) with this command's arguments, found beside this command or on `PATH`.
fn helper(name: &str, what: &str, package: &str) -> Result<(), Failure> {
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|dir| dir.join(name)));
    let program = beside.filter(|p| p.is_file()).map_or_else(|| name.into(), std::ffi::OsString::from);
    // Its own arguments, as given: the connection string is passed on, never printed.
    match std::process::Command::new(&program).args(std::env::args_os().skip(1)).status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(Failure::Exit(status.code().unwrap_or(1))),
        // The connection string is not echoed: it may hold a password.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Failure::Fatal(format!(
            "{what} needs the `{name}` command, which is not installed (`cargo install --path {package}` in \
             a checkout of the project)"
        ))),
        Err(e) => Err(Failure::Fatal(format!("cannot run `{name}`: {e}"))),
    }
}

fn settle(asked: &command::Args, out: &mut dyn Write) -> Result<(), Failure> {
    if is_postgres(&asked.log) {
        return postgres("tool-contract-postgres");
    }
    let done = tool_contract::journal::file::request_settlement(
        std::path::Path::new(&asked.log),
        &asked.key,
        asked.attempt,
        &asked.settle,
        asked.wait,
    );
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

fn compact(path: &str, out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), Failure> {
    let done = FileJournal::compact(path).map_err(|e| Failure::Fatal(e.to_string()))?;
    let path = escape(path);
    for warning in &done.dropped {
        let warning = escape(&warning.to_string()).into_owned();
        let _ =
            writeln!(warn, "tool-contract: warning: {path} {warning} (not carried into the compacted log)");
    }
    writeln!(
        out,
        "compacted {path}: {} records -> {} ({} intents), {} -> {} bytes",
        done.records_before, done.records_after, done.intents, done.bytes_before, done.bytes_after
    )
    .map_err(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_log_without_its_command_says_how_to_install_it_and_hides_the_password() {
        let flags = LogFlags {
            path: "postgres://agent:hunter2@db.invalid/agents".to_owned(),
            task: None,
            unresolved: false,
            json: false,
        };
        let Err(Failure::Fatal(message)) =
            log_with(&flags, &mut Vec::new(), &mut Vec::new(), "no-such-command")
        else {
            panic!("a missing command is an error")
        };
        assert!(message.contains("cargo install --path tool-contract-postgres"), "{message}");
        assert!(message.contains("PostgreSQL database"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
}
