//! Counters: what a sample's window cost, per worker thread and process.
//!
//! * [`perf_counters`]: perf_event hardware and software counters, with a
//!   capability probe that decides once what this machine and user may
//!   count, multiplexing-scaled reads and sums over threads (the ratios
//!   derived from them, CPI and MPKI, are the analysis' business:
//!   `smtlab_analyse::derived`);
//! * [`rusage`]: CPU time, context switches, faults and peak RSS from
//!   `getrusage`/`wait4`, as window differences;
//! * [`memory`]: RSS, PSS and transparent huge pages from `/proc`, and a
//!   background sampler for the peak of processes that exit.
//!
//! Everything degrades instead of failing: what cannot be measured here is
//! recorded with its reason (see [`smtlab_types::CounterStatus`]) or left
//! `None`, never reported as zero.
//!
//! Below execute in the pipeline, although DESIGN.md lists counters under
//! "measure": the workers open and read their counters on their own
//! threads, inside the window, so the code that runs a sample needs them.
//! Called by `smtlab-execute` (workers and user commands) and by
//! `smtlab-doctor`; calls nothing in smtlab but the record types.

pub mod memory;
pub mod perf_counters;
pub mod rusage;

pub use memory::{memory_of, MemoryUsage, PeakMemory, PeakSampler};
pub use perf_counters::{sum_counters, CounterPlan, CounterSpec, ThreadCounters};
pub use rusage::{snapshot, sum_usage, usage_from_wait4, Rusage, Who};
