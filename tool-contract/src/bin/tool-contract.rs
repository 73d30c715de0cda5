//! The `tool-contract` command: operator tools for intents and attempt logs.

use std::io::{self, Write};
use std::process::ExitCode;

use tool_contract::journal::inspect::{self, View};
use tool_contract::journal::read_log;
use tool_contract::journal::settle_command as command;
use tool_contract::journal::terminal::{Terminal, escape};
use tool_contract::{FileJournal, Intent, IntentKey};

const USAGE: &str = "usage:
  tool-contract key --task T --actor A --verb V --target X [--slot S]
      print the intent key of one intent (32 hex characters)
  tool-contract log PATH|postgres://... [--task T] [--unresolved] [--json]
      print each task's attempts in an attempt log as a timeline (a log in PostgreSQL is
      read by the `tool-contract-postgres` command, with the same arguments)
      --task T      only the attempts of task T
      --unresolved  only the intents in doubt: unfinished, unknown, or their effect unknown (the escalation queue)
      --json        one JSON document on one line, for machines
  tool-contract settle PATH|postgres://... --intent KEY --attempt N|ID
                (--landed [--value JSON] | --not-landed) --evidence TEXT --by NAME [--json] [--wait SECONDS]
      record what a person found of an intent in doubt: it landed (later calls answer ok with
      the value, nothing repeated) or it did not (the next call makes the next attempt).
      --attempt names the attempt you examined (its number, or its attempt id as `log` shows it):
      refused, naming the newer one, if another attempt has started since. Works while an agent
      holds the log: the agent picks the request up (--wait, default 10 s, at most 600).
      exit 0: recorded; 1: refused (the intent's state is named) or not recorded; 2: bad usage
  tool-contract console PATH [--listen 127.0.0.1:PORT] [--read-only] [--by NAME]
      a local page over the attempt log (while an agent holds it): the intents in doubt, their
      timelines, settling them; run by the `tool-contract-console` command (its --help says more)
  tool-contract compact PATH
      rewrite an attempt log keeping each intent's latest attempt, atomically;
      run it while no process has the log open";

/// Why the command stopped.
pub(crate) enum Failure {
    /// The command line is wrong: the message and the usage.
    Usage(String),
    /// The work failed: one line.
    Fatal(String),
    /// Standard output was closed (`| head`): not an error.
    Closed,
    /// A command run on this one's behalf failed with this exit code (it said why).
    Exit(i32),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = io::stdout();
    // Both streams escape control characters: what a log, a tool or a person wrote reaches the
    // terminal as text, whichever printer printed it.
    let mut out = Terminal::new(io::BufWriter::new(stdout.lock()));
    let mut warn = Terminal::new(io::stderr());
    let result = run(&args, &mut out, &mut warn).and_then(|()| out.flush().map_err(written));
    match result {
        Ok(()) | Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::Usage(err)) => {
            let _ = writeln!(warn, "tool-contract: {}\n{USAGE}", escape(&err));
            ExitCode::from(2)
        }
        Err(Failure::Fatal(err)) => {
            let _ = writeln!(warn, "tool-contract: {}", escape(&err));
            ExitCode::FAILURE
        }
        Err(Failure::Exit(code)) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
    }
}

/// Runs one command; its output goes to `out`, warnings to `warn`.
pub(crate) fn run(args: &[String], out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), Failure> {
    match args.first().map(String::as_str) {
        Some("key") => {
            let key = key(&args[1..]).map_err(Failure::Usage)?;
            writeln!(out, "{key}").map_err(written)
        }
        Some("log") => log(&args[1..], out, warn),
        Some("compact") => compact(&args[1..], out, warn),
        Some("settle") => settle(&args[1..], out),
        Some("console") => helper("tool-contract-console", "the console", "tool-contract-console"),
        Some("-h" | "--help" | "help") => writeln!(out, "{USAGE}").map_err(written),
        Some(other) => Err(Failure::Usage(format!("unknown command `{other}`"))),
        None => Err(Failure::Usage("missing command".to_owned())),
    }
}

fn written(err: io::Error) -> Failure {
    if err.kind() == io::ErrorKind::BrokenPipe {
        Failure::Closed
    } else {
        Failure::Fatal(format!("cannot write the output: {err}"))
    }
}

