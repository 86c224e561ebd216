//! smtlab's built-in workloads, one file each, behind one trait
//! ([`Workload`]) so that the same code runs as threads of one process or as
//! separate processes, and every one verifies its own result.
//!
//! * [`workload`]: the trait and what a workload tells a plan
//!   ([`WorkloadInfo`]);
//! * [`params`]: `--param K=V` and its parsers, read once when a run is
//!   planned ([`resolve_checked`], then each workload's `parse`);
//! * [`config`]: what a workload's `parse` returns and its set-up takes
//!   ([`WorkloadConfig`]), carried from the plan to the worker processes;
//! * [`error`]: what a workload can fail with;
//! * [`task_queue`]: the queue that deals out irregular work;
//! * [`registry`]: the built-ins by name;
//! * one module per workload: `jbb` (SPECjbb2005-style warehouses), `parfib`,
//!   `sumeuler`, `mandel` (nofib parallel, on a work-stealing pool, `pool.rs`),
//!   `stream` (triad bandwidth), `latency` (pointer chase), `spin` (the
//!   control), and the allocation benchmarks `allocprobe`, `larson`,
//!   `xmalloc`, `cache_scratch`, `cache_thrash`, `mstress`.
//!
//! Below plan and execute: plans read a workload's [`WorkloadInfo`] (its
//! default mode and metric), workers run it. Calls nothing in smtlab but the
//! record types, `smtlab-sys` (shared memory for the task queue) and the
//! topology (`allocprobe` asks which core a CPU belongs to).

mod alloc_common;
pub mod allocprobe;
pub mod cache_scratch;
pub mod cache_thrash;
pub mod config;
pub mod error;
pub mod jbb;
pub mod larson;
pub mod latency;
pub mod mandel;
pub mod mstress;
pub mod params;
pub mod parfib;
mod pool;
pub mod registry;
pub mod spin;
pub mod stream;
pub mod sumeuler;
pub mod task_queue;
#[cfg(test)]
mod testing;
pub mod workload;
pub mod xmalloc;

pub use config::WorkloadConfig;
pub use error::{ParamError, WorkloadError, WrongResult};
pub use params::{param_bytes, param_corrupt, param_u64, Params};
pub use registry::{builtin, builtin_names};
pub use task_queue::{QueueWords, TaskQueue, QUEUE_WORDS};
pub use workload::{
    check_param_types, resolve_checked, resolve_params, ParamSpec, ProcessContext, ProcessState,
    TimeMetric, WorkSplit, WorkerResult, WorkerSlot, WorkerState, Workload, WorkloadInfo,
};
