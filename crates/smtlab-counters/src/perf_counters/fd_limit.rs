//! Open-file limits. Every open counter is an fd: up to
//! [`CounterPlan::fds_per_thread`](super::CounterPlan::fds_per_thread) (21
//! with kernel counting) per worker thread, so a run on many threads can
//! exhaust the default soft limit of 1024. Running out (`EMFILE`) marks the
//! remaining counters as errors with the reason; [`raise_fd_limit`] lifts
//! the soft limit to the hard one first.
//!
//! Called by the CLI before a run, by the doctor (which judges the limit
//! against the plan) and by the open-error advice.

use std::io;

/// Soft and hard `RLIMIT_NOFILE`.
pub fn nofile_limit() -> Option<(u64, u64)> {
    nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).ok()
}

/// Raise the soft fd limit to the hard limit, so counters on many threads
/// fit; returns the new soft limit. Children inherit it, which is harmless
/// unless they use `select()` with more than 1024 fds.
pub fn raise_fd_limit() -> io::Result<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok(hard.max(soft))
}
