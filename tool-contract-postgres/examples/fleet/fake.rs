//! The service the fleet sends to: lines over loopback TCP, served by the parent process, that never
//! deduplicate and count every effect by intent key. Workers are other processes, so the count is the
//! ground truth no worker can fake.
//!
//! | line sent | answer |
//! |---|---|
//! | `SEND <key> <worker> <generation>` | `DONE <id>` once applied; some replies come late |
//! | `PROBE <key>` | `LANDED <id>` (the first effect's id) or `NONE` |
//! | `REPORT <worker> <generation> <key> <outcome> <id or ->`, many on one connection | none |
//! | `BYE`, after the reports | `BYE` once every report before it is counted |
//!
//! A hold is armed by the parent to catch one worker mid-call: the next `SEND` of a worker not yet
//! killed is held without a reply (applied first, or not at all) until the connection closes, and the
//! parent is told who sent it, so it can kill that process while its claim is held, its start record
//! written and its reply pending.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tool_contract::{Class, IntentKey, Outcome, Probe};

/// How long a held request waits for its sender to die before it is let go without a reply.
const HOLD_AT_MOST: Duration = Duration::from_secs(30);

/// What a hold does with the request it catches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Apply it, then keep the reply back: the worker dies not knowing it landed.
    AppliedReplyPending,
    /// Keep it back unapplied: the worker dies with nothing sent as far as the world knows.
    NeverApplied,
}

/// The request a hold caught.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    /// The worker that sent it.
    pub worker: usize,
    /// Which process of that worker (0 the first, 1 after its first restart, ...).
    pub generation: u32,
}

/// One report a worker sent back.
#[derive(Debug, Clone)]
pub struct Reported {
    pub key: IntentKey,
    pub outcome: Outcome,
    pub id: Option<u64>,
}

/// The fake, listening on 127.0.0.1; stops when dropped.
pub struct Fake {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: JoinHandle<()>,
}

struct Shared {
    state: Mutex<State>,
    effects: watch::Sender<usize>,
    /// One send in `slow_every` (by key) has its reply delayed by `slow`.
    slow_every: u64,
    slow: Duration,
}

#[derive(Default)]
struct State {
    effects: HashMap<IntentKey, Vec<u64>>,
    next_id: u64,
    armed: Option<Armed>,
    reports: Vec<Reported>,
}

struct Armed {
    hold: Hold,
    except: Vec<usize>,
    tell: oneshot::Sender<Held>,
}

impl Fake {
    /// Listen on an ephemeral port; one send in `slow_every` answers `slow` late.
    pub async fn start(slow_every: u64, slow: Duration) -> std::io::Result<Fake> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            effects: watch::Sender::new(0),
            slow_every: slow_every.max(1),
            slow,
        });
        let accept = {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(serve(stream, Arc::clone(&shared)));
                }
            })
        };
        Ok(Fake { shared, addr, accept })
    }

    /// Where workers connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The number of effects so far, to wait on.
    pub fn effects(&self) -> watch::Receiver<usize> {
        self.shared.effects.subscribe()
    }

    /// Catch the next send of a worker not in `except`; told who sent it once it is held.
    pub fn arm(&self, hold: Hold, except: Vec<usize>) -> oneshot::Receiver<Held> {
        let (tell, told) = oneshot::channel();
        self.shared.lock().armed = Some(Armed { hold, except, tell });
        told
    }

    /// Take back a hold that caught nothing.
    pub fn disarm(&self) {
        self.shared.lock().armed = None;
    }

    /// Every effect by intent key: the ids of its effects, in order.
    pub fn effects_by_key(&self) -> HashMap<IntentKey, Vec<u64>> {
        self.shared.lock().effects.clone()
    }

    /// Every report received so far.
    pub fn reports(&self) -> Vec<Reported> {
        self.shared.lock().reports.clone()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn apply(&self, key: IntentKey) -> u64 {
        let id = {
            let mut state = self.lock();
            state.next_id += 1;
            let id = state.next_id;
            state.effects.entry(key).or_default().push(id);
            id
        };
        self.effects.send_modify(|n| *n += 1);
        id
    }

    fn slow(&self, key: &IntentKey) -> bool {
        let mut low = [0u8; 8];
        low.copy_from_slice(&key.as_bytes()[..8]);
        u64::from_le_bytes(low) % self.slow_every == 0
    }
}

