//! `cargo run --release -p tool-contract-fuzz -- [--runs N] [--seed S] [--target NAME] [--replay FILE]`
//!
//! Runs every target (or one) for `N` executions in total (1,000,000 by default), shared by weight,
//! prints a line per target and exits 1 when anything failed. `--replay FILE` runs one input through
//! the target named by `--target` and reports what happened.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use tool_contract_fuzz::{Limits, alloc};

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

const USAGE: &str =
    "usage: tool-contract-fuzz [--runs N] [--seed S] [--target NAME] [--replay FILE] [--list]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut runs, mut seed, mut only, mut replay) = (1_000_000u64, 1u64, None, None);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("`{flag}` needs a value"));
        let parsed = match flag.as_str() {
            "--runs" => value()
                .and_then(|v| v.replace('_', "").parse().map_err(|e| format!("--runs: {e}")))
                .map(|n| runs = n),
            "--seed" => value().and_then(|v| v.parse().map_err(|e| format!("--seed: {e}"))).map(|n| seed = n),
            "--target" => value().map(|v| only = Some(v)),
            "--replay" => value().map(|v| replay = Some(v)),
            "--list" => {
                for target in tool_contract_fuzz::all() {
                    println!("{}", target.name());
                }
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => Err(format!("unknown flag `{other}`")),
        };
        if let Err(message) = parsed {
            eprintln!("tool-contract-fuzz: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    let mut targets = tool_contract_fuzz::all();
    if let Some(name) = &only {
        targets.retain(|target| target.name() == name);
        if targets.is_empty() {
            eprintln!("tool-contract-fuzz: no target `{name}` (see --list)");
            return ExitCode::from(2);
        }
    }
    if let Some(file) = replay {
        let input = match std::fs::read(&file) {
            Ok(input) => input,
            Err(error) => {
                eprintln!("tool-contract-fuzz: cannot read {file}: {error}");
                return ExitCode::from(2);
            }
        };
        for target in &mut targets {
            let signature = target.run(&input);
            println!("{}: ran, behaviour {signature:016x}", target.name());
        }
        return ExitCode::SUCCESS;
    }

    let crashes = Path::new(env!("CARGO_MANIFEST_DIR")).join("crashes");
    // Panics are caught and counted; their default report would flood the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    let started = Instant::now();
    let tallies = tool_contract_fuzz::fuzz(&mut targets, runs, seed, Limits::default(), &crashes);
    let _ = std::panic::take_hook();
    let mut failed = 0;
    let mut execs = 0;
    for tally in &tallies {
        execs += tally.execs;
        let rate = tally.execs as f64 / tally.elapsed.as_secs_f64().max(1e-9);
        println!(
            "{:<15} {:>10} execs {:>8.1} s {:>10.0}/s {:>6} behaviours {:>5} corpus {:>3} failures",
            tally.name,
            tally.execs,
            tally.elapsed.as_secs_f64(),
            rate,
            tally.behaviours,
            tally.corpus,
            tally.failures.len()
        );
        for failure in &tally.failures {
            println!("    {failure}");
        }
        failed += tally.failures.len();
    }
    println!(
        "{execs} executions in {:.1} s (seed {seed}): {failed} failures, 0 hangs, no allocation past {} MiB",
        started.elapsed().as_secs_f64(),
        Limits::default().growth >> 20
    );
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
