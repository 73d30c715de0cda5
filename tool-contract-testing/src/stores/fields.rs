//! Every field of every phase, written and read back, by recall and by a reader of the whole log.

use tool_contract::journal::{LogReader, Via};

use super::*;

/// The records of one intent, written in order, and the last word they leave.
struct Written {
    key: IntentKey,
    records: Vec<(Kind, Record)>,
}

/// How a record of [`fields_round_trip`] reaches the store.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Fenced,
    Approval,
}

/// Every field of every phase survives a store: a start, an end of each outcome, effect and probe
/// verdict (with a value, a retry time and a message with characters JSON escapes), a settlement with
/// its `os_user`, a question and its answer with theirs. Each record is written, then read back field
/// by field: by [`Journal::recall`] where it is the intent's last word, by [`Approvals::approval`]
/// where it is its last approval record, and, given a `reader`, by [`LogReader::read_more`] (every
/// record, in the order written) and [`LogReader::intent_records`].
pub async fn fields_round_trip(store: &dyn Approvals, reader: Option<&dyn LogReader>, scope: &str) {
    const RULE: &str = "a store gives back every field it was given";
    let owner = Owner::new(format!("{scope}-fields"));
    let mut intents = Vec::new();
    let start = |k: IntentKey| Record {
        budget_left_s: 41,
        started: "2026-12-01T00:00:07Z".to_owned(),
        args: Some("0123456789abcdef0123456789abcdef".to_owned()),
        message: Some("sent \"quoted\", a\\b, tab\tand é".to_owned()),
        ..record(k, Phase::Start, 1)
    };
    let k = key(scope, "fields-start");
    intents.push(Written { key: k, records: vec![(Kind::Fenced, start(k))] });
    let outcomes = [Outcome::Ok, Outcome::Retryable, Outcome::Permanent, Outcome::Unknown];
    let effects = [Applied::Yes, Applied::No, Applied::Unknown, Applied::Partial];
    for (i, (outcome, applied)) in outcomes.iter().zip(effects).enumerate() {
        let k = key(scope, &format!("fields-end-{i}"));
        let ended = Record {
            value: Some(serde_json::json!({"id": 4411, "items": [1, 2.5, null, "x"], "ok": true})),
            retry_at: Some("2026-12-01T00:01:00Z".to_owned()),
            sent_by: Some("2026-12-01T00:00:09Z".to_owned()),
            args: Some("0123456789abcdef0123456789abcdef".to_owned()),
            budget_left_s: 12,
            ..end(k, 1, *outcome, applied, &format!("ended {outcome} with \"{}\"", applied.as_str()))
        };
        intents.push(Written { key: k, records: vec![(Kind::Fenced, start(k)), (Kind::Fenced, ended)] });
    }
    for mark in [ProbeMark::Landed, ProbeMark::NotLanded, ProbeMark::Failed] {
        let k = key(scope, &format!("fields-probe-{mark:?}"));
        let unknown = end(k, 1, Outcome::Unknown, Applied::Unknown, "timed out");
        let found = Record { value: Some(serde_json::json!([7])), ..verdict(k, 1, mark) };
        let records = vec![(Kind::Fenced, start(k)), (Kind::Fenced, unknown), (Kind::Fenced, found)];
        intents.push(Written { key: k, records });
    }
    let k = key(scope, "fields-settled");
    let unknown = end(k, 1, Outcome::Unknown, Applied::Unknown, "timed out");
    let unknown = Record { sent_by: Some("2026-12-01T00:00:30Z".to_owned()), ..unknown };
    let mut settled = Settle::new(Verdict::Landed, "alice@desk", "the bank shows the charge")
        .via(Via::Client)
        .value(serde_json::json!({"id": 9}))
        .seen(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_083_440))
        .record_for(&unknown, "2026-12-01T00:05:00Z".into());
    assert_eq!(settled.sent_by, unknown.sent_by, "a settlement carries when the attempt's call ended");
    if let Some(note) = settled.settled.as_mut() {
        note.os_user = Some("uid 1000 (alice)".into());
    }
    intents.push(Written {
        key: k,
        records: vec![(Kind::Fenced, start(k)), (Kind::Fenced, unknown), (Kind::Fenced, settled)],
    });
    let k = key(scope, "fields-approval");
    let retry = end(k, 1, Outcome::Retryable, Applied::No, "503");
    let asked = Record {
        approval: Some(ApprovalNote {
            step: ApprovalStep::Asked,
            by: "an operator (the console)".into(),
            why: "attempt 1: 503, nothing paid".into(),
            at: "2026-12-01T00:02:00Z".into(),
            until: Some("2026-12-01T00:07:00Z".into()),
            os_user: None,
            question: None,
            asks: Default::default(),
            asked_in: None,
            args: None,
            shows: Default::default(),
        }),
        ..question(k, 1)
    };
    let answered = Record {
        message: Some("attempt 2 approved by bob".into()),
        approval: Some(ApprovalNote {
            step: ApprovalStep::Approved,
            by: "bob".into(),
            why: "the bank shows no charge".into(),
            at: "2026-12-01T00:03:00Z".into(),
            until: None,
            os_user: Some("uid 1001 (bob)".into()),
            question: None,
            asks: Default::default(),
            asked_in: None,
            args: None,
            shows: Default::default(),
        }),
        ..question(k, 1)
    };
    intents.push(Written {
        key: k,
        records: vec![
            (Kind::Fenced, start(k)),
            (Kind::Fenced, retry),
            (Kind::Approval, asked),
            (Kind::Approval, answered),
        ],
    });

    for intent in &intents {
        claim(store, intent.key, &owner, RULE).await;
        for (kind, record) in &intent.records {
            let stored = match (kind, record.phase) {
                (Kind::Approval, _) => store.approval_step(record.as_record_ref()).await.map(|taken| {
                    assert!(taken, "{RULE}: the approval step {:?} was refused", record.approval);
                }),
                (_, Phase::Start) => store.start(&owner, record.as_record_ref(), Durability::Synced).await,
                _ => store.end(&owner, record.as_record_ref(), Durability::Synced).await,
            };
            stored.unwrap_or_else(|e| {
                panic!("{RULE}: {:?} of {} refused: {e}", record.phase, record.attempt_id)
            });
        }
        store.release(&intent.key, &owner);
        let last_word = intent.records.iter().rev().find(|(kind, _)| *kind == Kind::Fenced).map(|(_, r)| r);
        let recall =
            store.recall(&intent.key).await.expect("the store answers").expect("records were written");
        same(RULE, "recall", last_word.expect("a record"), &recall.last);
        if let Some((_, asked)) = intent.records.iter().rev().find(|(kind, _)| *kind == Kind::Approval) {
            let kept = store.approval(&intent.key).await.expect("the store answers").expect("a question");
            same(RULE, "approval", asked, &kept);
        }
    }
    store.flush().expect("the store takes what it holds");
    let Some(reader) = reader else { return };
    let mut read: Vec<Record> = Vec::new();
    loop {
        let batch = reader.read_more(1_000).await.expect("the reader reads");
        let ours = batch.records.into_iter().map(|(_, r)| r);
        read.extend(ours.filter(|r| intents.iter().any(|i| i.key == r.intent_key)));
        if !batch.more {
            break;
        }
    }
    for intent in &intents {
        let written: Vec<&Record> = intent.records.iter().map(|(_, r)| r).collect();
        let seen: Vec<&Record> = read.iter().filter(|r| r.intent_key == intent.key).collect();
        let mut seen_once = seen.clone();
        seen_once.dedup();
        assert_eq!(
            seen_once.len(),
            written.len(),
            "{RULE}: the reader read {} records of {}",
            seen.len(),
            intent.key
        );
        for (ours, theirs) in written.iter().zip(&seen_once) {
            same(RULE, "the log reader", ours, theirs);
        }
        let stored = reader.intent_records(&intent.key).await.expect("the reader reads");
        assert_eq!(stored.len(), written.len(), "{RULE}: the intent's records of {}", intent.key);
        for (ours, theirs) in written.iter().zip(&stored) {
            same(RULE, "the intent's records", ours, &theirs.record);
        }
    }
}

/// Panics naming the first field in which `theirs` (read back through `how`) differs from `ours`.
fn same(rule: &str, how: &str, ours: &Record, theirs: &Record) {
    let fields = |r: &Record| match serde_json::to_value(r) {
        Ok(serde_json::Value::Object(map)) => map,
        other => panic!("{rule}: a record is a JSON object, not {other:?}"),
    };
    let (ours_fields, theirs_fields) = (fields(ours), fields(theirs));
    for (name, value) in &ours_fields {
        let back = theirs_fields.get(name).unwrap_or(&serde_json::Value::Null);
        assert_eq!(
            back, value,
            "{rule}: {how} gave back `{name}` of {} {:?} changed",
            ours.attempt_id, ours.phase
        );
    }
    for (name, value) in &theirs_fields {
        assert!(
            ours_fields.contains_key(name) || value.is_null(),
            "{rule}: {how} added `{name}` to {}",
            ours.attempt_id
        );
    }
}
