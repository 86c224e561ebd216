//! CPU affinity: which CPUs a thread or process may run on, read and set
//! with `sched_getaffinity`/`sched_setaffinity`.
//!
//! Called by the topology (to narrow the live machine to what this process
//! may use), by execute's workers and `smtlab pin`, and by workloads that
//! move themselves between CPUs; the pre-exec hook of `child.rs` uses
//! [`nix_set`] to pin a child before it execs.

use std::io;

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet as NixCpuSet};
use nix::unistd::Pid;

use smtlab_types::CpuSet;

/// The CPUs this process (its calling thread) may run on.
pub fn current_affinity() -> io::Result<CpuSet> {
    thread_affinity(0)
}

/// The CPUs thread `tid` may run on (`sched_getaffinity(tid)`).
pub fn thread_affinity(tid: i32) -> io::Result<CpuSet> {
    let set = sched_getaffinity(Pid::from_raw(tid)).map_err(io::Error::from)?;
    Ok((0..NixCpuSet::count() as u32)
        .filter(|&c| set.is_set(c as usize).unwrap_or(false))
        .collect())
}

/// Restrict a thread or process (`tid` 0: the caller) to `cpus`.
pub fn set_affinity(tid: i32, cpus: &CpuSet) -> io::Result<()> {
    sched_setaffinity(Pid::from_raw(tid), &nix_set(cpus)?).map_err(io::Error::from)
}

/// `cpus` in the kernel's form. Built before a fork: the child may not
/// allocate between fork and exec.
pub(crate) fn nix_set(cpus: &CpuSet) -> io::Result<NixCpuSet> {
    let mut set = NixCpuSet::new();
    for c in cpus.iter() {
        set.set(c as usize).map_err(io::Error::from)?;
    }
    Ok(set)
}
