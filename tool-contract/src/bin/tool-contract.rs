//! The `tool-contract` command: operator tools for intents and attempt logs.

use std::process::ExitCode;

use tool_contract::Intent;

const USAGE: &str = "usage:
  tool-contract key --task T --actor A --verb V --target X [--slot S]
      print the intent key of one intent (32 hex characters)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("tool-contract: {err}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<String, String> {
    match args.first().map(String::as_str) {
        Some("key") => key(&args[1..]),
        Some("-h" | "--help" | "help") => Ok(USAGE.to_owned()),
        Some(other) => Err(format!("unknown command `{other}`")),
        None => Err("missing command".to_owned()),
    }
}

fn key(args: &[String]) -> Result<String, String> {
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
    Ok(intent.key().to_string())
}

fn need<'a>(value: Option<&'a str>, flag: &str) -> Result<&'a str, String> {
    value.ok_or_else(|| format!("missing `{flag}`"))
}
