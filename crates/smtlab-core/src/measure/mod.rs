//! Measurement: what a sample's window cost, per worker thread and process.
//!
//! * [`perf_counters`]: perf_event hardware and software counters, with a
//!   capability probe that decides once what this machine and user may
//!   count, multiplexing-scaled reads, sums over threads and derived ratios
//!   (CPI, IPC, misses per 1000 instructions);
//! * [`rusage`]: CPU time, context switches, faults and peak RSS from
//!   `getrusage`/`wait4`, as window differences;
//! * [`memory`]: RSS, PSS and transparent huge pages from `/proc`, and a
//!   background sampler for the peak of processes that exit.
//!
//! Everything degrades instead of failing: what cannot be measured here is
//! recorded with its reason (see [`crate::sample::CounterStatus`]) or left
//! `None`, never reported as zero. Called by the execute engine and by
//! `doctor`; calls nothing in smtlab but [`crate::sample`].

pub mod memory;
pub mod perf_counters;
pub mod rusage;

pub use memory::{memory_of, MemoryUsage, PeakMemory, PeakSampler};
pub use perf_counters::{derived, sum_counters, CounterPlan, CounterSpec, Derived, ThreadCounters};
pub use rusage::{snapshot, sum_usage, usage_from_wait4, Rusage, Who};
