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
}

/// Where a worker stands in the point: used to split fixed work and to seed.
#[derive(Debug, Clone, Copy)]
pub struct WorkerSlot {
    /// Worker number 0..workers across all processes.
    pub worker: usize,
    pub workers: usize,
    /// Operations this worker must complete in fixed-work mode.
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

    /// Set up once per process. `params` has every declared parameter
    /// (defaults filled in). Errors name the parameter at fault.
    fn setup(&self, params: &Params) -> anyhow::Result<Box<dyn ProcessState>>;
}

pub trait ProcessState: Send + Sync {
    /// Per-worker set-up, called on the worker's own (pinned) thread.
    fn worker(&self, slot: WorkerSlot) -> anyhow::Result<Box<dyn WorkerState>>;

    /// Check the results of this process's workers; `Err` says what is wrong.
    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), String>;
}

pub trait WorkerState: Send {
    /// Do a bounded amount of work (at most `max_ops` operations, about a
    /// millisecond's worth) and return the operations completed.
    fn step(&mut self, max_ops: u64) -> u64;

    fn finish(&mut self) -> WorkerResult;
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
        "spin" => Some(Box::new(crate::workloads::spin::Spin)),
        _ => None,
    }
}

/// Names of the built-in workloads, for error messages and `smtlab list`.
pub fn builtin_names() -> Vec<&'static str> {
    vec!["spin"]
}
