//! The PostgreSQL store at 64 concurrent tasks (BENCHMARKS.md, issue 12), against a throwaway server:
//!
//! - `durable_send_64`: sends through the engine and `PgJournal` (claim, fenced start committed
//!   synchronously, end record, release), 64 tasks at once on a pool of 16 connections; beside it
//!   `bare_rows_64`: the same rows written by a bare tokio-postgres loop on a pool of the same size and
//!   the same commit modes (the claim upserted, the start row inserted with a synchronous commit, the
//!   end row inserted and the claim deleted asynchronously), with no fence, no engine and no checks.
//! - after the groups, the two side by side: 16 rounds of 4,096 sends by each, alternating which goes first,
//!   so both see the same load on a shared machine; each round's figures and the medians are printed
//!   (`pg_side_by_side`), the ratio row 9 states.
//! - then the latency of one claim while 64 claimers claim distinct intents at once: p50 and p99 over
//!   6,400 claims, printed.
//!
//! `cargo bench -p tool-contract-postgres --bench fleet` (PostgreSQL must be installed).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tokio::sync::{Mutex, Semaphore};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Statement};
use tool_contract::effect::EffectKind;
use tool_contract::journal::Journal;
use tool_contract::journal::Owner;
use tool_contract::key::Intent;
use tool_contract::spec::ToolSpec;
use tool_contract::{Class, Probe, Task, engine};
use tool_contract_postgres::testing::PgServer;
use tool_contract_postgres::{PgJournal, PgOptions};

const TASKS: u64 = 64;
const POOL: usize = 16;
const SEND: ToolSpec =
    ToolSpec::new("post_notice", EffectKind::Send).deadline_floor(Duration::from_millis(100));

/// Distinct intents across every iteration of every group.
static NEXT: AtomicU64 = AtomicU64::new(0);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
}

/// The statements of a bare send, prepared once per connection, as the store prepares its own.
const CLAIM: &str = "INSERT INTO tool_contract.claims AS c (intent, owner, lease_until) \
    SELECT $1::bytea, $2::text, clock_timestamp() + interval '30 seconds' \
    FROM (SELECT set_config('synchronous_commit', 'off', true)) AS d \
    ON CONFLICT (intent) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until";
const ROW: &str = "INSERT INTO tool_contract.attempts \
    (intent, attempt, phase, task, tool, attempt_id, started, budget_left_s, outcome, effect_applied) \
    SELECT $1::bytea, 1, $2::text, 'bench-bare', 'post_notice', $3::text, '2026-12-01T06:00:00Z', 30, $4::text, \
    $5::text FROM (SELECT set_config('synchronous_commit', $6::text, true)) AS d";
const RELEASE: &str = "DELETE FROM tool_contract.claims \
    USING (SELECT set_config('synchronous_commit', 'off', true)) AS d WHERE intent = $1 AND owner = $2";

/// One connection of the bare loop and its prepared statements.
struct Bare {
    client: Client,
    claim: Statement,
    row: Statement,
    release: Statement,
}

/// A pool as small as the store's: `POOL` connections, each lent to one task at a time.
struct BarePool {
    conns: Mutex<Vec<Bare>>,
    permits: Semaphore,
}

impl BarePool {
    async fn new(conninfo: &str) -> BarePool {
        let mut conns = Vec::new();
        for _ in 0..POOL {
            let (client, connection) = tokio_postgres::connect(conninfo, NoTls).await.expect("connects");
            tokio::spawn(connection);
            let claim = client.prepare(CLAIM).await.expect("prepared");
            let row = client.prepare(ROW).await.expect("prepared");
            let release = client.prepare(RELEASE).await.expect("prepared");
            conns.push(Bare { client, claim, row, release });
        }
        BarePool { conns: Mutex::new(conns), permits: Semaphore::new(POOL) }
    }

    /// The rows one send writes, by hand: the claim upserted, the start row committed synchronously,
    /// the end row and the release asynchronously.
    async fn send(&self, n: u64) {
        let _permit = self.permits.acquire().await.expect("open");
        let conn = self.conns.lock().await.pop().expect("a connection per permit");
        let key = Intent::new("bench-bare", "agent", "post_notice", &n.to_string()).key();
        let intent = key.as_bytes().as_slice();
        let owner = format!("bare-{n}");
        let attempt_id = format!("bench-bare-{n}-a1");
        let client = &conn.client;
        client.execute(&conn.claim, &[&intent, &owner]).await.expect("claim row");
        let start: [&(dyn ToSql + Sync); 6] =
            [&intent, &"start", &attempt_id, &None::<&str>, &None::<&str>, &"on"];
        client.execute(&conn.row, &start).await.expect("start row");
        let end: [&(dyn ToSql + Sync); 6] = [&intent, &"end", &attempt_id, &Some("ok"), &Some("yes"), &"off"];
        client.execute(&conn.row, &end).await.expect("end row");
        client.execute(&conn.release, &[&intent, &owner]).await.expect("release");
        self.conns.lock().await.push(conn);
    }
}

/// One send through the engine and the store.
async fn send(journal: &Arc<dyn Journal>, n: u64) {
    let task = Task::new(format!("bench-{n}"), "agent", Duration::from_secs(30)).journal(Arc::clone(journal));
    let key = task.key(&SEND, &"thread-9", None);
    let report = engine::run(
        &task,
        &SEND,
        key,
        |_| async { Ok::<u64, Class>(n) },
        |_| async { Probe::<u64>::NotLanded },
    )
    .await;
    assert_eq!(report.value, Some(n), "{}", report.message);
}

