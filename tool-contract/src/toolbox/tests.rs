//! The toolbox's own tests: arguments, the engine by name, values that cannot be written.

use serde_json::json;

use super::*;
use crate::classify::Class;
use crate::effect::EffectKind;
use crate::probe::Probe;

const SPEC: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);

fn task() -> Task {
    Task::new("t-1", "agent", std::time::Duration::from_secs(30))
}

#[test]
fn decodes_present_absent_optional_and_refuses_the_rest_at_once() {
    let mut args = Args::new(json!({ "thread": 5, "note": null, "colour": "red" }));
    assert_eq!(args.take::<String>("thread"), None);
    assert_eq!(args.take::<Option<String>>("note"), Some(None));
    assert_eq!(args.take::<Option<u32>>("priority"), Some(None));
    assert_eq!(args.take::<String>("text"), None);
    assert!(!args.is_clean());
    let report = args.refuse(&task(), &SPEC, &["thread", "text"]);
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Permanent, Applied::No));
    assert_eq!(
        report.message,
        "post_notice was not called: argument `thread`: invalid type: integer `5`, expected a string; \
         missing argument `text`: expected a string; unknown argument `colour`; it takes thread, text"
    );
    assert_eq!(report.attempt_id, "");
}

#[test]
fn arguments_that_are_not_an_object_are_refused() {
    let mut args = Args::new(json!([1, 2]));
    assert!(!args.is_clean());
    assert!(args.refuse(&task(), &SPEC, &[]).message.contains("must be a JSON object, not an array"));
    let mut none = Args::new(Value::Null);
    assert!(none.is_clean());
}

#[test]
fn deep_and_huge_arguments_are_refused_without_overflow() {
    let mut deep = json!(0);
    for _ in 0..200_000 {
        deep = Value::Array(vec![deep]);
    }
    let mut args = Args::new(json!({ "thread": "t" }));
    args.fields.insert("blob".into(), deep);
    let mut args = Args::new(Value::Object(std::mem::take(&mut args.fields)));
    assert!(!args.is_clean());
    assert!(args.problems[0].contains("deeper than 128"), "{:?}", args.problems);

    let huge = "x".repeat(1 << 20);
    let mut args = Args::new(json!({ "thread": 1, (huge.clone()): 1 }));
    assert_eq!(args.take::<u8>("thread"), Some(1));
    assert!(!args.is_clean());
    assert!(args.problems[0].len() < 140, "an unknown name is cut: {}", args.problems[0]);
    assert!(args.problems[0].contains("(1048576 bytes in all)"), "and its length said: {}", args.problems[0]);
    let mut args = Args::new(json!({ "thread": huge }));
    assert_eq!(args.take::<u8>("thread"), None);
    assert!(args.problems[0].len() < 290, "an echoed value is cut: {}", args.problems[0]);
}

#[test]
fn into_json_keeps_the_outcome_when_the_value_cannot_be_written() {
    let report = Args::new(json!({})).refuse(&task(), &SPEC, &[]);
    let mut bad: Report<std::collections::BTreeMap<(u8, u8), u8>> = report.map(|_| Default::default());
    bad.outcome = Outcome::Ok;
    bad.value = Some(std::collections::BTreeMap::from([((1, 2), 3)]));
    let json = into_json(bad);
    assert_eq!((json.outcome, json.value), (Outcome::Ok, None));
    assert!(json.message.contains("could not be written as JSON"));
}

#[tokio::test(start_paused = true)]
async fn run_json_keeps_the_outcome_when_an_attempt_or_a_probe_value_cannot_be_written() {
    type Unwritable = std::collections::BTreeMap<(u8, u8), u8>;
    let task = task();
    let unwritable = || Unwritable::from([((1, 2), 3)]);
    let key = task.key(&SPEC, &"t", None);
    let unwritten = Unwritten::default();
    let attempt: &JsonAttempt<'_> =
        &|_| Box::pin(async { json_answer(Ok::<_, Class>(unwritable()), &unwritten) });
    let report = run_json(&task, &SPEC, key, attempt, None, &unwritten, Default::default()).await;
    assert_eq!((report.outcome, report.effect_applied, report.value), (Outcome::Ok, Applied::Yes, None));
    assert!(report.message.contains("its value could not be written as JSON: key must be a string"));

    // The attempt's answer is lost; the probe finds it landed, with a value that cannot be written.
    let key = task.key(&SPEC, &"u", None);
    let unwritten = Unwritten::default();
    let lost: &JsonAttempt<'_> = &|_| Box::pin(async { Err(Class::unknown("connection reset")) });
    let landed: &JsonProbe<'_> =
        &|_| Box::pin(async { json_verdict(Probe::Landed(unwritable()), &unwritten) });
    let report = run_json(&task, &SPEC, key, lost, Some(landed), &unwritten, Default::default()).await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, None), "{}", report.message);
    assert!(report.message.contains("could not be written as JSON"), "{}", report.message);

    // A value that can be written is the report's, as JSON; a `null` value stays one.
    for (value, json) in [(Some(4411), json!(4411)), (None, Value::Null)] {
        let key = task.key(&SPEC, &format!("v{json}"), None);
        let unwritten = Unwritten::default();
        let fine: &JsonAttempt<'_> = &|_| Box::pin(async { json_answer(Ok::<_, Class>(value), &unwritten) });
        let report = run_json(&task, &SPEC, key, fine, None, &unwritten, Default::default()).await;
        assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(json)));
    }
}

#[test]
fn unknown_tool_lists_what_there_is() {
    let error = UnknownTool { name: "post".into(), known: vec!["post_notice", "read_price"] };
    assert_eq!(error.to_string(), "no tool is named `post`; the tools are post_notice, read_price");
}
