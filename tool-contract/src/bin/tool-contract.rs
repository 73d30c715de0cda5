//! The `tool-contract` command: operator tools for intents and attempt logs.

use std::collections::HashMap;
use std::io::{self, Write};
use std::process::ExitCode;

use serde::Serialize;
use tool_contract::journal::{LastWord, Phase, Recall, Record, Warning, read_log};
use tool_contract::probe::ProbeMark;
use tool_contract::{FileJournal, Intent, IntentKey};

const USAGE: &str = "usage:
  tool-contract key --task T --actor A --verb V --target X [--slot S]
      print the intent key of one intent (32 hex characters)
  tool-contract log PATH [--task T] [--unresolved] [--json]
      print each task's attempts in an attempt log as a timeline
      --task T      only the attempts of task T
      --unresolved  only the intents whose last word is unfinished or unknown (the escalation queue)
      --json        one JSON document on one line, for machines
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
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let result = run(&args, &mut out, &mut io::stderr()).and_then(|()| out.flush().map_err(written));
    match result {
        Ok(()) | Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::Usage(err)) => {
            eprintln!("tool-contract: {err}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Fatal(err)) => {
            eprintln!("tool-contract: {err}");
            ExitCode::FAILURE
        }
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

/// One intent's records, in log order.
struct Thread<'a> {
    key: IntentKey,
    call: &'a str,
    records: Vec<&'a Record>,
    recall: Recall,
}

fn log(args: &[String], out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), Failure> {
    let args = log_args(args).map_err(Failure::Usage)?;
    let contents = read_log(args.path).map_err(|e| Failure::Fatal(e.to_string()))?;
    for warning in &contents.warnings {
        // A warning that cannot be written is no reason to withhold the log.
        let _ = writeln!(warn, "tool-contract: warning: {} {warning}", args.path);
    }
    let records = contents.records.iter().filter(|r| args.task.is_none_or(|t| r.task == t));
    let tasks = group(records);
    if args.unresolved {
        unresolved(&args, &tasks, &contents.warnings, out)
    } else {
        timeline(&args, &tasks, &contents.warnings, out)
    }
    .map_err(written)
}

/// Tasks in the order they first appear, each with its intents in the order they first appear.
fn group<'a>(records: impl Iterator<Item = &'a Record>) -> Vec<(&'a str, Vec<Thread<'a>>)> {
    let mut tasks: Vec<(&str, Vec<Thread<'_>>)> = Vec::new();
    let mut task_at: HashMap<&str, usize> = HashMap::new();
    let mut thread_at: HashMap<(&str, IntentKey), usize> = HashMap::new();
    for record in records {
        let t = *task_at.entry(&record.task).or_insert_with(|| {
            tasks.push((&record.task, Vec::new()));
            tasks.len() - 1
        });
        let threads = &mut tasks[t].1;
        let i = *thread_at.entry((&record.task, record.intent_key)).or_insert_with(|| {
            threads.push(Thread {
                key: record.intent_key,
                call: &record.call,
                records: Vec::new(),
                recall: Recall::from_record(record.clone()),
            });
            threads.len() - 1
        });
        threads[i].records.push(record);
        threads[i].recall.update(record);
    }
    tasks
}

fn last_word(recall: &Recall) -> &'static str {
    match recall.last_word() {
        LastWord::Unfinished => "unfinished",
        LastWord::Ok(_) => "ok",
        LastWord::Ended(outcome) => outcome.as_str(),
    }
}

/// The `--json` documents: fields in this order, records as the log has them.
#[derive(Serialize)]
struct TimelineDoc<'a> {
    log: &'a str,
    warnings: Vec<WarningDoc<'a>>,
    tasks: Vec<TaskDoc<'a>>,
}

#[derive(Serialize)]
struct WarningDoc<'a> {
    line: u64,
    message: &'a str,
}

#[derive(Serialize)]
struct TaskDoc<'a> {
    task: &'a str,
    intents: Vec<IntentDoc<'a>>,
}

#[derive(Serialize)]
struct IntentDoc<'a> {
    intent_key: IntentKey,
    call: &'a str,
    attempts: u32,
    last_word: &'static str,
    unresolved: bool,
    records: &'a [&'a Record],
}

#[derive(Serialize)]
struct UnresolvedDoc<'a> {
    log: &'a str,
    warnings: Vec<WarningDoc<'a>>,
    unresolved: Vec<OpenDoc<'a>>,
}

#[derive(Serialize)]
struct OpenDoc<'a> {
    task: &'a str,
    call: &'a str,
    intent_key: IntentKey,
    attempts: u32,
    attempt_id: &'a str,
    last_word: &'static str,
    started: &'a str,
    message: Option<&'a str>,
}

