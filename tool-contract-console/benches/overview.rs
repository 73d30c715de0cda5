//! Row 11 of BENCHMARKS.md: the console's overview of a file log holding 1,000,000 attempts, answered
//! from the index (the log indexed once, then only what was appended since is read), against the same
//! request for a log of one intent, in one run.
//!
//! ```text
//! cargo bench -p tool-contract-console --bench overview
//! ```
//!
//! The log is written once to `target/console-bench/` (500,000 intents, 1,000,000 attempts: two each,
//! the first `retryable`, the second `ok`, but for 1 % left unfinished and 1 % ended `unknown`, so
//! the overview lists 10,000 intents in doubt, 500 on the page), with stamps over the last day.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::Full;
use hyper::Request;
use tool_contract::key::Intent;
use tool_contract::{Applied, Outcome};
use tool_contract::{
    journal::{HEADER, Phase, Record},
    unstable::rfc3339,
};
use tool_contract_console::{Console, Options};

const INTENTS: u64 = 500_000;

fn record(i: u64, attempt: u32, phase: Phase, end: Option<(Outcome, Applied)>, now: SystemTime) -> Record {
    let key = Intent::new(&format!("task-{}", i / 4), "agent", "post_notice", &format!("thread-{i}")).key();
    let at = now - Duration::from_secs((i * 86_000 / INTENTS) + u64::from(attempt));
    Record {
        phase,
        task: format!("task-{}", i / 4),
        call: ["post_notice", "charge_card", "read_price"][(i % 3) as usize].to_owned(),
        intent_key: key,
        attempt,
        attempt_id: format!("task-{}-{}-a{attempt}", i / 4, &key.to_string()[..8]),
        started: rfc3339(at),
        budget_left_s: 30,
        outcome: end.map(|e| e.0),
        effect_applied: end.map(|e| e.1),
        probe: None,
        message: end.map(|(o, _)| format!("ended {o}")),
        retry_at: None,
        sent_by: None,
        args: None,
        value: None,
        settled: None,
        approval: None,
    }
}

/// The log of 1,000,000 attempts, written once.
fn big_log() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/console-bench");
    std::fs::create_dir_all(&dir).expect("a directory");
    let path = dir.join("attempts-1m.log");
    if path.exists() {
        return path;
    }
    let now = SystemTime::now();
    let partial = dir.join("attempts-1m.log.part");
    let mut out = BufWriter::new(std::fs::File::create(&partial).expect("a file"));
    writeln!(out, "{HEADER}").expect("written");
    let mut line = |r: &Record| {
        serde_json::to_writer(&mut out, r).expect("written");
        out.write_all(b"\n").expect("written");
    };
    for i in 0..INTENTS {
        line(&record(i, 1, Phase::Start, None, now));
        line(&record(i, 1, Phase::End, Some((Outcome::Retryable, Applied::No)), now));
        line(&record(i, 2, Phase::Start, None, now));
        match i % 100 {
            0 => {}
            1 => line(&record(i, 2, Phase::End, Some((Outcome::Unknown, Applied::Unknown)), now)),
            _ => line(&record(i, 2, Phase::End, Some((Outcome::Ok, Applied::Yes)), now)),
        }
    }
    drop(out);
    std::fs::rename(&partial, &path).expect("renamed");
    path
}

fn small_log() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/console-bench");
    std::fs::create_dir_all(&dir).expect("a directory");
    let path = dir.join("attempts-1.log");
    let now = SystemTime::now();
    let lines = [
        record(1, 1, Phase::Start, None, now),
        record(1, 1, Phase::End, Some((Outcome::Unknown, Applied::Unknown)), now),
    ];
    let text: String = lines.iter().map(|r| serde_json::to_string(r).expect("a line") + "\n").collect();
    std::fs::write(&path, format!("{HEADER}\n{text}")).expect("written");
    path
}

/// A console over `log`, logged in: the console and the request for its overview.
fn overview(rt: &tokio::runtime::Runtime, log: &Path) -> (Console, Request<Full<Bytes>>) {
    rt.block_on(async {
        let running = Console::bind(log, Options::default()).await.expect("a console");
        let console = running.console().clone();
        let host = running.addr.to_string();
        let login = running.url.split_once(&host).expect("the address").1.to_owned();
        let request =
            Request::get(login).header("host", &host).body(Full::new(Bytes::new())).expect("a request");
        let reply = console.answer(request).await;
        let cookie = reply.headers()["set-cookie"]
            .to_str()
            .expect("text")
            .split(';')
            .next()
            .expect("a cookie")
            .to_owned();
        let request =
            Request::get("/").header("host", &host).header("cookie", cookie).body(Full::new(Bytes::new()));
        (console, request.expect("a request"))
    })
}

