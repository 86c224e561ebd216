//! Studies: predefined sweeps that answer one question each ("threads or
//! processes?", "does SMT pay?", "which allocator?"), with the machine's
//! honest limits and the study's own tables and verdicts; and the pipeline
//! that turns any stored run into its report.
//!
//! * [`planning`]: a study planned for a machine (programs, models,
//!   placements, N, allocators, sampling, limits);
//! * [`findings`](mod@findings): its tables and verdicts, from the analysed points;
//! * [`web_plan`] and [`web_findings`]: the web study's plan (servers x
//!   models x N x SMT siblings or cores, the load generator on CPUs of its
//!   own) and its table and verdicts;
//! * [`comm_plan`] and [`comm_findings`]: the software-DSM communication
//!   study's plan (mechanisms x applications x ranks, one rank per CPU and
//!   two ranks sharing a node) and its tables and verdicts;
//! * [`error`]: why a study's reference server (nginx, ngircd) cannot be
//!   measured here;
//! * [`report_run`]: load a stored run → analyse → findings → write the
//!   report files.
//!
//! The top of the library: it uses the plan, the store, the analysis and
//! the report writers; only the CLI is above it. The list of studies and
//! their names is [`StudyKind::ALL`] (in `smtlab-types`).

mod alloc_fastest;
pub mod chat_findings;
pub mod chat_plan;
mod client_cpus;
pub mod comm_findings;
pub mod comm_plan;
mod comm_points;
mod comm_tables;
mod comm_verdicts;
pub mod error;
pub mod findings;
mod intervals;
pub mod pairs_matrix;
pub mod pairs_plan;
pub mod planning;
mod point_values;
pub mod report_run;
mod shape;
pub mod web_findings;
pub mod web_plan;

pub use error::{NginxMissing, NgircdMissing};
pub use findings::{findings, Findings};
pub use planning::{
    default_programs, ladder, oversub_ladder, plan, PairsRequest, Sampling, SamplingRequest,
    StudyPlan, StudyPlanError, StudyRequest, ALLOC_BENCHMARKS, PAIRS_WINDOW_S,
};
pub use smtlab_types::study::{StudyKind, StudyMeta, UnknownStudy};

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
