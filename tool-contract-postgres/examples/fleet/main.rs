//! A fleet of worker processes on one PostgreSQL attempt log, some killed with SIGKILL mid-call:
//! exactly one effect per intent at a service that does not deduplicate.
//!
//! ```text
//! cargo run --release -p tool-contract-postgres --example fleet -- --workers 8 --intents 2000 --kill 2 [--json]
//! ```
//!
//! Each worker is this program again (`--worker N`, its config in an environment variable), and every
//! worker tries every intent in an order of its own, so they contend for each one. The parent serves
//! the fake service the intents are sent to and counts each effect there; it arms a hold that keeps a
//! worker's request without a reply, kills that worker while its claim is held and its start record
//! written, and starts it again as a new process. The killed worker's intents are taken over once
//! their leases run out (a call's budget plus a margin, about 3 s here), and the new holder probes
//! before it sends again. Every worker, done with its share, runs what the log still holds open.
//!
//! The log is `TOOL_CONTRACT_PG` when set (a connection string; shown without its password), else a
//! throwaway server started from the system's PostgreSQL binaries. The exit status is 0 only when
//! every intent has exactly one effect, no `ok` was false and nothing is left unresolved.

mod fake;
mod fleet;
mod worker;

use std::process::ExitCode;
use std::sync::Arc;

use fleet::{Plan, Spawner};
use tool_contract_postgres::redact;
use tool_contract_postgres::testing::PgServer;
use worker::WorkerConfig;

const USAGE: &str =
    "usage: fleet [--workers N] [--intents N] [--kill N] [--overlap N] [--lanes N] [--budget-ms N] [--json]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--worker") {
        return worker_main();
    }
    let options = match Options::parse(&args) {
        Ok(options) => options,
        Err(why) => {
            eprintln!("{why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    runtime.block_on(parent(options))
}

fn worker_main() -> ExitCode {
    let config = match WorkerConfig::from_env() {
        Some(Ok(config)) => config,
        Some(Err(why)) => {
            eprintln!("fleet worker: {why}");
            return ExitCode::from(2);
        }
        None => {
            eprintln!(
                "fleet worker: started without {} (only the parent starts workers)",
                worker::WORKER_ENV
            );
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(worker::work(config.clone())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("fleet worker {} (process {}): {why}", config.index, config.generation);
            ExitCode::FAILURE
        }
    }
}

struct Options {
    workers: usize,
    intents: usize,
    kills: usize,
    overlap: usize,
    lanes: usize,
    budget_ms: u64,
    json: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options {
            workers: 8,
            intents: 2000,
            kills: 2,
            overlap: usize::MAX,
            lanes: 16,
            budget_ms: 2000,
            json: false,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if arg == "--json" {
                options.json = true;
                continue;
            }
            let mut value = || {
                args.next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| format!("{arg} needs a whole number"))
            };
            match arg.as_str() {
                "--workers" => options.workers = value()? as usize,
                "--intents" => options.intents = value()? as usize,
                "--kill" => options.kills = value()? as usize,
                "--overlap" => options.overlap = value()? as usize,
                "--lanes" => options.lanes = value()? as usize,
                "--budget-ms" => options.budget_ms = value()?,
                _ => return Err(format!("unknown argument {arg}")),
            }
        }
        if options.workers == 0 || options.intents == 0 || options.lanes == 0 {
            return Err("--workers, --intents and --lanes must be at least 1".to_owned());
        }
        if options.kills > options.workers {
            return Err(format!(
                "--kill {} kills more workers than the {} there are",
                options.kills, options.workers
            ));
        }
        if options.budget_ms < 1000 {
            return Err("--budget-ms must be at least 1000".to_owned());
        }
        Ok(options)
    }
}

async fn parent(options: Options) -> ExitCode {
    // Kept alive to the end: dropping it stops the throwaway server.
    let mut server = None;
    let db = match std::env::var("TOOL_CONTRACT_PG") {
        Ok(db) if !db.trim().is_empty() => db,
        _ => match throwaway().await {
            Ok((own, db)) => {
                server = Some(own);
                db
            }
            Err(why) => {
                eprintln!("fleet: {why}");
                return ExitCode::from(2);
            }
        },
    };
    let mut plan = Plan::new(options.workers, options.intents, db);
    plan.kills = options.kills;
    plan.overlap = options.overlap;
    plan.lanes = options.lanes;
    plan.budget = std::time::Duration::from_millis(options.budget_ms);
    if !options.json {
        println!(
            "fleet: {} worker processes, {} intents, {} to kill mid-call; log {}",
            plan.workers,
            plan.intents,
            plan.kills,
            redact(&plan.db)
        );
    }
    let spawner: Spawner = Arc::new(|index| {
        let exe = std::env::current_exe().unwrap_or_else(|_| "fleet".into());
        let mut command = tokio::process::Command::new(exe);
        command.arg("--worker").arg(index.to_string());
        command
    });
    let tally = match fleet::run(&plan, spawner, None).await {
        Ok(tally) => tally,
        Err(why) => {
            eprintln!("fleet: {why}");
            return ExitCode::FAILURE;
        }
    };
    drop(server);
    let holds = tally.holds(&plan);
    if options.json {
        println!("{}", tally.json());
    } else {
        print!("{}", tally.table());
        println!(
            "{}",
            if holds {
                "the contract held: one effect per intent, no false ok, nothing unresolved"
            } else {
                "THE CONTRACT DID NOT HOLD"
            }
        );
    }
    if holds { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// A throwaway server of our own and the connection string of a fresh database on it.
async fn throwaway() -> Result<(PgServer, String), String> {
    let server = tokio::task::spawn_blocking(PgServer::start)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("{e}; or set TOOL_CONTRACT_PG to a connection string"))?;
    let db = server.database("fleet").await.map_err(|e| e.to_string())?;
    Ok((server, db))
}
