//! Internals the crates of this workspace share with this one: the console's index and pages, the
//! commands, the MCP server, the fuzz targets and the tests. Not public API: hidden from the docs, and
//! no promise across versions. (The `#[tool]` attribute's generated code has its own, `__private`.)

/// The attempt log's fold of one record into an index by intent.
pub use crate::journal::index::index_record;
/// The attempt log's timestamps: RFC 3339 UTC, whole seconds.
pub use crate::records::stamp::{parse_rfc3339, rfc3339, wall_clock};
/// A quoted text cut to a bound, with its length said.
pub use crate::text::cut;

/// What answers a tool's questions to its client ([`crate::Call::ask`]), and the scope it answers in.
pub use crate::call::{Asker, ask_now, with_asker};

/// The attempt log a task's calls write to (the MCP server keeps its tasks there).
pub fn journal_of(task: &crate::Task) -> Option<std::sync::Arc<dyn crate::journal::Journal>> {
    task.journal_arc()
}

/// The call's decisions as one pure state machine, which the engine and the protocol model both drive.
pub mod machine {
    pub use crate::engine::ledger::Ledger;
    #[cfg(feature = "unstable")]
    pub use crate::engine::machine::Hooks;
    pub use crate::engine::machine::{
        Action, Budget, Can, Event, KeySent, Machine, Pacing, Setup, Time, Write, doubt,
    };
}

/// The `settle` command line, shared by the commands of this workspace (feature `cli`).
#[cfg(feature = "cli")]
pub mod settle_command {
    pub use crate::person::command::*;
}
