//! smtlab's library core.
//!
//! Data flows one way: **topology → placement → plan → execute → measure →
//! store → analyse → report**. This crate holds the parts that exist so far:
//!
//! * [`cpuset`]: sets of PU numbers and their kernel text forms;
//! * [`topology`]: the machine, from sysfs (live or a dump) or a synthetic
//!   description;
//! * [`cpu_expr`]: physical lists and likwid-style domain expressions;
//! * [`placement`]: (topology, policy, N) → an ordered list of CPUs;
//! * [`pin`]: run a program with its threads pinned, and report where they ran;
//! * [`sys`]: the only module with `unsafe` or raw libc calls.
//!
//! The `smtlab` binary is a thin CLI over this crate.

pub mod analysis;
pub mod compare;
pub mod cpu_expr;
pub mod cpuset;
pub mod doctor;
pub mod engine;
pub mod execute;
pub mod measure;
pub mod pin;
pub mod placement;
pub mod plan;
pub mod report;
pub mod sample;
pub mod schedule;
pub mod stats;
pub mod store;
pub mod study;
pub mod summary;
pub mod sys;
pub mod topology;
pub mod units;
pub mod workload;
pub mod workloads;

pub use cpuset::CpuSet;
pub use topology::Topology;

/// The commit smtlab was built from (`-dirty` with local changes), or
/// `unknown` outside a git checkout.
pub const GIT_COMMIT: &str = env!("SMTLAB_GIT_COMMIT");
