//! What one measurement produces: the record types shared by execute,
//! measure, store and analyse.
//!
//! A **sample** is one measured repetition of a point: its wall time and
//! operations, its resource usage summed over the worker processes, the
//! hardware and software counters summed over every worker thread, and one
//! [`WorkerSample`] per worker (thread or process) for fairness. Values the
//! machine cannot give are `None` (resource usage) or a [`CounterValue`] whose
//! status says why — never a zero.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Why a counter has, or has no, value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterStatus {
    /// Counted (possibly multiplexed: see `fraction_running`).
    Ok,
    /// The kernel or hardware has no such event here (no PMU in a VM:
    /// ENOENT, EOPNOTSUPP, EINVAL at open).
    Unsupported,
    /// The event exists but this user may not count it (EACCES/EPERM, e.g.
    /// kernel mode at perf_event_paranoid 2).
    NotPermitted,
    /// Opened but never scheduled on the PMU (multiplexing starved it), or
    /// another failure.
    Error,
}

/// Which privilege levels a counter counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterScope {
    User,
    Kernel,
    /// User and kernel together (software events, which the kernel counts
    /// in both).
    All,
}

impl CounterScope {
    pub fn as_str(self) -> &'static str {
        match self {
            CounterScope::User => "user",
            CounterScope::Kernel => "kernel",
            CounterScope::All => "all",
        }
    }
}

/// One counter of one thread, or summed over threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterValue {
    /// perf's name: `cycles`, `instructions`, `cache-misses`,
    /// `L1-dcache-load-misses`, `dTLB-load-misses`, `context-switches`, ...
    pub name: String,
    pub scope: CounterScope,
    pub status: CounterStatus,
    /// Raw count as read; `None` unless `status` is `Ok`.
    pub raw: Option<u64>,
    /// Count scaled for multiplexing: `raw * time_enabled / time_running`.
    pub value: Option<f64>,
    /// `time_running / time_enabled`: 1.0 when never multiplexed.
    pub fraction_running: Option<f64>,
    /// Why there is no value (`no PMU: ...`, `perf_event_paranoid=2 ...`).
    pub reason: Option<String>,
}

impl CounterValue {
    /// A counter without a value, and why.
    pub fn failed(
        name: &str,
        scope: CounterScope,
        status: CounterStatus,
        reason: String,
    ) -> CounterValue {
        CounterValue {
            name: name.to_string(),
            scope,
            status,
            raw: None,
            value: None,
            fraction_running: None,
            reason: Some(reason),
        }
    }
}

/// Resource usage of a sample, summed over its worker processes (from
/// `getrusage`/`wait4` and `/proc/PID/smaps_rollup`). `None`: not measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceUsage {
    pub user_s: Option<f64>,
    pub sys_s: Option<f64>,
    pub voluntary_cs: Option<u64>,
    pub involuntary_cs: Option<u64>,
    pub minor_faults: Option<u64>,
    pub major_faults: Option<u64>,
    /// CPU migrations (perf software event, summed over threads).
    pub migrations: Option<u64>,
    /// Peak resident set, summed over processes (`ru_maxrss`).
    pub peak_rss_kb: Option<u64>,
    /// Proportional set size, summed over processes: shared pages count
    /// once in total, so thread and process models compare fairly.
    pub pss_kb: Option<u64>,
    /// Transparent huge pages in use (`AnonHugePages`), summed.
    pub anon_huge_kb: Option<u64>,
}

/// One worker (a thread, or a single-threaded process) of a sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerSample {
    /// Worker number 0..N across the whole point.
    pub worker: usize,
    /// Process rank (0..P) and thread index inside it (0..T).
    pub rank: usize,
    pub thread: usize,
    pub pid: u32,
    pub tid: Option<u32>,
    /// The CPU it was pinned to, if pinned.
    pub cpu: Option<u32>,
    /// The CPU it last ran on (from `/proc`), if known.
    pub last_cpu: Option<u32>,
    /// Operations this worker completed in the measured window.
    pub ops: u64,
    /// Its measured window, CLOCK_MONOTONIC seconds (comparable across
    /// processes on one machine).
    pub start_s: f64,
    pub end_s: f64,
    pub counters: Vec<CounterValue>,
}

/// How a sample ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleStatus {
    Ok,
    /// A worker exited with an error (its reason is stored).
    Failed,
    /// A worker was killed by a signal.
    Crashed,
    /// Past `--timeout`: the workers were killed.
    Timeout,
    /// The workload's result did not verify.
    WrongResult,
}

impl SampleStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SampleStatus::Ok => "ok",
            SampleStatus::Failed => "failed",
            SampleStatus::Crashed => "crashed",
            SampleStatus::Timeout => "timeout",
            SampleStatus::WrongResult => "wrong_result",
        }
    }

    pub fn parse(s: &str) -> Option<SampleStatus> {
        Some(match s {
            "ok" => SampleStatus::Ok,
            "failed" => SampleStatus::Failed,
            "crashed" => SampleStatus::Crashed,
            "timeout" => SampleStatus::Timeout,
            "wrong_result" => SampleStatus::WrongResult,
            _ => return None,
        })
    }
}

/// One measured repetition of a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// 0, 1, 2, ... within the point, warm-ups included.
    pub seq: usize,
    /// Warm-up samples are stored but excluded from statistics.
    pub warmup: bool,
    pub status: SampleStatus,
    pub reason: Option<String>,
    /// Unix time the sample started, seconds.
    pub started_at: f64,
    /// Wall time of the measured window (first start to last end).
    pub wall_s: f64,
    /// Operations completed by all workers (built-in workloads).
    pub ops: Option<u64>,
    /// The point's primary metric for this sample (ops/s, seconds, or what
    /// `--metric` read).
    pub metric: Option<f64>,
    pub usage: ResourceUsage,
    /// Counters summed over all worker threads.
    pub counters: Vec<CounterValue>,
    pub workers: Vec<WorkerSample>,
    /// What the workload observed besides operations (an allocator probe's
    /// `live_objects`, `foreign_objects`, ...): additive counts, summed over
    /// the sample's processes. Named by [`crate::extras`]. Empty for most
    /// workloads and for samples stored before extras existed.
    #[serde(default)]
    pub extras: BTreeMap<String, f64>,
}

impl Sample {
    /// A sample that measured nothing (it failed, crashed or timed out
    /// before a result): its status and why, when it started and how long
    /// it ran.
    pub fn without_result(
        seq: usize,
        warmup: bool,
        status: SampleStatus,
        reason: String,
        started_at: f64,
        wall_s: f64,
    ) -> Sample {
        Sample {
            seq,
            warmup,
            status,
            reason: Some(reason),
            started_at,
            wall_s,
            ops: None,
            metric: None,
            usage: ResourceUsage::default(),
            counters: Vec::new(),
            workers: Vec::new(),
            extras: BTreeMap::new(),
        }
    }
}
