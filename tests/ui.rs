//! The `#[tool]` attribute's compile-time contract, as living documentation.
//!
//! `ui/pass/*.rs` each compile one feature; `ui/fail/*.rs` each make one mistake, and the `.stderr` beside
//! it is the exact message the author sees. Regenerate with `TRYBUILD=overwrite cargo test -p
//! tool-contract-tests --test ui`, then read every changed line.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("ui/pass/*.rs");
    t.compile_fail("ui/fail/*.rs");
}
