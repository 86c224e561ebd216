//! The interface every built-in workload implements, so that execution can run
//! it as threads of one process or as separate processes.
//!
//! A workload's life in one worker process:
//!
//! 1. [`Workload::setup`] once per process, outside the measured window
//!    (build tables, allocate): the result is shared by the process's threads.
//! 2. [`ProcessState::worker`] once per worker thread, on that thread, after
//!    it is pinned (so first-touch puts its memory on its NUMA node), still
//!    outside the window.
//! 3. [`WorkerState::step`] in a loop inside the window: each call does a
//!    small, bounded amount of work and returns how many operations it
//!    completed, so the worker loop can stop on time (fixed-time) or on quota
//!    (fixed-work) with little overshoot.
//! 4. [`WorkerState::finish`] after the window: the worker's verifiable
//!    result, checked by [`ProcessState::verify`] over all the process's
//!    workers. A wrong result fails the sample instead of reporting a speed.

use serde::Serialize;

use smtlab_types::Mode;

use crate::config::WorkloadConfig;
use crate::error::{ParamError, WorkloadError, WrongResult};
use crate::params::{param_bytes, param_u64, Params};
use crate::task_queue::TaskQueue;

/// One parameter a workload accepts.
#[derive(Debug, Clone, Serialize)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

/// How fixed work (`--work W`) is shared among the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkSplit {
    /// W operations split evenly: each worker gets a quota (uniform work,
    /// such as `spin` or `stream`).
    Quota,
    /// W is a number of problem instances whose tasks the workers take from
    /// the shared [`TaskQueue`] until it runs dry (irregular work, such as
    /// `sumeuler` or `mandel`, where a static split would be unfair):
    /// [`WorkerState::step`] returns 0 when no task is left.
    Queue,
}

/// What the primary metric of a fixed-time sample is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TimeMetric {
    /// `ops / wall * scale`, higher is better (`ops/s`, `GB/s`).
    Throughput {
        name: &'static str,
        unit: &'static str,
        scale: f64,
    },
    /// `wall * workers / ops * scale`: time per operation seen by one
    /// worker, lower is better (`ns` per load).
    Latency {
        name: &'static str,
        unit: &'static str,
        scale: f64,
    },
}

impl TimeMetric {
    /// The metric of a fixed-time sample.
    pub fn value(&self, ops: u64, wall_s: f64, workers: usize) -> Option<f64> {
        if ops == 0 || wall_s <= 0.0 {
            return None;
        }
        Some(match *self {
            TimeMetric::Throughput { scale, .. } => ops as f64 / wall_s * scale,
            TimeMetric::Latency { scale, .. } => wall_s * workers as f64 / ops as f64 * scale,
        })
    }
}

impl TimeMetric {
    /// Operations per second under the name `throughput`, in `unit` (what
    /// one operation is: `ops/s`, `tx/s`, `rows/s`...).
    pub const fn throughput(unit: &'static str) -> TimeMetric {
        TimeMetric::Throughput {
            name: "throughput",
            unit,
            scale: 1.0,
        }
    }
}

/// What a workload is, for `smtlab list` and for plans.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: Vec<ParamSpec>,
    /// What one operation is (`1024 dependent multiply-adds`).
    pub operation: &'static str,
    /// How the result is verified.
    pub verification: &'static str,
    /// The mode used when neither `--duration` nor `--work` is given.
    pub default_mode: Mode,
    /// Whether `--duration` (fixed time) makes sense for it.
    pub fixed_time: bool,
    pub work_split: WorkSplit,
    pub time_metric: TimeMetric,
}

impl WorkloadInfo {
    /// What every uniform workload shares: measured for 1 s when neither
    /// `--duration` nor `--work` is given, fixed work split into per-worker
    /// quotas, the fixed-time metric `time_metric`. The rest (name,
    /// summary, params, operation, verification) is left empty for the
    /// workload to fill in, with `..WorkloadInfo::timed(...)`.
    pub fn timed(time_metric: TimeMetric) -> WorkloadInfo {
        WorkloadInfo {
            name: "",
            summary: "",
            params: Vec::new(),
            operation: "",
            verification: "",
            default_mode: Mode::FixedTime { seconds: 1.0 },
            fixed_time: true,
            work_split: WorkSplit::Quota,
            time_metric,
        }
    }

    /// What every irregular workload shares: one problem instance when
    /// neither `--duration` nor `--work` is given, no fixed time, tasks
    /// taken from the shared queue, the metric `time_metric`. The rest is
    /// left empty, as in [`WorkloadInfo::timed`].
    pub fn queued(time_metric: TimeMetric) -> WorkloadInfo {
        WorkloadInfo {
            default_mode: Mode::FixedWork { work: 1 },
            fixed_time: false,
            work_split: WorkSplit::Queue,
            ..WorkloadInfo::timed(time_metric)
        }
    }
}

