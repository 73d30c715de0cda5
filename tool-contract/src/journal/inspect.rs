//! What `tool-contract log` prints of an attempt log: each task's intents and their records as a
//! timeline, or the unresolved intents as a table, in text or as one JSON document. Any store's records
//! print the same way: the file log's command and the PostgreSQL store's command both call [`render`].

use std::collections::HashMap;
use std::io::{self, Write};

use serde::Serialize;

use super::terminal::{Terminal, escape};
use super::{LastWord, Phase, Recall, Record, Warning};
use crate::key::IntentKey;
use crate::probe::ProbeMark;
use crate::rules::Word;

/// What to show of a log.
#[derive(Debug, Clone, Copy, Default)]
pub struct View<'a> {
    /// Only the records of this task.
    pub task: Option<&'a str>,
    /// Only the intents whose last word is unfinished, `unknown` or with its effect unknown (the escalation queue), oldest
    /// first, instead of the timeline.
    pub unresolved: bool,
    /// One JSON document on one line instead of text.
    pub json: bool,
}

/// A record as a store gives it back: the record, and who wrote it and when, where the store keeps
/// that (the PostgreSQL store does; a file log does not, and a [`Record`] alone says neither).
pub trait Entry {
    /// The record.
    fn record(&self) -> &Record;
    /// The owner whose claim the record was written under (a worker's name, when it named itself).
    fn owner(&self) -> Option<&str> {
        None
    }
    /// When the store took the record, RFC 3339 UTC, on the store's clock.
    fn written_at(&self) -> Option<&str> {
        None
    }
}

impl Entry for Record {
    fn record(&self) -> &Record {
        self
    }
}

/// A record with who wrote it and when: what a store that keeps both gives the inspector.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The record.
    pub record: Record,
    /// The owner whose claim it was written under, for a side effect's records.
    pub owner: Option<String>,
    /// When the store took it, RFC 3339 UTC.
    pub written_at: Option<String>,
}

impl Entry for Stored {
    fn record(&self) -> &Record {
        &self.record
    }
    fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }
    fn written_at(&self) -> Option<&str> {
        self.written_at.as_deref()
    }
}

/// Print `records` (in the log's order) as `view` asks; `log` names the log in the output (a path, or
/// a connection string without its password), `warnings` are what reading it found. Records that say
/// who wrote them and when ([`Stored`]) show both: in JSON as `owner` and `written_at` beside the
/// record's fields, in text after the record.
///
/// Text from the log (a task's name, a message, a value) is printed with its control characters
/// escaped (as JSON writes them): in text, a field's newlines too; in JSON, with JSON's own
/// escapes, DEL, C1 controls and bidirectional overrides included, so the document still reads back the
/// same.
///
/// ```
/// use tool_contract::journal::inspect::{View, render};
/// let mut out = Vec::new();
/// let records: &[tool_contract::journal::Record] = &[];
/// render("attempts.log", records, &[], &View::default(), &mut out).unwrap();
/// assert_eq!(String::from_utf8(out).unwrap(), "no attempt in attempts.log\n");
/// ```
pub fn render<E: Entry>(
    log: &str,
    records: &[E],
    warnings: &[Warning],
    view: &View<'_>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let tasks = group(records.iter().filter(|r| view.task.is_none_or(|t| r.record().task == t)));
    let mut out = Terminal::new(out);
    if view.unresolved {
        unresolved(log, view, &tasks, warnings, &mut out)?;
    } else {
        timeline(log, view, &tasks, warnings, &mut out)?;
    }
    out.into_inner().map(drop)
}

/// One intent's records, in log order.
struct Thread<'a, E> {
    key: IntentKey,
    call: &'a str,
    records: Vec<&'a E>,
    recall: Recall,
}

/// Tasks in the order they first appear, each with its intents in the order they first appear.
fn group<'a, E: Entry>(entries: impl Iterator<Item = &'a E>) -> Vec<(&'a str, Vec<Thread<'a, E>>)> {
    let mut tasks: Vec<(&str, Vec<Thread<'_, E>>)> = Vec::new();
    let mut task_at: HashMap<&str, usize> = HashMap::new();
    let mut thread_at: HashMap<(&str, IntentKey), usize> = HashMap::new();
    for entry in entries {
        let record = entry.record();
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
        threads[i].records.push(entry);
        threads[i].recall.update(record);
    }
    tasks
}

/// The intent's last word in the one vocabulary every reader uses ([`crate::rules::Word`]).
fn last_word(recall: &Recall) -> &'static str {
    crate::rules::last_word(recall).as_str()
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
    records: Vec<EntryDoc<'a>>,
}

