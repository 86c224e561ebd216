//! The only module that talks to the kernel directly: affinity, and (for
//! `smtlab pin`) reading where threads ran. Every `unsafe` block in smtlab
//! lives here, each with a `// SAFETY:` line.
#![allow(unsafe_code)]

use std::io;

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet as NixCpuSet};
use nix::unistd::Pid;

use crate::cpuset::CpuSet;

/// The CPUs this process (its calling thread) may run on.
pub fn current_affinity() -> io::Result<CpuSet> {
    let set = sched_getaffinity(Pid::from_raw(0)).map_err(io::Error::from)?;
    Ok((0..NixCpuSet::count() as u32)
        .filter(|&c| set.is_set(c as usize).unwrap_or(false))
        .collect())
}

/// Restrict a thread or process (`tid` 0: the caller) to `cpus`.
pub fn set_affinity(tid: i32, cpus: &CpuSet) -> io::Result<()> {
    let mut set = NixCpuSet::new();
    for c in cpus.iter() {
        set.set(c as usize).map_err(io::Error::from)?;
    }
    sched_setaffinity(Pid::from_raw(tid), &set).map_err(io::Error::from)
}
