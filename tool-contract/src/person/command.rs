//! Not public API: the `settle` command line, read alike by `tool-contract settle` and
//! `tool-contract-postgres settle` (feature `cli`), and what the commands' usage errors say.

use std::time::Duration;

use super::{Settle, SettleError};
use crate::journal::Record;
use crate::journal::Verdict;
use crate::key::IntentKey;

/// What `settle` was asked.
pub struct Args {
    /// The log's path or connection string.
    pub log: String,
    /// The intent.
    pub key: IntentKey,
    /// The attempt the person examined.
    pub attempt: u32,
    /// The settlement.
    pub settle: Settle,
    /// One JSON line out.
    pub json: bool,
    /// How long to wait for a process holding the log to take the request.
    pub wait: Duration,
}

#[derive(Default)]
struct Given<'a> {
    log: Option<&'a str>,
    intent: Option<&'a str>,
    attempt: Option<&'a str>,
    verdict: Option<Verdict>,
    value: Option<&'a str>,
    evidence: Option<&'a str>,
    by: Option<&'a str>,
    seen: Option<&'a str>,
    json: bool,
    wait: Option<Duration>,
}

/// The flags of `settle`, read alike by both commands. The checks that go beyond one flag (what
/// is missing, what excludes what, what a value must look like) are made by [`Flags::check`], so
/// each says what to give.
#[derive(clap::Args, Debug)]
pub struct Flags {
    /// The attempt log: a file's path, or a PostgreSQL connection string
    #[arg(value_name = "LOG")]
    pub log: Option<String>,
    /// The intent in doubt: its key, 32 lowercase hex characters (`log` shows it)
    #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
    pub intent: Option<String>,
    /// The attempt you examined: its number, or its attempt id as `log` shows it; refused,
    /// naming the newer one, if another attempt has started since
    #[arg(long, value_name = "N|ID", allow_hyphen_values = true)]
    pub attempt: Option<String>,
    /// The effect landed: later calls answer ok with the value, nothing repeated
    #[arg(long)]
    pub landed: bool,
    /// The effect did not land: the next call makes the next attempt, once the attempt could no
    /// longer land (given sooner, that call probes it again first)
    #[arg(long)]
    pub not_landed: bool,
    /// With --landed: the call's value, as JSON (a string is quoted: '"text"')
    #[arg(long, value_name = "JSON", allow_hyphen_values = true)]
    pub value: Option<String>,
    /// What was seen, and where
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub evidence: Option<String>,
    /// Who settles it
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    pub by: Option<String>,
    /// When you looked at the world, as RFC 3339 UTC (2026-12-04T09:30:00Z) or `now`; required with
    /// --not-landed, whose word counts only if you looked once the attempt could no longer land
    #[arg(long, value_name = "WHEN", allow_hyphen_values = true)]
    pub seen: Option<String>,
    /// One JSON document on one line, for machines
    #[arg(long)]
    pub json: bool,
    /// A file log held by an agent: how long to wait for it to take the request, in seconds
    /// (default 10, at most 600)
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<String>,
}

impl Flags {
    /// The settlement asked for, or what is wrong with the command line.
    pub fn check(&self) -> Result<Args, String> {
        let verdict = match (self.landed, self.not_landed) {
            (true, true) => {
                return Err("`--landed` and `--not-landed` exclude each other: say what was found".into());
            }
            (true, false) => Some(Verdict::Landed),
            (false, true) => Some(Verdict::NotLanded),
            (false, false) => None,
        };
        let given = Given {
            log: self.log.as_deref(),
            intent: self.intent.as_deref(),
            attempt: self.attempt.as_deref(),
            verdict,
            value: self.value.as_deref(),
            evidence: self.evidence.as_deref(),
            by: self.by.as_deref(),
            seen: self.seen.as_deref(),
            json: self.json,
            wait: self.wait.as_deref().map(wait).transpose()?,
        };
        complete(given)
    }
}

/// The layout of every command's help: the usage line first, as a usage error shows it.
pub const HELP_TEMPLATE: &str = "usage: {usage}\n\n{about-with-newline}\n{all-args}{after-help}";