fn warnings_doc(warnings: &[Warning]) -> Vec<WarningDoc<'_>> {
    warnings.iter().map(|w| WarningDoc { line: w.line, message: &w.message }).collect()
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn timeline(
    args: &LogArgs<'_>,
    tasks: &[(&str, Vec<Thread<'_>>)],
    warnings: &[Warning],
    out: &mut dyn Write,
) -> io::Result<()> {
    if args.json {
        let tasks = tasks
            .iter()
            .map(|(task, threads)| TaskDoc {
                task,
                intents: threads
                    .iter()
                    .map(|t| IntentDoc {
                        intent_key: t.key,
                        call: t.call,
                        attempts: t.recall.attempts,
                        last_word: last_word(&t.recall),
                        unresolved: t.recall.is_unresolved(),
                        records: &t.records,
                    })
                    .collect(),
            })
            .collect();
        let doc = TimelineDoc { log: args.path, warnings: warnings_doc(warnings), tasks };
        serde_json::to_writer(&mut *out, &doc)?;
        return writeln!(out);
    }
    if tasks.is_empty() {
        return match args.task {
            Some(task) => writeln!(out, "no attempt of task {task} in {}", args.path),
            None => writeln!(out, "no attempt in {}", args.path),
        };
    }
    for (n, (task, threads)) in tasks.iter().enumerate() {
        if n > 0 {
            writeln!(out)?;
        }
        let attempts: u32 = threads.iter().map(|t| t.recall.attempts).sum();
        let (intents, attempts) =
            (plural(threads.len(), "intent", "intents"), plural(attempts as usize, "attempt", "attempts"));
        writeln!(out, "task {task}: {intents}, {attempts}")?;
        for thread in threads {
            let word = match thread.recall.last_word() {
                LastWord::Unfinished => "unfinished: probe before anything else".to_owned(),
                LastWord::Ended(tool_contract::Outcome::Unknown) => "unknown: unresolved".to_owned(),
                _ => last_word(&thread.recall).to_owned(),
            };
            let attempts = plural(thread.recall.attempts as usize, "attempt", "attempts");
            writeln!(out, "  {} {}  {word} ({attempts})", thread.call, thread.key)?;
            for record in &thread.records {
                writeln!(out, "    {}", line(record))?;
            }
        }
    }
    Ok(())
}

/// One record of a timeline: `a2  2026-11-30T05:12:04Z  end    ok, effect yes: ... = 4411`.
fn line(record: &Record) -> String {
    let what = match (record.phase, record.probe) {
        (Phase::Start, _) => {
            return format!(
                "a{}  {}  start  budget {}s",
                record.attempt, record.started, record.budget_left_s
            );
        }
        (Phase::End, Some(ProbeMark::Landed)) => "probe  landed ->".to_owned(),
        (Phase::End, Some(ProbeMark::NotLanded)) => "probe  not_landed ->".to_owned(),
        (Phase::End, Some(ProbeMark::Failed)) => "probe  failed ->".to_owned(),
        (Phase::End, None) => "end   ".to_owned(),
    };
    let mut text = format!("a{}  {}  {what}", record.attempt, record.started);
    if let Some(outcome) = record.outcome {
        text.push_str(&format!(" {outcome}"));
    }
    if let Some(applied) = record.effect_applied {
        text.push_str(&format!(", effect {applied}"));
    }
    if let Some(message) = &record.message {
        text.push_str(&format!(": {message}"));
    }
    if let Some(value) = &record.value {
        let value = value.to_string();
        if value.len() <= 60 {
            text.push_str(&format!(" = {value}"));
        } else {
            text.push_str(&format!(" = ({} bytes of JSON)", value.len()));
        }
    }
    text
}

fn unresolved(
    args: &LogArgs<'_>,
    tasks: &[(&str, Vec<Thread<'_>>)],
    warnings: &[Warning],
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut open: Vec<&Thread<'_>> =
        tasks.iter().flat_map(|(_, threads)| threads).filter(|t| t.recall.is_unresolved()).collect();
    open.sort_by(|a, b| a.recall.last.started.cmp(&b.recall.last.started));
    if args.json {
        let unresolved = open
            .iter()
            .map(|t| {
                let last = &t.recall.last;
                OpenDoc {
                    task: &last.task,
                    call: t.call,
                    intent_key: t.key,
                    attempts: t.recall.attempts,
                    attempt_id: &last.attempt_id,
                    last_word: last_word(&t.recall),
                    started: &last.started,
                    message: last.message.as_deref(),
                }
            })
            .collect();
        let doc = UnresolvedDoc { log: args.path, warnings: warnings_doc(warnings), unresolved };
        serde_json::to_writer(&mut *out, &doc)?;
        return writeln!(out);
    }
    if open.is_empty() {
        return writeln!(out, "no unresolved intent in {}", args.path);
    }
    let rows: Vec<[String; 6]> = open
        .iter()
        .map(|t| {
            let last = &t.recall.last;
            let why = match t.recall.last_word() {
                LastWord::Unfinished => "started and never finished: probe before anything else".to_owned(),
                _ => last.message.clone().unwrap_or_default(),
            };
            [
                last.task.clone(),
                t.call.to_owned(),
                t.key.to_string(),
                last.attempt_id.clone(),
                format!("{}  {}", last_word(&t.recall), last.started),
                why,
            ]
        })
        .collect();
    writeln!(out, "{} in {}", plural(rows.len(), "unresolved intent", "unresolved intents"), args.path)?;
    let mut widths = [0usize; 5];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &rows {
        let mut text = String::new();
        for (w, cell) in widths.iter().zip(row) {
            text.push_str(&format!("{cell:<w$}  "));
        }
        text.push_str(&row[5]);
        writeln!(out, "{}", text.trim_end())?;
    }
    Ok(())
}

fn compact(args: &[String], out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), Failure> {
    let path = match args {
        [path] if !path.starts_with("--") => path,
        [] => return Err(Failure::Usage("missing the log's path".to_owned())),
        _ => return Err(Failure::Usage("`compact` takes the log's path and nothing else".to_owned())),
    };
    let done = FileJournal::compact(path).map_err(|e| Failure::Fatal(e.to_string()))?;
    for warning in &done.dropped {
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
