//! The `tool-contract-console` command answers `--help`, `-h` and `--version`, and a flag it does not
//! know is named with its usage.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_tool-contract-console");

fn cli(args: &[&str]) -> (i32, String, String) {
    let Output { status, stdout, stderr } =
        Command::new(BIN).args(args).env_remove("TOOL_CONTRACT_PG").output().unwrap();
    (status.code().unwrap_or(-1), String::from_utf8(stdout).unwrap(), String::from_utf8(stderr).unwrap())
}

const FLAGS: &[&str] = &[
    "--listen",
    "--read-only",
    "--by",
    "--operators",
    "--token-file",
    "--idle-minutes",
    "--session-hours",
    "--allow-remote",
    "--tls-cert",
    "--tls-key",
    "--host",
    "--pg-url-file",
    "--pg-ca-file",
    "--make-operator",
];

#[test]
fn make_operator_prints_a_line_the_console_takes_and_the_token_apart() {
    let (code, out, err) = cli(&["--make-operator", "Bob Smith"]);
    assert_eq!(code, 0, "{err}");
    let line = out.trim_end();
    assert!(line.starts_with("Bob Smith pbkdf2-sha256:") && out.lines().count() == 1, "{out}");
    let token = err.trim_end().rsplit_once(' ').unwrap().1;
    assert_eq!(token.len(), 64, "{err}");
    assert!(!out.contains(token), "the token is not in the file's line");
    let operators = tool_contract_console::Operator::parse_file(line).unwrap();
    assert!(operators[0].lets_in(token));
    let (code, _, err) = cli(&["--make-operator", ""]);
    assert_eq!(code, 1);
    assert!(err.contains("the name is empty"), "{err}");
}

#[test]
fn the_command_answers_help_and_version_as_run_by_either_name() {
    // `tool-contract console ...` runs this command with the word `console` first.
    for first in [&[][..], &["console"]] {
        for help in ["--help", "-h"] {
            let mut args = first.to_vec();
            args.push(help);
            let (code, out, err) = cli(&args);
            assert_eq!(code, 0, "{args:?}: {err}");
            assert!(err.is_empty(), "{args:?}: {err}");
            assert!(out.starts_with("usage: tool-contract-console "), "{args:?}: {out}");
            for flag in FLAGS {
                let named = out.lines().any(|line| line.trim_start().split(' ').next() == Some(flag));
                assert!(named, "{args:?} names `{flag}`: {out}");
            }
        }
        for version in ["--version", "-V"] {
            let mut args = first.to_vec();
            args.push(version);
            let (code, out, _) = cli(&args);
            assert_eq!(code, 0, "{args:?}");
            assert_eq!(out, format!("tool-contract-console {}\n", env!("CARGO_PKG_VERSION")), "{args:?}");
        }
    }
}

#[test]
fn an_unknown_flag_is_named_with_the_usage() {
    let (code, out, err) = cli(&["log.jsonl", "--colour"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.starts_with("tool-contract console: unknown flag `--colour`\n"), "{err}");
    assert!(err.contains("\nusage: tool-contract-console "), "{err}");
}
