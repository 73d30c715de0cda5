//! The attempt log's records as data: a [`Record`] and its parts, what a store knows of one intent
//! ([`Recall`]), a person's word ([`Settlement`], [`ApprovalNote`]) and the stamps they carry.
//!
//! This module imports nothing of the log's stores, of [`crate::rules`], [`crate::policy`] or
//! [`crate::person`]: each of those reads records, and none is read by them. Their public paths stay
//! under [`crate::journal`].

pub(crate) mod notes;
pub(crate) mod record;
pub(crate) mod stamp;

pub use notes::{
    ApprovalNote, Asks, MAX_BY_BYTES, MAX_EVIDENCE_BYTES, MAX_WHY_BYTES, Settlement, Step as ApprovalStep,
    Verdict, Via,
};
pub use record::{Durability, LastWord, Phase, Recall, Record, RecordRef};
pub(crate) use stamp::{parse_rfc3339, rfc3339, wall_clock, wall_clock_at, with_stamp};
