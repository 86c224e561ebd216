//! The worker process side of a built-in workload: set up, pin every thread,
//! wait for `go`, run the measured window, verify, report.
//!
//! One worker process runs `threads` worker threads. Each thread pins
//! itself, builds its own workload state (first touch on its NUMA node) and
//! opens its own counters before a barrier; the main thread then says
//! `ready` and waits for smtlab's `go`, which every worker process of the
//! sample receives at the same moment. Set-up is therefore never inside the
//! window, and no worker starts before all are ready.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use crate::error::ExecError;
use crate::protocol::{ProcessMeasurement, ThreadMeasurement, WorkerMsg, WorkerSpec};
use smtlab_counters::memory;
use smtlab_counters::perf_counters::{CounterPlan, ThreadCounters};
use smtlab_counters::rusage::{self, Who};
use smtlab_sys as sys;
use smtlab_types::cpuset::CpuSet;
use smtlab_types::Mode;
use smtlab_workloads::{
    self as workload, ProcessContext, ProcessState, TaskQueue, WorkSplit, WorkerResult, WorkerSlot,
    WorkerState, WorkloadInfo, QUEUE_WORDS,
};

/// Entry point of `smtlab __worker` (and of forked workers): returns the
/// process exit code. Errors are reported to smtlab as a message, then exit 1.
pub fn worker_main(input: &mut dyn BufRead, output: &mut dyn Write) -> i32 {
    let _ = sys::ignore_sigint();
    match run(input, output) {
        Ok(()) => 0,
        Err(e) => {
            let _ = send(output, &WorkerMsg::Error { reason: e.reason() });
            1
        }
    }
}

fn send(output: &mut dyn Write, msg: &WorkerMsg) -> Result<(), ExecError> {
    let mut line = serde_json::to_string(msg)?;
    line.push('\n');
    output.write_all(line.as_bytes())?;
    output.flush()?;
    Ok(())
}

fn read_line(input: &mut dyn BufRead) -> Result<String, ExecError> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Err(ExecError::ControlPipeClosed);
    }
    Ok(line)
}

/// Shared between the main thread and the worker threads of one process.
struct Shared {
    /// Fixed-time end, CLOCK_MONOTONIC seconds as f64 bits; set before `go`.
    deadline: AtomicU64,
    /// Set when any thread failed to set up: nobody runs.
    abort: AtomicBool,
    setup_errors: Mutex<Vec<String>>,
}

/// How long one `step` should take: long enough that reading the clock
/// between steps costs nothing measurable, short enough that a fixed-time
/// window overshoots by at most about a millisecond.
const STEP_MIN_S: f64 = 100e-6;
const STEP_MAX_S: f64 = 1e-3;

/// One worker process: its spec read, the workload set up, its threads
/// started and set up, `ready` said, then on `go` the measured window,
/// and the report.
fn run(input: &mut dyn BufRead, output: &mut dyn Write) -> Result<(), ExecError> {
    let spec: WorkerSpec = serde_json::from_str(&read_line(input)?)
        .map_err(|source| ExecError::WorkerSpec { source })?;
    let w = workload::builtin(&spec.workload).ok_or_else(|| ExecError::UnknownWorkload {
        name: spec.workload.clone(),
    })?;
    let queue = open_queue(spec.queue.as_deref())?;
    let info = w.info();
    let ctx = ProcessContext {
        rank: spec.rank,
        processes: spec.processes,
        threads: spec.threads,
        workers: spec.workers,
        mode: spec.mode,
        queue,
    };
    let state: Arc<dyn ProcessState> = Arc::from(w.setup(&spec.config, &ctx)?);
    let plan = spec.counters.then(CounterPlan::probe).map(Arc::new);
    let crew = Crew::start(&spec, &info, &state, plan.as_ref())?;

    crew.ready.wait();
    let errors = crew
        .shared
        .setup_errors
        .lock()
        .expect("not poisoned")
        .clone();
    if !errors.is_empty() {
        crew.abort();
        for h in crew.handles {
            let _ = h.join();
        }
        return Err(ExecError::WorkerSetup(errors));
    }
    send(
        output,
        &WorkerMsg::Ready {
            pid: std::process::id(),
        },
    )?;
    let line = read_line(input)?;
    if line.trim() != "go" {
        crew.abort();
        return Err(ExecError::NotGo {
            line: line.trim().into(),
        });
    }
    let before = rusage::snapshot(Who::Process).map_err(|source| ExecError::Rusage { source })?;
    if let Mode::FixedTime { seconds } = spec.mode {
        crew.shared
            .deadline
            .store((sys::monotonic_s() + seconds).to_bits(), Ordering::SeqCst);
    }
    crew.go.wait();
    let mut threads = Vec::with_capacity(spec.threads);
    let mut results = Vec::with_capacity(spec.threads);
    for h in crew.handles {
        let (report, slot, result) = h.join().map_err(|_| ExecError::WorkerPanicked)??;
        threads.push(report);
        results.push((slot, result));
    }
    let after = rusage::snapshot(Who::Process).map_err(|source| ExecError::Rusage { source })?;
    let mut usage = after.since(&before).to_resource_usage();
    if let Ok(m) = memory::memory_of(std::process::id() as i32) {
        usage.pss_kb = Some(m.pss_kb);
        usage.anon_huge_kb = Some(m.anon_huge_kb);
    }
    let wrong_result = state.verify(&results).err().map(|e| e.0);
    // After verify: a workload may count what verification left in place.
    let extras = state.extras(&results).into_iter().collect();
    drop(state);
    send(
        output,
        &WorkerMsg::Done(Box::new(ProcessMeasurement {
            pid: std::process::id(),
            threads,
            usage,
            wrong_result,
            extras,
        })),
    )
}

