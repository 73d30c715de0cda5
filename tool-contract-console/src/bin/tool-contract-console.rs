//! `tool-contract-console`: the operator console over an attempt log (run as `tool-contract console`).

use std::process::ExitCode;

use tool_contract_console::{Console, Options};

const USAGE: &str = "usage:
  tool-contract console LOG|postgres://... [--listen 127.0.0.1:PORT] [--read-only] [--by NAME]
                            [--allow-remote --token-file FILE]
      serve a local page over the attempt log LOG: the intents in doubt, their timelines, settling
      them. Prints the address to open (with its token) on standard output.
      --listen ADDR     where to listen (default 127.0.0.1:0, a free port)
      --read-only       show, never change: no form, every POST refused
      --by NAME         who settles through this console (default: $USER)
      --allow-remote    listen on an address other than loopback (needs --token-file)
      --token-file FILE the token, read from FILE (default: a random one)";

fn options(args: &[String]) -> Result<(String, Options), String> {
    let mut options = Options {
        by: std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "operator".to_owned()),
        ..Options::default()
    };
    let mut log = None;
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
                if !tool_contract::task::is_valid_name(&by) {
                    return Err("`--by`: 1 to 256 characters, none a control character".into());
                }
                options.by = by;
            }
            "--allow-remote" => options.allow_remote = true,
            "--token-file" => {
                let path = value("--token-file")?;
                let token =
                    std::fs::read_to_string(&path).map_err(|e| format!("`--token-file {path}`: {e}"))?;
                let token = token.trim().to_owned();
                if token.len() < 16 {
                    return Err(format!("`--token-file {path}`: the token must be at least 16 characters"));
                }
                options.token = Some(token);
            }
            "-h" | "--help" => return Err(String::new()),
            flag if flag.starts_with("--") => return Err(format!("unknown flag `{flag}`")),
            path => {
                if log.replace(path.to_owned()).is_some() {
                    return Err(format!("one log at a time: unexpected `{path}`"));
                }
            }
        }
    }
    let log = log.ok_or("missing the log's path")?;
    Ok((log, options))
}

fn main() -> ExitCode {
    // `tool-contract console ...` runs this with its own arguments: skip the word `console`.
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("console") {
        args.remove(0);
    }
    let (log, options) = match options(&args) {
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
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("tool-contract console: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let postgres = log.starts_with("postgres://") || log.starts_with("postgresql://");
        let bound = if postgres {
            match tool_contract_postgres::PgJournal::connect(&log).await {
                Ok(journal) => Console::bind_postgres(journal, options).await,
                Err(e) => Err(e.to_string()),
            }
        } else {
            Console::bind(std::path::Path::new(&log), options).await
        };
        // A connection string may hold a password: it is named without it.
        let name = if postgres { tool_contract_postgres::redact(&log) } else { log.clone() };
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
