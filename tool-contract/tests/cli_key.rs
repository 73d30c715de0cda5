//! The `tool-contract key` command, run as an operator runs it.

use std::process::Command;

fn key(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tool-contract")).arg("key").args(args).output().expect("the binary runs")
}

#[test]
fn prints_the_key_of_an_intent() {
    let out = key(&[
        "--task",
        "ord-7741",
        "--actor",
        "agent:billing",
        "--verb",
        "charge_card",
        "--target",
        "card-42",
    ]);
    assert!(out.status.success());
    // Same vector as the unit tests, computed with Python's hashlib.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "e7196e5fd13c36a04d6b298b6cfad716\n");
    let out = key(&["--task", "t", "--actor", "a", "--verb", "v", "--target", "x", "--slot", "0"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "8472f1266fdc0420ab17bdb28ac58629\n");
}

#[test]
fn bad_arguments_get_a_usage_error() {
    for (args, says) in [
        (&["--task", "t", "--actor", "a", "--verb", "v"][..], "missing `--target`"),
        (&["--task", "t", "--task", "u"][..], "`--task` given twice"),
        (&["--task"][..], "`--task` needs a value"),
        (&["--colour", "red"][..], "unknown flag `--colour`"),
    ] {
        let out = key(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.contains("usage:"), "{err}");
        assert!(out.stdout.is_empty());
    }
}
