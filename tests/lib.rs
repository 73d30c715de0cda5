//! Integration suite of tool-contract: the tests are the files beside this one; this library holds
//! what several of them share.

pub mod http_tools;

/// The README's compiled examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct Readme;