/// What is wrong with a command line, in one line naming the flag: the message a usage error
/// starts with (the command's help follows it).
pub fn usage_error(err: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let flag = |kind| match err.get(kind) {
        Some(ContextValue::String(text)) => Some(text.clone()),
        Some(ContextValue::Strings(texts)) => texts.first().cloned(),
        _ => None,
    };
    // `--task <T>` names the flag `--task`.
    let name = |text: String| text.split(' ').next().unwrap_or_default().to_owned();
    let invalid = flag(ContextKind::InvalidArg).map(name);
    match (err.kind(), invalid) {
        (ErrorKind::UnknownArgument, Some(arg)) if arg.starts_with('-') => {
            format!("unknown flag `{arg}`")
        }
        (ErrorKind::UnknownArgument, Some(arg)) => format!("unexpected `{arg}`"),
        (ErrorKind::InvalidSubcommand, _) => match flag(ContextKind::InvalidSubcommand) {
            Some(command) => format!("unknown command `{command}`"),
            None => "unknown command".to_owned(),
        },
        (ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand, _) => {
            "missing command".to_owned()
        }
        (ErrorKind::MissingRequiredArgument, Some(arg)) => format!("missing `{arg}`"),
        (ErrorKind::ArgumentConflict, Some(arg))
            if flag(ContextKind::PriorArg).map(name) == Some(arg.clone()) =>
        {
            format!("`{arg}` given twice")
        }
        (ErrorKind::InvalidValue, Some(arg))
            if flag(ContextKind::InvalidValue).is_none_or(|v| v.is_empty()) =>
        {
            format!("`{arg}` needs a value")
        }
        _ => {
            // Any other: clap's own first line, without its `error: `.
            let text = err.render().to_string();
            let line = text.lines().next().unwrap_or_default();
            line.strip_prefix("error: ").unwrap_or(line).to_owned()
        }
    }
}

fn wait(secs: &str) -> Result<Duration, String> {
    secs.parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .filter(|w| *w <= crate::person::REQUEST_LIFETIME)
        .ok_or_else(|| {
            let most = crate::person::REQUEST_LIFETIME.as_secs();
            format!("`--wait {secs}`: a number of seconds from 0 to {most} (a request's lifetime)")
        })
}

/// `--seen WHEN`: an RFC 3339 UTC time no later than now, or `now`.
fn seen(text: &str) -> Result<std::time::SystemTime, String> {
    let now = crate::journal::wall_clock();
    if text == "now" {
        return Ok(now);
    }
    match crate::journal::parse_rfc3339(text) {
        Some(at) if at <= now => Ok(at),
        Some(_) => Err(format!("`--seen {text}` is in the future: say when you looked")),
        None => Err(format!(
            "`--seen {}`: a time as RFC 3339 UTC (2026-12-04T09:30:00Z), or `now`",
            crate::text::cut(text)
        )),
    }
}

fn complete(given: Given<'_>) -> Result<Args, String> {
    let log = given.log.ok_or("missing the log's path (or postgres:// URL)")?;
    let intent =
        given.intent.ok_or("missing `--intent KEY` (the intent key, 32 lowercase hex characters)")?;
    let key = IntentKey::parse(intent).map_err(|_| {
        format!(
            "`--intent {}`: an intent key is 32 lowercase hex characters (`tool-contract log` shows them)",
            crate::text::cut(intent)
        )
    })?;
    let attempt = attempt(given.attempt, &key)?;
    let verdict = given.verdict.ok_or("say what was found: `--landed` or `--not-landed`")?;
    let evidence = given.evidence.ok_or("missing `--evidence TEXT`: what was seen, and where")?;
    let by = given.by.ok_or("missing `--by NAME`: who settles it")?;
    let value = match given.value {
        Some(_) if verdict == Verdict::NotLanded => {
            return Err("`--value` goes with `--landed` only: nothing landed, so there is no value".into());
        }
        Some(text) => Some(serde_json::from_str::<serde_json::Value>(text).map_err(|e| {
            format!(
                "`--value {}` is not JSON ({e}); a string is quoted: --value '\"text\"'",
                crate::text::cut(text)
            )
        })?),
        None => None,
    };
    let mut settle = Settle::new(verdict, by, evidence).json_value(value);
    match (given.seen.map(seen).transpose()?, verdict) {
        (Some(at), _) => settle = settle.seen(at),
        (None, Verdict::NotLanded) => {
            return Err("missing `--seen WHEN`: when you looked and found nothing (RFC 3339 UTC, \
                        2026-12-04T09:30:00Z, or `now`); a `not_landed` counts only if you looked once \
                        the attempt could no longer land"
                .into());
        }
        (None, Verdict::Landed) => {}
    }
    Ok(Args {
        log: log.to_owned(),
        key,
        attempt,
        settle,
        json: given.json,
        wait: given.wait.unwrap_or(Duration::from_secs(10)),
    })
}