async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        match lines.read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["SEND", key, worker, generation] => {
                let (Ok(key), Ok(worker), Ok(generation)) =
                    (IntentKey::parse(key), worker.parse::<usize>(), generation.parse::<u32>())
                else {
                    return;
                };
                let armed = {
                    let mut state = shared.lock();
                    match &state.armed {
                        Some(armed) if !armed.except.contains(&worker) => state.armed.take(),
                        _ => None,
                    }
                };
                if let Some(armed) = armed {
                    if armed.hold == Hold::AppliedReplyPending {
                        shared.apply(key);
                    }
                    let _ = armed.tell.send(Held { worker, generation });
                    // No reply: wait for the sender to die (the connection closes), then forget it.
                    let _ = tokio::time::timeout(HOLD_AT_MOST, lines.read_line(&mut line)).await;
                    return;
                }
                let id = shared.apply(key);
                if shared.slow(&key) {
                    tokio::time::sleep(shared.slow).await;
                }
                format!("DONE {id}\n")
            }
            ["PROBE", key] => {
                let Ok(key) = IntentKey::parse(key) else { return };
                match shared.lock().effects.get(&key).and_then(|ids| ids.first()) {
                    Some(id) => format!("LANDED {id}\n"),
                    None => "NONE\n".to_owned(),
                }
            }
            ["REPORT", _worker, _generation, key, outcome, id] => {
                let (Ok(key), Some(outcome)) = (IntentKey::parse(key), outcome_of(outcome)) else { return };
                let id = id.parse::<u64>().ok();
                shared.lock().reports.push(Reported { key, outcome, id });
                continue;
            }
            // Every report before it is counted: the worker may exit.
            ["BYE"] => "BYE\n".to_owned(),
            _ => return,
        };
        if write.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn outcome_of(word: &str) -> Option<Outcome> {
    [Outcome::Ok, Outcome::Retryable, Outcome::Permanent, Outcome::Unknown]
        .into_iter()
        .find(|o| o.as_str() == word)
}

/// One request and its one-line answer, on a connection of its own.
async fn ask(addr: SocketAddr, line: &str) -> Result<String, (bool, String)> {
    let mut stream =
        TcpStream::connect(addr).await.map_err(|e| (false, format!("cannot reach the service: {e}")))?;
    let _ = stream.set_nodelay(true);
    stream.write_all(line.as_bytes()).await.map_err(|e| (true, format!("request cut: {e}")))?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).await.map_err(|e| (true, format!("reply lost: {e}")))?;
    if answer.is_empty() {
        return Err((true, "the connection closed before a reply".to_owned()));
    }
    Ok(answer)
}

/// The tool's attempt: post the notice of `key`.
pub async fn send(addr: SocketAddr, key: IntentKey, worker: usize, generation: u32) -> Result<u64, Class> {
    match ask(addr, &format!("SEND {key} {worker} {generation}\n")).await {
        Ok(answer) => answer
            .strip_prefix("DONE ")
            .and_then(|id| id.trim().parse().ok())
            .ok_or_else(|| Class::unknown(format!("unreadable reply {answer:?}"))),
        // Not connected: nothing went out.
        Err((false, why)) => Err(Class::retryable(why)),
        Err((true, why)) => Err(Class::unknown(why)),
    }
}

/// The tool's probe: did the notice of `key` land?
pub async fn probe(addr: SocketAddr, key: IntentKey) -> Probe<u64> {
    match ask(addr, &format!("PROBE {key}\n")).await {
        Ok(answer) if answer.trim() == "NONE" => Probe::NotLanded,
        Ok(answer) => match answer.strip_prefix("LANDED ").and_then(|id| id.trim().parse().ok()) {
            Some(id) => Probe::Landed(id),
            None => Probe::Failed(format!("unreadable probe answer {answer:?}")),
        },
        Err((_, why)) => Probe::Failed(why),
    }
}

/// A worker's line of reports to the parent.
pub struct Reporter {
    lines: tokio::sync::mpsc::UnboundedSender<String>,
    writer: JoinHandle<std::io::Result<()>>,
}

impl Reporter {
    pub async fn connect(addr: SocketAddr) -> std::io::Result<Reporter> {
        let mut stream = TcpStream::connect(addr).await?;
        let (lines, mut queued) = tokio::sync::mpsc::unbounded_channel::<String>();
        let writer = tokio::spawn(async move {
            let mut batch = String::new();
            while let Some(line) = queued.recv().await {
                batch.push_str(&line);
                while let Ok(more) = queued.try_recv() {
                    batch.push_str(&more);
                }
                stream.write_all(batch.as_bytes()).await?;
                batch.clear();
            }
            stream.write_all(b"BYE\n").await?;
            let mut answer = String::new();
            BufReader::new(stream).read_line(&mut answer).await?;
            if answer.trim() != "BYE" {
                return Err(std::io::Error::other("the parent did not confirm the reports"));
            }
            Ok(())
        });
        Ok(Reporter { lines, writer })
    }

    pub fn report(&self, worker: usize, generation: u32, key: IntentKey, outcome: Outcome, id: Option<u64>) {
        let id = id.map_or_else(|| "-".to_owned(), |id| id.to_string());
        let _ = self
            .lines
            .send(format!("REPORT {worker} {generation} {key} {outcome} {id}\n", outcome = outcome.as_str()));
    }

    /// Send what is queued and wait until the parent has counted it.
    pub async fn finish(self) -> std::io::Result<()> {
        drop(self.lines);
        self.writer.await.map_err(std::io::Error::other)?
    }
}
