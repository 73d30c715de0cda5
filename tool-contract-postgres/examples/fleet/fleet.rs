//! The parent of the fleet: it owns the fake service, starts the worker processes, kills some of them
//! mid-call with SIGKILL and starts them again, and counts what the world saw.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tool_contract::Outcome;
use tool_contract_postgres::PgJournal;

use crate::fake::{Fake, Hold};
use crate::worker::{WORKER_ENV, WorkerConfig, intent_key};

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub workers: usize,
    pub intents: usize,
    /// How many workers to kill mid-call, each once, spread over the run.
    pub kills: usize,
    /// How many workers try each intent (`usize::MAX`: all of them).
    pub overlap: usize,
    pub lanes: usize,
    /// Each call's budget; its claim's lease is this plus the engine's margin, so a killed worker's
    /// intents are taken over about that long after the kill.
    pub budget: Duration,
    /// One send in `slow_every` gets its reply `slow` late, so calls overlap and kills find replies
    /// pending.
    pub slow_every: u64,
    pub slow: Duration,
    /// The whole run fails past this.
    pub timeout: Duration,
    /// Task ids start with it.
    pub run: String,
    /// The shared log's connection string.
    pub db: String,
}

impl Plan {
    pub fn new(workers: usize, intents: usize, db: String) -> Plan {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Plan {
            workers,
            intents,
            kills: 0,
            overlap: usize::MAX,
            lanes: 16,
            budget: Duration::from_secs(2),
            slow_every: 25,
            slow: Duration::from_millis(100),
            timeout: Duration::from_secs(120),
            run: format!("fleet-{}-{:x}", std::process::id(), nanos & 0xff_ffff),
            db,
        }
    }
}

/// How a worker process is started: the program and arguments that make it run
/// [`crate::worker::work`] with the config it finds in [`WORKER_ENV`].
pub type Spawner = Arc<dyn Fn(usize) -> Command + Send + Sync>;

/// Something done to the world at half the effects (a database restart), on a thread of its own.
pub type Interruption = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// What the run did, counted by the parent from the fake service and the log.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub workers: usize,
    pub intents: usize,
    /// Effects the service applied, in all.
    pub effects: usize,
    /// Effects beyond the first of an intent.
    pub duplicates: usize,
    /// Intents with no effect at all.
    pub missing: usize,
    /// Intents of the run still unfinished or `unknown` in the log at the end.
    pub unresolved: usize,
    pub killed: usize,
    /// `ok` reports whose value is not the id of an effect of that intent.
    pub false_ok: usize,
    /// Reports received, by outcome.
    pub calls: usize,
    pub ok: usize,
    pub retryable: usize,
    pub unknown: usize,
    pub permanent: usize,
    /// Intents no worker reported `ok` for.
    pub never_ok: usize,
    /// Intents the log shows a probe for (a takeover, or a reply that never came).
    pub probed: usize,
    /// Intents the log shows a second attempt of (sent again after a probe found nothing).
    pub resent: usize,
    pub interrupted: Option<Duration>,
    pub wall: Duration,
}

