//! `tool-contract-console`: the operator console over an attempt log (run as `tool-contract console`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser};
use tool_contract::journal::terminal::escape;
use tool_contract::unstable::settle_command::{HELP_TEMPLATE, usage_error};
use tool_contract_console::{Console, Operator, Options, check_name};

/// The command line: one definition, from which the help and the usage errors are printed.
#[derive(Parser)]
#[command(
    name = "tool-contract-console",
    version,
    help_template = HELP_TEMPLATE,
    about = "Serve a page over an attempt log: the intents in doubt, their timelines, settling them.",
    long_about = "Serve a page over an attempt log: the intents in doubt, their timelines, settling them. \
                  Prints the address to open (with its token) on standard output. Run as \
                  `tool-contract console` too.",
    after_help = "Exit codes: 0 served until stopped; 1 could not serve; 2 bad usage."
)]
struct Flags {
    /// A file log's path; without it, the fleet's store in PostgreSQL whose connection string is in
    /// --pg-url-file FILE or else the environment variable TOOL_CONTRACT_PG (kept out of the
    /// process list)
    #[arg(value_name = "LOG")]
    log: Option<String>,
    /// Where to listen (default 127.0.0.1:0, a free port)
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Show, never change: no form, every POST refused; over PostgreSQL the schema is checked, never
    /// created or migrated
    #[arg(long)]
    read_only: bool,
    /// Who settles when logged in with the console's token (default: $USER; at most 200 bytes)
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    by: Option<String>,
    /// The people who may log in, one a line as --make-operator prints it (a name, then a slow salted
    /// hash of that person's token); each is recorded under their own name, and the console's token
    /// logs no one in
    #[arg(long, value_name = "FILE")]
    operators: Option<String>,
    /// Print a line for --operators FILE letting a new random token in as NAME (on standard output;
    /// the token, to give that person, on standard error), and exit
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    make_operator: Option<String>,
    /// The console's token, read from FILE (default: a random one, printed, which logs in for 12
    /// hours)
    #[arg(long, value_name = "FILE")]
    token_file: Option<String>,
    /// A session unused N minutes ends (default 30)
    #[arg(long, value_name = "N")]
    idle_minutes: Option<String>,
    /// A session ends N hours after its login (default 12)
    #[arg(long, value_name = "N")]
    session_hours: Option<String>,
    /// Listen on an address other than loopback: needs TLS, and --token-file or --operators
    #[arg(long)]
    allow_remote: bool,
    /// Serve HTTPS with this PEM certificate chain (and --tls-key FILE, its key)
    #[arg(long, value_name = "FILE")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert, in PEM
    #[arg(long, value_name = "FILE")]
    tls_key: Option<PathBuf>,
    /// A name the console is opened by (repeatable): accepted in the Host check; a wildcard --listen
    /// (0.0.0.0) needs one
    #[arg(long, value_name = "NAME")]
    host: Vec<String>,
    /// The PostgreSQL connection string, read from FILE
    #[arg(long, value_name = "FILE")]
    pg_url_file: Option<PathBuf>,
    /// Reach PostgreSQL over TLS, checking its certificate and name against the PEM certificates in
    /// FILE: TLS or nothing, unless the connection string says sslmode=prefer
    #[arg(long, value_name = "FILE")]
    pg_ca_file: Option<PathBuf>,
}

/// The variable that holds the connection string when no log is named.
const CONNINFO_VAR: &str = "TOOL_CONTRACT_PG";

/// What the command line asks for.
struct Command {
    /// A file log's path, or a connection string.
    log: Option<String>,
    pg_url_file: Option<PathBuf>,
    pg_ca_file: Option<PathBuf>,
    tls: Option<(PathBuf, PathBuf)>,
    options: Options,
}

fn read_secret(flag: &str, path: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("`{flag} {path}`: {e}"))?;
    Ok(text.trim().to_owned())
}

fn minutes(flag: &str, text: &str, unit: u64) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(n @ 1..=100_000) => Ok(Duration::from_secs(n * unit)),
        _ => Err(format!("`{flag} {text}`: a whole number, at least 1")),
    }
}

/// What the flags ask for, or what is wrong with them.
fn options(flags: Flags) -> Result<Command, String> {
    let mut options = Options {
        by: std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "operator".to_owned()),
        ..Options::default()
    };
    if let Some(addr) = flags.listen {
        options.listen =
            addr.parse().map_err(|_| format!("`--listen {addr}`: an address like 127.0.0.1:8080"))?;
    }
    options.read_only = flags.read_only;
    if let Some(by) = flags.by {
        check_name(&by).map_err(|why| format!("`--by`: the name {why}"))?;
        options.by = by;
    }
    if let Some(path) = flags.operators {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("`--operators {path}`: {e}"))?;
        options.operators =
            Operator::parse_file(&text).map_err(|why| format!("`--operators {path}`: {why}"))?;
    }
    options.allow_remote = flags.allow_remote;
    if let Some(path) = flags.token_file {
        let token = read_secret("--token-file", &path)?;
        if token.len() < 16 {
            return Err(format!("`--token-file {path}`: the token must be at least 16 bytes"));
        }
        options.token = Some(token);
    }
    if let Some(n) = flags.idle_minutes {
        options.idle_timeout = minutes("--idle-minutes", &n, 60)?;
    }
    if let Some(n) = flags.session_hours {
        options.session_lifetime = minutes("--session-hours", &n, 3600)?;
    }
    options.hosts.extend(flags.host);
    let tls = match (flags.tls_cert, flags.tls_key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => return Err("`--tls-cert FILE` and `--tls-key FILE` go together".into()),
    };
    if flags.log.is_some() && flags.pg_url_file.is_some() {
        return Err("a log's path or `--pg-url-file`, not both".into());
    }
    Ok(Command { log: flags.log, pg_url_file: flags.pg_url_file, pg_ca_file: flags.pg_ca_file, tls, options })
}

