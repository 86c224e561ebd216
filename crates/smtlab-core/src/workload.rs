//! The interface every built-in workload implements, so the engine can run
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
//!    completed, so the engine can stop on time (fixed-time) or on quota
//!    (fixed-work) with little overshoot.
//! 4. [`WorkerState::finish`] after the window: the worker's verifiable
//!    result, checked by [`ProcessState::verify`] over all the process's
//!    workers. A wrong result fails the sample instead of reporting a speed.

use std::collections::BTreeMap;

use serde::Serialize;

/// Parameters as given on the command line (`--param k=v`), validated by the
/// workload's [`Workload::params`] table.
pub type Params = BTreeMap<String, String>;

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
    pub default_mode: crate::plan::Mode,
    /// Whether `--duration` (fixed time) makes sense for it.
    pub fixed_time: bool,
    pub work_split: WorkSplit,
    pub time_metric: TimeMetric,
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
    pub mode: crate::plan::Mode,
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

/// A queue of task numbers shared by every worker of a sample, in one
/// process or across processes (a shared-memory word): `next` hands out
/// 0, 1, 2, ... exactly once each, whoever asks. Words 1.. are free for a
/// workload's own cross-worker counters.
#[derive(Clone)]
pub struct TaskQueue {
    words: std::sync::Arc<dyn QueueWords>,
}

/// Storage of a [`TaskQueue`]: process-local atomics or shared memory.
pub trait QueueWords: Send + Sync {
    fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64;
}

impl QueueWords for crate::sys::SharedWords {
    fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        crate::sys::SharedWords::word(self, i)
    }
}

impl QueueWords for Vec<std::sync::atomic::AtomicU64> {
    fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        &self[i]
    }
}

/// Words in a task queue's region.
pub const QUEUE_WORDS: usize = 64;

impl TaskQueue {
    /// A queue private to this process (tests, single-process use).
    pub fn local() -> TaskQueue {
        TaskQueue {
            words: std::sync::Arc::new(
                (0..QUEUE_WORDS)
                    .map(|_| std::sync::atomic::AtomicU64::new(0))
                    .collect::<Vec<_>>(),
            ),
        }
    }

    /// A queue in shared memory, seen by every process mapping it.
    pub fn shared(words: crate::sys::SharedWords) -> TaskQueue {
        TaskQueue {
            words: std::sync::Arc::new(words),
        }
    }

    /// The next task number.
    pub fn next(&self) -> u64 {
        self.claim(1)
    }

    /// Claim `n` consecutive task numbers; returns the first.
    pub fn claim(&self, n: u64) -> u64 {
        self.words
            .word(0)
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed)
    }

    /// A free word for the workload's own use (1..QUEUE_WORDS).
    pub fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        assert!(i >= 1, "word 0 is the queue itself");
        self.words.word(i)
    }
}

impl std::fmt::Debug for TaskQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TaskQueue(next={})",
            self.words
                .word(0)
                .load(std::sync::atomic::Ordering::Relaxed)
        )
    }
}

/// A worker's result after the window, for verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerResult {
    pub ops: u64,
    pub checksum: u64,
}

pub trait Workload: Send + Sync {
    fn info(&self) -> WorkloadInfo;

    /// Set up once per process. `params` has every declared parameter
    /// (defaults filled in). Errors name the parameter at fault.
    fn setup(&self, params: &Params, ctx: &ProcessContext)
        -> anyhow::Result<Box<dyn ProcessState>>;

    /// Check `params` (every declared parameter, defaults filled in) as
    /// [`Workload::setup`] will, building nothing. `smtlab run` calls it
    /// when the run is planned, so a value out of range is refused there
    /// (exit 2, nothing started) instead of failing every sample; each
    /// workload's `setup` and `check` share one parse, so they cannot
    /// disagree.
    fn check(&self, params: &Params) -> anyhow::Result<()>;
}

pub trait ProcessState: Send + Sync {
    /// Per-worker set-up, called on the worker's own (pinned) thread.
    fn worker(&self, slot: WorkerSlot) -> anyhow::Result<Box<dyn WorkerState>>;