/// `--attempt N` or `--attempt ID`: the attempt the person examined, by its number or by its attempt
/// id (`{task}-{first 8 hex of the key}-a{n}`, as `tool-contract log` shows it), which must be one
/// of the intent's.
fn attempt(given: Option<&str>, key: &IntentKey) -> Result<u32, String> {
    let text = given.ok_or(
        "missing `--attempt N`: the attempt you examined, by its number or its attempt id \
         (`tool-contract log` shows both); a settlement is recorded on that attempt only",
    )?;
    if let Ok(n) = text.parse::<u32>() {
        return if n == 0 { Err("`--attempt 0`: attempts are numbered from 1".into()) } else { Ok(n) };
    }
    let of_intent = format!("-{}-a", &key.to_string()[..8]);
    let number = text
        .rfind("-a")
        .filter(|at| text[..at + 2].ends_with(&of_intent))
        .and_then(|at| text[at + 2..].parse::<u32>().ok())
        .filter(|n| *n > 0);
    number.ok_or_else(|| {
        format!(
            "`--attempt {text}`: neither an attempt number nor an attempt id of intent {key} \
             (its ids end `{of_intent}N`)"
        )
    })
}

/// The line to print for what a settlement came to, and the exit code: 0 when it was recorded,
/// 1 when it was refused or not recorded. A `not_landed` given while the attempt could still land gets
/// a second line, `note: ...` ([`early_note`](crate::person::early_note)), or a `note` in JSON. The
/// text a person or the log gave (the evidence, an error naming the log) is escaped for the terminal
/// (each control character as JSON writes it), in JSON with JSON's own escapes.
pub fn outcome(done: Result<Record, SettleError>, json: bool) -> (String, u8) {
    use crate::journal::terminal::escape;
    let (line, code) = match (done, json) {
        (Ok(record), true) => {
            let mut said = serde_json::json!({ "settled": true, "record": record });
            if let Some(note) = crate::person::early_note(&record) {
                said["note"] = note.into();
            }
            (said.to_string(), 0)
        }
        (Ok(record), false) => {
            let message = record.message.as_deref().unwrap_or_default();
            let line = format!("{} attempt {}: {message}", record.intent_key, record.attempt_id);
            let line = escape(&line).into_owned();
            return match crate::person::early_note(&record) {
                Some(note) => (format!("{line}\nnote: {}", escape(&note)), 0),
                None => (line, 0),
            };
        }
        (Err(e), true) => (serde_json::json!({ "settled": false, "refused": e.to_string() }).to_string(), 1),
        (Err(e), false) => (e.to_string(), 1),
    };
    // One line: every control character in it came from the log or a person.
    (escape(&line).into_owned(), code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt() -> Record {
        serde_json::from_str(
            r#"{"phase":"start","task":"t","call":"post","intent_key":"b56ee2ce5d70dc24aa8b3866ee8854a0",
                "attempt":1,"attempt_id":"t-a1","started":"2026-12-01T06:00:00Z","budget_left_s":29}"#,
        )
        .unwrap()
    }

    #[test]
    fn an_early_not_landed_is_told_on_a_second_line_and_in_json() {
        let nothing = Settle::new(Verdict::NotLanded, "alice", "thread-9 holds nothing");
        let early = nothing.record_for(&attempt(), "2026-12-01T06:00:10Z".into());
        let (text, code) = outcome(Ok(early.clone()), false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(code, 0);
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].ends_with("settled not landed by alice via operator: thread-9 holds nothing"),
            "{text}"
        );
        assert!(
            lines[1].starts_with("note: attempt 1 could still land until 2026-12-01T06:00:17Z"),
            "{text}"
        );
        let (json, _) = outcome(Ok(early), true);
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(json["note"].as_str().unwrap().contains("probes the attempt again"), "{json}");
        // Given once the attempt could no longer land, or `landed`: one line, no note.
        for late in [
            nothing.record_for(&attempt(), "2026-12-01T06:01:10Z".into()),
            Settle::new(Verdict::Landed, "alice", "notice 4411")
                .record_for(&attempt(), "2026-12-01T06:00:10Z".into()),
        ] {
            let (text, _) = outcome(Ok(late.clone()), false);
            assert_eq!(text.lines().count(), 1, "{text}");
            let (json, _) = outcome(Ok(late), true);
            assert!(!json.contains("\"note\""), "{json}");
        }
    }
}
