//! Fixtures for the workloads' unit tests: one process, a private task
//! queue, workers numbered like threads.

use smtlab_types::Mode;

use crate::error::{ParamError, WorkloadError};
use crate::params::Params;
use crate::task_queue::TaskQueue;
use crate::workload::resolve_params;
use crate::{ProcessContext, WorkerSlot, Workload, WorkloadConfig, WorkloadInfo};

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
pub fn params(info: &WorkloadInfo, kv: &[(&str, &str)]) -> Result<Params, ParamError> {
    let given = kv
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    resolve_params(info, &given)
}

/// `kv` as `workload` parses it (defaults filled in, checked): what its
/// set-up takes.
pub fn config(
    workload: &dyn Workload,
    kv: &[(&str, &str)],
) -> Result<WorkloadConfig, WorkloadError> {
    let given = kv
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    workload.parse(&given)
}

/// `workload` set up with `kv` in one process of `threads` workers, every
/// worker stepped by each of `steps` in turn: each worker's reported
/// operations and checksum (a seeded run's result, to pin).
pub fn seeded_results(
    workload: &dyn Workload,
    kv: &[(&str, &str)],
    threads: usize,
    steps: &[u64],
) -> Vec<(u64, u64)> {
    let p = workload
        .setup(&config(workload, kv).unwrap(), &ctx(threads))
        .unwrap();
    let mut ws: Vec<_> = (0..threads)
        .map(|t| p.worker(slot(t, threads)).unwrap())
        .collect();
    for &n in steps {
        for w in &mut ws {
            w.step(n);
        }
    }
    ws.iter_mut()
        .map(|w| w.finish())
        .map(|r| (r.ops, r.checksum))
        .collect()
}