/// The sample's task queue: the file smtlab made, mapped (shared by every
/// worker process), or one private to this process.
fn open_queue(path: Option<&Path>) -> Result<TaskQueue, ExecError> {
    Ok(match path {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map_err(|source| ExecError::OpenQueue {
                    path: path.to_path_buf(),
                    source,
                })?;
            TaskQueue::shared(sys::SharedWords::map(&file, QUEUE_WORDS)?)
        }
        None => TaskQueue::local(),
    })
}

/// What a worker thread gives back: its measurement, its slot and its
/// workload's result.
type ThreadEnd = Result<(ThreadMeasurement, WorkerSlot, WorkerResult), ExecError>;

/// The worker threads as the main thread holds them: the barriers they
/// meet it at (set up; go), what they share, and their handles.
struct Crew {
    ready: Arc<Barrier>,
    go: Arc<Barrier>,
    shared: Arc<Shared>,
    handles: Vec<std::thread::JoinHandle<ThreadEnd>>,
}

impl Crew {
    /// One thread per worker of this process, each given its slot (its
    /// quota of a fixed amount of work split by quota), its CPU, and
    /// whether it runs until the shared queue is empty.
    fn start(
        spec: &WorkerSpec,
        info: &WorkloadInfo,
        state: &Arc<dyn ProcessState>,
        plan: Option<&Arc<CounterPlan>>,
    ) -> Result<Crew, ExecError> {
        let n = spec.threads;
        let ready = Arc::new(Barrier::new(n + 1));
        let go = Arc::new(Barrier::new(n + 1));
        let shared = Arc::new(Shared {
            deadline: AtomicU64::new(f64::INFINITY.to_bits()),
            abort: AtomicBool::new(false),
            setup_errors: Mutex::new(Vec::new()),
        });
        let mut handles = Vec::with_capacity(n);
        for t in 0..n {
            let slot = WorkerSlot {
                worker: spec.worker_of(t),
                workers: spec.workers,
                thread: t,
                quota: match (spec.mode, info.work_split) {
                    (Mode::FixedWork { work }, WorkSplit::Quota) => {
                        Some(quota(work, spec.workers, spec.worker_of(t)))
                    }
                    _ => None,
                },
            };
            let until_empty =
                matches!(spec.mode, Mode::FixedWork { .. }) && info.work_split == WorkSplit::Queue;
            let cpu = spec.cpus.as_ref().map(|c| c[t]);
            let (state, plan, ready, go, shared) = (
                state.clone(),
                plan.cloned(),
                ready.clone(),
                go.clone(),
                shared.clone(),
            );
            let h = std::thread::Builder::new()
                .name(format!("worker-{}", slot.worker))
                .spawn(move || {
                    worker_thread(
                        t,
                        slot,
                        until_empty,
                        cpu,
                        &*state,
                        plan.as_deref(),
                        &ready,
                        &go,
                        &shared,
                    )
                })
                .map_err(|source| ExecError::WorkerThread { source })?;
            handles.push(h);
        }
        Ok(Crew {
            ready,
            go,
            shared,
            handles,
        })
    }

    /// Nobody runs: the threads, released from `go`, see the abort and
    /// end without measuring.
    fn abort(&self) {
        self.shared.abort.store(true, Ordering::SeqCst);
        self.go.wait();
    }
}

/// Worker `w`'s share of `work` operations split over `workers`.
pub fn quota(work: u64, workers: usize, w: usize) -> u64 {
    let (n, w) = (workers as u64, w as u64);
    work / n + u64::from(w < work % n)
}

