//! The contract as data (`contract/` at the repository's root), held to the engine: the intent-key
//! vectors, the policy table, the report's JSON Schema, and every behaviour case run by the testing
//! kit's runner (`tool_contract_testing::cases`). `contract/runner.py` runs the same behaviour cases over
//! MCP against a server in any language.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tool_contract::effect::EffectKind;
use tool_contract_testing::cases::{Mismatch, Suite};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../contract")
}

fn json(file: &str) -> Value {
    let path = dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(start_paused = true)]
async fn every_behaviour_case_holds_against_the_engine() {
    let suite = Suite::load(&dir()).unwrap();
    assert!(suite.cases.len() >= 20, "{} cases", suite.cases.len());
    let mut failed = Vec::new();
    for case in &suite.cases {
        if let Err(mismatch) = suite.run(case).await {
            failed.push(mismatch.to_string());
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[tokio::test(start_paused = true)]
async fn a_case_changed_by_hand_fails_naming_the_case_and_the_field() {
    let suite = Suite::load(&dir()).unwrap();
    let mut case = suite.cases.iter().find(|c| c.name == "send-kill-mid-call").unwrap().clone();
    case.expect.effects = 2;
    let mismatch = suite.run(&case).await.unwrap_err();
    assert_eq!(
        mismatch,
        Mismatch {
            case: "send-kill-mid-call".into(),
            field: "effects".into(),
            expected: "2".into(),
            got: "1".into()
        }
    );
    assert_eq!(mismatch.to_string(), "case `send-kill-mid-call`: effects: expected 2, got 1");
    let mut case = suite.cases.iter().find(|c| c.name == "rows-partial-batch").unwrap().clone();
    case.expect.reports[0].items.as_mut().unwrap()[1].outcome = "ok".into();
    let mismatch = suite.run(&case).await.unwrap_err();
    assert_eq!(
        (mismatch.case.as_str(), mismatch.field.as_str()),
        ("rows-partial-batch", "reports[0].items[1].outcome")
    );
}

#[test]
fn every_case_file_follows_the_schema() {
    let schema = json("case.schema.json");
    let validator = jsonschema::validator_for(&schema).unwrap();
    for entry in std::fs::read_dir(dir().join("cases")).unwrap() {
        let path = entry.unwrap().path();
        let case: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let errors: Vec<String> =
            validator.iter_errors(&case).map(|e| format!("{}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{}: {}", path.display(), errors.join("; "));
    }
    // The schema refuses what the runner would refuse: a fault it does not know.
    let mut broken = json("cases/send-kill-mid-call.json");
    broken["service"] = serde_json::json!(["lose_everything"]);
    assert!(!validator.is_valid(&broken));
}

#[test]
fn the_intent_key_vectors_are_the_keys_the_engine_derives() {
    let vectors = json("intent-keys.json");
    let vectors = vectors["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 10);
    for v in vectors {
        let text = |field: &str| v[field].as_str().unwrap_or_else(|| panic!("{v}: no `{field}`")).to_owned();
        let slot = v["slot"].as_str().map(str::to_owned);
        let slot = slot.as_ref().map(|slot| slot as &dyn std::fmt::Display);
        let key = tool_contract::IntentKey::derive(
            &text("task"),
            &text("actor"),
            &text("verb"),
            &text("target"),
            slot,
        );
        assert_eq!(key.to_string(), text("key"), "vector `{}`", text("name"));
    }
}

#[test]
fn the_policy_table_is_the_engines() {
    let table = json("policy.json");
    for kind in EffectKind::ALL {
        let row = &table["kinds"][kind.as_str()];
        let p = kind.policy();
        let says =
            |field: &str| row[field].as_str().unwrap_or_else(|| panic!("{kind}: no `{field}`")).to_owned();
        assert_eq!(says("duplicate"), kind.duplicate(), "{kind}: duplicate");
        assert_eq!(says("probe"), p.probe.to_string(), "{kind}: probe");
        assert_eq!(says("automatic_retry"), p.auto_retry.to_string(), "{kind}: automatic_retry");
        assert_eq!(
            says("before_a_second_attempt"),
            p.before_second.to_string(),
            "{kind}: before_a_second_attempt"
        );
        let horizon = |dedupe| kind.default_horizon(dedupe).as_secs_f64();
        assert_eq!(
            row["horizon_s"].as_f64(),
            Some(horizon(tool_contract::spec::Dedupe::Probe)),
            "{kind}: horizon_s"
        );
        assert_eq!(
            row["horizon_s_receiver_dedupes"].as_f64(),
            Some(horizon(tool_contract::spec::Dedupe::Receiver)),
            "{kind}: horizon_s_receiver_dedupes"
        );
    }
}

#[test]
fn the_report_schema_is_the_one_the_crate_publishes() {
    let published = Value::Object(tool_contract::define::report_schema::<Value>());
    if std::env::var_os("CONTRACT_WRITE").is_some() {
        let text = serde_json::to_string_pretty(&published).unwrap() + "\n";
        std::fs::write(dir().join("report.schema.json"), text).unwrap();
    }
    assert_eq!(json("report.schema.json"), published, "regenerate contract/report.schema.json");
}
