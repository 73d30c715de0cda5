//! `tool-contract-postgres log` and `forget`: the log read from PostgreSQL and printed as
//! `tool-contract log` prints a file, a password never printed, a database without a log left as it was.

mod common;

use std::process::{Command, Output};
use std::time::Duration;

use tool_contract::Outcome;
use tool_contract::journal::Journal;
use tool_contract::journal::inspect::{View, render};
use tool_contract::journal::{Durability, Owner};

fn command(args: &[&str], conninfo_var: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tool-contract-postgres"));
    command.args(args).env_remove("TOOL_CONTRACT_PG");
    if let Some(conninfo) = conninfo_var {
        command.env("TOOL_CONTRACT_PG", conninfo);
    }
    command.output().expect("the command runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_prints_as_a_files_log_does() {
    let Some((journal, conninfo)) = common::journal("command_log").await else { return };
    // Intent a: started, ended ok. Intent b: started and never finished (a crash).
    let (a, b) = (common::key("cmd-a"), common::key("cmd-b"));
    let owner = Owner::new("worker-1.1");
    for (key, ended) in [(a, true), (b, false)] {
        journal.claim(&key, &owner, Duration::from_secs(30)).await.unwrap();
        let start = common::start(key, 1);
        journal.start(&owner, start.as_record_ref(), Durability::Synced).await.unwrap();
        if ended {
            journal
                .append(common::end(key, 1, Outcome::Ok).as_record_ref(), Durability::Synced)
                .await
                .unwrap();
        }
    }
    let records = journal.records(None).await.unwrap();
    let name = tool_contract_postgres::redact(&conninfo);

    // The timeline, from the command line and from the environment: what `render` prints of the
    // records, as `tool-contract log` prints them for a file.
    let mut expected = Vec::new();
    render(&name, &records, &[], &View::default(), &mut expected).unwrap();
    let given = command(&["log", &conninfo], None);
    assert!(given.status.success(), "{}", text(&given.stderr));
    assert_eq!(text(&given.stdout), text(&expected));
    let from_env = command(&["log"], Some(&conninfo));
    assert_eq!(text(&from_env.stdout), text(&expected), "{}", text(&from_env.stderr));
    assert!(text(&expected).contains("task pg-test: 2 intents, 2 attempts"), "{}", text(&expected));

    // The escalation queue: only b, which started and never finished.
    let open = command(&["log", &conninfo, "--unresolved"], None);
    let open = text(&open.stdout);
    assert!(open.starts_with("1 unresolved intent in "), "{open}");
    assert!(open.contains(&b.to_string()) && !open.contains(&a.to_string()), "{open}");
    assert!(open.contains("probe before anything else"), "{open}");

    // JSON for machines, one task's records only.
    let json = command(&["log", &conninfo, "--json", "--task", "pg-test"], None);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON document");
    let intents = doc["tasks"][0]["intents"].as_array().unwrap();
    assert_eq!(intents.len(), 2);
    assert_eq!(intents[0]["last_word"], "ok");
    assert_eq!(intents[1]["last_word"], "unfinished");
    assert_eq!(intents[1]["unresolved"], true);
    // Every record says when the server took it, and a fenced one who wrote it.
    for record in intents.iter().flat_map(|i| i["records"].as_array().unwrap()) {
        let at = record["written_at"].as_str().unwrap_or_default();
        assert!(tool_contract::unstable::parse_rfc3339(at).is_some(), "written_at {record}");
        assert!(
            record.get("owner").is_none_or(|owner| owner.as_str().is_some_and(|o| !o.is_empty())),
            "{record}"
        );
    }
    let owners =
        intents.iter().flat_map(|i| i["records"].as_array().unwrap()).filter(|r| r.get("owner").is_some());
    assert!(owners.count() > 0, "the fenced records name their owner");
    let none = command(&["log", &conninfo, "--task", "another"], None);
    assert_eq!(text(&none.stdout), format!("no attempt of task another in {name}\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_without_a_log_is_refused_and_left_untouched() {
    let Some(conninfo) = common::database("command_empty").await else { return };
    let output = command(&["log", &conninfo], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("holds no attempt log"), "{}", text(&output.stderr));
    let forget = command(&["forget", "--older-than-days", "7", &conninfo], None);
    assert_eq!(forget.status.code(), Some(1), "{}", text(&forget.stderr));
    let client = common::client(&conninfo).await;
    let schemas: i64 = client
        .query_one("SELECT count(*) FROM pg_namespace WHERE nspname = 'tool_contract'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(schemas, 0, "a reader created nothing");
}

#[test]
fn a_password_is_never_printed_and_bad_arguments_say_how() {
    let output = command(&["log", "postgres://agent:hunter2@127.0.0.1:1/agents"], None);
    assert_eq!(output.status.code(), Some(1));
    let err = text(&output.stderr);
    assert!(!err.contains("hunter2") && err.contains("agent"), "{err}");
    let missing = command(&["log"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("TOOL_CONTRACT_PG"), "{}", text(&missing.stderr));
    let days = command(&["forget", "--older-than-days", "soon"], None);
    assert_eq!(days.status.code(), Some(2));
    assert!(text(&days.stderr).contains("a number of days"), "{}", text(&days.stderr));
}

/// Issue 22, item 8: one installed command reads both kinds of log: a path is a file log, printed as
/// `tool-contract log` prints it.
#[test]
fn the_same_command_reads_a_file_log() {
    let dir = std::env::temp_dir().join(format!("tc-pg-command-file-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("attempts.log");
    let records =
        [common::start(common::key("file-a"), 1), common::end(common::key("file-a"), 1, Outcome::Ok)];
    let mut text_log = format!("{}\n", tool_contract::journal::HEADER);
    for record in &records {
        text_log.push_str(&serde_json::to_string(record).unwrap());
        text_log.push('\n');
    }
    std::fs::write(&path, text_log).unwrap();
    let path = path.to_str().unwrap();
    let mut expected = Vec::new();
    render(path, &records, &[], &View::default(), &mut expected).unwrap();
    let output = command(&["log", path], None);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), text(&expected));
    let missing = command(&["log", &format!("{path}.missing")], None);
    assert!(!missing.status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_records_a_persons_verdict_while_workers_run() {
    let Some((journal, conninfo)) = common::journal("command_settle").await else { return };
    let (doubt, busy) = (common::key("cmd-settle"), common::key("cmd-settle-busy"));
    // A worker died mid-attempt on one intent; another worker holds a second one right now.
    let dead = Owner::new("worker-1.1");
    journal.claim(&doubt, &dead, Duration::from_secs(30)).await.unwrap();
    journal.start(&dead, common::start(doubt, 1).as_record_ref(), Durability::Synced).await.unwrap();
    journal.release(&doubt, &dead);
    let live = Owner::new("worker-2.1");
    journal.claim(&busy, &live, Duration::from_secs(60)).await.unwrap();
    journal.start(&live, common::start(busy, 1).as_record_ref(), Durability::Synced).await.unwrap();

    let settle = |key: String, by: &'static str| {
        let conninfo = conninfo.clone();
        tokio::task::spawn_blocking(move || {
            let args = [
                "settle",
                "--intent",
                &key,
                "--attempt",
                "1",
                "--landed",
                "--value",
                "4411",
                "--evidence",
                "on the statement",
                "--by",
                by,
            ];
            command(&args, Some(&conninfo))
        })
    };
    let done = settle(doubt.to_string(), "alice").await.unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    assert!(text(&done.stdout).contains("settled landed by alice via operator: on the statement"));
    let recall = journal.recall(&doubt).await.unwrap().unwrap();
    assert_eq!(recall.last_word(), tool_contract::journal::LastWord::Ok(Some(&serde_json::json!(4411))));
    let again = settle(doubt.to_string(), "bob").await.unwrap();
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("was settled landed by alice"), "{}", text(&again.stderr));
    // The intent a worker holds is not settled under it.
    let held = settle(busy.to_string(), "alice").await.unwrap();
    assert_eq!(held.status.code(), Some(1), "{}", text(&held.stderr));
    assert!(text(&held.stderr).contains("worker-2.1"), "{}", text(&held.stderr));
    assert_eq!(command(&["settle", "--intent", "nope"], Some(&conninfo)).status.code(), Some(2));
}

/// Issue 30, item 5: text from a tool reaches the operator's terminal as text: the message's control
/// characters (a clear screen, a bell, the C1 CSI, a line break) are escaped in every view, and JSON
/// keeps its values with JSON's own escapes.
#[test]
fn a_tools_text_is_printed_with_its_control_characters_escaped() {
    use tool_contract::journal::terminal::is_escaped;
    let dir = std::env::temp_dir().join(format!("tc-pg-command-terminal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("attempts.log");
    let hostile = "reply \u{1b}[2J\u{7}\u{9b}31m\nforged: ok";
    let key = common::key("terminal");
    let ended = tool_contract::journal::Record {
        outcome: Some(Outcome::Unknown),
        effect_applied: Some(tool_contract::Applied::Unknown),
        message: Some(hostile.to_owned()),
        ..common::end(key, 1, Outcome::Unknown)
    };
    let mut text_log = format!("{}\n", tool_contract::journal::HEADER);
    for record in [common::start(key, 1), ended] {
        text_log.push_str(&serde_json::to_string(&record).unwrap());
        text_log.push('\n');
    }
    std::fs::write(&path, text_log).unwrap();
    let path = path.to_str().unwrap();
    let raw = |text: &str| text.chars().filter(|c| is_escaped(*c) && *c != '\n').collect::<Vec<_>>();
    for args in [
        vec!["log", path],
        vec!["log", path, "--unresolved"],
        vec!["log", path, "--json"],
        vec!["log", path, "--unresolved", "--json"],
    ] {
        let output = command(&args, None);
        assert!(output.status.success(), "{args:?}: {}", text(&output.stderr));
        let (out, err) = (text(&output.stdout), text(&output.stderr));
        assert_eq!((raw(&out), raw(&err)), (vec![], vec![]), "{args:?}: {out:?}");
        assert!(out.contains(r"reply \u001b[2J\u0007\u009b31m"), "{args:?}: {out}");
    }
    let missing = format!("{path}\u{1b}[2J\u{9b}.missing");
    let output = command(&["log", &missing], None);
    assert!(!output.status.success());
    assert_eq!(raw(&text(&output.stderr)), Vec::<char>::new(), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains(r"\u001b[2J\u009b.missing"), "{}", text(&output.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A settler's role needs no `CREATE`: the command never creates or migrates the schema, and settles
/// with the privileges docs/postgres.md lists; on a database without a log it is refused and creates
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_needs_no_create_and_creates_nothing() {
    let Some(empty) = common::database("command_settle_empty").await else { return };
    let key = common::key("cmd-settle-role");
    let args = [
        "settle",
        "--intent",
        &key.to_string(),
        "--attempt",
        "1",
        "--landed",
        "--evidence",
        "seen",
        "--by",
        "ops",
    ];
    let refused = command(&args, Some(&empty));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("holds no attempt log"), "{}", text(&refused.stderr));
    let client = common::client(&empty).await;
    let schemas: i64 = client
        .query_one("SELECT count(*) FROM pg_namespace WHERE nspname = 'tool_contract'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(schemas, 0, "a settler created nothing");

    let Some((journal, conninfo)) = common::journal("command_settle_role").await else { return };
    let dead = Owner::new("worker-1.1");
    journal.claim(&key, &dead, Duration::from_secs(30)).await.unwrap();
    journal.start(&dead, common::start(key, 1).as_record_ref(), Durability::Synced).await.unwrap();
    journal.release(&key, &dead);
    // The role of docs/postgres.md ("A role that only settles"), and not a privilege more.
    let admin = common::client(&conninfo).await;
    admin
        .batch_execute(
            "DROP ROLE IF EXISTS settler_only; CREATE ROLE settler_only LOGIN; \
             REVOKE CREATE ON SCHEMA public FROM PUBLIC; \
             GRANT USAGE ON SCHEMA tool_contract TO settler_only; \
             GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA tool_contract TO settler_only; \
             GRANT UPDATE, DELETE ON tool_contract.claims TO settler_only; \
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA tool_contract TO settler_only;",
        )
        .await
        .unwrap();
    let as_settler = conninfo.replace("user=postgres", "user=settler_only");
    let done = command(&args, Some(&as_settler));
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    assert!(text(&done.stdout).contains("settled landed by ops"), "{}", text(&done.stdout));
    let recall = journal.recall(&key).await.unwrap().unwrap();
    assert!(recall.settlement().is_some(), "{recall:?}");
    // Without CREATE it could not have made the schema: a role with USAGE alone still cannot settle
    // (the privileges listed are the ones it needs, not more than it needs).
    admin
        .batch_execute(
            "DROP ROLE IF EXISTS usage_only; CREATE ROLE usage_only LOGIN; \
             GRANT USAGE ON SCHEMA tool_contract TO usage_only;",
        )
        .await
        .unwrap();
    let other = common::key("cmd-settle-role-2");
    journal.claim(&other, &dead, Duration::from_secs(30)).await.unwrap();
    journal.start(&dead, common::start(other, 1).as_record_ref(), Durability::Synced).await.unwrap();
    journal.release(&other, &dead);
    let args = [
        "settle",
        "--intent",
        &other.to_string(),
        "--attempt",
        "1",
        "--landed",
        "--evidence",
        "seen",
        "--by",
        "ops",
    ];
    let refused = command(&args, Some(&conninfo.replace("user=postgres", "user=usage_only")));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
}