#[allow(clippy::too_many_arguments)]
fn worker_thread(
    t: usize,
    slot: WorkerSlot,
    until_empty: bool,
    cpu: Option<u32>,
    state: &dyn ProcessState,
    plan: Option<&CounterPlan>,
    ready: &Barrier,
    go: &Barrier,
    shared: &Shared,
) -> Result<(ThreadMeasurement, WorkerSlot, WorkerResult), ExecError> {
    let setup = (|| -> Result<(Box<dyn WorkerState>, Option<ThreadCounters>), ExecError> {
        if let Some(c) = cpu {
            sys::set_affinity(0, &CpuSet::from_iter([c])).map_err(|source| {
                ExecError::PinWorker {
                    worker: slot.worker,
                    cpu: c,
                    source,
                }
            })?;
        }
        let ws = state.worker(slot)?;
        let counters = plan.map(ThreadCounters::open_for_current_thread);
        Ok((ws, counters))
    })();
    if let Err(e) = &setup {
        shared
            .setup_errors
            .lock()
            .expect("not poisoned")
            .push(format!("worker {}: {}", slot.worker, e.reason()));
    }
    ready.wait();
    go.wait();
    if shared.abort.load(Ordering::SeqCst) {
        return Err(ExecError::Aborted);
    }
    let (mut ws, mut counters) = setup?;
    if let Some(c) = counters.as_mut() {
        c.enable();
    }
    let deadline = f64::from_bits(shared.deadline.load(Ordering::SeqCst));
    let start = sys::monotonic_s();
    let mut ops = 0u64;
    let mut chunk = 1u64;
    let mut now = start;
    loop {
        let want = match slot.quota {
            Some(q) if ops >= q => break,
            Some(q) => chunk.min(q - ops),
            None if !until_empty && now >= deadline => break,
            None => chunk,
        };
        let done = ws.step(want);
        if done == 0 && until_empty {
            break;
        }
        ops += done;
        let t1 = sys::monotonic_s();
        let took = t1 - now;
        now = t1;
        if took < STEP_MIN_S && chunk < (1 << 30) {
            chunk *= 2;
        } else if took > STEP_MAX_S && chunk > 1 {
            chunk /= 2;
        }
    }
    let end = now;
    let counter_values = match counters.as_mut() {
        Some(c) => {
            c.disable();
            c.read()
        }
        None => Vec::new(),
    };
    let result = ws.finish();
    let tid = nix::unistd::gettid().as_raw() as u32;
    let report = ThreadMeasurement {
        thread: t,
        tid,
        cpu,
        last_cpu: nix::sched::sched_getcpu().ok().map(|c| c as u32),
        ops,
        start_s: start,
        end_s: end,
        counters: counter_values,
    };
    Ok((report, slot, result))
}

#[cfg(test)]
mod tests {
    use super::{quota, run};
    use crate::protocol::{ProcessMeasurement, WorkerMsg, WorkerSpec};
    use smtlab_types::Mode;
    use smtlab_workloads::{Params, WorkloadConfig};

    /// One spin worker process run in this one from a spec carrying
    /// `config`: its report.
    fn spin_worker(config: WorkloadConfig) -> ProcessMeasurement {
        let spec = WorkerSpec {
            workload: "spin".into(),
            config,
            rank: 0,
            threads: 1,
            workers: 1,
            cpus: None,
            mode: Mode::FixedWork { work: 3 },
            counters: false,
            processes: 1,
            queue: None,
        };
        let line = serde_json::to_string(&spec).unwrap();
        let input = format!("{line}\ngo\n");
        let mut output = Vec::new();
        run(&mut input.as_bytes(), &mut output).unwrap();
        let output = String::from_utf8(output).unwrap();
        match serde_json::from_str(output.lines().last().unwrap()).unwrap() {
            WorkerMsg::Done(m) => *m,
            other => panic!("{other:?}"),
        }
    }

    /// A worker sets up from the config planning parsed, carried in its
    /// spec (no `--param` text reaches it): spin's test-only corrupt
    /// switch, set only in the config, fails its result.
    #[test]
    fn a_worker_sets_up_from_the_planned_config_in_its_spec() {
        let spin = smtlab_workloads::builtin("spin").unwrap();
        let parse = |k: &str, v: &str| {
            spin.parse(&Params::from([(k.to_string(), v.to_string())]))
                .unwrap()
        };
        assert_eq!(spin_worker(parse("corrupt", "0")).wrong_result, None);
        let wrong = spin_worker(parse("corrupt", "1")).wrong_result.unwrap();
        assert!(wrong.contains("checksum"), "{wrong}");
    }

    #[test]
    fn quotas_split_work_exactly() {
        for (work, n) in [(10u64, 3usize), (7, 7), (5, 8), (1_000_003, 4)] {
            let parts: Vec<u64> = (0..n).map(|w| quota(work, n, w)).collect();
            assert_eq!(parts.iter().sum::<u64>(), work);
            let (lo, hi) = (parts.iter().min().unwrap(), parts.iter().max().unwrap());
            assert!(hi - lo <= 1);
        }
    }
}
