//! The store conformance suite: what every [`Journal`] must do, as plain async functions that the tests
//! of each store call on an instance of their own.
//!
//! A new store passes these or is not a store: the memory and file stores run them in this crate's
//! tests, the PostgreSQL store in its own. Each function takes a fresh store (or one whose intents do
//! not collide: every function derives its keys from `scope`) and panics, naming the rule, when the
//! store breaks it.
//!
//! ```
//! use tool_contract::MemoryJournal;
//! use tool_contract_testing::stores;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let store = MemoryJournal::new();
//! stores::all(&store, "memory").await;
//! # }
//! ```

use std::time::Duration;

use tool_contract::key::{Intent, IntentKey};
use tool_contract::probe::ProbeMark;
use tool_contract::rules;
use tool_contract::{Applied, Outcome};
use tool_contract::{
    journal::{
        ApprovalNote, ApprovalStep, Claimed, Durability, Journal, JournalError, LastWord, Owner, Phase,
        Record, Verdict,
    },
    person::{ApprovalError, Decision, Settle, SettleError, answer_approval, settle},
};

/// A lease long enough that no step of the suite outlives it.
const LEASE: Duration = Duration::from_secs(60);

/// Every function of the suite, in turn.
pub async fn all(store: &dyn Journal, scope: &str) {
    starts_are_fenced(store, scope).await;
    records_about_an_attempt_are_fenced(store, scope).await;
    a_late_record_of_an_old_owner_changes_nothing(store, scope).await;
    answers_as_the_reference_store(store, scope).await;
    settlements_are_kept(store, scope).await;
    two_settlers_one_settlement(store, scope).await;
    a_settlement_is_bound_to_its_attempt(store, scope).await;
    approvals_answer_once(store, scope).await;
    a_start_given_up_on_is_not_in_doubt(store, scope).await;
    for seed in 1..=RANDOM_LOGS {
        readers_agree_on_a_random_log(store, &format!("{scope}-random-{seed}"), seed).await;
    }
}

/// The reading rule, against the naive reference store ([`MemoryJournal`](tool_contract::MemoryJournal),
/// every record kept plain): the same records, appended in the same order (reads' records, fenced
/// starts and ends, probes' verdicts, records of an old attempt arriving after a newer one), give the
/// same answer to [`Journal::recall`] for every intent, and the same intents in doubt, in the same
/// order, from [`Journal::unresolved`].
pub async fn answers_as_the_reference_store(store: &dyn Journal, scope: &str) {
    const RULE: &str = "the store answers as the reference store does";
    let reference = tool_contract::MemoryJournal::new();
    let names = [
        "read-twice",
        "sent-then-landed",
        "left-unfinished",
        "ended-unknown",
        "late-old-end",
        "refused-in-doubt",
    ];
    let keys: Vec<IntentKey> = names.iter().map(|name| key(scope, name)).collect();
    let owner = Owner::new(format!("{scope}-ref"));
    let landed = Record {
        value: Some(serde_json::json!([4411])),
        ..end(keys[1], 2, Outcome::Ok, Applied::Yes, "done")
    };
    // (fenced, record) in the order both stores get them.
    let steps: Vec<(bool, Record)> = vec![
        (false, record(keys[0], Phase::Start, 1)),
        (false, end(keys[0], 1, Outcome::Retryable, Applied::No, "503")),
        (false, record(keys[0], Phase::Start, 2)),
        (false, end(keys[0], 2, Outcome::Ok, Applied::No, "read")),
        (true, record(keys[1], Phase::Start, 1)),
        (true, end(keys[1], 1, Outcome::Unknown, Applied::Unknown, "timed out")),
        (true, verdict(keys[1], 1, ProbeMark::NotLanded)),
        (true, record(keys[1], Phase::Start, 2)),
        (true, landed),
        (true, record(keys[2], Phase::Start, 1)),
        (true, record(keys[3], Phase::Start, 1)),
        (true, end(keys[3], 1, Outcome::Unknown, Applied::Unknown, "connection reset")),
        (false, record(keys[4], Phase::Start, 1)),
        (false, record(keys[4], Phase::Start, 2)),
        (false, end(keys[4], 2, Outcome::Ok, Applied::No, "read")),
        // The end of attempt 1 arrives last: it does not hide attempt 2.
        (false, end(keys[4], 1, Outcome::Unknown, Applied::Unknown, "late")),
        // Refused after an attempt that may have landed: retryable, the call's effect unknown. In doubt.
        (true, record(keys[5], Phase::Start, 1)),
        (true, end(keys[5], 1, Outcome::Retryable, Applied::Unknown, "503 after a reset")),
    ];
    let fenced = [keys[1], keys[2], keys[3], keys[5]];
    for key in &fenced {
        claim(store, *key, &owner, RULE).await;
        claim(&reference, *key, &owner, RULE).await;
    }
    for (fenced, record) in &steps {
        for journal in [store, &reference as &dyn Journal] {
            let stored = match fenced {
                true if record.phase == Phase::Start => {
                    journal.start(&owner, record.as_record_ref(), Durability::Synced).await
                }
                true => journal.end(&owner, record.as_record_ref(), Durability::Buffered).await,
                false => journal.append(record.as_record_ref(), Durability::Buffered).await,
            };
            stored.unwrap_or_else(|e| {
                panic!("{RULE}: {:?} of {} refused: {e}", record.phase, record.attempt_id)
            });
        }
    }
    for key in &fenced {
        store.release(key, &owner);
    }
    for (name, key) in names.iter().zip(&keys) {
        let ours = store.recall(key).await.expect("the store answers");
        assert_eq!(ours, reference.recall(key), "{RULE}: recall of {name}");
    }
    let ours: Vec<_> = store.unresolved().await.expect("the store answers");
    let ours: Vec<_> = ours.into_iter().filter(|recall| keys.contains(&recall.last.intent_key)).collect();
    assert_eq!(ours, reference.unresolved(), "{RULE}: the intents in doubt, oldest first");
}