fn key(args: &[String]) -> Result<IntentKey, String> {
    let (mut task, mut actor, mut verb, mut target, mut slot) = (None, None, None, None, None);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let slot_for = match flag.as_str() {
            "--task" => &mut task,
            "--actor" => &mut actor,
            "--verb" => &mut verb,
            "--target" => &mut target,
            "--slot" => &mut slot,
            other => return Err(format!("unknown flag `{other}`")),
        };
        let value = it.next().ok_or_else(|| format!("`{flag}` needs a value"))?;
        if slot_for.replace(value.as_str()).is_some() {
            return Err(format!("`{flag}` given twice"));
        }
    }
    let mut intent = Intent::new(
        need(task, "--task")?,
        need(actor, "--actor")?,
        need(verb, "--verb")?,
        need(target, "--target")?,
    );
    if let Some(slot) = slot {
        intent = intent.slot(slot);
    }
    Ok(intent.key())
}

fn need<'a>(value: Option<&'a str>, flag: &str) -> Result<&'a str, String> {
    value.ok_or_else(|| format!("missing `{flag}`"))
}

struct LogArgs<'a> {
    path: &'a str,
    task: Option<&'a str>,
    unresolved: bool,
    json: bool,
}

fn log_args(args: &[String]) -> Result<LogArgs<'_>, String> {
    let (mut path, mut task, mut unresolved, mut json) = (None, None, false, false);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--task" => {
                let value = it.next().ok_or("`--task` needs a value")?;
                if task.replace(value.as_str()).is_some() {
                    return Err("`--task` given twice".to_owned());
                }
            }
            "--unresolved" => unresolved = true,
            "--json" => json = true,
            flag if flag.starts_with("--") => return Err(format!("unknown flag `{flag}`")),
            value => {
                if path.replace(value).is_some() {
                    return Err(format!("one log at a time: unexpected `{value}`"));
                }
            }
        }
    }
    let path = path.ok_or("missing the log's path")?;
    Ok(LogArgs { path, task, unresolved, json })
}

fn log(args: &[String], out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), Failure> {
    log_with(args, out, warn, "tool-contract-postgres")
}

/// `log`, reading a PostgreSQL log with the command `pg_command`.
fn log_with(
    args: &[String],
    out: &mut dyn Write,
    warn: &mut dyn Write,
    pg_command: &str,
) -> Result<(), Failure> {
    let args = log_args(args).map_err(Failure::Usage)?;
    if is_postgres(args.path) {
        return postgres(pg_command);
    }
    let contents = read_log(args.path).map_err(|e| Failure::Fatal(e.to_string()))?;
    for warning in &contents.warnings {
        // A warning that cannot be written is no reason to withhold the log.
        let _ = writeln!(warn, "tool-contract: warning: {}", escape(&format!("{} {warning}", args.path)));
    }
    let view = View { task: args.task, unresolved: args.unresolved, json: args.json };
    inspect::render(args.path, &contents.records, &contents.warnings, &view, out).map_err(written)
}

/// A PostgreSQL connection string rather than a path.
fn is_postgres(log: &str) -> bool {
    log.starts_with("postgres://") || log.starts_with("postgresql://")
}

/// A log in PostgreSQL is read by `tool-contract-postgres`, the command of the store's crate (this
/// crate does not depend on it): run it with the same arguments, found beside this command or on `PATH`.
fn postgres(name: &str) -> Result<(), Failure> {
    helper(name, "the log given is a PostgreSQL database: reading it", "tool-contract-postgres")
}

/// Run the command `name` of another crate of this project (`what` needs it; it is installed from
/// `package`) with this command's arguments, found beside this command or on `PATH`.
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
             the repository, or `cargo install --git <repository> {package}`)"
        ))),
        Err(e) => Err(Failure::Fatal(format!("cannot run `{name}`: {e}"))),
    }
}

fn settle(args: &[String], out: &mut dyn Write) -> Result<(), Failure> {
    let asked = command::parse(args).map_err(Failure::Usage)?;
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

fn compact(args: &[String], out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), Failure> {
    let path = match args {
        [path] if !path.starts_with("--") => path,
        [] => return Err(Failure::Usage("missing the log's path".to_owned())),
        _ => return Err(Failure::Usage("`compact` takes the log's path and nothing else".to_owned())),
    };
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
        let args: Vec<String> =
            ["log", "postgres://agent:hunter2@db.invalid/agents"].iter().map(|s| (*s).to_owned()).collect();
        let Err(Failure::Fatal(message)) =
            log_with(&args[1..], &mut Vec::new(), &mut Vec::new(), "no-such-command")
        else {
            panic!("a missing command is an error")
        };
        assert!(message.contains("cargo install --path tool-contract-postgres"), "{message}");
        assert!(message.contains("PostgreSQL database"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
}
