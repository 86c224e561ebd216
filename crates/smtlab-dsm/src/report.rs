//! What a DSM run reports: per rank, the paper's statistics (messages and
//! bytes, page fetches, diffs, locks, barriers) and time split (computation,
//! page faults, synchronisation, serving, waiting; CPU time per thread for
//! the thread mechanisms); for the run, the wall time of the parallel
//! section and whether the result verified. Rank 0 gathers every rank's
//! [`RankStats`] into one [`RunReport`], printed as JSON by `smtlab __rank`
//! and turned into a sample's extras by execute.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use smtlab_types::extras::dsm;
use smtlab_types::Comm;

/// Where a rank's wall time went, seconds. Like the paper's tables: the
/// parts add up to the rank's parallel section (compute is what is left).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSplit {
    /// The application's own work: the section minus everything below.
    pub compute_s: f64,
    /// In the SIGSEGV handler: fetching pages (GETP), making twins.
    pub fault_s: f64,
    /// In lock, unlock and barrier: diffs sent, grants waited for.
    pub sync_s: f64,
    /// Serving other ranks' requests on the computing thread (sigio's
    /// handler, poll's checks); 0 where threads serve.
    pub serve_s: f64,
    /// Blocked waiting for a reply (inside fault and sync, counted there
    /// too: the paper's "wait").
    pub wait_s: f64,
}

/// CPU time of one thread of a rank (`main`, `comm`, `send`, `recv`,
/// `serve`), from the kernel's per-thread clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadTime {
    pub name: String,
    pub cpu_s: f64,
}

/// One rank's statistics over the parallel section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankStats {
    pub rank: usize,
    pub pid: u32,
    /// The application's operations on this rank (grid points, block
    /// updates, tree nodes).
    pub work: u64,
    /// The parallel section, CLOCK_MONOTONIC seconds.
    pub start_s: f64,
    pub end_s: f64,
    pub messages_sent: u64,
    pub bytes_sent: u64,
    pub messages_received: u64,
    pub bytes_received: u64,
    pub retransmissions: u64,
    pub duplicates_dropped: u64,
    /// Datagrams dropped by injected loss (`--param loss=P`).
    pub injected_drops: u64,
    /// Pages fetched from their home (GETP).
    pub getp: u64,
    /// Diffs sent to homes.
    pub diffs: u64,
    pub locks: u64,
    pub barriers: u64,
    /// Requests this rank served for others.
    pub served: u64,
    pub time: TimeSplit,
    pub threads: Vec<ThreadTime>,
}

/// A whole run, gathered at rank 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub app: String,
    pub comm: Comm,
    pub ranks: usize,
    /// First rank's start to last rank's end of the parallel section.
    pub wall_s: f64,
    /// The parallel result checked against a sequential run of the same
    /// input (at rank 0, after the section).
    pub verified: bool,
    /// Why it did not verify, or what was compared.
    pub verify_detail: String,
    pub checksum: f64,
    /// Operations of all ranks.
    pub work: u64,
    pub per_rank: Vec<RankStats>,
}

impl RunReport {
    /// The sample's extras: each statistic summed over ranks (`getp`,
    /// `messages`, `compute_s`, `thread.send_s`, ...), and per rank
    /// (`rank.1.wait_s`), so a table can show both the total and the split.
    pub fn extras(&self) -> BTreeMap<String, f64> {
        let mut x = BTreeMap::new();
        let mut add = |k: String, v: f64| *x.entry(k).or_insert(0.0) += v;
        for r in &self.per_rank {
            let mut both = |name: &str, v: f64| {
                add(name.to_string(), v);
                add(dsm::rank_key(r.rank, name), v);
            };
            both(dsm::MESSAGES, r.messages_sent as f64);
            both(dsm::BYTES, r.bytes_sent as f64);
            both(dsm::RETRANSMISSIONS, r.retransmissions as f64);
            both(dsm::DUPLICATES, r.duplicates_dropped as f64);
            both(dsm::INJECTED_DROPS, r.injected_drops as f64);
            both(dsm::GETP, r.getp as f64);
            both(dsm::DIFFS, r.diffs as f64);
            both(dsm::LOCKS, r.locks as f64);
            both(dsm::BARRIERS, r.barriers as f64);
            both(dsm::SERVED, r.served as f64);
            both(dsm::COMPUTE_S, r.time.compute_s);
            both(dsm::FAULT_S, r.time.fault_s);
            both(dsm::SYNC_S, r.time.sync_s);
            both(dsm::SERVE_S, r.time.serve_s);
            both(dsm::WAIT_S, r.time.wait_s);
            for t in &r.threads {
                both(&dsm::thread_key(&t.name), t.cpu_s);
            }
        }
        x.insert(
            dsm::VERIFIED.to_string(),
            if self.verified { 1.0 } else { 0.0 },
        );
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extras_sum_over_ranks_and_keep_each_rank() {
        let rank = |r: usize, getp: u64, wait: f64| RankStats {
            rank: r,
            getp,
            time: TimeSplit {
                wait_s: wait,
                ..TimeSplit::default()
            },
            threads: vec![ThreadTime {
                name: "send".into(),
                cpu_s: 0.5,
            }],
            ..RankStats::default()
        };
        let report = RunReport {
            app: "sor".into(),
            comm: Comm::Thr2,
            ranks: 2,
            wall_s: 1.0,
            verified: true,
            verify_detail: String::new(),
            checksum: 0.0,
            work: 10,
            per_rank: vec![rank(0, 3, 0.25), rank(1, 4, 0.5)],
        };
        let x = report.extras();
        assert_eq!(x["getp"], 7.0);
        assert_eq!(x["rank.1.getp"], 4.0);
        assert_eq!(x["wait_s"], 0.75);
        assert_eq!(x["thread.send_s"], 1.0);
        assert_eq!(x["verified"], 1.0);
    }
}