/// What a worker process knows about its place in the sample, at set-up.
#[derive(Clone)]
pub struct ProcessContext {
    pub rank: usize,
    pub processes: usize,
    /// Worker threads in this process.
    pub threads: usize,
    /// Workers in the whole sample.
    pub workers: usize,
    pub mode: Mode,
    /// The task queue shared by every worker of the sample.
    pub queue: TaskQueue,
}

/// Where a worker stands in the point: used to split fixed work and to seed.
#[derive(Debug, Clone, Copy)]
pub struct WorkerSlot {
    /// Worker number 0..workers across all processes.
    pub worker: usize,
    pub workers: usize,
    /// Thread index inside its process (0..threads).
    pub thread: usize,
    /// Operations this worker must complete in fixed-work mode with
    /// [`WorkSplit::Quota`].
    pub quota: Option<u64>,
}

/// A worker's result after the window, for verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerResult {
    pub ops: u64,
    pub checksum: u64,
}

pub trait Workload: Send + Sync {
    fn info(&self) -> WorkloadInfo;

    /// Parse `params` (as given: defaults are filled in here, unknown names
    /// and values not of their default's type refused) into this
    /// workload's [`WorkloadConfig`], range-checked. Called once, when a
    /// run is planned, so a value out of range is refused there (exit 2,
    /// nothing started) instead of failing every sample; the workers set
    /// up from what it returns.
    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError>;

    /// Set up once per process from `config`, what [`Workload::parse`]
    /// returned. Another workload's config is refused
    /// ([`WorkloadConfig::not_for`]).
    fn setup(
        &self,
        config: &WorkloadConfig,
        ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError>;
}

pub trait ProcessState: Send + Sync {
    /// Per-worker set-up, called on the worker's own (pinned) thread.
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError>;

    /// Check the results of this process's workers; `Err` says what is wrong.
    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult>;

    /// What this process observed besides operations, after the window and
    /// after [`ProcessState::verify`]: named **additive** counts (an
    /// allocator probe's `live_objects`, `foreign_objects`, `frames`), which
    /// execution sums over the sample's processes, stores with the sample
    /// and summarises per point (median over samples). Ratios are not
    /// additive and so are not reported here: the summary derives them from
    /// the summed counts. Most workloads observe nothing extra.
    fn extras(&self, results: &[(WorkerSlot, WorkerResult)]) -> Vec<(String, f64)> {
        let _ = results;
        Vec::new()
    }
}

pub trait WorkerState: Send {
    /// Do a bounded amount of work (at most `max_ops` operations, about a
    /// millisecond's worth) and return the operations completed. With
    /// [`WorkSplit::Queue`] in fixed-work mode, 0 means the queue is empty
    /// and this worker is done.
    fn step(&mut self, max_ops: u64) -> u64;

    fn finish(&mut self) -> WorkerResult;
}

/// Refuse a given value that does not have the type of its default (an
/// integer, or a size like 384MiB), so a typo is refused when the run is
/// planned instead of failing every sample. Ranges are each workload's
/// own: [`Workload::parse`].
pub fn check_param_types(info: &WorkloadInfo, given: &Params) -> Result<(), ParamError> {
    for p in &info.params {
        let Some(v) = given.get(p.name) else { continue };
        let one = |val: &str| Params::from([(p.name.to_string(), val.to_string())]);
        if param_u64(&one(p.default), p.name).is_ok() {
            param_u64(&one(v), p.name).map_err(|_| ParamError::NotAnInteger {
                name: p.name,
                value: v.clone(),
                workload: info.name,
                default: p.default,
            })?;
        } else if param_bytes(&one(p.default), p.name).is_ok() {
            param_bytes(&one(v), p.name).map_err(|_| ParamError::NotASize {
                name: p.name,
                value: v.clone(),
                workload: info.name,
                default: p.default,
            })?;
        }
    }
    Ok(())
}

/// Fill in defaults and refuse unknown parameters, naming them.
pub fn resolve_params(info: &WorkloadInfo, given: &Params) -> Result<Params, ParamError> {
    for k in given.keys() {
        if !info.params.iter().any(|p| p.name == k) {
            let valid: Vec<&str> = info.params.iter().map(|p| p.name).collect();
            return Err(ParamError::Unknown {
                name: k.clone(),
                workload: info.name,
                valid: if valid.is_empty() {
                    "none".to_string()
                } else {
                    valid.join(", ")
                },
            });
        }
    }
    Ok(info
        .params
        .iter()
        .map(|p| {
            (
                p.name.to_string(),
                given
                    .get(p.name)
                    .cloned()
                    .unwrap_or_else(|| p.default.to_string()),
            )
        })
        .collect())
}

/// `given` with the workload's defaults filled in, once its names
/// ([`resolve_params`]) and its values' types ([`check_param_types`]) are
/// checked, in that order: what every workload's [`Workload::parse`] reads
/// its settings from.
pub fn resolve_checked(info: &WorkloadInfo, given: &Params) -> Result<Params, ParamError> {
    let resolved = resolve_params(info, given)?;
    check_param_types(info, given)?;
    Ok(resolved)
}
