//! A node's statistics at one instant: what the computation did (from its
//! page table), what the communication layer counted, and the CPU time of
//! the computing thread and of each communication thread. The rank's run
//! takes two and reports their difference.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::page_table::Main;
use crate::report::ThreadTime;

/// Counters of a node at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub counters: smtlab_msg::Counters,
    pub served: u64,
    pub getp: u64,
    pub diffs: u64,
    pub locks: u64,
    pub barriers: u64,
    pub fault_ns: u64,
    pub sync_ns: u64,
    pub wait_ns: u64,
    pub serve_ns: u64,
    pub main_cpu_s: f64,
    pub threads: Vec<ThreadTime>,
}

impl Snapshot {
    /// The snapshot of the computation's table `m`, the core's `counters`
    /// and requests `served`, the computing thread's `serve_ns`, and the
    /// CPU seconds (f64 bits) each communication thread last published;
    /// the computing thread's CPU time is read now, on the calling thread.
    pub(crate) fn take(
        m: &Main,
        counters: smtlab_msg::Counters,
        served: u64,
        serve_ns: u64,
        thread_cpu: &[(&'static str, AtomicU64)],
    ) -> Snapshot {
        Snapshot {
            counters,
            served,
            getp: m.getp,
            diffs: m.diffs,
            locks: m.locks,
            barriers: m.barriers,
            fault_ns: m.fault_ns,
            sync_ns: m.sync_ns,
            wait_ns: m.wait_ns,
            serve_ns,
            main_cpu_s: smtlab_sys::thread_cpu_s(),
            threads: thread_cpu
                .iter()
                .map(|(n, v)| ThreadTime {
                    name: n.to_string(),
                    cpu_s: f64::from_bits(v.load(Ordering::Relaxed)),
                })
                .collect(),
        }
    }
}
