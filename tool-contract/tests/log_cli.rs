//! The `tool-contract` command, run as a process: `key`, `log` and `compact`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tool_contract::journal::{Phase, Record, read_log};
use tool_contract::key::Intent;
use tool_contract::probe::ProbeMark;
use tool_contract::{Applied, Outcome};

const BIN: &str = env!("CARGO_BIN_EXE_tool-contract");

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tc-cli-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
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

fn record(task: &str, target: &str, phase: Phase, attempt: u32, end: Option<(Outcome, Applied)>) -> Record {
    Record {
        phase,
        task: task.into(),
        call: "post_notice".into(),
        intent_key: Intent::new(task, "agent", "post_notice", target).key(),
        attempt,
        attempt_id: format!("{task}-a{attempt}"),
        started: format!("2026-11-30T05:12:0{attempt}Z"),
        budget_left_s: 42,
        outcome: end.map(|e| e.0),
        effect_applied: end.map(|e| e.1),
        probe: None,
        message: end.map(|(o, _)| format!("ended {o}")),
        retry_at: None,
        sent_by: None,
        args: None,
        value: (end.map(|e| e.0) == Some(Outcome::Ok)).then(|| serde_json::json!(4411)),
        settled: None,
        approval: None,
    }
}

/// Three tasks: one done after a probe, one unfinished, one ended `unknown`; and a torn last line.
fn write_log(path: &Path) {
    let mut probed = record("ord-1", "thread-1", Phase::End, 1, Some((Outcome::Retryable, Applied::No)));
    probed.probe = Some(ProbeMark::NotLanded);
    let records = [
        record("ord-1", "thread-1", Phase::Start, 1, None),
        record("ord-2", "thread-2", Phase::Start, 1, None),
        probed,
        record("ord-1", "thread-1", Phase::Start, 2, None),
        record("ord-1", "thread-1", Phase::End, 2, Some((Outcome::Ok, Applied::Yes))),
        record("ord-3", "thread-3", Phase::Start, 1, None),
        record("ord-3", "thread-3", Phase::End, 1, Some((Outcome::Unknown, Applied::Unknown))),
    ];
    let mut text: String = records.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect();
    text.push_str(r#"{"phase":"start","task":"ord-4""#);
    fs::write(path, text).unwrap();
}

#[test]
fn key_prints_the_intent_key() {
    let (code, out, _) = cli(&[
        "key",
        "--task",
        "ord-7741",
        "--actor",
        "agent:billing",
        "--verb",
        "charge_card",
        "--target",
        "card-42",
    ]);
    assert_eq!((code, out.as_str()), (0, "e7196e5fd13c36a04d6b298b6cfad716\n"));
}

#[test]
fn log_prints_each_tasks_attempts_as_a_timeline() {
    let dir = Scratch::new("timeline");
    let log = dir.path("attempts.log");
    write_log(&log);
    let (code, out, err) = cli(&["log", log.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("line 8: torn last line"), "{err}");
    let key1 = Intent::new("ord-1", "agent", "post_notice", "thread-1").key();
    let expected = format!(
        "task ord-1: 1 intent, 2 attempts\n  post_notice {key1}  ok (2 attempts)\n    \
         a1  2026-11-30T05:12:01Z  start  budget 42s\n    \
         a1  2026-11-30T05:12:01Z  probe  not_landed -> retryable, effect no: ended retryable\n    \
         a2  2026-11-30T05:12:02Z  start  budget 42s\n    \
         a2  2026-11-30T05:12:02Z  end    ok, effect yes: ended ok = 4411\n"
    );
    assert!(out.starts_with(&expected), "{out}");
    assert!(out.contains("task ord-2: 1 intent, 1 attempt\n"), "{out}");
    assert!(out.contains("unfinished: probe before anything else (1 attempt)"), "{out}");
    assert!(out.contains("unknown: unresolved (1 attempt)"), "{out}");

    let (code, out, _) = cli(&["log", log.to_str().unwrap(), "--task", "ord-2"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("task ord-2:") && !out.contains("ord-1") && !out.contains("ord-3"), "{out}");
    let (code, out, _) = cli(&["log", log.to_str().unwrap(), "--task", "ord-9"]);
    assert_eq!((code, out.trim()), (0, format!("no attempt of task ord-9 in {}", log.display()).as_str()));
}

#[test]
fn log_unresolved_is_the_escalation_queue() {
    let dir = Scratch::new("unresolved");
    let log = dir.path("attempts.log");
    write_log(&log);
    let (code, out, _) = cli(&["log", log.to_str().unwrap(), "--unresolved"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(lines[0], format!("2 unresolved intents in {}", log.display()));
    assert!(lines[1].starts_with("ord-2 ") && lines[1].contains("unfinished"), "{out}");
    assert!(
        lines[2].starts_with("ord-3 ") && lines[2].contains("unknown") && lines[2].ends_with("ended unknown")
    );

    let (code, out, _) = cli(&["log", log.to_str().unwrap(), "--unresolved", "--json"]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let open = doc["unresolved"].as_array().unwrap();
    let words: Vec<(&str, &str)> =
        open.iter().map(|o| (o["task"].as_str().unwrap(), o["last_word"].as_str().unwrap())).collect();
    assert_eq!(words, [("ord-2", "unfinished"), ("ord-3", "unknown")]);
    assert_eq!(doc["warnings"][0]["line"], 8);

    let (_, out, _) = cli(&["log", log.to_str().unwrap(), "--unresolved", "--task", "ord-1"]);
    assert_eq!(out.trim(), format!("no unresolved intent in {}", log.display()));
}

#[test]
fn log_json_carries_the_records_as_written() {
    let dir = Scratch::new("json");
    let log = dir.path("attempts.log");
    write_log(&log);
    let (code, out, _) = cli(&["log", "--json", log.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 1);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 3);
    let ord1 = &tasks[0]["intents"][0];
    assert_eq!((ord1["attempts"].as_u64(), ord1["last_word"].as_str()), (Some(2), Some("ok")));
    let records: Vec<Record> = serde_json::from_value(ord1["records"].clone()).unwrap();
    assert_eq!(
        records,
        read_log(&log).unwrap().records.into_iter().filter(|r| r.task == "ord-1").collect::<Vec<_>>()
    );
    assert_eq!(tasks[1]["intents"][0]["unresolved"], true);
}

#[test]
fn a_missing_unreadable_or_foreign_file_is_one_line_and_a_failure() {
    let dir = Scratch::new("errors");
    let foreign = dir.path("notes.txt");
    fs::write(&foreign, "shopping list\n- milk\n").unwrap();
    let missing = dir.path("missing.log");
    let cases = [
        (missing.clone(), "cannot read"),
        (dir.0.clone(), "cannot read"),
        (foreign.clone(), "is not an attempt log"),
    ];
    for (path, says) in cases {
        for extra in [None, Some("--json"), Some("--unresolved")] {
            let mut args = vec!["log", path.to_str().unwrap()];
            args.extend(extra);
            let (code, out, err) = cli(&args);
            assert_eq!(code, 1, "{path:?}: {err}");
            assert!(out.is_empty());
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.starts_with("tool-contract: ") && err.contains(says), "{err}");
        }
        let (code, _, err) = cli(&["compact", path.to_str().unwrap()]);
        assert_eq!(code, 1, "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(!missing.exists(), "reading creates nothing");
    assert_eq!(fs::read_to_string(&foreign).unwrap(), "shopping list\n- milk\n");
    for args in [&["log"][..], &["log", "a", "b"], &["log", "x", "--since"], &["compact"], &["nope"]] {
        let (code, _, err) = cli(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("usage:"), "{err}");
    }
}

#[test]
fn compact_rewrites_the_log_keeping_the_latest_state() {
    let dir = Scratch::new("compact");
    let log = dir.path("attempts.log");
    write_log(&log);
    let (_, before, _) = cli(&["log", log.to_str().unwrap(), "--unresolved", "--json"]);
    let (code, out, err) = cli(&["compact", log.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("compacted {}: 7 records -> 5 (3 intents)", log.display())), "{out}");
    assert!(err.contains("line 8") && err.contains("not carried"), "{err}");
    let after = read_log(&log).unwrap();
    assert!(after.warnings.is_empty());
    assert_eq!(after.records.len(), 5);
    let (_, again, _) = cli(&["log", log.to_str().unwrap(), "--unresolved", "--json"]);
    let (mut before, again): (Value, Value) =
        (serde_json::from_str(&before).unwrap(), serde_json::from_str(&again).unwrap());
    before["warnings"] = serde_json::json!([]);
    assert_eq!(before, again);
}

#[test]
fn flags_that_say_how_to_reach_postgresql_hand_the_command_to_tool_contract_postgres() {
    for args in [
        &["log", "--pg-url-file", "/nonexistent/pg-url"][..],
        &["settle", "--pg-ca-file", "/nonexistent/ca.pem", "--intent", "x"][..],
    ] {
        let (_, _, err) = cli(args);
        // Not this command's usage error: the PostgreSQL command ran (and said what it lacks), or is
        // named as the one to install.
        assert!(
            !err.starts_with("tool-contract:") || err.contains("needs the `tool-contract-postgres`"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("unknown flag"), "{args:?}: {err}");
        assert!(err.contains("tool-contract-postgres"), "{args:?}: {err}");
    }
}
