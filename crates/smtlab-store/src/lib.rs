//! The store: every run, its host facts, its points and every sample, in one
//! SQLite file (`./smtlab.db` unless `--db PATH`).
//!
//! Owns the file format (`schema.rs`: versioned migrations) and the mapping
//! between the record types of `smtlab-types` (runs, points, samples) and
//! rows, one file per kind of record (`runs.rs`, `points.rs`,
//! `samples.rs`). Written by the CLI (a run's record and its points) and
//! by the measurement loop, through the [`SampleLog`](smtlab_types::SampleLog)
//! it implements (`sample_log.rs`: a sample as soon as it is measured);
//! read by the analysis, the studies' reports and the CLI's `runs` and
//! `show`. It knows nothing of how samples are measured.
//! `merge.rs` copies the runs of other stores into one (`smtlab merge`),
//! matching runs by their uid so that merging twice adds nothing; the copy
//! itself (staged, then written in one transaction) is `merge_staging.rs`.
//!
//! # Durability
//!
//! The promise is "every sample is committed as soon as it is measured;
//! `kill -9` loses nothing committed": [`Store::add_sample`] writes a sample
//! with its workers and counters in one transaction, so a sample is either
//! wholly there or absent. The file is in WAL mode with `synchronous=NORMAL`:
//! a commit has written the transaction to the `-wal` file (the kernel's page
//! cache) before it returns, so a killed or crashed process loses nothing
//! committed, and the next open recovers from the WAL. What NORMAL gives up
//! against FULL is the fsync per commit: a power loss or kernel crash may roll
//! back the last few commits (never corrupt the file). An fsync per sample
//! would cost milliseconds of disk traffic between measurements, on the
//! machine being measured; [`Store::finish_run`] checkpoints instead, which
//! syncs the WAL once per run.
//!
//! WAL also lets `smtlab runs` read while a run writes: readers never block
//! the writer nor see half a sample, and `busy_timeout` covers the short
//! waits that remain (checkpoints, two runs writing the same file).
//!
//! # Exactness
//!
//! [`Store::samples`] returns exactly the [`Sample`](smtlab_types::Sample)s that were added: REAL
//! columns hold IEEE doubles bit for bit, and vectors come back in insertion
//! order. Two limits of SQLite itself: a NaN is stored as NULL (it reads back
//! as `None`, or NaN where the field is not optional), and an integer above
//! `i64::MAX` is refused rather than rounded.

mod columns;
mod error;
mod host;
mod merge;
mod merge_staging;
mod owner;
mod points;
mod runs;
mod sample_log;
mod samples;
mod schema;
mod store;

#[cfg(test)]
mod tests;

pub use error::StoreError;
pub use host::{
    collect_host_facts, collect_host_facts_from, host_name, host_name_from, printable, unprintable,
    HostNameError, HOSTNAME_VAR,
};
pub use merge::{MergeError, RunOrigin};
pub use merge_staging::MergeSummary;
pub use owner::Owner;
pub use runs::NewRun;
pub use schema::{latest_version as schema_version, APPLICATION_ID};
pub use smtlab_types::{HostFacts, RunRecord, RunStatus, RunSummary};
pub use store::Store;
