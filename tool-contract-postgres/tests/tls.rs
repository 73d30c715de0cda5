//! The store over TLS (feature `tls`): a server that requires it on TCP, a client that trusts its
//! certificate, and the two ways it is refused: without TLS, and with a certificate it does not trust.

mod common;

use std::time::Duration;

use tool_contract::journal::Owner;
use tool_contract::journal::{Journal, JournalError};
use tool_contract_postgres::rustls::pki_types::CertificateDer;
use tool_contract_postgres::rustls::pki_types::pem::PemObject;
use tool_contract_postgres::rustls::{ClientConfig, RootCertStore};
use tool_contract_postgres::testing::{PgServer, ServerError};
use tool_contract_postgres::{PgJournal, PgOptions};

fn client_config(roots: RootCertStore) -> ClientConfig {
    ClientConfig::builder().with_root_certificates(roots).with_no_client_auth()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_over_tls_and_the_connections_it_refuses() {
    let server = match PgServer::start_tls() {
        Ok(server) => server,
        Err(e @ ServerError::NotInstalled { .. }) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("!!! SKIPPED: this PostgreSQL test did not run: {e} (with CI=true this is a failure)");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    server.database("tls_store").await.unwrap();
    let conninfo = format!("{} sslmode=require", server.tcp_conninfo("tls_store"));
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(server.tls_certificate()).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }

    let options = PgOptions::default().connect_timeout(Duration::from_secs(5));
    let journal = PgJournal::connect_tls(&conninfo, options.clone(), client_config(roots))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", server.log()));
    let key = common::key("tls-a");
    let owner = Owner::new("worker-tls.1");
    journal.claim(&key, &owner, Duration::from_secs(30)).await.unwrap();
    journal
        .start(&owner, common::start(key, 1).as_record_ref(), tool_contract::journal::Durability::Synced)
        .await
        .unwrap();
    assert_eq!(journal.try_recall(&key).await.unwrap().map(|r| r.attempts), Some(1));
    // The server says its sessions on this database are encrypted.
    let admin = common::client(&server.conninfo("postgres")).await;
    let encrypted: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.datname = 'tls_store' AND s.ssl",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(encrypted >= 1, "the store's connections use TLS");

    // Without TLS the server refuses the connection (and the connection string requires TLS anyway).
    let plain = PgJournal::connect_with(&server.tcp_conninfo("tls_store"), options.clone()).await;
    assert!(matches!(plain, Err(JournalError::Io { .. })), "{plain:?}");
    // With TLS but trusting nothing, the server's certificate is refused.
    let untrusted = PgJournal::connect_tls(&conninfo, options, client_config(RootCertStore::empty())).await;
    let why = untrusted.map(|_| ()).unwrap_err().to_string();
    assert!(
        why.contains("certificate") || why.contains("Certificate") || why.contains("UnknownIssuer"),
        "{why}"
    );
}

/// The command, run with `args`; its exit code, standard output and standard error.
fn command(args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tool-contract-postgres"))
        .args(args)
        .env_remove("TOOL_CONTRACT_PG")
        .output()
        .expect("the command runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_reaches_the_store_over_tls_with_the_certificates_given() {
    let server = match PgServer::start_tls() {
        Ok(server) => server,
        Err(e @ ServerError::NotInstalled { .. }) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("!!! SKIPPED: this PostgreSQL test did not run: {e} (with CI=true this is a failure)");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    server.database("tls_command").await.unwrap();
    // The log's schema, made by a worker over the Unix socket.
    PgJournal::connect(&server.conninfo("tls_command")).await.unwrap();
    let ca = server.tls_certificate();
    let ca = ca.to_str().unwrap();
    // On TCP the server refuses any session without TLS (pg_hba's hostnossl reject): that the
    // command reads the log there proves it spoke TLS. No sslmode given: the certificates mean TLS.
    let tcp = server.tcp_conninfo("tls_command");
    let (code, out, err) = command(&["log", &tcp, "--pg-ca-file", ca]);
    assert_eq!(code, Some(0), "{err}\n{}", server.log());
    assert!(out.contains("no attempts") || out.contains("0 intents") || err.is_empty(), "{out}\n{err}");
    assert!(!err.contains("warning"), "{err}");
    // The connection string from a file, the flag after the command's arguments.
    let file = std::env::temp_dir().join(format!("tc-pg-url-{}", std::process::id()));
    std::fs::write(&file, format!("{tcp}\n")).unwrap();
    let (code, _, err) = command(&["log", "--pg-url-file", file.to_str().unwrap(), "--pg-ca-file", ca]);
    let _ = std::fs::remove_file(&file);
    assert_eq!(code, Some(0), "{err}");
    // Settling through TLS: refused for an intent with no attempt, but refused by the store (it was
    // reached), not by the connection.
    let key = "0123456789abcdef0123456789abcdef";
    let args = [
        "settle",
        &tcp,
        "--pg-ca-file",
        ca,
        "--intent",
        key,
        "--attempt",
        "1",
        "--landed",
        "--by",
        "ops",
        "--evidence",
        "checked",
    ];
    let (code, _, err) = command(&args);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("no attempt") || err.contains("nothing"), "{err}");
    // Without the certificates, TLS required: the system's are trusted, and refuse this one.
    let (code, _, err) = command(&["log", &format!("{tcp} sslmode=require")]);
    assert_eq!(code, Some(1));
    assert!(err.contains("ertificate") || err.contains("UnknownIssuer"), "{err}");
    // In clear text: refused by the server, and no warning (127.0.0.1 is this host).
    let (code, _, err) = command(&["log", &tcp]);
    assert_eq!(code, Some(1));
    assert!(!err.contains("warning"), "{err}");
}

/// A server, or anything between, that answers a client's request for TLS with "no": what it
/// receives after its answer (a client that goes on in clear text sends its user name).
async fn answers_no_tls() -> (u16, tokio::task::JoinHandle<Vec<u8>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let serve = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        // The SSLRequest: length 8, code 80877103.
        let mut request = [0u8; 8];
        socket.read_exact(&mut request).await.unwrap();
        assert_eq!(request, [0, 0, 0, 8, 4, 210, 22, 47], "a client asks for TLS first");
        socket.write_all(b"N").await.unwrap();
        let mut after = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut after)).await;
        after
    });
    (port, serve)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_given_mean_tls_or_nothing_even_when_the_server_says_it_has_none() {
    let ca = std::env::temp_dir().join(format!("tc-downgrade-ca-{}.pem", std::process::id()));
    // Any certificate will do: the connection must stop before one is presented.
    std::fs::write(&ca, include_str!("data/any.crt")).unwrap();
    let (port, serve) = answers_no_tls().await;
    let conninfo = format!("host=127.0.0.1 port={port} user=secret_user dbname=agents connect_timeout=5");
    let args = ["log".to_owned(), conninfo, "--pg-ca-file".to_owned(), ca.display().to_string()];
    let (code, _, err) =
        tokio::task::spawn_blocking(move || command(&args.each_ref().map(String::as_str))).await.unwrap();
    let after = serve.await.unwrap();
    let _ = std::fs::remove_file(&ca);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("TLS") || err.contains("tls") || err.contains("SSL"), "{err}");
    assert!(
        !String::from_utf8_lossy(&after).contains("secret_user"),
        "the client went on in clear text: {:?}",
        String::from_utf8_lossy(&after)
    );
}

#[test]
fn clear_text_to_another_host_is_warned_of_before_connecting() {
    // A name that resolves nowhere: the warning comes before the connection fails.
    let (code, _, err) = command(&["log", "postgres://ops:hunter2@db.invalid/agents?connect_timeout=2"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("warning") && err.contains("clear text") && err.contains("--pg-ca-file"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    // With sslmode=prefer and certificates, the downgrade it allows is said.
    let ca = std::env::temp_dir().join(format!("tc-prefer-ca-{}.pem", std::process::id()));
    std::fs::write(&ca, include_str!("data/any.crt")).unwrap();
    let (_, _, err) = command(&[
        "log",
        "postgres://ops@db.invalid/agents?sslmode=prefer&connect_timeout=2",
        "--pg-ca-file",
        ca.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&ca);
    assert!(err.contains("warning") && err.contains("sslmode=prefer"), "{err}");
}
