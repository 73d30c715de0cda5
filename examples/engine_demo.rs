//! The contract at work on three calls against an in-memory service that misbehaves on purpose.
//!
//! `cargo run -q -p tool-contract-examples --bin engine-demo`

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tool_contract::effect::EffectKind;
use tool_contract::probe::NoProbe;
use tool_contract::spec::ToolSpec;
use tool_contract::task::EscalationQueue;
use tool_contract::{Class, IntentKey, Probe, Report, Task, engine};

/// A notice board that applies a post and then, the first time, loses the reply.
#[derive(Default)]
struct Board {
    posted: Mutex<HashMap<IntentKey, u64>>,
    replies_lost: Mutex<u32>,
}

impl Board {
    async fn post(&self, key: IntentKey) -> Result<u64, Class> {
        let id = {
            let mut posted = self.posted.lock().unwrap();
            let next = posted.len() as u64 + 4411;
            *posted.entry(key).or_insert(next)
        };
        let mut lost = self.replies_lost.lock().unwrap();
        if *lost == 0 {
            *lost += 1;
            return Err(tool_contract::classify::no_reply(EffectKind::Send, "connection reset"));
        }
        Ok(id)
    }

    async fn find(&self, key: IntentKey) -> Probe<u64> {
        match self.posted.lock().unwrap().get(&key) {
            Some(id) => Probe::Landed(*id),
            None => Probe::NotLanded,
        }
    }
}

const POST_NOTICE: ToolSpec =
    ToolSpec::new("post_notice", EffectKind::Send).deadline_floor(Duration::from_secs(2));
const READ_PRICE: ToolSpec = ToolSpec::new("read_price", EffectKind::Read);
const CHARGE_CARD: ToolSpec = ToolSpec::new("charge_card", EffectKind::Money);

fn show<T: serde::Serialize>(title: &str, report: &Report<T>) {
    println!("== {title}");
    println!("{}", serde_json::to_string_pretty(report).expect("a report always serialises"));
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let queue = EscalationQueue::new();
    let task = Task::new("ord-7741", "agent:support", Duration::from_secs(30)).escalate_to(queue.clone());
    let board = Board::default();

    let key = task.key(&POST_NOTICE, &"thread-9", None);
    let report =
        engine::run(&task, &POST_NOTICE, key, |call| board.post(call.key()), |key| board.find(key)).await;
    show("send: the reply is lost after the notice landed; the probe finds it, no second post", &report);
    println!("notices at the service: {}\n", board.posted.lock().unwrap().len());

    let mut busy = 1;
    let key = task.key(&READ_PRICE, &"sku-1", None);
    let report = engine::run(
        &task,
        &READ_PRICE,
        key,
        |_| {
            let first = std::mem::replace(&mut busy, 0) == 1;
            async move { if first { Err(Class::retryable("503 from /prices")) } else { Ok(1299u32) } }
        },
        NoProbe,
    )
    .await;
    show("read: a 503, a backoff, then the price", &report);

    let key = task.key(&CHARGE_CARD, &"card-42", None);
    let report = engine::run(
        &task,
        &CHARGE_CARD,
        key,
        |_| async { Err::<u64, _>(Class::unknown("gateway timeout after the charge was submitted")) },
        |_| async { Probe::NotLanded },
    )
    .await;
    show("money: the charge did not land, and no approver is configured: stop and escalate", &report);
    println!("escalations waiting: {}", queue.len());
}