impl Tally {
    /// Calls (engine runs, every outcome) per second of wall time, across the fleet.
    pub fn calls_per_s(&self) -> f64 {
        self.calls as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Whether the contract held: one effect per intent, nothing unresolved, no false `ok`.
    pub fn holds(&self, plan: &Plan) -> bool {
        self.duplicates == 0
            && self.unresolved == 0
            && self.effects == self.intents
            && self.missing == 0
            && self.false_ok == 0
            && self.permanent == 0
            && self.never_ok == 0
            && self.killed == plan.kills
    }

    pub fn json(&self) -> serde_json::Value {
        json!({
            "workers": self.workers,
            "intents": self.intents,
            "effects": self.effects,
            "duplicates": self.duplicates,
            "unresolved": self.unresolved,
            "killed": self.killed,
            "calls_per_s": (self.calls_per_s() * 10.0).round() / 10.0,
            "false_ok": self.false_ok,
            "missing": self.missing,
            "probed": self.probed,
            "resent": self.resent,
            "calls": self.calls,
            "outcomes": {
                "ok": self.ok,
                "retryable": self.retryable,
                "unknown": self.unknown,
                "permanent": self.permanent,
            },
            "wall_s": (self.wall.as_secs_f64() * 100.0).round() / 100.0,
        })
    }

    pub fn table(&self) -> String {
        let mut rows = vec![
            (
                "workers",
                format!(
                    "{} processes ({} killed with SIGKILL mid-call and started again)",
                    self.workers, self.killed
                ),
            ),
            ("intents", self.intents.to_string()),
            ("effects", format!("{} (the service does not deduplicate)", self.effects)),
            ("duplicates", self.duplicates.to_string()),
            ("missing", self.missing.to_string()),
            ("unresolved", format!("{} (left in the log at the end)", self.unresolved)),
            ("false ok", self.false_ok.to_string()),
            ("killed", self.killed.to_string()),
            (
                "calls",
                format!(
                    "{} (ok {}, retryable {}, unknown {}, permanent {})",
                    self.calls, self.ok, self.retryable, self.unknown, self.permanent
                ),
            ),
            ("probed", format!("{} intents (the log holds a probe's verdict)", self.probed)),
            ("resent", format!("{} intents (a second attempt after a probe found nothing)", self.resent)),
            ("calls/s", format!("{:.0}", self.calls_per_s())),
            ("wall", format!("{:.2} s", self.wall.as_secs_f64())),
        ];
        if let Some(took) = self.interrupted {
            rows.push((
                "restart",
                format!("the database restarted mid-run ({:.2} s down)", took.as_secs_f64()),
            ));
        }
        rows.iter().map(|(name, value)| format!("  {name:<11} {value}\n")).collect()
    }
}

/// Run the fleet to the end, `interrupt` at half the effects; the tally, or why the run itself broke
/// (a worker that could not start, a run past its timeout).
pub async fn run(plan: &Plan, spawner: Spawner, interrupt: Option<Interruption>) -> Result<Tally, String> {
    // Migrated once here, before the workers connect; also what reads the log at the end.
    let journal = PgJournal::connect(&plan.db).await.map_err(|e| format!("cannot open the log: {e}"))?;
    let fake =
        Fake::start(plan.slow_every, plan.slow).await.map_err(|e| format!("cannot start the fake: {e}"))?;
    let began = Instant::now();
    let mut kill_lines = Vec::new();
    let mut supervisors = tokio::task::JoinSet::new();
    for index in 0..plan.workers {
        let config = WorkerConfig {
            index,
            generation: 0,
            workers: plan.workers,
            overlap: plan.overlap,
            intents: plan.intents,
            lanes: plan.lanes,
            budget_ms: plan.budget.as_millis() as u64,
            run: plan.run.clone(),
            service: fake.addr(),
            db: plan.db.clone(),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        kill_lines.push(tx);
        supervisors.spawn(supervise(config, Arc::clone(&spawner), rx));
    }

    let chaos = chaos(plan, &fake, &kill_lines, interrupt);
    let fleet = async {
        let mut killed = 0;
        while let Some(done) = supervisors.join_next().await {
            killed += done.map_err(|e| format!("a supervisor failed: {e}"))??;
        }
        Ok::<usize, String>(killed)
    };
    let both = async { tokio::join!(fleet, chaos) };
    let (killed, interrupted) = match tokio::time::timeout(plan.timeout, both).await {
        Ok((killed, interrupted)) => (killed?, interrupted?),
        Err(_) => return Err(format!("the fleet did not finish within {:?}", plan.timeout)),
    };
    let wall = began.elapsed();
    drop(kill_lines);

    let mut tally =
        Tally { workers: plan.workers, intents: plan.intents, killed, interrupted, wall, ..Tally::default() };
    let keys: Vec<_> = (0..plan.intents).map(|n| intent_key(&plan.run, n)).collect();
    let effects = fake.effects_by_key();
    tally.effects = effects.values().map(Vec::len).sum();
    tally.duplicates = effects.values().map(|ids| ids.len().saturating_sub(1)).sum();
    tally.missing = keys.iter().filter(|k| !effects.contains_key(k)).count();
    let mut ok_keys = HashSet::new();
    for report in fake.reports() {
        tally.calls += 1;
        match report.outcome {
            Outcome::Ok => {
                tally.ok += 1;
                ok_keys.insert(report.key);
                let real =
                    report.id.is_some_and(|id| effects.get(&report.key).is_some_and(|ids| ids.contains(&id)));
                tally.false_ok += usize::from(!real);
            }
            Outcome::Retryable => tally.retryable += 1,
            Outcome::Unknown => tally.unknown += 1,
            Outcome::Permanent => tally.permanent += 1,
        }
    }
    tally.never_ok = keys.iter().filter(|k| !ok_keys.contains(k)).count();
    tally.unresolved = unresolved(&journal, &plan.run).await?;
    let records = journal.records(None).await.map_err(|e| format!("cannot read the log at the end: {e}"))?;
    let ours =
        || records.iter().map(|row| &row.record).filter(|r| r.task.starts_with(&format!("{}-", plan.run)));
    tally.probed = ours().filter(|r| r.probe.is_some()).map(|r| r.intent_key).collect::<HashSet<_>>().len();
    tally.resent = ours().filter(|r| r.attempt >= 2).map(|r| r.intent_key).collect::<HashSet<_>>().len();
    Ok(tally)
}

/// Keep worker `config.index` running: start it, start it again after each kill it is sent; the
/// number of kills, once a process of it exits of itself.
async fn supervise(
    mut config: WorkerConfig,
    spawner: Spawner,
    mut kills: mpsc::UnboundedReceiver<u32>,
) -> Result<usize, String> {
    let mut killed = 0;
    loop {
        let mut child = start(&config, &spawner)?;
        loop {
            tokio::select! {
                status = child.wait() => {
                    let status = status.map_err(|e| format!("worker {}: {e}", config.index))?;
                    if !status.success() {
                        let (index, generation) = (config.index, config.generation);
                        return Err(format!("worker {index} (process {generation}) exited with {status}"));
                    }
                    return Ok(killed);
                }
                Some(generation) = kills.recv() => {
                    if generation != config.generation {
                        continue;
                    }
                    // SIGKILL: no destructor, no end record, no release of its claims.
                    child.start_kill().map_err(|e| format!("cannot kill worker {}: {e}", config.index))?;
                    let _ = child.wait().await;
                    killed += 1;
                    config.generation += 1;
                    break;
                }
            }
        }
    }
}

fn start(config: &WorkerConfig, spawner: &Spawner) -> Result<Child, String> {
    let json = serde_json::to_string(config).map_err(|e| e.to_string())?;
    let mut command = spawner(config.index);
    command
        .env(WORKER_ENV, json)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true);
    command.spawn().map_err(|e| format!("cannot start worker {}: {e}", config.index))
}

/// The kills, each once the effects pass the next share of the intents, and the interruption at half:
/// how long the interruption took.
async fn chaos(
    plan: &Plan,
    fake: &Fake,
    kill_lines: &[mpsc::UnboundedSender<u32>],
    interrupt: Option<Interruption>,
) -> Result<Option<Duration>, String> {
    let mut effects = fake.effects();
    let mut interrupt = interrupt;
    let mut interrupted = None;
    let mut victims = Vec::new();
    let mut marks: Vec<(usize, bool)> =
        (0..plan.kills).map(|k| (plan.intents * (k + 1) / (plan.kills + 1), true)).collect();
    if interrupt.is_some() {
        marks.push((plan.intents / 2, false));
    }
    marks.sort();
    for (mark, is_kill) in marks {
        let _ = effects.wait_for(|n| *n >= mark).await;
        if !is_kill {
            if let Some(interrupt) = interrupt.take() {
                let began = Instant::now();
                tokio::task::spawn_blocking(interrupt).await.map_err(|e| e.to_string())??;
                interrupted = Some(began.elapsed());
            }
            continue;
        }
        // Alternate: the killed worker's request landed but its reply never came, or it never landed.
        let k = victims.len();
        let hold = if k % 2 == 0 { Hold::AppliedReplyPending } else { Hold::NeverApplied };
        let held = fake.arm(hold, victims.clone());
        let Ok(Ok(held)) = tokio::time::timeout(Duration::from_secs(20), held).await else {
            fake.disarm();
            return Err(format!("kill {}: no worker sent anything to hold within 20 s", k + 1));
        };
        victims.push(held.worker);
        let _ = kill_lines[held.worker].send(held.generation);
    }
    Ok(interrupted)
}

/// The run's intents still unfinished or `unknown` in the log; the server may just have restarted.
async fn unresolved(journal: &PgJournal, run: &str) -> Result<usize, String> {
    let prefix = format!("{run}-");
    let mut tries = 0;
    loop {
        match journal.try_unresolved().await {
            Ok(open) => return Ok(open.iter().filter(|r| r.last.task.starts_with(&prefix)).count()),
            Err(e) if tries >= 10 => return Err(format!("cannot read the log at the end: {e}")),
            Err(_) => {
                tries += 1;
                journal.reconnect();
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}
