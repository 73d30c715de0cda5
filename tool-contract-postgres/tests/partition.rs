//! A network partition between one worker and the server: the worker's bytes are held by a proxy that
//! stops forwarding, and delivered late once it heals. What the worker wrote about an attempt while cut
//! off must not become the last word of an attempt another worker made (DESIGN.md section 9, rule 2).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixStream};
use tokio::sync::watch;
use tool_contract::effect::EffectKind;
use tool_contract::journal::{Claimed, Owner, Phase, Record};
use tool_contract::journal::{Durability, Journal, JournalError};
use tool_contract::person::{Approval, ApprovalRequest};
use tool_contract::spec::ToolSpec;
use tool_contract::{Applied, Class, Outcome, Probe, Task, engine};
use tool_contract_postgres::{PgJournal, PgOptions};

/// A TCP proxy to the server's Unix socket that can stop forwarding (holding what it reads, both ways)
/// and later deliver it all, in order.
struct Proxy {
    port: u16,
    cut: watch::Sender<bool>,
}

impl Proxy {
    async fn to(conninfo: &str) -> Proxy {
        let part = |name: &str| {
            conninfo
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("no {name} in {conninfo}"))
                .to_owned()
        };
        let socket = format!("{}/.s.PGSQL.{}", part("host"), part("port"));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, _) = watch::channel(false);
        let cuts = cut.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = UnixStream::connect(&socket).await.unwrap();
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, cuts.subscribe()));
                tokio::spawn(pump(server_read, client_write, cuts.subscribe()));
            }
        });
        Proxy { port, cut }
    }

    fn conninfo(&self, conninfo: &str) -> String {
        let dbname = conninfo.split_whitespace().find_map(|kv| kv.strip_prefix("dbname=")).unwrap();
        format!("host=127.0.0.1 port={} user=postgres dbname={dbname} sslmode=disable", self.port)
    }

    fn partition(&self, cut: bool) {
        self.cut.send_replace(cut);
    }
}

