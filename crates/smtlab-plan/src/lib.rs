//! Plans: a run specification (a `run` command line or a study) expanded
//! into the full list of measurement points (program x allocator x model x
//! placement x N) before anything runs, so a dry run can print it and a
//! resumed run can rebuild it; and every program's parameters parsed and
//! checked once, into the types the samples run with.
//!
//! The second stage of the pipeline: it uses the topology (placements), the
//! workloads' descriptions (default mode, metric and parameters), the
//! servers' and the DSM's parameter types and the record types; it runs
//! nothing. (The allocator table is `smtlab-allocators`, below its users:
//! execute and doctor use it without planning anything.)
//!
//! * `expand.rs`: a run specification into its points ([`expand`]), with
//!   the checks that need the whole specification and the machine
//!   ([`PlanError`]);
//! * `program_params.rs`: each program's parameters parsed and checked
//!   once ([`ProgramParams`], [`TypedPrograms`]);
//! * `plan.rs`: the two together ([`plan`], [`Plan`]).

mod expand;
mod plan;
mod program_params;

pub use expand::{expand, program_metric, PlanError, MAX_PLANNED_WORKERS};
pub use plan::{plan, Plan};
pub use program_params::{ProgramParams, TypedPrograms};
