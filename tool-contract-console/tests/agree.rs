//! The console's index and the log inspector read a log as every store does: fed the store suite's
//! random logs (every phase, interleaved, ties in time), they agree with the reference store on each
//! intent's last word, the intents in doubt and their order, and the questions waiting for an answer.

use std::time::{Duration, SystemTime};

use tool_contract::journal::inspect::{View, render};
use tool_contract::{FileJournal, IntentKey, MemoryJournal, rules};
use tool_contract::{
    journal::{Approvals, Owner, file::FileReader, read_log},
    unstable::rfc3339,
};
use tool_contract_console::Index;
use tool_contract_testing::stores::{RANDOM_LOGS, apply, random_log};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_index_and_the_inspector_agree_with_the_reference_on_random_logs() {
    let dir = std::env::temp_dir().join(format!("tc-console-agree-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A time at which some questions are still open and others closed.
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_086_800); // 2026-12-01T01:00:00Z
    let now_text = rfc3339(now);
    assert_eq!(now_text, "2026-12-01T01:00:00Z");
    let (mut doubted, mut settled_or_done, mut asked) = (0, 0, 0);
    for seed in 1..=RANDOM_LOGS {
        let rule = format!("random log {seed}");
        let steps = random_log(&format!("agree-{seed}"), seed);
        let owner = Owner::new("agree");
        let reference = MemoryJournal::new();
        apply(&reference, &steps, &owner).await;
        let path = dir.join(format!("log-{seed}.log"));
        let log = FileJournal::open(&path).unwrap();
        apply(&log, &steps, &owner).await;
        log.sync().await.unwrap();
        drop(log);

        let mut keys: Vec<IntentKey> = steps.iter().map(|s| s.record().intent_key).collect();
        keys.sort();
        keys.dedup();
        let mut index = Index::new();
        index.catch_up(&FileReader::new(&path)).await.unwrap();
        for key in &keys {
            assert_eq!(index.intent(key), reference.recall_now(key).as_ref(), "{rule}: last word of {key}");
        }
        // The intents in doubt, in the queue's order.
        let queue: Vec<IntentKey> = reference.unresolved_now().iter().map(|r| r.last.intent_key).collect();
        let shown: Vec<IntentKey> = index.in_doubt().iter().map(|r| r.last.intent_key).collect();
        assert_eq!(shown, queue, "{rule}: the console's intents in doubt");
        // The questions waiting, by the one rule.
        let mut waiting = Vec::new();
        for key in &keys {
            let asked = Approvals::approval(&reference, key).await.unwrap();
            let attempts = reference.recall_now(key).map_or(0, |r| r.attempts);
            if rules::waiting_approval(asked.as_ref(), attempts, &now_text).is_some() {
                waiting.push(*key);
            }
        }
        let mut pending: Vec<IntentKey> = index.pending(now).iter().map(|r| r.intent_key).collect();
        pending.sort();
        assert_eq!(pending, waiting, "{rule}: the questions waiting");
        // The inspector's escalation queue: the same intents, in the same order.
        let contents = read_log(&path).unwrap();
        let mut out = Vec::new();
        let view = View { unresolved: true, json: true, ..View::default() };
        render("log", &contents.records, &contents.warnings, &view, &mut out).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let listed: Vec<String> = doc["unresolved"]
            .as_array()
            .unwrap_or_else(|| panic!("{rule}: {doc}"))
            .iter()
            .map(|open| open["intent_key"].as_str().unwrap_or_default().to_owned())
            .collect();
        let queue: Vec<String> = queue.iter().map(ToString::to_string).collect();
        assert_eq!(listed, queue, "{rule}: the inspector's queue");
        doubted += queue.len();
        settled_or_done += keys.len() - queue.len();
        asked += waiting.len();
    }
    // The logs are not vacuous: intents in doubt and out of it, and questions still waiting.
    assert!(doubted > 0 && settled_or_done > 0 && asked > 0, "{doubted} {settled_or_done} {asked}");
    let _ = std::fs::remove_dir_all(&dir);
}
