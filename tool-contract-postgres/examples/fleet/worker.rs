//! One worker process of the fleet: its share of the intents, each a `send` through the engine on the
//! shared PostgreSQL log, until every one has an `ok`; then what the log still holds open, until
//! nothing is.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tool_contract::effect::EffectKind;
use tool_contract::spec::ToolSpec;
use tool_contract::{IntentKey, Outcome, Report, Task, engine};
use tool_contract_postgres::{PgJournal, PgOptions};

use crate::fake::{self, Reporter};

/// The environment variable a worker process finds its [`WorkerConfig`] in, as JSON. The connection
/// string travels here rather than on the command line, where `ps` would show its password.
pub const WORKER_ENV: &str = "TOOL_CONTRACT_FLEET_WORKER";

/// The tool every intent calls: a notice posted to a service that does not deduplicate.
pub const SEND: ToolSpec =
    ToolSpec::new("post_notice", EffectKind::Send).deadline_floor(Duration::from_millis(400));
const ACTOR: &str = "fleet";
const TARGET: &str = "thread-1";

/// How long a worker keeps trying to reach the store when it starts (a server may be restarting).
const CONNECT_FOR: Duration = Duration::from_secs(30);

/// What one worker process is told.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerConfig {
    pub index: usize,
    pub generation: u32,
    pub workers: usize,
    /// How many workers try each intent (all of them when `>= workers`).
    pub overlap: usize,
    pub intents: usize,
    /// Calls in flight at once.
    pub lanes: usize,
    pub budget_ms: u64,
    /// Task ids are `{run}-{n}`: one run's intents never meet another's in a shared database.
    pub run: String,
    pub service: SocketAddr,
    pub db: String,
}

impl WorkerConfig {
    /// The config in [`WORKER_ENV`], if this process is a worker.
    pub fn from_env() -> Option<Result<WorkerConfig, String>> {
        let json = std::env::var(WORKER_ENV).ok()?;
        Some(serde_json::from_str(&json).map_err(|e| format!("{WORKER_ENV} is not a worker config: {e}")))
    }

    /// The intents this worker tries, in an order of its own.
    fn share(&self) -> Vec<usize> {
        let workers = self.workers.max(1);
        let overlap = self.overlap.clamp(1, workers);
        let mut mine: Vec<usize> =
            (0..self.intents).filter(|i| (self.index + workers - i % workers) % workers < overlap).collect();
        shuffle(&mut mine, (self.index as u64 + 1) * 0x9e37_79b9 + u64::from(self.generation));
        mine
    }
}

/// The id of intent `n`'s task.
pub fn task_id(run: &str, n: usize) -> String {
    format!("{run}-{n}")
}

/// The key of intent `n`, as every worker and the parent derive it.
pub fn intent_key(run: &str, n: usize) -> IntentKey {
    IntentKey::derive(&task_id(run, n), ACTOR, SEND.get_verb(), &TARGET, None)
}

/// Fisher–Yates with xorshift: each worker its own order, no dependency for it.
fn shuffle(items: &mut [usize], seed: u64) {
    let mut state = seed | 1;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
}

struct Ctx {
    config: WorkerConfig,
    journal: Arc<PgJournal>,
    reporter: Reporter,
}

/// Run the worker to the end; what went wrong when it could not.
pub async fn work(config: WorkerConfig) -> Result<(), String> {
    // At most 8 connections a worker, so that a fleet of 8 fits a server's default 100 connections;
    // lanes beyond it wait their turn for a connection.
    let options = PgOptions::default().pool_size(config.lanes.clamp(2, 8)).op_timeout(Duration::from_secs(5));
    let journal = connect(&config.db, options).await?;
    let reporter =
        Reporter::connect(config.service).await.map_err(|e| format!("cannot reach the parent: {e}"))?;
    let ctx = Arc::new(Ctx { journal: Arc::new(journal), reporter, config });
    let mut todo: Vec<usize> = ctx.config.share();
    loop {
        drive(&ctx, todo).await;
        // Ours is done; what is still open in the log (an attempt of a killed worker, an end record
        // lost while the server restarted) is resolved by running it again: the engine probes first.
        todo = open_intents(&ctx).await;
        if todo.is_empty() {
            break;
        }
    }
    let Ctx { reporter, .. } = Arc::into_inner(ctx).ok_or("a call outlived its worker")?;
    reporter.finish().await.map_err(|e| format!("cannot hand the reports over: {e}"))
}

async fn connect(db: &str, options: PgOptions) -> Result<PgJournal, String> {
    let until = Instant::now() + CONNECT_FOR;
    loop {
        match PgJournal::connect_with(db, options.clone()).await {
            Ok(journal) => return Ok(journal),
            Err(e) if Instant::now() >= until => return Err(format!("cannot open the log: {e}")),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The intents of this run whose last word in the log is unfinished or `unknown`.
async fn open_intents(ctx: &Ctx) -> Vec<usize> {
    let prefix = format!("{}-", ctx.config.run);
    loop {
        match ctx.journal.try_unresolved().await {
            Ok(open) => {
                return open
                    .iter()
                    .filter_map(|r| r.last.task.strip_prefix(&prefix)?.parse().ok())
                    .filter(|n| *n < ctx.config.intents)
                    .collect();
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Run `todo` until each has an `ok`, `lanes` calls at a time; an intent that is busy elsewhere or
/// could not be started comes back after the wait its report names.
async fn drive(ctx: &Arc<Ctx>, todo: Vec<usize>) {
    let mut ready: VecDeque<usize> = todo.into();
    let mut later: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::new();
    let mut running = JoinSet::new();
    loop {
        let now = Instant::now();
        while let Some(Reverse((at, _))) = later.peek()
            && *at <= now
        {
            if let Some(Reverse((_, n))) = later.pop() {
                ready.push_back(n);
            }
        }
        while running.len() < ctx.config.lanes {
            let Some(n) = ready.pop_front() else { break };
            let ctx = Arc::clone(ctx);
            running.spawn(async move { (n, call(&ctx, n).await) });
        }
        if running.is_empty() && ready.is_empty() && later.is_empty() {
            return;
        }
        let wake = later.peek().map(|Reverse((at, _))| *at);
        tokio::select! {
            Some(done) = running.join_next() => {
                let Ok((n, report)) = done else { continue };
                // A permanent refusal is final (and fails the run: no call here should get one).
                if !matches!(report.outcome, Outcome::Ok | Outcome::Permanent) {
                    later.push(Reverse((Instant::now() + again_after(&report), n)));
                }
            }
            () = sleep_until(wake), if wake.is_some() => {}
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}

/// When to try an intent again after a report that is not `ok`.
fn again_after(report: &Report<u64>) -> Duration {
    let named = report.retry_after_s.map(Duration::from_secs).unwrap_or(Duration::ZERO);
    named.clamp(Duration::from_millis(100), Duration::from_secs(5))
}

/// One call of intent `n`, reported to the parent.
async fn call(ctx: &Ctx, n: usize) -> Report<u64> {
    let config = &ctx.config;
    let task = Task::new(task_id(&config.run, n), ACTOR, Duration::from_millis(config.budget_ms))
        .journal(ctx.journal.clone());
    let key = task.key(&SEND, &TARGET, None);
    let (service, worker, generation) = (config.service, config.index, config.generation);
    let report = engine::run(
        &task,
        &SEND,
        key,
        |call| fake::send(service, call.key(), worker, generation),
        |key| fake::probe(service, key),
    )
    .await;
    ctx.reporter.report(worker, generation, key, report.outcome, report.value.filter(|_| report.is_ok()));
    report
}
