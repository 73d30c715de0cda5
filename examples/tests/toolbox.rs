//! The toolbox example, run as a person runs it: its definitions in every format are valid JSON Schema
//! 2020-12, and every report it prints, for good calls and bad ones, fits its tool's output schema.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

/// The example's binary, which `cargo test` builds beside this test's.
fn toolbox() -> Command {
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
    let path: PathBuf = dir.join("examples").join(format!("toolbox{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run `cargo test` (or `cargo build --examples`) first",
        path.display()
    );
    Command::new(path)
}

fn json_out(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::draft202012::meta::validate(schema).unwrap_or_else(|error| panic!("{error}\n{schema:#}"));
    jsonschema::draft202012::new(schema).unwrap_or_else(|error| panic!("{error}\n{schema:#}"))
}

#[test]
fn definitions_in_every_format_list_the_six_tools_with_valid_schemas() {
    let names = ["charge_card", "create_order", "delete_record", "post_notice", "read_price", "write_rows"];
    for (format, name_at, schema_at) in [
        ("mcp", "/name", "/inputSchema"),
        ("openai", "/function/name", "/function/parameters"),
        ("anthropic", "/name", "/input_schema"),
    ] {
        let definitions = json_out(&toolbox().args(["definitions", "--format", format]).output().unwrap());
        let definitions = definitions.as_array().expect("one JSON array");
        let listed: Vec<&str> =
            definitions.iter().map(|d| d.pointer(name_at).and_then(Value::as_str).unwrap()).collect();
        assert_eq!(listed, names, "{format}");
        for definition in definitions {
            validator(definition.pointer(schema_at).unwrap());
            if format == "mcp" {
                validator(&definition["outputSchema"]);
                assert!(definition["description"].as_str().is_some_and(|d| !d.is_empty()));
            } else {
                let strict = definition.pointer("/function/strict").or(definition.get("strict"));
                assert_eq!(strict, Some(&json!(true)), "every example tool has a strict form: {definition}");
            }
        }
    }
    let plain = json_out(&toolbox().arg("definitions").output().unwrap());
    assert_eq!(plain[0]["annotations"]["destructiveHint"], true, "charge_card moves money");
}

#[test]
fn every_report_fits_its_tools_output_schema() {
    let definitions = json_out(&toolbox().arg("definitions").output().unwrap());
    let schema_of = |name: &str| {
        let definition = definitions.as_array().unwrap().iter().find(|d| d["name"] == name).unwrap();
        validator(&definition["outputSchema"])
    };
    let calls = [
        ("read_price", json!({ "sku": "sku-1" }), "ok"),
        ("read_price", json!({ "sku": "sku-404" }), "permanent"),
        ("create_order", json!({ "sku": "sku-1", "quantity": 2 }), "ok"),
        ("post_notice", json!({ "thread": 9, "text": "Your refund was sent." }), "ok"),
        ("post_notice", json!({ "thread": 0, "text": "hello" }), "permanent"),
        ("charge_card", json!({ "card": "card-42", "cents": 1299 }), "ok"),
        ("delete_record", json!({ "id": 7 }), "ok"),
        ("delete_record", json!({ "id": 99 }), "permanent"),
        ("write_rows", json!({ "sheet": "s-1", "rows": ["ada@example.com", "no email"] }), "permanent"),
        ("post_notice", json!({ "thread": "nine" }), "permanent"),
        ("charge_card", json!({ "card": "card-42", "cents": -5 }), "permanent"),
        ("write_rows", json!([]), "permanent"),
    ];
    for (name, arguments, outcome) in calls {
        let report = json_out(
            &toolbox().args(["call", name, &arguments.to_string(), "--task", "t-1"]).output().unwrap(),
        );
        assert_eq!(report["outcome"], outcome, "{name} {arguments}: {report:#}");
        let errors: Vec<String> = schema_of(name).iter_errors(&report).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name} {arguments}: {errors:?}\n{report:#}");
    }
}

#[test]
fn a_bad_command_line_is_refused_with_status_2() {
    for args in [
        &["call", "no_such_tool", "{}"][..],
        &["call", "read_price", "{not json"],
        &["dance"],
        &["definitions", "--format", "yaml"],
    ] {
        let out = toolbox().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        assert!(!out.stderr.is_empty());
    }
}
