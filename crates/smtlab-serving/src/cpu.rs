//! The client's own CPU use: each client thread reads its CPU clock
//! (`CLOCK_THREAD_CPUTIME_ID`, user + system) when the measured window
//! opens and when it closes; the run sums the differences and compares
//! them with what its CPUs could have given in the window.

use std::time::Duration;

use nix::time::{clock_gettime, ClockId};

/// A client busy at least this share of its CPUs' time was saturated: its
/// threads block in `epoll_wait` whenever they have nothing to do, so a
/// client with headroom stays well below it, while one at 90% or more
/// could not have sent faster and the throughput measured is its limit,
/// not the server's.
pub const CLIENT_BOUND_SHARE: f64 = 0.9;

/// The calling thread's CPU time so far (zero if the clock cannot be read,
/// which Linux always can).
pub fn thread_cpu_time() -> Duration {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

/// `cpu_s` of CPU time over `window_s` seconds on `cpus` CPUs, as a share
/// of everything they could give (0 for an empty window).
pub fn share(cpu_s: f64, window_s: f64, cpus: usize) -> f64 {
    let capacity = window_s * cpus.max(1) as f64;
    if capacity > 0.0 {
        cpu_s / capacity
    } else {
        0.0
    }
}

/// The number of CPUs the client threads had: the distinct CPUs they were
/// pinned to, or unpinned, the threads (at most the CPUs this process may
/// use: more threads than CPUs cannot use more than every CPU).
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
        assert_eq!(client_cpus(1, &[1, 2, 3], None), 1);
        assert_eq!(client_cpus(4, &[], Some(2)), 2);
        assert_eq!(client_cpus(3, &[], None), 3);
        assert!((share(1.8, 2.0, 1) - 0.9).abs() < 1e-9);
        assert_eq!(share(1.0, 0.0, 1), 0.0);
    }

    #[test]
    fn the_thread_clock_advances_with_work() {
        let a = thread_cpu_time();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(20) {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_time() > a);
    }
}
