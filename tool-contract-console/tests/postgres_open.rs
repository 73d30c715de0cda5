//! How the console opens a fleet's store in PostgreSQL (a throwaway server from the system's
//! binaries): read-only never changes the database, not even its schema; the command takes the
//! connection string from the environment or a file; and the connection can be made over TLS.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use tool_contract_console::Console;
use tool_contract_postgres::testing::{PgServer, ServerError};
use tool_contract_postgres::{PgJournal, Transport};

/// The server; `None` (loudly) when PostgreSQL is not installed and this is not CI.
fn skipped(found: Result<&PgServer, &ServerError>) -> bool {
    match found {
        Ok(_) => false,
        Err(e @ ServerError::NotInstalled { .. }) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("!!! SKIPPED: this PostgreSQL test did not run: {e} (with CI=true this is a failure)");
            true
        }
        Err(e) => panic!("{e}"),
    }
}

fn plan(conninfo: &str, ca: Option<&std::path::Path>) -> Transport {
    Transport::plan(conninfo, ca).unwrap()
}

/// Whether the database holds the log's schema.
async fn has_schema(conninfo: &str) -> bool {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let found: bool =
        client.query_one("SELECT to_regnamespace('tool_contract') IS NOT NULL", &[]).await.unwrap().get(0);
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_console_checks_the_schema_and_never_creates_it() {
    let server = PgServer::shared();
    if skipped(server.as_ref().map(|s| *s)) {
        return;
    }
    let server = server.unwrap();
    let conninfo = server.database("console_read_only").await.unwrap();
    let refused = Console::connect_postgres(&plan(&conninfo, None), true).await.err().unwrap();
    assert!(refused.contains("holds no attempt log"), "{refused}");
    assert!(!has_schema(&conninfo).await, "a read-only console created nothing");

    // A console that may write migrates it, as a worker does; then a read-only one opens it.
    Console::connect_postgres(&plan(&conninfo, None), false).await.unwrap();
    assert!(has_schema(&conninfo).await);
    Console::connect_postgres(&plan(&conninfo, None), true).await.unwrap();
}

/// Start the command with `args` and `env`: the first line it prints (the address to open), and the
/// process, to stop.
fn start(args: &[&str], env: &[(&str, &str)]) -> (String, std::process::Child) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tool-contract-console"));
    command.args(args).env_remove("TOOL_CONTRACT_PG").stdout(Stdio::piped()).stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    if line.is_empty() {
        let mut why = String::new();
        let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut why);
        panic!("the console printed nothing: {why}");
    }
    (line, child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_takes_the_connection_string_from_the_environment_or_a_file() {
    let server = PgServer::shared();
    if skipped(server.as_ref().map(|s| *s)) {
        return;
    }
    let server = server.unwrap();
    let conninfo = server.database("console_conninfo").await.unwrap();
    PgJournal::connect(&conninfo).await.unwrap();

    let (line, mut child) = start(&["--read-only"], &[("TOOL_CONTRACT_PG", &conninfo)]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.starts_with("console for ") && line.contains("open http://127.0.0.1:"), "{line}");

    let file = std::env::temp_dir().join(format!("tc-console-pg-url-{}", std::process::id()));
    std::fs::write(&file, format!("{conninfo}\n")).unwrap();
    let (line, mut child) = start(&["--read-only", "--pg-url-file", file.to_str().unwrap()], &[]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("open http://127.0.0.1:"), "{line}");
    let _ = std::fs::remove_file(&file);

    // Neither a log, nor a file, nor the variable: said plainly.
    let out = Command::new(env!("CARGO_BIN_EXE_tool-contract-console"))
        .env_remove("TOOL_CONTRACT_PG")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(said.contains("--pg-url-file FILE, or TOOL_CONTRACT_PG"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_reaches_postgresql_over_tls() {
    let server = PgServer::start_tls();
    if skipped(server.as_ref()) {
        return;
    }
    let server = server.unwrap();
    server.database("console_tls").await.unwrap();
    let conninfo = format!("{} sslmode=require", server.tcp_conninfo("console_tls"));
    let ca = server.tls_certificate();
    let journal = Console::connect_postgres(&plan(&conninfo, Some(&ca)), false).await;
    journal.unwrap_or_else(|e| panic!("{e}\n{}", server.log()));
    // TLS required and no certificates named: the system's are trusted, and they do not know this
    // self-signed one.
    let untrusted = Console::connect_postgres(&plan(&conninfo, None), false).await.err().unwrap();
    assert!(untrusted.contains("ertificate") || untrusted.contains("UnknownIssuer"), "{untrusted}");
    // Without TLS the server refuses (it requires TLS on TCP).
    let plain = Console::connect_postgres(&plan(&server.tcp_conninfo("console_tls"), None), false).await;
    assert!(plain.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_console_needs_usage_on_the_schema_and_select_on_its_tables_only() {
    let server = PgServer::shared();
    if skipped(server.as_ref().map(|s| *s)) {
        return;
    }
    let server = server.unwrap();
    let conninfo = server.database("console_ro_role").await.unwrap();
    PgJournal::connect(&conninfo).await.unwrap();
    let (admin, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(
            "DROP ROLE IF EXISTS console_ro; CREATE ROLE console_ro LOGIN; \
             GRANT SELECT ON ALL TABLES IN SCHEMA tool_contract TO console_ro;",
        )
        .await
        .unwrap();
    let as_ro = conninfo.replace("user=postgres", "user=console_ro");
    // SELECT alone is not enough: the schema's USAGE is needed too.
    let refused = Console::connect_postgres(&plan(&as_ro, None), true).await.err().unwrap();
    assert!(refused.contains("permission denied") || refused.contains("schema"), "{refused}");
    admin.batch_execute("GRANT USAGE ON SCHEMA tool_contract TO console_ro;").await.unwrap();
    let journal = Console::connect_postgres(&plan(&as_ro, None), true).await.unwrap();
    // And it reads the log: what a page is made of.
    let batch = tool_contract::journal::LogReader::read_more(&journal.reader(), 100).await.unwrap();
    assert!(batch.records.is_empty(), "an empty log reads as empty");
}