/// `iters` sends split over `TASKS` concurrent tasks: the wall time of all of them.
async fn spread<F, Fut>(iters: u64, one: F) -> Duration
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let one = Arc::new(one);
    let began = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let share = iters / TASKS + u64::from(t < iters % TASKS);
        let one = Arc::clone(&one);
        tasks.push(tokio::spawn(async move {
            for _ in 0..share {
                one(NEXT.fetch_add(1, Ordering::Relaxed)).await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("a sender");
    }
    began.elapsed()
}

fn fleet(c: &mut Criterion) {
    let server = PgServer::start().unwrap_or_else(|e| panic!("the benchmark needs PostgreSQL: {e}"));
    let rt = runtime();
    let conninfo = rt.block_on(server.database("bench")).expect("a database");
    let journal: Arc<dyn Journal> = Arc::new(
        rt.block_on(PgJournal::connect_with(&conninfo, PgOptions::default().pool_size(POOL)))
            .expect("connects"),
    );
    let bare = Arc::new(rt.block_on(BarePool::new(&conninfo)));

    let mut group = c.benchmark_group("pg_durable_sends");
    group.sample_size(10).measurement_time(Duration::from_secs(15)).throughput(Throughput::Elements(1));
    group.bench_function("bare_rows_64", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let bare = Arc::clone(&bare);
            async move {
                spread(iters, move |n| {
                    let bare = Arc::clone(&bare);
                    async move { bare.send(n).await }
                })
                .await
            }
        })
    });
    group.bench_function("durable_send_64", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let journal = Arc::clone(&journal);
            async move {
                spread(iters, move |n| {
                    let journal = Arc::clone(&journal);
                    async move { send(&journal, n).await }
                })
                .await
            }
        })
    });
    group.finish();

    // Side by side: each round times both loops back to back, the first of the pair alternating.
    const ROUNDS: usize = 16;
    const SENDS: u64 = 4096;
    let (mut bare_us, mut durable_us, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let time_bare = || {
            let bare = Arc::clone(&bare);
            rt.block_on(spread(SENDS, move |n| {
                let bare = Arc::clone(&bare);
                async move { bare.send(n).await }
            }))
        };
        let time_durable = || {
            let journal = Arc::clone(&journal);
            rt.block_on(spread(SENDS, move |n| {
                let journal = Arc::clone(&journal);
                async move { send(&journal, n).await }
            }))
        };
        let (b, d) = if round % 2 == 0 {
            let b = time_bare();
            (b, time_durable())
        } else {
            let d = time_durable();
            (time_bare(), d)
        };
        let per_send = |t: Duration| t.as_secs_f64() * 1e6 / SENDS as f64;
        bare_us.push(per_send(b));
        durable_us.push(per_send(d));
        ratios.push(per_send(d) / per_send(b));
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        (v[(v.len() - 1) / 2] + v[v.len() / 2]) / 2.0
    };
    let listed =
        |v: &[f64], digits: usize| v.iter().map(|x| format!("{x:.digits$}")).collect::<Vec<_>>().join(" ");
    println!(
        "pg_side_by_side: {ROUNDS} rounds of {SENDS} sends each, 64 tasks, pools of {POOL}: bare median {:.1} µs a \
         send, durable median {:.1} µs a send, ratio median {:.2} x (per round: bare {}; durable {}; ratio {})",
        median(&bare_us),
        median(&durable_us),
        median(&ratios),
        listed(&bare_us, 1),
        listed(&durable_us, 1),
        listed(&ratios, 2)
    );

    // Claim latency: 64 claimers, each claiming 100 distinct intents one after another.
    let samples = rt.block_on(async {
        let mut claimers = Vec::new();
        for t in 0..TASKS {
            let journal = Arc::clone(&journal);
            claimers.push(tokio::spawn(async move {
                let owner = Owner::new(format!("claimer-{t}"));
                let mut took = Vec::with_capacity(100);
                for i in 0..100 {
                    let key = Intent::new("bench-claims", "agent", "post_notice", &format!("{t}-{i}")).key();
                    let began = Instant::now();
                    journal.claim(&key, &owner, Duration::from_secs(30)).await.expect("a claim");
                    took.push(began.elapsed());
                }
                took
            }));
        }
        let mut all = Vec::new();
        for claimer in claimers {
            all.extend(claimer.await.expect("a claimer"));
        }
        all
    });
    // What the rows cost on disk: the table and each index, per attempt row.
    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(&conninfo, NoTls).await.expect("connects");
        tokio::spawn(connection);
        let rows: i64 =
            client.query_one("SELECT count(*) FROM tool_contract.attempts", &[]).await.expect("count").get(0);
        let sizes = client
            .query(
                "SELECT c.relname::text, pg_relation_size(c.oid) FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = 'tool_contract' AND c.relname LIKE 'attempts%' ORDER BY 1",
                &[],
            )
            .await
            .expect("sizes");
        let rows = rows.max(1);
        let each: Vec<String> = sizes
            .iter()
            .map(|row| format!("{} {} B", row.get::<_, String>(0), row.get::<_, i64>(1) / rows))
            .collect();
        println!("pg_attempt_rows: {rows} rows; per row: {}", each.join(", "));
    });
    let mut samples = samples;
    samples.sort();
    let at = |p: usize| samples[(samples.len() - 1) * p / 100];
    println!(
        "pg_claim_latency/64_claimers: {} claims, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        samples.len(),
        at(50).as_secs_f64() * 1e3,
        at(99).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3
    );
}

criterion_group!(benches, fleet);
criterion_main!(benches);
