//! Integration suite of tool-contract: see the files beside this one.