    /// Check the results of this process's workers; `Err` says what is wrong.
    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), String>;

    /// What this process observed besides operations, after the window and
    /// after [`ProcessState::verify`]: named **additive** counts (an
    /// allocator probe's `live_objects`, `foreign_objects`, `frames`), which
    /// the engine sums over the sample's processes, stores with the sample
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
/// own: [`Workload::check`].
pub fn check_param_types(info: &WorkloadInfo, given: &Params) -> Result<(), String> {
    for p in &info.params {
        let Some(v) = given.get(p.name) else { continue };
        let one = |val: &str| Params::from([(p.name.to_string(), val.to_string())]);
        if param_u64(&one(p.default), p.name).is_ok() {
            param_u64(&one(v), p.name).map_err(|_| {
                format!(
                    "--param {}={v}: workload `{}` expects a non-negative integer here \
                     (default {})",
                    p.name, info.name, p.default
                )
            })?;
        } else if crate::workloads::stream::param_bytes(&one(p.default), p.name).is_ok() {
            crate::workloads::stream::param_bytes(&one(v), p.name).map_err(|_| {
                format!(
                    "--param {}={v}: workload `{}` expects a size in bytes with an optional \
                     K/M/G suffix here (default {})",
                    p.name, info.name, p.default
                )
            })?;
        }
    }
    Ok(())
}

