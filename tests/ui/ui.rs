//! The `#[tool]` attribute's compile-time contract, as living documentation.
//!
//! `pass/*.rs` each compile one feature; `fail/*.rs` each make one mistake, and the `.stderr` beside it
//! is the exact message the author sees. Regenerate with `TRYBUILD=overwrite cargo test -p
//! tool-contract-ui --test ui`, then read every changed line.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("fail/*.rs");
}

/// Issue 23, items 12 and 13: in a real `cargo` build (trybuild's `--verbose` lets rustc fold identical
/// errors, which a user's build does not), a probe that is not `async`, a probe of the wrong value
/// type and a tool in a trait impl are one error each, on the user's tokens.
#[test]
fn each_mistake_is_one_error_in_a_users_build() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fixture = root.join("tests/fixtures/probe_errors");
    // The workspace's lock, so the fixture builds offline with the versions already fetched.
    std::fs::copy(root.join("Cargo.lock"), fixture.join("Cargo.lock")).unwrap();
    let output = std::process::Command::new(env!("CARGO"))
        .args(["check", "--offline", "--quiet", "--message-format=short", "--manifest-path"])
        .arg(fixture.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", root.join("target/fixtures"))
        .output()
        .unwrap();
    let _ = std::fs::remove_file(fixture.join("Cargo.lock"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|line| line.contains(": error")).collect();
    let at = |line: u32| errors.iter().filter(|error| error.contains(&format!("main.rs:{line}:"))).count();
    assert_eq!((at(9), at(22), at(39), errors.len()), (1, 1, 1, 3), "{stderr}");
    assert!(
        errors
            .iter()
            .any(|error| error.contains("main.rs:39:") && error.contains("cannot be used in a trait impl"))
    );
}
