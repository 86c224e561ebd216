//! `smtlab doctor`: what this machine can and cannot measure, and how to fix
//! each gap (including which allocators of `smtlab_allocators` are
//! installed and which external tools are in PATH).
//!
//! Gathering (`facts.rs`: [`Facts::gather`] probes perf, reads sysfs and
//! procfs, searches the library directories and PATH) is kept apart from
//! judging (`checks.rs`: [`diagnose`], pure), so every verdict is
//! unit-tested with synthetic facts for machines we do not have. The doctor
//! reports; it never fails because something is missing.
//!
//! Called by the CLI (`smtlab doctor`); uses the counters' probe, the
//! topology and the allocator table, never anything above them. Every public
//! name is re-exported here.

mod checks;
mod facts;

pub use checks::{diagnose, run, Check, CheckStatus, Diagnosis, CHECK_NAMES};
pub use facts::{
    find_in_path, selected_mode, steal_percent, CpuFacts, Facts, HypervisorFacts, ToolInfo, TOOLS,
};