fn is_conninfo(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

fn main() -> ExitCode {
    // `tool-contract console ...` runs this with its own arguments: skip the word `console`.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|first| first == "console") {
        args.remove(1);
    }
    let mut cli = Flags::command();
    let mut command = match cli.try_get_matches_from_mut(&args) {
        Ok(matches) => match Flags::from_arg_matches(&matches).map_err(|e| usage_error(&e)) {
            Ok(Flags { make_operator: Some(name), .. }) => return make_operator(&name),
            Ok(flags) => match options(flags) {
                Ok(command) => command,
                Err(why) => return usage(&why, &mut cli),
            },
            Err(why) => return usage(&why, &mut cli),
        },
        Err(err) if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            print!("{}", err.render());
            return ExitCode::SUCCESS;
        }
        Err(err) => return usage(&usage_error(&err), &mut cli),
    };
    // Where the log is: a file's path, or a connection string (from a file, the environment, or, as
    // before, the command line).
    let conninfo = match (&command.log, &command.pg_url_file) {
        (Some(log), _) if is_conninfo(log) => Ok(Some(log.clone())),
        (Some(_), _) => Ok(None),
        (None, Some(file)) => read_secret("--pg-url-file", &file.to_string_lossy()).map(Some),
        (None, None) => std::env::var(CONNINFO_VAR).map(Some).map_err(|_| {
            format!(
                "missing the log: a file log's path, --pg-url-file FILE, or {CONNINFO_VAR} in the environment"
            )
        }),
    };
    let conninfo = match conninfo {
        Ok(conninfo) => conninfo,
        Err(why) => return usage(&why, &mut cli),
    };
    if let Some((cert, key)) = &command.tls
        && let Err(why) = serve_tls(&mut command.options, cert, key)
    {
        return fail(&why);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return fail(&format!("cannot start: {e}")),
    };
    runtime.block_on(async move {
        let Command { log, pg_ca_file, options, .. } = command;
        let lifetime = options.session_lifetime.as_secs().div_ceil(60);
        let (bound, name) = match &conninfo {
            Some(conninfo) => {
                let read_only = options.read_only;
                let opened = match tool_contract_postgres::Transport::plan(conninfo, pg_ca_file.as_deref()) {
                    Ok(transport) => {
                        if let Some(warning) = transport.warning() {
                            say(&format!("warning: {warning}"));
                        }
                        Console::connect_postgres(&transport, read_only).await
                    }
                    Err(why) => Err(why),
                };
                let bound = match opened {
                    Ok(journal) => Console::bind_postgres(journal, options).await,
                    Err(why) => Err(why),
                };
                // A connection string may hold a password: it is named without it.
                (bound, tool_contract_postgres::redact(conninfo))
            }
            None => {
                let log = log.unwrap_or_default();
                (Console::bind(Path::new(&log), options).await, log)
            }
        };
        let running = match bound {
            Ok(running) => running,
            Err(why) => return fail(&why),
        };
        // The log's name and the address are the operator's own input, or the store's: escaped too.
        println!("console for {}: open {}", escape(&name), escape(&running.url));
        if let Some(token) = running.console().login_token() {
            println!(
                "that address logs in once; after it, log in with the token {token} (for {lifetime} minutes)"
            );
        }
        running.serve().await;
        ExitCode::SUCCESS
    })
}

/// A usage error: what is wrong, and the command's help, on standard error; exit code 2.
fn usage(why: &str, cli: &mut clap::Command) -> ExitCode {
    eprint!("tool-contract console: {}\n{}", escape(why), cli.render_help());
    ExitCode::from(2)
}

/// Say `what` on standard error, its control characters escaped: what PostgreSQL, a file or the
/// operating system said reaches the terminal as text.
fn say(what: &str) {
    eprintln!("tool-contract console: {}", escape(what));
}

/// Say why the console could not serve; exit code 1.
fn fail(why: &str) -> ExitCode {
    say(why);
    ExitCode::FAILURE
}

/// `--make-operator NAME`: the operators file's line on standard output, the token on standard error.
fn make_operator(name: &str) -> ExitCode {
    match Operator::line(name) {
        Ok((token, line)) => {
            println!("{line}");
            eprintln!("the token of {} (give it to them; it is kept nowhere): {token}", escape(name));
            ExitCode::SUCCESS
        }
        Err(why) => fail(&format!("`--make-operator`: {why}")),
    }
}

/// Serve HTTPS with the certificate chain and key in these PEM files.
#[cfg(feature = "tls")]
fn serve_tls(options: &mut Options, cert: &Path, key: &Path) -> Result<(), String> {
    options.tls = Some(tool_contract_console::server_config(cert, key)?);
    Ok(())
}

/// Serving HTTPS needs the feature `tls`.
#[cfg(not(feature = "tls"))]
fn serve_tls(_options: &mut Options, _cert: &Path, _key: &Path) -> Result<(), String> {
    Err("serving HTTPS needs the feature `tls` of tool-contract-console".into())
}