/// Fill in defaults and refuse unknown parameters, naming them.
pub fn resolve_params(info: &WorkloadInfo, given: &Params) -> Result<Params, String> {
    for k in given.keys() {
        if !info.params.iter().any(|p| p.name == k) {
            let valid: Vec<&str> = info.params.iter().map(|p| p.name).collect();
            return Err(format!(
                "--param {k}: workload `{}` has no parameter `{k}`; valid: {}",
                info.name,
                if valid.is_empty() {
                    "none".to_string()
                } else {
                    valid.join(", ")
                }
            ));
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

/// Parse a parameter as an unsigned integer, naming it when malformed.
pub fn param_u64(params: &Params, name: &str) -> anyhow::Result<u64> {
    let v = params
        .get(name)
        .ok_or_else(|| anyhow::anyhow!("--param {name}: missing"))?;
    v.replace('_', "")
        .parse()
        .map_err(|_| anyhow::anyhow!("--param {name}={v}: expected a non-negative integer"))
}

/// The built-in workloads.
pub fn builtin(name: &str) -> Option<Box<dyn Workload>> {
    match name {
        "jbb" => Some(Box::new(crate::workloads::jbb::Jbb)),
        "spin" => Some(Box::new(crate::workloads::spin::Spin)),
        "parfib" => Some(Box::new(crate::workloads::parfib::Parfib)),
        "sumeuler" => Some(Box::new(crate::workloads::sumeuler::SumEuler)),
        "mandel" => Some(Box::new(crate::workloads::mandel::Mandel)),
        "stream" => Some(Box::new(crate::workloads::stream::Stream)),
        "latency" => Some(Box::new(crate::workloads::latency::Latency)),
        "allocprobe" => Some(Box::new(crate::workloads::allocprobe::AllocProbe)),
        "larson" => Some(Box::new(crate::workloads::larson::Larson)),
        "xmalloc" => Some(Box::new(crate::workloads::xmalloc::Xmalloc)),
        "cache_scratch" => Some(Box::new(crate::workloads::cache_scratch::CacheScratch)),
        "cache_thrash" => Some(Box::new(crate::workloads::cache_thrash::CacheThrash)),
        "mstress" => Some(Box::new(crate::workloads::mstress::Mstress)),
        _ => None,
    }
}

/// Names of the built-in workloads, for error messages and `smtlab list`.
pub fn builtin_names() -> Vec<&'static str> {
    vec![
        "jbb",
        "spin",
        "stream",
        "latency",
        "parfib",
        "sumeuler",
        "mandel",
        "allocprobe",
        "larson",
        "xmalloc",
        "cache_scratch",
        "cache_thrash",
        "mstress",
    ]
}

/// Fixtures for the workloads' unit tests: one process, a private task
/// queue, workers numbered like threads.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::plan::Mode;

    /// A single process running `threads` workers in `mode`.
    pub fn ctx_mode(threads: usize, mode: Mode) -> ProcessContext {
        ProcessContext {
            rank: 0,
            processes: 1,
            threads,
            workers: threads,
            mode,
            queue: TaskQueue::local(),
        }
    }

    /// [`ctx_mode`] in fixed-time mode (1 s).
    pub fn ctx(threads: usize) -> ProcessContext {
        ctx_mode(threads, Mode::FixedTime { seconds: 1.0 })
    }

    /// Worker `worker` of `workers`, which is also its thread index.
    pub fn slot(worker: usize, workers: usize) -> WorkerSlot {
        WorkerSlot {
            worker,
            workers,
            thread: worker,
            quota: None,
        }
    }

    /// `kv` with the workload's defaults filled in.
    pub fn params(info: &WorkloadInfo, kv: &[(&str, &str)]) -> Result<Params, String> {
        let given = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve_params(info, &given)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One out-of-range value per workload parameter that has a range (or
    /// a relation to another): `check` must refuse each at plan time.
    const OUT_OF_RANGE: &[(&str, &str, &str)] = &[
        ("jbb", "items", "0"),
        ("jbb", "customers", "0"),
        ("jbb", "initial_orders", "1000001"),
        ("jbb", "max_orders", "5"),
        ("jbb", "max_history", "10"),
        ("jbb", "corrupt", "2"),
        ("spin", "corrupt", "2"),
        ("stream", "size", "1000"),
        ("stream", "corrupt", "3"),
        ("latency", "size", "100"),
        ("latency", "size", "1000"),
        ("latency", "corrupt", "2"),
        ("parfib", "n", "91"),
        ("parfib", "threshold", "0"),
        ("parfib", "corrupt", "2"),
        ("sumeuler", "n", "100000001"),
        ("sumeuler", "chunk", "0"),
        ("sumeuler", "corrupt", "2"),
        ("mandel", "width", "0"),
        ("mandel", "height", "1048577"),
        ("mandel", "iters", "0"),
        ("mandel", "corrupt", "2"),
        ("allocprobe", "live", "0"),
        ("allocprobe", "min_size", "4"),
        ("allocprobe", "max_size", "8"),
        ("allocprobe", "migrate", "2"),
        ("allocprobe", "migrate_every", "0"),
        ("allocprobe", "corrupt", "2"),
        ("larson", "slots", "0"),
        ("larson", "min_size", "2000000"),
        ("larson", "rounds", "0"),
        ("larson", "touch", "4"),
        ("larson", "corrupt", "2"),
        ("xmalloc", "batch", "0"),
        ("xmalloc", "depth", "65537"),
        ("xmalloc", "max_size", "2000000"),
        ("xmalloc", "touch", "0"),
        ("xmalloc", "corrupt", "2"),
        ("cache_scratch", "size", "0"),
        ("cache_scratch", "writes", "0"),
        ("cache_scratch", "corrupt", "2"),
        ("cache_thrash", "size", "2000000"),
        ("cache_thrash", "writes", "0"),
        ("cache_thrash", "corrupt", "2"),
        ("mstress", "batch", "0"),
        ("mstress", "keep", "101"),
        ("mstress", "min_size", "0"),
        ("mstress", "corrupt", "2"),
    ];

    #[test]
    fn every_workload_accepts_its_defaults() {
        for name in builtin_names() {
            let w = builtin(name).unwrap();
            let params = resolve_params(&w.info(), &Params::new()).unwrap();
            w.check(&params)
                .unwrap_or_else(|e| panic!("{name}: its defaults are refused: {e:#}"));
        }
    }

    #[test]
    fn out_of_range_values_are_refused_naming_the_parameter() {
        for &(name, key, value) in OUT_OF_RANGE {
            let w = builtin(name).unwrap();
            let given = Params::from([(key.to_string(), value.to_string())]);
            let params = resolve_params(&w.info(), &given).unwrap();
            let err = w
                .check(&params)
                .expect_err(&format!("{name}: --param {key}={value} accepted"));
            let msg = format!("{err:#}");
            assert!(
                msg.starts_with(&format!("--param {key}={value}:")),
                "{name}: {msg}"
            );
            assert!(!msg.contains('\n'), "{name}: not one line: {msg}");
            // The worker's set-up parses the same way, so it refuses the
            // value with the same words.
            let ctx = testing::ctx(1);
            let setup_err = w.setup(&params, &ctx).err().map(|e| format!("{e:#}"));
            assert_eq!(setup_err.as_deref(), Some(msg.as_str()), "{name}");
        }
    }

    #[test]
    fn every_workload_with_parameters_has_an_out_of_range_case() {
        for name in builtin_names() {
            assert!(
                OUT_OF_RANGE.iter().any(|c| c.0 == name),
                "{name}: no out-of-range case in OUT_OF_RANGE"
            );
        }
    }
}
