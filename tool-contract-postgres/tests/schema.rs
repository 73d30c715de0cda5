//! One record schema: PostgreSQL's row decoder judges a record as every other reader does. In a test
//! binary of its own (its own server): its updates would count in another test's tally of WAL syncs.

mod common;

use common::{end, key};
use tool_contract::Outcome;
use tool_contract::journal::Record;
use tool_contract::journal::{Durability, Journal};

/// Issue 22, item 3: one record schema, and PostgreSQL's row decoder judges it as every other reader
/// does. Each column of a stored end record is set to a value the JSON form of a record could hold
/// wrongly (null, a word outside the vocabulary, a negative or too large number); the store either
/// refuses to hold it (a constraint of the table) or its readers (the inspector's `records`, and
/// `recall`) accept it exactly when [`Record`]'s own deserialisation accepts the same JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_row_decoder_judges_a_mutated_field_as_the_schema_does() {
    let Some((journal, conninfo)) = common::journal("schema_rows").await else { return };
    let client = common::client(&conninfo).await;
    let good = Record {
        retry_at: Some("2026-11-30T05:12:30Z".into()),
        sent_by: None,
        args: None,
        value: Some(serde_json::json!({ "id": 7 })),
        message: Some("503 from /api".into()),
        ..end(key("schema"), 2, Outcome::Retryable)
    };
    let good_json = serde_json::to_value(&good).unwrap();
    // (the record's field, its column, the column's new value in SQL, the same in JSON)
    let cases: &[(&str, &str, &str, serde_json::Value)] = &[
        ("phase", "phase", "NULL", serde_json::Value::Null),
        ("phase", "phase", "'begin'", serde_json::json!("begin")),
        ("task", "task", "NULL", serde_json::Value::Null),
        ("call", "tool", "NULL", serde_json::Value::Null),
        ("intent_key", "intent", "NULL", serde_json::Value::Null),
        ("intent_key", "intent", "'\\x00'::bytea", serde_json::json!("00")),
        ("attempt", "attempt", "NULL", serde_json::Value::Null),
        ("attempt", "attempt", "-1", serde_json::json!(-1)),
        ("attempt", "attempt", "4294967296", serde_json::json!(4_294_967_296u64)),
        ("attempt_id", "attempt_id", "NULL", serde_json::Value::Null),
        ("started", "started", "NULL", serde_json::Value::Null),
        ("budget_left_s", "budget_left_s", "NULL", serde_json::Value::Null),
        ("budget_left_s", "budget_left_s", "-1", serde_json::json!(-1)),
        ("outcome", "outcome", "NULL", serde_json::Value::Null),
        ("outcome", "outcome", "'maybe'", serde_json::json!("maybe")),
        ("effect_applied", "effect_applied", "NULL", serde_json::Value::Null),
        ("effect_applied", "effect_applied", "'perhaps'", serde_json::json!("perhaps")),
        ("probe", "probe", "'looked'", serde_json::json!("looked")),
        ("message", "message", "NULL", serde_json::Value::Null),
        ("retry_at", "retry_at", "NULL", serde_json::Value::Null),
        ("value", "value", "NULL", serde_json::Value::Null),
        ("value", "value", "'[1,2]'::jsonb", serde_json::json!([1, 2])),
        ("phase", "phase", "'approval'", serde_json::json!("approval")),
        (
            "approval",
            "approval",
            r#"'{"step":"asked","by":"an operator","why":"503","at":"2026-12-01T00:00:00Z","until":"2026-12-01T00:05:00Z"}'::jsonb"#,
            serde_json::json!({"step": "asked", "by": "an operator", "why": "503", "at": "2026-12-01T00:00:00Z", "until": "2026-12-01T00:05:00Z"}),
        ),
    ];
    for (field, column, sql, json) in cases {
        client.batch_execute("DELETE FROM tool_contract.attempts").await.unwrap();
        journal.append(good.as_record_ref(), Durability::Synced).await.unwrap();
        let mut mutated = good_json.clone();
        mutated[*field] = json.clone();
        let schema = serde_json::from_value::<Record>(mutated).is_ok();
        let update = format!("UPDATE tool_contract.attempts SET {column} = {sql}");
        let held = client.batch_execute(&update).await.is_ok();
        if !held {
            assert!(!schema, "`{field}` = {json}: the schema accepts it, the table refuses it");
            continue;
        }
        let listed = journal.records(None).await.is_ok();
        let recalled = journal.try_recall(&good.intent_key).await.is_ok();
        assert_eq!(
            (listed, recalled),
            (schema, schema),
            "`{field}` = {json}: the schema says {schema}; records and recall say {listed}, {recalled}"
        );
    }
}
