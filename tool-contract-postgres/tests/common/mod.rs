//! What the PostgreSQL tests share: the throwaway server, a fresh database per test, records by hand.

#![allow(dead_code)]

use std::time::Duration;

use tokio_postgres::{Client, NoTls};
use tool_contract::journal::{Phase, Record};
use tool_contract::{Applied, IntentKey, Outcome};
use tool_contract_postgres::testing::{PgServer, ServerError};
use tool_contract_postgres::{PgJournal, PgOptions};

/// The server of this test binary; `None` (after saying so, loudly) when PostgreSQL is not installed
/// and this is not CI. With `CI=true` a missing PostgreSQL fails the test.
pub fn server() -> Option<&'static PgServer> {
    match PgServer::shared() {
        Ok(server) => Some(server),
        Err(e @ ServerError::NotInstalled { .. }) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
            eprintln!("!!! SKIPPED: this PostgreSQL test did not run: {e}");
            eprintln!("!!! (with CI=true this is a failure)");
            eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// A fresh database `name` on the server: its connection string.
pub async fn database(name: &str) -> Option<String> {
    let server = server()?;
    Some(server.database(name).await.unwrap_or_else(|e| panic!("{e}\n{}", server.log())))
}

/// A store on a fresh database `name`.
pub async fn journal(name: &str) -> Option<(PgJournal, String)> {
    journal_with(name, PgOptions::default()).await
}

/// A store on a fresh database `name`, with these options.
pub async fn journal_with(name: &str, options: PgOptions) -> Option<(PgJournal, String)> {
    let conninfo = database(name).await?;
    let journal = PgJournal::connect_with(&conninfo, options).await.unwrap();
    Some((journal, conninfo))
}

/// A plain client on `conninfo`, to look at the tables from outside the store.
pub async fn client(conninfo: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(conninfo, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// The number of start records of `key` in the table, and how many of them are fenced.
pub async fn starts(client: &Client, key: &IntentKey) -> (i64, i64) {
    let row = client
        .query_one(
            "SELECT count(*), count(owner) FROM tool_contract.attempts WHERE intent = $1 AND phase = 'start'",
            &[&key.as_bytes().as_slice()],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// The seconds left on `key`'s lease, on the server's clock.
pub async fn lease_left(client: &Client, key: &IntentKey) -> Option<Duration> {
    let row = client
        .query_opt(
            "SELECT extract(epoch FROM lease_until - clock_timestamp())::float8 FROM tool_contract.claims WHERE intent = $1",
            &[&key.as_bytes().as_slice()],
        )
        .await
        .unwrap()?;
    Some(Duration::from_secs_f64(row.get::<_, f64>(0).max(0.0)))
}

pub fn key(name: &str) -> IntentKey {
    tool_contract::key::Intent::new("pg-test", "agent", "post_notice", name).key()
}

pub fn start(key: IntentKey, attempt: u32) -> Record {
    Record {
        phase: Phase::Start,
        task: "pg-test".to_owned(),
        call: "post_notice".to_owned(),
        intent_key: key,
        attempt,
        attempt_id: format!("pg-test-a{attempt}"),
        started: "2026-12-01T03:00:00Z".to_owned(),
        budget_left_s: 30,
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
    }
}

pub fn end(key: IntentKey, attempt: u32, outcome: Outcome) -> Record {
    Record {
        phase: Phase::End,
        outcome: Some(outcome),
        effect_applied: Some(if outcome == Outcome::Ok { Applied::Yes } else { Applied::No }),
        message: Some(format!("{outcome} on attempt {attempt}")),
        ..start(key, attempt)
    }
}

/// Percentile `p` (0..=100) of `samples`, sorted in place.
pub fn percentile(samples: &mut [Duration], p: usize) -> Duration {
    samples.sort();
    let at = (samples.len().saturating_sub(1) * p) / 100;
    samples.get(at).copied().unwrap_or_default()
}