/// A record as the JSON document shows it: its own fields, then who wrote it and when, if known.
#[derive(Serialize)]
struct EntryDoc<'a> {
    #[serde(flatten)]
    record: &'a Record,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    written_at: Option<&'a str>,
}

impl<'a> EntryDoc<'a> {
    fn of<E: Entry>(entry: &'a E) -> EntryDoc<'a> {
        EntryDoc { record: entry.record(), owner: entry.owner(), written_at: entry.written_at() }
    }
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

fn timeline<E: Entry>(
    log: &str,
    view: &View<'_>,
    tasks: &[(&str, Vec<Thread<'_, E>>)],
    warnings: &[Warning],
    out: &mut dyn Write,
) -> io::Result<()> {
    if view.json {
        let doc = TimelineDoc { log, warnings: warnings_doc(warnings), tasks: tasks_doc(tasks) };
        serde_json::to_writer(&mut *out, &doc)?;
        return writeln!(out);
    }
    if tasks.is_empty() {
        return match view.task {
            Some(task) => writeln!(out, "no attempt of task {} in {}", escape(task), escape(log)),
            None => writeln!(out, "no attempt in {}", escape(log)),
        };
    }
    for (n, (task, threads)) in tasks.iter().enumerate() {
        if n > 0 {
            writeln!(out)?;
        }
        let attempts: u32 = threads.iter().map(|t| t.recall.attempts).sum();
        let (intents, attempts) =
            (plural(threads.len(), "intent", "intents"), plural(attempts as usize, "attempt", "attempts"));
        writeln!(out, "task {}: {intents}, {attempts}", escape(task))?;
        for thread in threads {
            thread_text(thread, out)?;
        }
    }
    Ok(())
}

/// The timeline's JSON: each task's intents, each with its records.
fn tasks_doc<'a, E: Entry>(tasks: &'a [(&'a str, Vec<Thread<'a, E>>)]) -> Vec<TaskDoc<'a>> {
    let intent = |t: &'a Thread<'a, E>| IntentDoc {
        intent_key: t.key,
        call: t.call,
        attempts: t.recall.attempts,
        last_word: last_word(&t.recall),
        unresolved: t.recall.is_unresolved(),
        records: t.records.iter().map(|e| EntryDoc::of(*e)).collect(),
    };
    tasks
        .iter()
        .map(|(task, threads)| TaskDoc { task, intents: threads.iter().map(intent).collect() })
        .collect()
}

/// One intent of the timeline in text: its last word, then a line per record, with who wrote it and
/// when where the store says.
fn thread_text<E: Entry>(thread: &Thread<'_, E>, out: &mut dyn Write) -> io::Result<()> {
    let word = match crate::rules::last_word(&thread.recall) {
        Word::Unfinished => "unfinished: probe before anything else".to_owned(),
        Word::Unknown => "unknown: unresolved".to_owned(),
        word => word.as_str().to_owned(),
    };
    let attempts = plural(thread.recall.attempts as usize, "attempt", "attempts");
    writeln!(out, "  {} {}  {word} ({attempts})", escape(thread.call), thread.key)?;
    for entry in &thread.records {
        let mut text = line(entry.record());
        match (entry.owner(), entry.written_at()) {
            (Some(owner), Some(at)) => text.push_str(&format!("  [by {} at {}]", escape(owner), escape(at))),
            (Some(owner), None) => text.push_str(&format!("  [by {}]", escape(owner))),
            (None, Some(at)) => text.push_str(&format!("  [at {}]", escape(at))),
            (None, None) => {}
        }
        writeln!(out, "    {text}")?;
    }
    Ok(())
}

/// One record of a timeline: `a2  2026-11-30T05:12:04Z  end    ok, effect yes: ... = 4411`, every
/// text from the log escaped.
fn line(record: &Record) -> String {
    let started = escape(&record.started);
    let what = match (record.phase, record.probe) {
        (Phase::Start, _) => {
            return format!("a{}  {started}  start  budget {}s", record.attempt, record.budget_left_s);
        }
        (Phase::End, Some(ProbeMark::Landed)) => "probe  landed ->".to_owned(),
        (Phase::End, Some(ProbeMark::NotLanded)) => "probe  not_landed ->".to_owned(),
        (Phase::End, Some(ProbeMark::Failed)) => "probe  failed ->".to_owned(),
        (Phase::End, None) => "end   ".to_owned(),
        (Phase::Settled, _) => "settled ->".to_owned(),
        (Phase::Approval, _) => {
            let at = record.approval.as_ref().map_or(record.started.as_str(), |note| note.at.as_str());
            let message = record.message.as_deref().unwrap_or_default();
            let mut text = format!("a{}  {}  approval  {}", record.attempt, escape(at), escape(message));
            text.push_str(&written_by(record.approval.as_ref().and_then(|n| n.os_user.as_deref())));
            return text;
        }
        (Phase::McpTask, _) => {
            let message = record.message.as_deref().unwrap_or_default();
            return format!("a{}  {started}  mcp task  {}", record.attempt, escape(message));
        }
    };
    let mut text = format!("a{}  {started}  {what}", record.attempt);
    if let Some(outcome) = record.outcome {
        text.push_str(&format!(" {outcome}"));
    }
    if let Some(applied) = record.effect_applied {
        text.push_str(&format!(", effect {applied}"));
    }
    if let Some(message) = &record.message {
        text.push_str(&format!(": {}", escape(message)));
    }
    if let Some(value) = &record.value {
        let value = value.to_string();
        if value.len() <= 60 {
            text.push_str(&format!(" = {}", escape(&value)));
        } else {
            text.push_str(&format!(" = ({} bytes of JSON)", value.len()));
        }
    }
    text.push_str(&written_by(record.settled.as_ref().and_then(|s| s.os_user.as_deref())));
    text
}

/// Who really wrote a person's word, where the store knows it (the operating-system user that wrote a
/// request file), beside the `by` it claims: `  (written by uid 1000 (alice))`.
fn written_by(os_user: Option<&str>) -> String {
    os_user.map(|user| format!("  (written by {})", escape(user))).unwrap_or_default()
}

fn unresolved<E: Entry>(
    log: &str,
    view: &View<'_>,
    tasks: &[(&str, Vec<Thread<'_, E>>)],
    warnings: &[Warning],
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut open: Vec<&Thread<'_, E>> =
        tasks.iter().flat_map(|(_, threads)| threads).filter(|t| t.recall.is_unresolved()).collect();
    open.sort_by(|a, b| crate::rules::queue_order(&a.recall.last, &b.recall.last));
    if view.json {
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
        let doc = UnresolvedDoc { log, warnings: warnings_doc(warnings), unresolved };
        serde_json::to_writer(&mut *out, &doc)?;
        return writeln!(out);
    }
    if open.is_empty() {
        return writeln!(out, "no unresolved intent in {}", escape(log));
    }
    let rows: Vec<[String; 6]> = open
        .iter()
        .map(|t| {
            let last = &t.recall.last;
            let why = match t.recall.last_word() {
                LastWord::Unfinished => "started and never finished: probe before anything else".to_owned(),
                _ => escape(last.message.as_deref().unwrap_or_default()).into_owned(),
            };
            [
                escape(&last.task).into_owned(),
                escape(t.call).into_owned(),
                t.key.to_string(),
                escape(&last.attempt_id).into_owned(),
                format!("{}  {}", last_word(&t.recall), escape(&last.started)),
                why,
            ]
        })
        .collect();
    let count = plural(rows.len(), "unresolved intent", "unresolved intents");
    writeln!(out, "{count} in {}", escape(log))?;
    table(&rows, out)
}

/// Rows as a table: the first five columns padded to their widest cell, the last as it is.
fn table(rows: &[[String; 6]], out: &mut dyn Write) -> io::Result<()> {
    let mut widths = [0usize; 5];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in rows {
        let mut text = String::new();
        for (w, cell) in widths.iter().zip(row) {
            text.push_str(&format!("{cell:<w$}  "));
        }
        text.push_str(&row[5]);
        writeln!(out, "{}", text.trim_end())?;
    }
    Ok(())
}
