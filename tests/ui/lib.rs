//! The cases are `pass/*.rs` and `fail/*.rs` beside this file, run by `ui.rs`; this library is empty.