/// Copy `from` to `to`, holding what was read while the link is cut.
async fn pump(
    mut from: impl tokio::io::AsyncRead + Unpin,
    mut to: impl tokio::io::AsyncWrite + Unpin,
    mut cut: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if cut.wait_for(|cut| !*cut).await.is_err() {
            return;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

const TRANSFER: ToolSpec =
    ToolSpec::new("transfer", EffectKind::Money).deadline_floor(Duration::from_millis(200));

/// One call of the transfer through `journal`: the receiver applies it once per attempt that reaches
/// it, and its probe finds whether one did.
async fn transfer(
    journal: Arc<dyn Journal>,
    budget: Duration,
    applied: &AtomicU32,
) -> tool_contract::Report<u64> {
    let task = Task::new("ord-7741", "agent", budget)
        .journal(journal)
        .approver(|_: ApprovalRequest| async { Approval::Approved });
    let key = task.key(&TRANSFER, &"acct-9", None);
    engine::run(
        &task,
        &TRANSFER,
        key,
        |_| async {
            applied.fetch_add(1, Ordering::SeqCst);
            Ok::<u64, Class>(4411)
        },
        |_| async {
            if applied.load(Ordering::SeqCst) > 0 { Probe::Landed(4411u64) } else { Probe::NotLanded }
        },
    )
    .await
}

fn record(key: tool_contract::IntentKey, phase: Phase, attempt: u32) -> Record {
    Record {
        phase,
        task: "ord-7741".into(),
        call: "transfer".into(),
        intent_key: key,
        attempt,
        attempt_id: format!("ord-7741-{}-a{attempt}", &key.to_string()[..8]),
        started: "2026-12-01T00:00:00Z".into(),
        budget_left_s: 2,
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

/// The run of issue 23, item 0: w4 is cut off after claiming; its start of attempt 1 and the "not
/// started" end its call wrote after the start timed out are held. Its lease runs out, w5 takes over,
/// makes attempt 1 and the transfer lands. The partition heals and w4's records arrive: both are
/// refused, and the next call of the intent replays the transfer instead of making it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_held_by_a_partition_and_delivered_late_move_no_money() {
    let Some(conninfo) = common::database("partition").await else { return };
    let proxy = Proxy::to(&conninfo).await;
    let options = PgOptions::default().op_timeout(Duration::from_secs(30)).retries(0, Duration::ZERO);
    let w4 = PgJournal::connect_with(&proxy.conninfo(&conninfo), options).await.unwrap();
    let w5: Arc<dyn Journal> = Arc::new(PgJournal::connect(&conninfo).await.unwrap());
    let key = Task::new("ord-7741", "agent", Duration::from_secs(5)).key(&TRANSFER, &"acct-9", None);
    let applied = AtomicU32::new(0);

    // w4 claims for a short lease, then the link is cut: what it sends next is held.
    let w4_owner = Owner::new("w4.1");
    assert_eq!(w4.claim(&key, &w4_owner, Duration::from_millis(600)).await.unwrap(), Claimed::Held(None));
    proxy.partition(true);
    let held = {
        let (w4, owner) = (w4.clone(), w4_owner.clone());
        tokio::spawn(async move {
            let start =
                w4.start(&owner, record(key, Phase::Start, 1).as_record_ref(), Durability::Synced).await;
            let not_started = Record {
                outcome: Some(Outcome::Retryable),
                effect_applied: Some(Applied::No),
                message: Some("the start record was not stored within the budget; not started".into()),
                ..record(key, Phase::End, 1)
            };
            let end = w4.finish(&owner, not_started.as_record_ref(), Durability::Buffered).await;
            (start, end)
        })
    };
    tokio::time::sleep(Duration::from_millis(800)).await;

    // w5 takes the intent over once the lease has run out; the transfer lands.
    let report = transfer(Arc::clone(&w5), Duration::from_secs(5), &applied).await;
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Ok, Applied::Yes), "{}", report.message);
    assert_eq!(applied.load(Ordering::SeqCst), 1);

    // The partition heals: w4's held records reach the server and are refused.
    proxy.partition(false);
    let (start, end) = held.await.unwrap();
    assert!(matches!(start, Err(JournalError::Conflict { .. })), "the late start: {start:?}");
    match end {
        Err(JournalError::Conflict { why, .. }) => {
            assert!(why.contains("claimed by") || why.contains("no claim"), "{why}")
        }
        other => panic!("the late end of an attempt w4 never made was stored: {other:?}"),
    }

    // w4's next call of the intent (its own worker, on the healed link) replays the transfer.
    let w4: Arc<dyn Journal> = Arc::new(w4);
    let again = transfer(w4, Duration::from_secs(5), &applied).await;
    assert_eq!(again.outcome, Outcome::Ok, "{}", again.message);
    assert!(again.message.contains("not repeated"), "{}", again.message);
    assert_eq!(applied.load(Ordering::SeqCst), 1, "the money moved once");
}

const NOTIFY: ToolSpec = ToolSpec::new("notify", EffectKind::Send)
    .deadline_floor(Duration::from_millis(200))
    .horizon(Duration::from_secs(10));

async fn notify(journal: Arc<dyn Journal>, budget: Duration, sent: &AtomicU32) -> tool_contract::Report<u64> {
    let task = Task::new("ticket-88", "agent", budget).journal(journal);
    let key = task.key(&NOTIFY, &"thread-1", None);
    engine::run(
        &task,
        &NOTIFY,
        key,
        |_| async {
            sent.fetch_add(1, Ordering::SeqCst);
            Ok::<u64, Class>(1)
        },
        |_| async { if sent.load(Ordering::SeqCst) > 0 { Probe::Landed(1u64) } else { Probe::NotLanded } },
    )
    .await
}

/// Issue 23, item 4: a claim held by a partition (or a frozen server) past its caller's deadline takes
/// nothing when it finally runs; on today's code it took a lease of the budget, the landing horizon and a
/// margin (11.5 s here), and the worker's own next call was refused as "another worker runs this
/// intent".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_reaches_the_server_after_its_caller_gave_up_takes_nothing() {
    let Some(conninfo) = common::database("late_claim").await else { return };
    let proxy = Proxy::to(&conninfo).await;
    let options = PgOptions::default().op_timeout(Duration::from_secs(30)).retries(0, Duration::ZERO);
    let cut: Arc<dyn Journal> =
        Arc::new(PgJournal::connect_with(&proxy.conninfo(&conninfo), options).await.unwrap());
    let direct: Arc<dyn Journal> = Arc::new(PgJournal::connect(&conninfo).await.unwrap());
    let sent = AtomicU32::new(0);
    proxy.partition(true);
    let gave_up = notify(Arc::clone(&cut), Duration::from_millis(500), &sent).await;
    assert_eq!(gave_up.outcome, Outcome::Retryable, "{}", gave_up.message);
    assert_eq!(sent.load(Ordering::SeqCst), 0);
    // The held claim reaches the server after its caller's deadline.
    proxy.partition(false);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let next = notify(direct, Duration::from_secs(3), &sent).await;
    assert_eq!(next.outcome, Outcome::Ok, "{}", next.message);
    assert_eq!(sent.load(Ordering::SeqCst), 1);
}
