//! The messages between smtlab and a built-in worker process: one JSON
//! object per line. smtlab writes a [`WorkerSpec`] on the worker's stdin;
//! the worker answers [`WorkerMsg::Ready`] once set up, waits for the line
//! `go`, runs, and answers [`WorkerMsg::Done`] (or [`WorkerMsg::Error`]).
//! Plain JSON lines keep the exec'd and the forked worker identical and make
//! a worker debuggable by hand (`smtlab __worker < spec.json`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use smtlab_types::Mode;
use smtlab_types::{CounterValue, ResourceUsage};
use smtlab_workloads::WorkloadConfig;

/// Everything one worker process needs to know.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerSpec {
    pub workload: String,
    /// The workload's parameters as planning parsed them
    /// (`smtlab_plan::ProgramParams::Builtin`): the worker sets up from
    /// these, reading no `--param` text.
    pub config: WorkloadConfig,
    /// This process's rank, 0..processes.
    pub rank: usize,
    /// Threads (workers) in this process.
    pub threads: usize,
    /// Workers in the whole point.
    pub workers: usize,
    /// `cpus[t]`: the PU thread t pins itself to; `None`: not pinned.
    pub cpus: Option<Vec<u32>>,
    pub mode: Mode,
    /// Open perf counters on every worker thread.
    pub counters: bool,
    /// Processes in the sample.
    pub processes: usize,
    /// File holding the sample's shared task queue (mapped by every
    /// worker process); `None`: a queue private to this process.
    pub queue: Option<std::path::PathBuf>,
}

impl WorkerSpec {
    /// Worker number of this process's thread `t`.
    pub fn worker_of(&self, t: usize) -> usize {
        self.rank * self.threads + t
    }
}

/// One worker thread's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadMeasurement {
    pub thread: usize,
    pub tid: u32,
    pub cpu: Option<u32>,
    pub last_cpu: Option<u32>,
    pub ops: u64,
    pub start_s: f64,
    pub end_s: f64,
    pub counters: Vec<CounterValue>,
}

/// One worker process's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProcessMeasurement {
    pub pid: u32,
    pub threads: Vec<ThreadMeasurement>,
    /// Resource usage over the measured window (CPU time, context switches,
    /// faults) plus peak RSS and, at the end of the window, PSS and
    /// AnonHugePages.
    pub usage: ResourceUsage,
    /// `Some(reason)` when the workload's result did not verify.
    pub wrong_result: Option<String>,
    /// The workload's extra observations for this process
    /// ([`smtlab_workloads::ProcessState::extras`]), to be summed over the
    /// sample's processes. Absent from older workers' reports.
    #[serde(default)]
    pub extras: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerMsg {
    Ready { pid: u32 },
    Done(Box<ProcessMeasurement>),
    Error { reason: String },
}
