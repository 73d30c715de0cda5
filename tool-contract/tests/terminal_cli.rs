//! Text from a tool, a service or a person reaches the operator's terminal as text: every command that
//! prints it (`log`, `log --unresolved`, both with `--json`, `settle`, and the errors) escapes its
//! control characters.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

use tool_contract::journal::terminal::is_escaped;
use tool_contract::journal::{HEADER, Phase, Record};
use tool_contract::key::Intent;
use tool_contract::{Applied, Outcome};

const BIN: &str = env!("CARGO_BIN_EXE_tool-contract");

/// A clear screen, a bell, the C1 form of CSI, and a line break that would forge a line of output.
const HOSTILE: &str = "reply \u{1b}[2J\u{7}\u{9b}31m\nforged: ok";

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tc-terminal-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn log(&self) -> PathBuf {
        self.0.join("attempts.log")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn cli(args: &[&str]) -> (i32, String, String) {
    let Output { status, stdout, stderr } = Command::new(BIN).args(args).output().unwrap();
    (status.code().unwrap_or(-1), String::from_utf8(stdout).unwrap(), String::from_utf8(stderr).unwrap())
}

/// No control character but the newline ending each line.
fn assert_no_raw_control(what: &str, text: &str) {
    let raw: Vec<char> = text.chars().filter(|c| is_escaped(*c) && *c != '\n').collect();
    assert!(raw.is_empty(), "{what}: raw control characters {raw:?} in {text:?}");
}

/// Whether `text` is one of the strings in `doc`.
fn holds(doc: &serde_json::Value, text: &str) -> bool {
    match doc {
        serde_json::Value::String(s) => s == text,
        serde_json::Value::Array(items) => items.iter().any(|item| holds(item, text)),
        serde_json::Value::Object(fields) => fields.values().any(|field| holds(field, text)),
        _ => false,
    }
}

/// The hostile message as an operator sees it, escaped.
const SHOWN: &str = r"reply \u001b[2J\u0007\u009b31m\nforged: ok";

/// A log whose `send` on a thread named with an escape sequence ended `unknown` with the hostile
/// message; its key.
fn write_log(scratch: &Scratch) -> String {
    let task = "ord-\u{1b}]0;pwned\u{7}";
    let key = Intent::new(task, "agent", "post_notice", "thread-1").key();
    let start = Record {
        phase: Phase::Start,
        task: task.into(),
        call: "post_notice".into(),
        intent_key: key,
        attempt: 1,
        attempt_id: "ord-a1".into(),
        started: "2026-11-30T05:12:01Z".into(),
        budget_left_s: 42,
        outcome: None,
        effect_applied: None,
        probe: None,
        message: None,
        retry_at: None,
        sent_by: None,
        args: None,
        value: None,
        settled: None,
        approval: None,
    };
    let end = Record {
        phase: Phase::End,
        outcome: Some(Outcome::Unknown),
        effect_applied: Some(Applied::Unknown),
        message: Some(HOSTILE.into()),
        ..start.clone()
    };
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        serde_json::to_string(&start).unwrap(),
        serde_json::to_string(&end).unwrap()
    );
    fs::write(scratch.log(), text).unwrap();
    key.to_string()
}

#[test]
fn every_command_prints_a_tools_text_with_its_control_characters_escaped() {
    let scratch = Scratch::new("log");
    let key = write_log(&scratch);
    let log = scratch.log();
    let log = log.to_str().unwrap();
    for args in [vec!["log", log], vec!["log", log, "--unresolved"]] {
        let (code, out, err) = cli(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_no_raw_control(&format!("{args:?}"), &out);
        assert_no_raw_control(&format!("{args:?} stderr"), &err);
        assert!(out.contains(SHOWN), "{args:?}: {out}");
        assert!(out.contains(r"ord-\u001b]0;pwned\u0007"), "{args:?}: {out}");
    }
    // JSON: the same document, with JSON's own escapes for what `serde_json` would leave raw (U+009B).
    for args in [vec!["log", log, "--json"], vec!["log", log, "--unresolved", "--json"]] {
        let (code, out, _) = cli(&args);
        assert_eq!(code, 0, "{args:?}");
        assert_no_raw_control(&format!("{args:?}"), &out);
        assert!(out.contains(r"\u009b"), "{args:?}: {out}");
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(holds(&doc, HOSTILE), "{args:?}: the message reads back as it was: {out}");
    }
    // A person's name and evidence, printed back by `settle` (the record keeps the evidence on one line
    // of its own accord; the name is as given).
    let evidence = format!("checked the thread: {HOSTILE}");
    let (code, out, err) = cli(&[
        "settle",
        log,
        "--intent",
        &key,
        "--attempt",
        "1",
        "--not-landed",
        "--evidence",
        &evidence,
        "--by",
        "ops\u{9b}2J",
        "--seen",
        "now",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_no_raw_control("settle", &out);
    assert!(out.contains(r"by ops\u009b2J"), "{out}");
    // The same settlement again is refused, and the refusal is printed escaped too, in text and JSON.
    for json in [false, true] {
        let mut args = vec![
            "settle",
            log,
            "--intent",
            &key,
            "--attempt",
            "1",
            "--landed",
            "--evidence",
            &evidence,
            "--by",
            "ops",
        ];
        if json {
            args.push("--json");
        }
        let (code, out, err) = cli(&args);
        assert_eq!(code, 1, "{out}{err}");
        assert_no_raw_control("settle refused", &out);
        assert_no_raw_control("settle refused, stderr", &err);
    }
    // An error naming a path given on the command line.
    let missing = format!("{log}\u{1b}[2J\u{9b}\n.missing");
    let (code, out, err) = cli(&["log", &missing]);
    assert_eq!(code, 1, "{out}");
    assert_no_raw_control("error", &err);
    assert!(err.contains(r"\u001b[2J\u009b\n.missing"), "{err}");
}