fn row11(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let mut group = c.benchmark_group("row11_console_overview");
    group.sample_size(10);
    for (name, log) in [("one_intent", small_log()), ("1m_attempts", big_log())] {
        let (console, request) = overview(&rt, &log);
        group.bench_function(name, |b| {
            b.iter(|| {
                let request = Request::get("/")
                    .header("host", request.headers()["host"].clone())
                    .header("cookie", request.headers()["cookie"].clone())
                    .body(Full::new(Bytes::new()))
                    .expect("a request");
                let reply = rt.block_on(console.answer(request));
                assert_eq!(reply.status(), 200);
                reply
            })
        });
    }
    group.finish();
}

/// The same overview of a PostgreSQL store holding 1,000,000 attempts (the same shape of records,
/// inserted by the server itself), when a PostgreSQL server is installed.
fn row11_postgres(c: &mut Criterion) {
    let Ok(server) = tool_contract_postgres::testing::PgServer::shared() else {
        eprintln!("row11_console_overview/postgres: PostgreSQL is not installed; skipped");
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let console = rt.block_on(async {
        let conninfo = server.database("console_bench").await.expect("a database");
        let journal = tool_contract_postgres::PgJournal::connect(&conninfo).await.expect("a store");
        let (client, connection) =
            tokio_postgres::connect(&conninfo, tokio_postgres::NoTls).await.expect("a client");
        tokio::spawn(connection);
        client.batch_execute(FILL).await.expect("filled");
        let running = Console::bind_postgres(journal, Options::default()).await.expect("a console");
        logged_in(running).await
    });
    let mut group = c.benchmark_group("row11_console_overview");
    group.sample_size(10);
    group.bench_function("1m_attempts_postgres", |b| {
        b.iter(|| {
            let reply = rt.block_on(console.0.answer(console.1()));
            assert_eq!(reply.status(), 200);
            reply
        })
    });
    group.finish();
}

/// 500,000 intents of two attempts each, as the file log of the other group holds them.
const FILL: &str = r#"
INSERT INTO tool_contract.attempts (intent, attempt, phase, task, tool, attempt_id, started, budget_left_s,
    outcome, effect_applied, probe, message)
SELECT decode(md5(i::text), 'hex'), a.attempt, p.phase, 'task-' || (i / 4), 'post_notice',
    'task-' || (i / 4) || '-a' || a.attempt,
    to_char((now() - make_interval(secs => i * 0.172)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 30,
    CASE WHEN p.phase = 'start' THEN NULL WHEN a.attempt = 1 THEN 'retryable'
         WHEN i % 100 = 1 THEN 'unknown' ELSE 'ok' END,
    CASE WHEN p.phase = 'start' THEN NULL WHEN a.attempt = 1 THEN 'no'
         WHEN i % 100 = 1 THEN 'unknown' ELSE 'yes' END,
    NULL, CASE WHEN p.phase = 'end' THEN 'ended' END
FROM generate_series(0, 499999) AS i,
     (VALUES (1), (2)) AS a(attempt),
     (VALUES ('start'), ('end')) AS p(phase)
WHERE NOT (a.attempt = 2 AND p.phase = 'end' AND i % 100 = 0)
ORDER BY i, a.attempt, p.phase DESC;
ANALYZE tool_contract.attempts;"#;

/// A console logged in: it, and a maker of its overview request.
async fn logged_in(
    running: tool_contract_console::Running,
) -> (Console, Box<dyn Fn() -> Request<Full<Bytes>> + Send>) {
    let console = running.console().clone();
    let host = running.addr.to_string();
    let login = running.url.split_once(&host).expect("the address").1.to_owned();
    let request = Request::get(login).header("host", &host).body(Full::new(Bytes::new())).expect("a request");
    let reply = console.answer(request).await;
    let cookie =
        reply.headers()["set-cookie"].to_str().expect("text").split(';').next().expect("a cookie").to_owned();
    tokio::spawn(running.serve());
    let make = move || {
        Request::get("/")
            .header("host", &host)
            .header("cookie", &cookie)
            .body(Full::new(Bytes::new()))
            .expect("a request")
    };
    (console, Box::new(make))
}

criterion_group!(benches, row11, row11_postgres);
criterion_main!(benches);