/// How many random logs [`all`] feeds a store ([`readers_agree_on_a_random_log`]).
pub const RANDOM_LOGS: u64 = 8;

/// One step of a random log: how a record reaches a store.
#[derive(Debug, Clone)]
pub enum Step {
    /// Claimed by the suite's owner, then fenced: a start, an end, a probe's verdict or a settlement
    /// of the intent's highest attempt.
    Fenced(Record),
    /// Appended unfenced, as a read's records or a late end of an older attempt reach a store.
    Appended(Record),
    /// An approval record (a question, or its answer), through [`Journal::approval_step`].
    Approval(Record),
}

impl Step {
    /// The record the step writes.
    pub fn record(&self) -> &Record {
        match self {
            Step::Fenced(record) | Step::Appended(record) | Step::Approval(record) => record,
        }
    }
}

/// A small deterministic generator (xorshift64*), so a failing seed reproduces.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random log of `scope` drawn from `seed`: a dozen intents of two tasks, each with one to three
/// attempts whose records are every phase the engine and people write (starts; ends of every outcome
/// and effect; probes' verdicts; late ends of an older attempt; settlements of a last attempt in
/// doubt; questions before a next attempt, open or past their `until`, answered or not), the intents'
/// steps interleaved. Times repeat, so the queue's order is decided by its ties too. Every step is one
/// a correct store accepts; [`apply`] writes them.
pub fn random_log(scope: &str, seed: u64) -> Vec<Step> {
    let mut draw = Draw(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let ends = [
        (Outcome::Ok, Applied::Yes),
        (Outcome::Ok, Applied::No),
        (Outcome::Retryable, Applied::No),
        (Outcome::Retryable, Applied::Unknown),
        (Outcome::Permanent, Applied::No),
        (Outcome::Unknown, Applied::Unknown),
    ];
    let mut lanes: Vec<Vec<Step>> = Vec::new();
    for i in 0..12 {
        let k = key(scope, &format!("random-{i}"));
        let task = if draw.below(2) == 0 { "conformance" } else { "conformance-b" };
        let minute = draw.below(3);
        let at = |attempt: u32| format!("2026-12-01T00:0{minute}:0{}Z", attempt % 10);
        let mut lane = Vec::new();
        let attempts = 1 + draw.below(3) as u32;
        let mut late = None;
        let mut last_open = true;
        for n in 1..=attempts {
            let start = Record { task: task.to_owned(), started: at(n), ..record(k, Phase::Start, n) };
            lane.push(Step::Fenced(start.clone()));
            if let Some(late) = late.take() {
                lane.push(Step::Appended(late));
            }
            let (outcome, applied) = ends[draw.below(ends.len() as u64) as usize];
            let ended =
                Record { task: task.to_owned(), started: at(n), ..end(k, n, outcome, applied, "end") };
            last_open = true;
            match draw.below(5) {
                // Left unfinished (its end, if any, arrives after the next start).
                0 if n < attempts => late = Some(ended),
                0 => {}
                1 => {
                    lane.push(Step::Fenced(ended.clone()));
                    let mark =
                        [ProbeMark::Landed, ProbeMark::NotLanded, ProbeMark::Failed][draw.below(3) as usize];
                    let probed = Record { task: task.to_owned(), started: at(n), ..verdict(k, n, mark) };
                    last_open = rules::in_doubt(probed.phase, probed.outcome, probed.effect_applied);
                    lane.push(Step::Fenced(probed));
                }
                _ => {
                    last_open = rules::in_doubt(ended.phase, ended.outcome, ended.effect_applied);
                    lane.push(Step::Fenced(ended));
                }
            }
        }
        let last = lane.iter().rev().find(|s| s.record().attempt == attempts).map(|s| s.record().clone());
        // A person settles the last attempt in doubt, sometimes.
        if let Some(last) = last.filter(|_| last_open && draw.below(2) == 0) {
            let verdict = if draw.below(2) == 0 { Verdict::Landed } else { Verdict::NotLanded };
            let settled =
                Settle::new(verdict, "alice", "seen").record_for(&last, "2026-12-01T01:00:00Z".into());
            lane.push(Step::Fenced(settled));
        }
        // A question before the next attempt, open or closed, answered or not.
        if draw.below(3) == 0 {
            let until = if draw.below(2) == 0 { "2999-01-01T00:00:00Z" } else { "2026-12-01T00:30:00Z" };
            let asked = Record { task: task.to_owned(), ..question(k, attempts) };
            let asked = Record {
                approval: asked.approval.map(|note| ApprovalNote { until: Some(until.to_owned()), ..note }),
                ..asked
            };
            lane.push(Step::Approval(asked.clone()));
            if draw.below(2) == 0 {
                let step = if draw.below(2) == 0 { ApprovalStep::Approved } else { ApprovalStep::Denied };
                let note = ApprovalNote {
                    step,
                    by: "bob".into(),
                    why: "checked".into(),
                    at: "2026-12-01T00:20:00Z".into(),
                    until: None,
                    os_user: None,
                };
                lane.push(Step::Approval(Record { approval: Some(note), ..asked }));
            }
        }
        lanes.push(lane);
    }
    // Interleave the intents' steps, each intent's in its own order.
    let mut steps = Vec::new();
    let mut at = vec![0usize; lanes.len()];
    while steps.len() < lanes.iter().map(Vec::len).sum() {
        let lane = draw.below(lanes.len() as u64) as usize;
        if let Some(step) = lanes[lane].get(at[lane]) {
            steps.push(step.clone());
            at[lane] += 1;
        }
    }
    steps
}

/// Write `steps` to `store` as [`random_log`] means them, every fenced step under one claim of
/// `owner` per intent (taken once, given up at the end); panics, naming the step, when the store
/// refuses one.
pub async fn apply(store: &dyn Journal, steps: &[Step], owner: &Owner) {
    const RULE: &str = "a store takes every step of a well-formed log";
    let mut claimed = Vec::new();
    for step in steps {
        let record = step.record();
        let stored = match step {
            Step::Fenced(record) => {
                if !claimed.contains(&record.intent_key) {
                    claim(store, record.intent_key, owner, RULE).await;
                    claimed.push(record.intent_key);
                }
                if record.phase == Phase::Start {
                    store.start(owner, record.as_record_ref(), Durability::Synced).await
                } else {
                    store.end(owner, record.as_record_ref(), Durability::Buffered).await
                }
            }
            Step::Appended(record) => store.append(record.as_record_ref(), Durability::Buffered).await,
            Step::Approval(record) => match store.approval_step(record.as_record_ref()).await {
                Ok(true) => Ok(()),
                Ok(false) => {
                    panic!("{RULE}: approval step {:?} of {} refused", record.approval, record.attempt_id)
                }
                Err(e) => Err(e),
            },
        };
        stored.unwrap_or_else(|e| panic!("{RULE}: {:?} of {} refused: {e}", record.phase, record.attempt_id));
    }
    for key in &claimed {
        store.release(key, owner);
    }
}

/// Every reader agrees with the reference on a random log ([`random_log`] of `seed`): for every intent,
/// the same last word and highest attempt ([`Journal::recall`]) and the same last approval record
/// ([`Journal::approval`], so the same question waits, [`rules::waiting_question`]); and the same
/// intents in doubt in the same order ([`Journal::unresolved`], [`rules::queue_order`]).
pub async fn readers_agree_on_a_random_log(store: &dyn Journal, scope: &str, seed: u64) {
    let rule = format!("readers agree on random log {seed}");
    let steps = random_log(scope, seed);
    let reference = tool_contract::MemoryJournal::new();
    let owner = Owner::new(format!("{scope}-agree"));
    apply(&reference, &steps, &owner).await;
    apply(store, &steps, &owner).await;
    let mut keys: Vec<IntentKey> = steps.iter().map(|s| s.record().intent_key).collect();
    keys.dedup();
    keys.sort();
    keys.dedup();
    for key in &keys {
        let ours = store.recall(key).await.expect("the store answers");
        assert_eq!(ours, reference.recall(key), "{rule}: recall of {key}");
        let asked = store.approval(key).await.expect("the store answers");
        assert_eq!(
            asked,
            Journal::approval(&reference, key).await.expect("the reference answers"),
            "{rule}: {key}"
        );
    }
    let ours: Vec<_> = store.unresolved().await.expect("the store answers");
    let ours: Vec<_> = ours.into_iter().filter(|recall| keys.contains(&recall.last.intent_key)).collect();
    let theirs = reference.unresolved();
    assert_eq!(ours, theirs, "{rule}: the intents in doubt, in the queue's order");
    let in_doubt = theirs.len();
    assert!(in_doubt < keys.len(), "{rule}: a log where every intent is in doubt checks little");
}

/// The key of intent `name` in `scope`.
fn key(scope: &str, name: &str) -> IntentKey {
    Intent::new(scope, "conformance", "transfer", name).key()
}

/// A record of `key` by hand, as the engine writes them.
fn record(key: IntentKey, phase: Phase, attempt: u32) -> Record {
    Record {
        phase,
        task: "conformance".to_owned(),
        call: "transfer".to_owned(),
        intent_key: key,
        attempt,
        attempt_id: format!("conformance-{}-a{attempt}", &key.to_string()[..8]),
        started: "2026-12-01T00:00:00Z".to_owned(),
        budget_left_s: 30,
        outcome: None,
        effect_applied: None,
        probe: None,
        message: None,
        retry_at: None,
        value: None,
        settled: None,
        approval: None,
    }
}

fn end(key: IntentKey, attempt: u32, outcome: Outcome, applied: Applied, message: &str) -> Record {
    Record {
        outcome: Some(outcome),
        effect_applied: Some(applied),
        message: Some(message.to_owned()),
        ..record(key, Phase::End, attempt)
    }
}

fn verdict(key: IntentKey, attempt: u32, mark: ProbeMark) -> Record {
    let (outcome, applied) = match mark {
        ProbeMark::Landed => (Outcome::Ok, Applied::Yes),
        ProbeMark::NotLanded => (Outcome::Retryable, Applied::No),
        ProbeMark::Failed => (Outcome::Unknown, Applied::Unknown),
    };
    Record { probe: Some(mark), ..end(key, attempt, outcome, applied, "probe") }
}

/// Claim a free intent. A release may be sent off rather than made at once ([`Journal::release`]), so
/// an intent just given up may read as held for a moment: look again for up to two seconds.
async fn claim(store: &dyn Journal, key: IntentKey, owner: &Owner, rule: &str) {
    for _ in 0..200 {
        match store.claim(&key, owner, LEASE).await {
            Ok(Claimed::Held(_)) => return,
            Ok(Claimed::Busy { .. }) => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(e) => panic!("{rule}: {owner} could not claim a free intent: {e}"),
        }
    }
    panic!("{rule}: {owner} could not claim an intent given up two seconds ago");
}

fn conflict(result: Result<(), JournalError>, rule: &str) -> String {
    match result {
        Err(JournalError::Conflict { why, .. }) => why,
        other => panic!("{rule}: expected the store to refuse it (JournalError::Conflict), got {other:?}"),
    }
}

async fn last(store: &dyn Journal, key: IntentKey) -> (u32, Record) {
    let recall = store.recall(&key).await.expect("the store answers").expect("the intent has records");
    (recall.attempts, recall.last)
}

/// A start is accepted only from the holder of an unexpired claim, and only for the highest attempt
/// recorded + 1.
pub async fn starts_are_fenced(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a start is fenced by the claim and the next attempt number";
    let k = key(scope, "starts-are-fenced");
    let (a, b) = (Owner::new(format!("{scope}-a")), Owner::new(format!("{scope}-b")));
    conflict(store.start(&a, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await, RULE);
    claim(store, k, &a, RULE).await;
    match store.claim(&k, &b, LEASE).await {
        Ok(Claimed::Busy { holder, .. }) => assert_eq!(holder, a, "{RULE}: the holder is named"),
        other => panic!("{RULE}: a second owner took a held intent: {other:?}"),
    }
    conflict(store.start(&b, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await, RULE);
    conflict(store.start(&a, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await, RULE);
    store.start(&a, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    // The same start again: refused, or (a store that retries a start whose answer was lost) taken as
    // the one already stored; never a second attempt 1.
    let again = store.start(&a, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await;
    assert!(matches!(again, Ok(()) | Err(JournalError::Conflict { .. })), "{RULE}: {again:?}");
    let (attempts, last) = last(store, k).await;
    assert_eq!((attempts, last.phase), (1, Phase::Start), "{RULE}");
    store.release(&k, &a);
}

/// An end record (an attempt's end, a probe's verdict) is accepted only from the holder of an
/// unexpired claim, for the attempt it started, or as a probe's verdict on the highest attempt.
pub async fn records_about_an_attempt_are_fenced(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a record about an attempt comes from its starter or the holder's probe";
    let k = key(scope, "ends-are-fenced");
    let (a, b) = (Owner::new(format!("{scope}-a")), Owner::new(format!("{scope}-b")));
    let ended = |n| end(k, n, Outcome::Unknown, Applied::Unknown, "timed out");
    // No claim, no end.
    conflict(store.end(&a, ended(1).as_record_ref(), Durability::Buffered).await, RULE);
    claim(store, k, &a, RULE).await;
    // The holder has started nothing: no end of its own for attempt 1.
    conflict(store.end(&a, ended(1).as_record_ref(), Durability::Buffered).await, RULE);
    store.start(&a, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    store.end(&a, ended(1).as_record_ref(), Durability::Buffered).await.expect(RULE);
    // Another owner, not holding the claim, writes nothing about it.
    conflict(
        store.end(&b, verdict(k, 1, ProbeMark::NotLanded).as_record_ref(), Durability::Buffered).await,
        RULE,
    );
    store.release(&k, &a);
    // b takes over: it may give a probe's verdict on attempt 1, not an end as if it had made it.
    claim(store, k, &b, RULE).await;
    conflict(store.end(&b, ended(1).as_record_ref(), Durability::Buffered).await, RULE);
    store.end(&b, verdict(k, 1, ProbeMark::Failed).as_record_ref(), Durability::Buffered).await.expect(RULE);
    let (attempts, last) = last(store, k).await;
    assert_eq!((attempts, last.probe), (1, Some(ProbeMark::Failed)), "{RULE}: the verdict is the last word");
    // The last record of a call gives the claim up with it (`finish`), under the same fence.
    store.start(&b, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await.expect(RULE);
    let done = end(k, 2, Outcome::Ok, Applied::Yes, "transfer done on attempt 2");
    store.finish(&b, done.as_record_ref(), Durability::Buffered).await.expect(RULE);
    claim(store, k, &a, "the finishing record gives the claim up").await;
    store.release(&k, &a);
}

/// The partition story: a worker whose start and end of attempt 2 are held back while another worker
/// takes the intent over, makes attempt 2 and lands it; the held records are delivered late. Neither
/// may become the last word: the intent stays done, and its next call replays it.
pub async fn a_late_record_of_an_old_owner_changes_nothing(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a record held back and delivered late changes nothing";
    let k = key(scope, "late-record");
    let (first, partitioned, taker) = (
        Owner::new(format!("{scope}-w1")),
        Owner::new(format!("{scope}-w4")),
        Owner::new(format!("{scope}-w5")),
    );
    // Attempt 1: a 503 and a probe that found nothing.
    claim(store, k, &first, RULE).await;
    store.start(&first, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    let refused = end(k, 1, Outcome::Retryable, Applied::No, "503");
    store.finish(&first, refused.as_record_ref(), Durability::Buffered).await.expect(RULE);
    // w4 claims; its start of attempt 2 never arrives, and its lease runs out (a release, to the store).
    claim(store, k, &partitioned, RULE).await;
    store.release(&k, &partitioned);
    // w5 takes over, makes attempt 2, and the transfer lands.
    claim(store, k, &taker, RULE).await;
    store.start(&taker, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await.expect(RULE);
    let landed =
        Record { value: Some(serde_json::json!(4411)), ..end(k, 2, Outcome::Ok, Applied::Yes, "done") };
    store.finish(&taker, landed.as_record_ref(), Durability::Buffered).await.expect(RULE);
    // The partition heals: w4's held start and its "not started" end arrive.
    conflict(
        store.start(&partitioned, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await,
        RULE,
    );
    let stale = end(k, 2, Outcome::Retryable, Applied::No, "the start record was not stored; not started");
    conflict(store.end(&partitioned, stale.as_record_ref(), Durability::Buffered).await, RULE);
    conflict(store.finish(&partitioned, stale.as_record_ref(), Durability::Buffered).await, RULE);
    let stale_probe = verdict(k, 2, ProbeMark::NotLanded);
    conflict(store.end(&partitioned, stale_probe.as_record_ref(), Durability::Buffered).await, RULE);
    let recall = store.recall(&k).await.expect("the store answers").expect("the intent has records");
    assert_eq!(recall.attempts, 2, "{RULE}");
    assert_eq!(recall.last_word(), LastWord::Ok(Some(&serde_json::json!(4411))), "{RULE}: {:?}", recall.last);
}

/// A start whose writer gave up waiting for the store (a stalled disk, a commit that did not come
/// back within the budget) is either never stored, or stored and then followed by the end record the
/// writer hands over next under its claim, saying the attempt was not started: the intent is not left
/// in doubt, so nobody is asked about a call that sent nothing, and its next call needs no probe.
pub async fn a_start_given_up_on_is_not_in_doubt(store: &dyn Journal, scope: &str) {
    const RULE: &str =
        "a start given up on is never stored, or followed by the end saying it was not started";
    let k = key(scope, "start-given-up-on");
    let owner = Owner::new(format!("{scope}-gave-up"));
    claim(store, k, &owner, RULE).await;
    // Handed to the store; its answer is never waited for.
    let given_up = store.start(&owner, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced);
    drop(given_up);
    let message = "the start record was not stored within the budget; the attempt was not started";
    let not_started = end(k, 1, Outcome::Retryable, Applied::No, message);
    // Taken after the start, or refused by the fence when the start was never stored.
    let ended = store.end(&owner, not_started.as_record_ref(), Durability::Buffered).await;
    assert!(matches!(ended, Ok(()) | Err(JournalError::Conflict { .. })), "{RULE}: {ended:?}");
    store.release(&k, &owner);
    let unresolved = store.unresolved().await.expect("the store answers");
    assert!(!unresolved.iter().any(|open| open.last.intent_key == k), "{RULE}: {unresolved:?}");
    if let Some(recall) = store.recall(&k).await.expect("the store answers") {
        assert_eq!(
            (recall.attempts, recall.last.phase, recall.last.effect_applied),
            (1, Phase::End, Some(Applied::No)),
            "{RULE}: {:?}",
            recall.last
        );
    }
}

/// An intent left unfinished by `owner`'s attempt 1, its claim given up (a worker that died).
async fn left_unfinished(store: &dyn Journal, k: IntentKey, owner: &Owner, rule: &str) {
    claim(store, k, owner, rule).await;
    store.start(owner, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(rule);
    store.release(&k, owner);
}

/// Settlements ([`settle`]): only an intent in doubt is settled; `landed` is its last word with the
/// settled value and it leaves the intents in doubt; no record written about the attempt after it
/// hides it; `not_landed` opens the intent for the next attempt; an intent that ended `ok` or was
/// never recorded is refused, naming its state.
pub async fn settlements_are_kept(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a settlement is kept as the last word of the attempt it settles";
    let worker = Owner::new(format!("{scope}-settle-worker"));
    let landed = key(scope, "settled-landed");
    left_unfinished(store, landed, &worker, RULE).await;
    let found = Settle::new(Verdict::Landed, "alice", "transfer 4411 is on the statement").value(4411);
    let written = settle(store, &landed, 1, &found).await.unwrap_or_else(|e| panic!("{RULE}: {e}"));
    assert_eq!((written.phase, written.attempt), (Phase::Settled, 1), "{RULE}");
    let (attempts, kept) = last(store, landed).await;
    assert_eq!((attempts, &kept), (1, &written), "{RULE}: the settlement is the last word as written");
    let in_doubt = store.unresolved().await.expect("the store answers");
    assert!(
        !in_doubt.iter().any(|r| r.last.intent_key == landed),
        "{RULE}: a settled intent is not in doubt"
    );
    // The attempt's own end, delivered after the settlement (unfenced, as a read's would be): the
    // settlement stands.
    let late = end(landed, 1, Outcome::Unknown, Applied::Unknown, "late");
    store.append(late.as_record_ref(), Durability::Buffered).await.expect(RULE);
    let recall = store.recall(&landed).await.expect("the store answers").expect("records");
    assert_eq!(recall.last_word(), LastWord::Ok(Some(&serde_json::json!(4411))), "{RULE}: {:?}", recall.last);
    // A second settlement of the same attempt is refused, naming the first.
    match settle(store, &landed, 1, &Settle::new(Verdict::NotLanded, "bob", "not on the statement")).await {
        Err(e @ SettleError::AlreadySettled { .. }) => {
            assert!(e.to_string().contains("by alice"), "{RULE}: {e}");
        }
        other => panic!("{RULE}: a second settlement of one attempt: {other:?}"),
    }

    let open = key(scope, "settled-not-landed");
    claim(store, open, &worker, RULE).await;
    store
        .start(&worker, record(open, Phase::Start, 1).as_record_ref(), Durability::Synced)
        .await
        .expect(RULE);
    let unknown = end(open, 1, Outcome::Unknown, Applied::Unknown, "probe failed");
    store.end(&worker, unknown.as_record_ref(), Durability::Buffered).await.expect(RULE);
    store.release(&open, &worker);
    let missing = Settle::new(Verdict::NotLanded, "alice", "no transfer on the statement");
    settle(store, &open, 1, &missing).await.unwrap_or_else(|e| panic!("{RULE}: {e}"));
    let recall = store.recall(&open).await.expect("the store answers").expect("records");
    assert_eq!(
        (recall.last_word(), recall.last.effect_applied),
        (LastWord::Ended(Outcome::Retryable), Some(Applied::No)),
        "{RULE}: not landed opens the intent"
    );
    // The next attempt is numbered after the highest.
    claim(store, open, &worker, RULE).await;
    store
        .start(&worker, record(open, Phase::Start, 2).as_record_ref(), Durability::Synced)
        .await
        .expect(RULE);
    store.release(&open, &worker);
    assert_eq!(last(store, open).await.0, 2, "{RULE}");

    let done = key(scope, "settle-done");
    claim(store, done, &worker, RULE).await;
    store
        .start(&worker, record(done, Phase::Start, 1).as_record_ref(), Durability::Synced)
        .await
        .expect(RULE);
    let ok = end(done, 1, Outcome::Ok, Applied::Yes, "done");
    store.end(&worker, ok.as_record_ref(), Durability::Buffered).await.expect(RULE);
    store.release(&done, &worker);
    match settle(store, &done, 1, &found).await {
        Err(e @ SettleError::NotInDoubt { .. }) => assert!(e.to_string().contains("ended ok"), "{RULE}: {e}"),
        other => panic!("{RULE}: an intent that ended ok was settled: {other:?}"),
    }
    let never = key(scope, "settle-never-recorded");
    match settle(store, &never, 1, &found).await {
        Err(SettleError::NotFound { .. }) => {}
        other => panic!("{RULE}: an intent with no record was settled: {other:?}"),
    }
}

/// Two settlers at once on one intent in doubt: exactly one settlement is written; the other settler
/// is told who settled it.
pub async fn two_settlers_one_settlement(store: &dyn Journal, scope: &str) {
    const RULE: &str = "two settlers racing: exactly one wins";
    let k = key(scope, "settle-race");
    left_unfinished(store, k, &Owner::new(format!("{scope}-race-worker")), RULE).await;
    let alice = Settle::new(Verdict::Landed, "alice", "seen on the statement");
    let bob = Settle::new(Verdict::NotLanded, "bob", "not on the ledger");
    let (a, b) = tokio::join!(settle(store, &k, 1, &alice), settle(store, &k, 1, &bob));
    let (won, lost) = match (a, b) {
        (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
        (a, b) => panic!("{RULE}: exactly one settlement must be written: {a:?}, {b:?}"),
    };
    let winner = won.settled.as_ref().map(|s| s.by.clone()).unwrap_or_default();
    match &lost {
        SettleError::AlreadySettled { record, .. } => {
            assert_eq!(record.as_ref(), &won, "{RULE}: the loser is told of the winner's settlement")
        }
        other => panic!("{RULE}: the loser should be told {winner} settled it, got: {other}"),
    }
    assert!(lost.to_string().contains(&format!("by {winner}")), "{RULE}: {lost}");
    assert_eq!(last(store, k).await.1, won, "{RULE}");
}

/// A person's verdict is recorded on the attempt they examined, or not at all: a settlement of attempt
/// 1 made after attempt 2 started (the agent probed, found nothing, tried again, and is in doubt again)
/// is refused, naming attempt 2 and its state, and writes nothing; so is one naming an attempt that
/// never was. Settling attempt 2 by its number then works.
pub async fn a_settlement_is_bound_to_its_attempt(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a settlement lands on the attempt it names, or nowhere";
    let worker = Owner::new(format!("{scope}-bound-worker"));
    let k = key(scope, "settle-bound");
    // The agent's attempt 1 is left unfinished, and the person opens its page ... while the agent
    // probes it (not landed), makes attempt 2, and that one ends in doubt too. One claim throughout: a
    // release may reach the store after a claim made just after it.
    claim(store, k, &worker, RULE).await;
    store.start(&worker, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    store
        .end(&worker, verdict(k, 1, ProbeMark::NotLanded).as_record_ref(), Durability::Buffered)
        .await
        .expect(RULE);
    store.start(&worker, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await.expect(RULE);
    let unknown = end(k, 2, Outcome::Unknown, Applied::Unknown, "timed out");
    store.end(&worker, unknown.as_record_ref(), Durability::Buffered).await.expect(RULE);
    store.release(&k, &worker);
    let before = last(store, k).await;
    let not_landed = Settle::new(Verdict::NotLanded, "alice", "attempt 1 is not on the statement");
    for (named, says) in [(1, "attempt 2 ("), (3, "no attempt 3")] {
        match settle(store, &k, named, &not_landed).await {
            Err(e @ SettleError::OtherAttempt { .. }) => {
                let said = e.to_string();
                assert!(said.contains(says) && said.contains("ended unknown"), "{RULE}: {said}");
            }
            other => panic!("{RULE}: a settlement of attempt {named} after attempt 2: {other:?}"),
        }
        assert_eq!(last(store, k).await, before, "{RULE}: nothing is written");
    }
    let in_doubt = store.unresolved().await.expect("the store answers");
    assert!(in_doubt.iter().any(|r| r.last.intent_key == k), "{RULE}: attempt 2 is still in doubt");
    let written = settle(store, &k, 2, &not_landed).await.unwrap_or_else(|e| panic!("{RULE}: {e}"));
    assert_eq!((written.phase, written.attempt), (Phase::Settled, 2), "{RULE}");
}

/// A question to a person before attempt `attempt + 1`, as [`tool_contract::person::LogApprover`] asks it.
fn question(key: IntentKey, attempt: u32) -> Record {
    Record {
        message: Some(format!("approval of attempt {} asked", attempt + 1)),
        approval: Some(ApprovalNote {
            step: ApprovalStep::Asked,
            by: "an operator".to_owned(),
            why: "503 from the bank".to_owned(),
            at: "2026-12-01T00:00:01Z".to_owned(),
            until: Some("2999-01-01T00:00:00Z".to_owned()),
            os_user: None,
        }),
        ..record(key, Phase::Approval, attempt)
    }
}

/// Approvals through the store ([`Journal::approval_step`], [`answer_approval`]): a question is kept
/// as the intent's last approval record and never as its last word, nor does it change its attempts
/// or the intents in doubt; two people answering at once, exactly one answer is written and the other
/// is told whose; an answer to no question, or to another attempt's, is refused with nothing written;
/// the next attempt starts as numbered before.
pub async fn approvals_answer_once(store: &dyn Journal, scope: &str) {
    const RULE: &str = "one question, at most one answer, and neither is an intent's last word";
    let k = key(scope, "approval");
    let worker = Owner::new(format!("{scope}-approval-worker"));
    let ask = |rule| async move {
        match answer_approval(store, &k, 2, &Decision::approve("carol", "checked")).await {
            Err(ApprovalError::NotAsked { .. }) => {}
            other => panic!("{rule}: an answer with no question waiting is refused, got {other:?}"),
        }
    };
    claim(store, k, &worker, RULE).await;
    store.start(&worker, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    let ended = end(k, 1, Outcome::Retryable, Applied::No, "503 from the bank");
    store.finish(&worker, ended.as_record_ref(), Durability::Synced).await.expect(RULE);
    assert_eq!(store.approval(&k).await.expect(RULE), None, "{RULE}: nothing asked yet");
    ask(RULE).await;
    let asked = question(k, 1);
    assert!(store.approval_step(asked.as_record_ref()).await.expect(RULE), "{RULE}: a question is written");
    assert_eq!(store.approval(&k).await.expect(RULE).as_ref(), Some(&asked), "{RULE}: the question is kept");
    assert_eq!(last(store, k).await, (1, ended.clone()), "{RULE}: the question is not the last word");
    let in_doubt = store.unresolved().await.expect(RULE);
    assert!(in_doubt.iter().all(|r| r.last.intent_key != k), "{RULE}: a question puts nothing in doubt");
    // An answer about another attempt than the one asked of.
    match answer_approval(store, &k, 3, &Decision::approve("carol", "checked")).await {
        Err(ApprovalError::NotAsked { .. }) => {}
        other => panic!("{RULE}: an answer about attempt 3 when 2 is asked of is refused, got {other:?}"),
    }
    let alice = Decision::approve("alice", "the bank shows no charge");
    let bob = Decision::deny("bob", "refunded by hand");
    let (a, b) = tokio::join!(answer_approval(store, &k, 2, &alice), answer_approval(store, &k, 2, &bob));
    let (won, lost) = match (a, b) {
        (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
        (a, b) => panic!("{RULE}: exactly one answer must be written: {a:?}, {b:?}"),
    };
    let winner = won.approval.as_ref().map(|n| n.by.clone()).unwrap_or_default();
    match &lost {
        ApprovalError::AlreadyAnswered { record } => {
            assert_eq!(record.as_ref(), &won, "{RULE}: the loser is told of the winner's answer")
        }
        other => panic!("{RULE}: the loser should be told {winner} answered, got: {other}"),
    }
    assert!(lost.to_string().contains(&format!("by {winner}")), "{RULE}: {lost}");
    assert_eq!(store.approval(&k).await.expect(RULE).as_ref(), Some(&won), "{RULE}: the answer is kept");
    assert_eq!(last(store, k).await, (1, ended), "{RULE}: an answer is not the last word");
    // The attempt asked about starts as numbered before the question.
    claim(store, k, &worker, RULE).await;
    store.start(&worker, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await.expect(RULE);
    assert_eq!(last(store, k).await.0, 2, "{RULE}");
    store.release(&k, &worker);
}
