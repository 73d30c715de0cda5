//! `tool-contract-console`: the operator console over an attempt log (run as `tool-contract console`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use tool_contract_console::{Console, Operator, Options, check_name};

const USAGE: &str = "usage:
  tool-contract console [LOG] [--listen 127.0.0.1:PORT] [--read-only] [--by NAME] [--operators FILE]
                        [--pg-url-file FILE] [--pg-ca-file FILE]
                        [--allow-remote --tls-cert FILE --tls-key FILE --host NAME... (--token-file FILE | --operators FILE)]
      serve a page over an attempt log: the intents in doubt, their timelines, settling them. LOG is
      a file log's path; without it, the fleet's store in PostgreSQL whose connection string is in
      --pg-url-file FILE or else the environment variable TOOL_CONTRACT_PG (kept out of the process
      list). Prints the address to open (with its token) on standard output.
      --listen ADDR      where to listen (default 127.0.0.1:0, a free port)
      --read-only        show, never change: no form, every POST refused; over PostgreSQL the
                         schema is checked, never created or migrated
      --by NAME          who settles when logged in with the console's token (default: $USER;
                         at most 200 bytes)
      --operators FILE   the people who may log in, one a line: a name, then the SHA-256 in hex of
                         that person's token (`alice 5e884898...`); each is recorded under their
                         own name, and the console's token logs no one in
      --token-file FILE  the console's token, read from FILE (default: a random one, printed,
                         which logs in for 12 hours)
      --idle-minutes N   a session unused N minutes ends (default 30)
      --session-hours N  a session ends N hours after its login (default 12)
      --allow-remote     listen on an address other than loopback: needs TLS, and --token-file or
                         --operators
      --tls-cert FILE    serve HTTPS with this PEM certificate chain (and --tls-key FILE, its key)
      --host NAME        a name the console is opened by (repeatable): accepted in the Host check;
                         a wildcard --listen (0.0.0.0) needs one
      --pg-url-file FILE the PostgreSQL connection string, read from FILE
      --pg-ca-file FILE  reach PostgreSQL over TLS, trusting the PEM certificates in FILE
                         (`sslmode=require` in the connection string: TLS or nothing)";

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

fn options(args: &[String]) -> Result<Command, String> {
    let mut options = Options {
        by: std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "operator".to_owned()),
        ..Options::default()
    };
    let (mut log, mut pg_url_file, mut pg_ca_file, mut cert, mut key) = (None, None, None, None, None);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().cloned().ok_or_else(|| format!("`{flag}` needs a value"));
        match arg.as_str() {
            "--listen" => {
                let addr = value("--listen")?;
                options.listen =
                    addr.parse().map_err(|_| format!("`--listen {addr}`: an address like 127.0.0.1:8080"))?;
            }
            "--read-only" => options.read_only = true,
            "--by" => {
                let by = value("--by")?;
                check_name(&by).map_err(|why| format!("`--by`: the name {why}"))?;
                options.by = by;
            }
            "--operators" => {
                let path = value("--operators")?;
                let text =
                    std::fs::read_to_string(&path).map_err(|e| format!("`--operators {path}`: {e}"))?;
                options.operators =
                    Operator::parse_file(&text).map_err(|why| format!("`--operators {path}`: {why}"))?;
            }
            "--allow-remote" => options.allow_remote = true,
            "--token-file" => {
                let path = value("--token-file")?;
                let token = read_secret("--token-file", &path)?;
                if token.len() < 16 {
                    return Err(format!("`--token-file {path}`: the token must be at least 16 characters"));
                }
                options.token = Some(token);
            }
            "--idle-minutes" => {
                options.idle_timeout = minutes("--idle-minutes", &value("--idle-minutes")?, 60)?
            }
            "--session-hours" => {
                options.session_lifetime = minutes("--session-hours", &value("--session-hours")?, 3600)?;
            }
            "--host" => options.hosts.push(value("--host")?),
            "--tls-cert" => cert = Some(PathBuf::from(value("--tls-cert")?)),
            "--tls-key" => key = Some(PathBuf::from(value("--tls-key")?)),
            "--pg-url-file" => pg_url_file = Some(PathBuf::from(value("--pg-url-file")?)),
            "--pg-ca-file" => pg_ca_file = Some(PathBuf::from(value("--pg-ca-file")?)),
            "-h" | "--help" => return Err(String::new()),
            flag if flag.starts_with("--") => return Err(format!("unknown flag `{flag}`")),
            path => {
                if log.replace(path.to_owned()).is_some() {
                    return Err(format!("one log at a time: unexpected `{path}`"));
                }
            }
        }
    }
    let tls = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => return Err("`--tls-cert FILE` and `--tls-key FILE` go together".into()),
    };
    if log.is_some() && pg_url_file.is_some() {
        return Err("a log's path or `--pg-url-file`, not both".into());
    }
    Ok(Command { log, pg_url_file, pg_ca_file, tls, options })
}

fn is_conninfo(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

fn main() -> ExitCode {
    // `tool-contract console ...` runs this with its own arguments: skip the word `console`.
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("console") {
        args.remove(0);
    }
    let mut command = match options(&args) {
        Ok(parsed) => parsed,
        Err(why) if why.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(why) => {
            eprintln!("tool-contract console: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
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
        Err(why) => {
            eprintln!("tool-contract console: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Some((cert, key)) = &command.tls
        && let Err(why) = serve_tls(&mut command.options, cert, key)
    {
        eprintln!("tool-contract console: {why}");
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("tool-contract console: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let Command { log, pg_ca_file, options, .. } = command;
        let (bound, name) = match &conninfo {
            Some(conninfo) => {
                let read_only = options.read_only;
                let opened = Console::connect_postgres(conninfo, read_only, pg_ca_file.as_deref()).await;
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
            Err(why) => {
                eprintln!("tool-contract console: {why}");
                return ExitCode::FAILURE;
            }
        };
        println!("console for {name}: open {}", running.url);
        running.serve().await;
        ExitCode::SUCCESS
    })
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
