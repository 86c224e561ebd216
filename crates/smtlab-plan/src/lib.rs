//! Plans: a run specification (a `run` command line or a study) expanded
//! into the full list of measurement points (program x allocator x model x
//! placement x N) before anything runs, so a dry run can print it and a
//! resumed run can rebuild it.
//!
//! The second stage of the pipeline: it uses the topology (placements), the
//! workloads' descriptions (default mode and metric) and the record types;
//! it runs nothing. (The allocator table is `smtlab-allocators`, below its
//! users: execute and doctor use it without planning anything.)

mod expand;

pub use expand::{expand, program_metric, PlanError, MAX_PLANNED_WORKERS};
