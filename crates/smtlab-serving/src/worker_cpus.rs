//! Whether a server's worker CPUs are ones this process may run on: both
//! servers check it before any worker starts (a worker could not say so
//! itself).

use std::io;

/// Check that every worker CPU is one this process may run on, before any
/// worker starts (a worker could not say so itself).
pub fn check_worker_cpus(cpus: &[u32]) -> io::Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    let allowed = smtlab_sys::current_affinity()?;
    match cpus.iter().find(|&&c| !allowed.contains(c)) {
        None => Ok(()),
        Some(c) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("worker CPU {c} is not one this process may run on ({allowed})"),
        )),
    }
}
