//! The client's own CPU use, by the rule of the HTTP load generator
//! (`load/cpu.rs`, whose module is private to `load`, so its three small
//! functions are repeated here rather than widening its visibility from
//! this module): each client thread reads its CPU clock when the measured
//! phase starts and ends, and the sum is compared with what the client's
//! CPUs could give in the elapsed time.

use std::time::Duration;

use nix::time::{clock_gettime, ClockId};

pub use crate::load::CLIENT_BOUND_SHARE;

/// The calling thread's CPU time so far, user + system (zero if the clock
/// cannot be read, which Linux always can).
pub fn thread_cpu_time() -> Duration {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

/// `cpu_s` over `window_s` seconds on `cpus` CPUs, as a share of all they
/// could give (0 for an empty window).
pub fn share(cpu_s: f64, window_s: f64, cpus: usize) -> f64 {
    let capacity = window_s * cpus.max(1) as f64;
    if capacity > 0.0 {
        cpu_s / capacity
    } else {
        0.0
    }
}

/// The CPUs the client threads had: the distinct CPUs they were pinned to,
/// or unpinned, the threads (at most the CPUs this process may use).
pub fn client_cpus(threads: usize, pinned: &[u32], allowed: Option<usize>) -> usize {
    if pinned.is_empty() {
        return threads.min(allowed.unwrap_or(threads)).max(1);
    }
    let mut used: Vec<u32> = (0..threads).map(|k| pinned[k % pinned.len()]).collect();
    used.sort_unstable();
    used.dedup();
    used.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_counts_distinct_cpus() {
        assert_eq!(client_cpus(4, &[1, 1, 2], None), 2);
        assert_eq!(client_cpus(2, &[], Some(1)), 1);
        assert!((share(0.9, 1.0, 1) - 0.9).abs() < 1e-9);
        assert_eq!(share(1.0, 0.0, 1), 0.0);
    }
}
