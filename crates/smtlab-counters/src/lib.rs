//! Counters: what a sample's window cost, per worker thread and process.
//!
//! * [`perf_counters`]: perf_event hardware and software counters — the
//!   event list, a capability probe that decides once what this machine and
//!   user may count (with the reason and the fix for each counter it
//!   cannot), the counters of a thread or a user command, multiplexing-scaled
//!   reads and sums over threads, and the open-file limit (the ratios
//!   derived from them, CPI and MPKI, are the analysis' business:
//!   `smtlab_analyse::derived`);
//! * [`rusage`]: CPU time, context switches, faults and peak RSS from
//!   `getrusage`/`wait4`, as window differences;
//! * [`memory`]: RSS, PSS and transparent huge pages from `/proc`, and a
//!   background sampler for the peak of processes that exit.
//!
//! Everything degrades instead of failing: what cannot be measured here is
//! recorded with its reason (see [`smtlab_types::CounterStatus`]) or left
//! `None`, never reported as zero. The one typed error, [`OpenError`], is a
//! reason a counter is missing, not a failure of the run.
//!
//! Below execute in the pipeline, although the README's pipeline lists
//! counters under "measure": the workers open and read their counters on their own
//! threads, inside the window, so the code that runs a sample needs them.
//! Called by `smtlab-execute` (workers and user commands), by
//! `smtlab-doctor`, and by the CLI (to raise the fd limit before a run);
//! calls nothing in smtlab but the record types. The names callers use are
//! also re-exported here, so they need not know how the modules are split.

pub mod memory;
pub mod perf_counters;
pub mod rusage;

#[cfg(test)]
mod test_support;

pub use memory::{memory_of, MemoryUsage, PeakMemory, PeakSampler};
pub use perf_counters::{
    classify_open_error, nofile_limit, raise_fd_limit, read_paranoid, scaled_value, sum_counters,
    CounterPlan, CounterSpec, EventKind, OpenError, OpenResult, PlannedCounter, ProbeFacts,
    ThreadCounters, HARDWARE_EVENTS, SOFTWARE_EVENTS,
};
pub use rusage::{snapshot, sum_usage, usage_from_wait4, Rusage, Who};
