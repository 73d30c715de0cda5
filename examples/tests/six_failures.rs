//! The main job, run as a user runs it: the six classic failures and the held request all pass, the
//! JSON has the promised keys, and the attempt log it names is readable by the inspector.

use std::process::Command;

#[test]
fn the_demonstration_passes_the_six_and_the_held_request_and_prints_one_json_object_per_scenario() {
    let out = Command::new(env!("CARGO_BIN_EXE_six-failures")).arg("--json").output().expect("the demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<serde_json::Value> =
        stdout.lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
    let names: Vec<&str> = lines.iter().map(|l| l["scenario"].as_str().unwrap_or_default()).collect();
    assert_eq!(
        names,
        [
            "kill-mid-call",
            "duplicate-delivery",
            "200-error-body",
            "slow-success",
            "partial-batch",
            "rate-limit",
            "held-request"
        ]
    );
    for line in &lines {
        let keys: Vec<&str> = line.as_object().expect("an object").keys().map(String::as_str).collect();
        for key in [
            "scenario",
            "outcome",
            "effect_applied",
            "attempts",
            "probe",
            "effects_at_service",
            "expected",
            "pass",
        ] {
            assert!(keys.contains(&key), "{key} missing in {line}");
        }
        assert_eq!(line["pass"], true, "{line}");
    }
    assert_eq!(lines[0]["probe"], "landed");
    assert_eq!(lines[0]["effects_at_service"], 1);
    // The request the service applied after the caller let go, found by the probe, not sent again.
    assert_eq!((lines[6]["attempts"].as_u64(), lines[6]["effects_at_service"].as_u64()), (Some(1), Some(1)));

    let log = stderr
        .lines()
        .find_map(|l| l.strip_prefix("attempt log: "))
        .expect("the demo says where its log is")
        .trim()
        .to_owned();
    let contents = std::fs::read_to_string(&log).expect("the log exists");
    assert!(contents.lines().count() >= 12, "{contents}");
    assert!(stderr.contains("tool-contract -- log"), "{stderr}");
    let _ = std::fs::remove_file(log);
}

#[test]
fn an_unknown_argument_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_six-failures")).arg("--yaml").output().expect("the demo runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: six-failures [--json | --trace] [--mcp]"));
    let help =
        Command::new(env!("CARGO_BIN_EXE_six-failures")).arg("--help").output().expect("the demo runs");
    assert!(
        help.status.success() && String::from_utf8_lossy(&help.stdout).starts_with("usage: six-failures")
    );
}

/// The fault kit's MCP mode as a user runs it: every call through the MCP server, the same verdicts.
#[cfg(feature = "mcp")]
#[test]
fn over_mcp_the_six_and_the_held_request_pass_too() {
    let out = Command::new(env!("CARGO_BIN_EXE_six-failures"))
        .args(["--mcp", "--json"])
        .output()
        .expect("the demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        stdout.lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
    assert_eq!(lines.len(), 7);
    assert!(lines.iter().all(|line| line["pass"] == true), "{stdout}");
    assert_eq!(
        (lines[0]["probe"].as_str(), lines[0]["effects_at_service"].as_u64()),
        (Some("landed"), Some(1))
    );
    assert_eq!(lines[1]["effects_at_service"], 1, "duplicate delivery over MCP: one effect");
    assert_eq!(lines[6]["effects_at_service"], 1, "the held request over MCP: one effect");
}

#[cfg(not(feature = "mcp"))]
#[test]
fn without_its_feature_the_mcp_mode_says_how_to_build_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_six-failures")).arg("--mcp").output().expect("the demo runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--features mcp"));
}

#[test]
fn with_trace_every_call_prints_its_spans() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_six-failures")).arg("--trace").output().expect("the demo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The kill mid-call: an attempt left unknown, a probe that finds it landed, the call ok.
    let kill =
        |line: &&str| line.contains("six-failures-kill-mid-call-1") || line.contains("verdict=\"landed\"");
    assert!(
        stderr.lines().filter(kill).any(|l| l.contains("attempt{") && l.contains("outcome=\"unknown\"")),
        "{stderr}"
    );
    assert!(stderr.lines().any(|l| l.contains("probe{") && l.contains("tool_contract.verdict=\"landed\"")));
    // The rate limit: a wait the service asked for, then a resend.
    assert!(
        stderr.lines().any(|l| l.contains("tool_contract.event=\"wait\"") && l.contains("retry_after=true"))
    );
    assert!(stderr.lines().any(|l| l.contains("http.request.resend_count=1")));
    // The 200 with an error body: the call's span says why it failed.
    assert!(stderr.lines().any(|l| l.contains("execute_tool{") && l.contains("error.type=\"permanent\"")));
    // Arguments are never printed: the notices' text is not in any span.
    assert!(!stderr.contains("your refund was sent"), "{stderr}");
}
