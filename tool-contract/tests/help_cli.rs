//! Every `tool-contract` command answers `--help`, `-h` and `--version`, and a flag it does not know is
//! named with the command's usage.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_tool-contract");

fn cli(args: &[&str]) -> (i32, String, String) {
    let Output { status, stdout, stderr } = Command::new(BIN).args(args).output().unwrap();
    (status.code().unwrap_or(-1), String::from_utf8(stdout).unwrap(), String::from_utf8(stderr).unwrap())
}

/// Each command, and flags its help names.
const COMMANDS: &[(&str, &[&str])] = &[
    ("key", &["--task", "--actor", "--verb", "--target", "--slot"]),
    ("log", &["--task", "--unresolved", "--json"]),
    (
        "settle",
        &[
            "--intent",
            "--attempt",
            "--landed",
            "--not-landed",
            "--value",
            "--evidence",
            "--by",
            "--seen",
            "--json",
            "--wait",
        ],
    ),
    ("console", &[]),
    ("compact", &[]),
];

#[test]
fn the_command_answers_help_and_version() {
    for flag in ["--help", "-h", "help"] {
        let (code, out, err) = cli(&[flag]);
        assert_eq!(code, 0, "{flag}: {err}");
        assert!(out.starts_with("usage: tool-contract"), "{flag}: {out}");
        for (command, _) in COMMANDS {
            assert!(out.contains(&format!("\n  {command} ")), "{flag} names `{command}`: {out}");
        }
        assert!(err.is_empty(), "{flag}: {err}");
    }
    for flag in ["--version", "-V"] {
        let (code, out, _) = cli(&[flag]);
        assert_eq!(code, 0, "{flag}");
        assert_eq!(out, format!("tool-contract {}\n", env!("CARGO_PKG_VERSION")), "{flag}");
    }
}

#[test]
fn each_command_answers_help_naming_its_flags() {
    for (command, flags) in COMMANDS {
        for help in [&["--help"][..], &["-h"], &["--version"]] {
            let mut args = vec![*command];
            args.extend_from_slice(help);
            let (code, out, err) = cli(&args);
            assert_eq!(code, 0, "{args:?}: {err}");
            assert!(err.is_empty(), "{args:?}: {err}");
            if help == ["--version"] {
                assert!(out.contains(env!("CARGO_PKG_VERSION")), "{args:?}: {out}");
                continue;
            }
            assert!(out.starts_with(&format!("usage: tool-contract {command} ")), "{args:?}: {out}");
            for flag in *flags {
                let named = out.lines().any(|line| line.trim_start().split(' ').next() == Some(flag));
                assert!(named, "{args:?} names `{flag}`: {out}");
            }
        }
        let (code, out, _) = cli(&["help", command]);
        assert_eq!(code, 0, "help {command}");
        assert!(out.starts_with(&format!("usage: tool-contract {command} ")), "help {command}: {out}");
    }
}

#[test]
fn an_unknown_flag_is_named_with_the_commands_usage() {
    for (command, _) in COMMANDS.iter().filter(|(command, _)| *command != "console") {
        let (code, out, err) = cli(&[command, "--colour"]);
        assert_eq!(code, 2, "{command}: {err}");
        assert!(out.is_empty(), "{command}: {out}");
        assert!(err.starts_with("tool-contract: unknown flag `--colour`\n"), "{command}: {err}");
        assert!(err.contains(&format!("\nusage: tool-contract {command} ")), "{command}: {err}");
    }
    let (code, _, err) = cli(&["--colour"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("tool-contract: unknown flag `--colour`\nusage: tool-contract "), "{err}");
}
