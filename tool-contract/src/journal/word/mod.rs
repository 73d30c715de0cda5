//! A person's word, written to the log: a settlement of an attempt in doubt ([`settle`](fn@settle)), an
//! answer to a question ([`answer_approval`]), and the questions the engine records before it asks
//! (`question`). What may be written, and how, is here, beside the stores that hold it; asking people,
//! and what they are shown, is [`crate::person`]'s work. Their public paths are under
//! [`crate::person`].

mod answer;
pub(crate) mod question;
mod settle;

use std::time::Duration;

pub use answer::{ApprovalError, Decision, answer_approval};
pub(crate) use settle::settle_now;
pub use settle::{Settle, SettleError, early_note, settle};

/// The longest a request to the holder of a file log is good for after it was written: 10 minutes. A
/// settler waits at most this long for the holder; a request older than this (or than its settler's
/// wait) is answered `expired`.
pub const REQUEST_LIFETIME: Duration = Duration::from_secs(600);
