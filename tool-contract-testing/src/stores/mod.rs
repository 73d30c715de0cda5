//! The store conformance suite: what every [`Journal`] must do, as plain async functions that the tests
//! of each store call on an instance of their own.
//!
//! A new store passes these or is not a store: the memory and file stores run them in this crate's
//! tests, the PostgreSQL store in its own. Each function takes a fresh store (or one whose intents do
//! not collide: every function derives its keys from `scope`) and panics, naming the rule, when the
//! store breaks it. A store that has a [`LogReader`](tool_contract::journal::LogReader) of its whole
//! log (the file log's `FileReader`, PostgreSQL's `PgReader`) passes it too, and every record written
//! is read back through it as well.
//!
//! ```
//! use tool_contract::MemoryJournal;
//! use tool_contract_testing::stores;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let store = MemoryJournal::new();
//! stores::all(&store, None, "memory").await;
//! # }
//! ```

use std::time::Duration;

use tool_contract::key::{Intent, IntentKey};
use tool_contract::probe::ProbeMark;
use tool_contract::rules;
use tool_contract::{Applied, Outcome};
use tool_contract::{
    journal::{
        ApprovalNote, ApprovalStep, Approvals, Asks, Claimed, Durability, Journal, JournalError, LastWord,
        Owner, Phase, Record, Verdict,
    },
    person::{ApprovalError, Decision, Settle, SettleError, answer_approval, settle},
};

mod fast;
mod fencing;
mod fields;
use fencing::left_unfinished;
use person::question;
mod person;
mod random;
mod tasks;

pub use fast::fast_paths_agree;
pub use fencing::{
    a_late_record_of_an_old_owner_changes_nothing, a_start_given_up_on_is_not_in_doubt,
    records_about_an_attempt_are_fenced, starts_are_fenced,
};
pub use fields::fields_round_trip;
pub use person::{
    a_settlement_is_bound_to_its_attempt, approvals_answer_once, settlements_are_kept,
    two_settlers_one_settlement,
};
pub use random::{RANDOM_LOGS, Step, apply, random_log, readers_agree_on_a_random_log};
pub use tasks::mcp_tasks_are_kept;

/// A lease long enough that no step of the suite outlives it.
const LEASE: Duration = Duration::from_secs(60);

/// Every function of the suite, in turn.
pub async fn all(store: &dyn Approvals, reader: Option<&dyn tool_contract::journal::LogReader>, scope: &str) {
    starts_are_fenced(store, scope).await;
    records_about_an_attempt_are_fenced(store, scope).await;
    a_late_record_of_an_old_owner_changes_nothing(store, scope).await;
    answers_as_the_reference_store(store, scope).await;
    settlements_are_kept(store, scope).await;
    two_settlers_one_settlement(store, scope).await;
    a_settlement_is_bound_to_its_attempt(store, scope).await;
    approvals_answer_once(store, scope).await;
    mcp_tasks_are_kept(store, scope).await;
    a_start_given_up_on_is_not_in_doubt(store, scope).await;
    fast_paths_agree(store, scope).await;
    fields_round_trip(store, reader, scope).await;
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
        assert_eq!(ours, reference.recall_now(key), "{RULE}: recall of {name}");
    }
    let ours: Vec<_> = store.unresolved().await.expect("the store answers");
    let ours: Vec<_> = ours.into_iter().filter(|recall| keys.contains(&recall.last.intent_key)).collect();
    assert_eq!(ours, reference.unresolved_now(), "{RULE}: the intents in doubt, oldest first");
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
        sent_by: None,
        args: None,
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
