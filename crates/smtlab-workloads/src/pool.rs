//! The task pool shared by `parfib`, `sumeuler` and `mandel`: one code path
//! for threads, processes and hybrids.
//!
//! Each problem instance is cut into `T` top-level tasks; instance `i`, task
//! `t` is task number `i*T + t` of the sample's shared [`TaskQueue`] (an
//! atomic counter, in shared memory across processes), so every worker of
//! every process takes top-level tasks dynamically, one at a time, until the
//! counter passes `work*T`. Inside a process a claimed task is split further
//! (binary splits down to leaves) on the claiming thread's own deque
//! (crossbeam-deque, LIFO for its owner) where the process's other threads
//! can steal the oldest, largest pieces. Processes never steal from each
//! other: top-level tasks are small enough that dynamic dealing balances
//! them.
//!
//! Termination: a thread returns 0 from `step` only when the queue is
//! exhausted, every deque of its process is empty, and no thread of its
//! process holds a splittable task it has not yet split (`splittable`
//! counts tasks that are in a deque or being descended and can still be
//! split; it is raised *before* a claim so a thread seeing the queue empty
//! cannot miss a task another thread just claimed). Leaves being computed do
//! not hold it up: they cannot be shared anyway.
//!
//! Verification: every worker adds its partial result to shared word
//! [`W_TOTAL`] at `finish`, then counts itself in [`W_FINISHED`]; the last
//! of the sample's workers to finish records the grand total, which its
//! process's `verify` compares with `work` times the value rank 0 computed
//! independently at set-up (closed form, sieve or sequential run) and
//! published in [`W_EXPECTED`].

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_deque::{Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;

use crate::error::{WorkloadError, WrongResult};
use crate::{ProcessContext, ProcessState, TaskQueue, WorkerResult, WorkerSlot, WorkerState};
use smtlab_types::Mode;

/// Shared word: sum of the workers' partial results (mod 2^64).
pub const W_TOTAL: usize = 1;
/// Shared word: workers that have finished.
pub const W_FINISHED: usize = 2;
/// Shared word: the expected result of one instance, published by rank 0.
pub const W_EXPECTED: usize = 3;
/// Shared word: 1 once [`W_EXPECTED`] is set.
pub const W_EXPECTED_SET: usize = 4;

/// A problem the pool solves: top-level tasks, binary splits and leaves.
pub trait Job: Send + Sync + 'static {
    type Task: Send + 'static;
    const NAME: &'static str;
    /// Top-level tasks per instance.
    fn tasks_per_instance(&self) -> u64;
    /// Top-level task `t` (0..tasks_per_instance) of an instance.
    fn top(&self, t: u64) -> Self::Task;
    /// Whether `task` is split further rather than run as a leaf.
    fn splittable(&self, task: &Self::Task) -> bool;
    /// Split a splittable task: the part to continue with, the part to
    /// offer to thieves, and the split's own contribution to the result.
    fn split(&self, task: Self::Task) -> (Self::Task, Self::Task, u64);
    /// Run a leaf: its contribution to the result (added mod 2^64).
    fn leaf(&self, task: Self::Task) -> u64;
    /// Added once per instance (by whoever takes its task 0).
    fn base(&self) -> u64 {
        0
    }
    /// The result of one instance, computed independently (set-up time).
    fn expected(&self) -> u64;
    /// What the job is, for error messages (`nfib(44), threshold 20`).
    fn describe(&self) -> String;
}

/// Total instances from the mode: fixed work only.
pub fn instances(name: &str, mode: Mode) -> Result<u64, WorkloadError> {
    match mode {
        Mode::FixedWork { work } if work >= 1 => Ok(work),
        Mode::FixedWork { .. } => Err(WorkloadError::Work(format!(
            "--work: {name} needs at least 1 instance"
        ))),
        Mode::FixedTime { .. } => Err(WorkloadError::Work(format!(
            "{name} solves a fixed problem (its metric is the wall time): use --work, not --duration"
        ))),
    }
}

pub struct Pool<J: Job> {
    job: J,
    queue: TaskQueue,
    per_instance: u64,
    total_tasks: u64,
    instances: u64,
    workers: usize,
    corrupt: bool,
    stealers: Vec<Stealer<J::Task>>,
    /// Each thread's own deque, taken by `worker()` on that thread.
    deques: Mutex<Vec<Option<Worker<J::Task>>>>,
    /// Own cache line: touched by every split, not by the leaves.
    splittable: CachePadded<AtomicU64>,
    /// The grand total, if the sample's last finisher is in this process.
    grand_total: Mutex<Option<u64>>,
}

/// Build the process's pool; rank 0 publishes the expected result.
pub fn setup<J: Job>(
    job: J,
    ctx: &ProcessContext,
    corrupt: bool,
) -> Result<Box<dyn ProcessState>, WorkloadError> {
    let instances = instances(J::NAME, ctx.mode)?;
    let per_instance = job.tasks_per_instance();
    let total_tasks = instances
        .checked_mul(per_instance)
        .ok_or_else(|| WorkloadError::Work(format!("--work {instances}: too many instances")))?;
    if ctx.rank == 0 {
        // Outside the measured window: every other process waits for `go`,
        // which comes only after rank 0 is ready.
        ctx.queue
            .word(W_EXPECTED)
            .store(job.expected(), Ordering::SeqCst);
        ctx.queue.word(W_EXPECTED_SET).store(1, Ordering::SeqCst);
    }
    let deques: Vec<Worker<J::Task>> = (0..ctx.threads).map(|_| Worker::new_lifo()).collect();
    let stealers = deques.iter().map(Worker::stealer).collect();
    Ok(Box::new(PoolProcess(Arc::new(Pool {
        job,
        queue: ctx.queue.clone(),
        per_instance,
        total_tasks,
        instances,
        workers: ctx.workers,
        corrupt,
        stealers,
        deques: Mutex::new(deques.into_iter().map(Some).collect()),
        splittable: CachePadded::new(AtomicU64::new(0)),
        grand_total: Mutex::new(None),
    }))))
}

struct PoolProcess<J: Job>(Arc<Pool<J>>);

impl<J: Job> ProcessState for PoolProcess<J> {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        let local = self
            .0
            .deques
            .lock()
            .expect("not poisoned")
            .get_mut(slot.thread)
            .and_then(Option::take)
            .ok_or_else(|| WorkloadError::Setup(format!("no deque for thread {}", slot.thread)))?;
        Ok(Box::new(PoolWorker {
            pool: self.0.clone(),
            local,
            thread: slot.thread,
            worker: slot.worker,
            exhausted: false,
            sum: 0,
            leaves: 0,
        }))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        let p = &self.0;
        let name = J::NAME;
        if results.is_empty() {
            return Err(format!("{name}: no worker results").into());
        }
        let Some(total) = *p.grand_total.lock().expect("not poisoned") else {
            // The sample's last finisher is in another process, which checks
            // the grand total; nothing here is complete enough to check.
            return Ok(());
        };
        let dealt = p.queue.claim(0);
        if dealt < p.total_tasks {
            return Err(format!(
                "{name}: only {dealt} of {} tasks were taken from the queue",
                p.total_tasks
            )
            .into());
        }
        if p.queue.word(W_EXPECTED_SET).load(Ordering::SeqCst) != 1 {
            return Err(format!("{name}: the expected result was never published").into());
        }
        let one = p.queue.word(W_EXPECTED).load(Ordering::SeqCst);
        let want = one.wrapping_mul(p.instances);
        if total != want {
            return Err(format!(
                "{name}: wrong result: {} over {} instance(s) gave {total}, expected {want} \
                 ({one} each)",
                p.job.describe(),
                p.instances
            )
            .into());
        }
        Ok(())
    }
}

struct PoolWorker<J: Job> {
    pool: Arc<Pool<J>>,
    local: Worker<J::Task>,
    thread: usize,
    worker: usize,
    /// The queue ran dry once: it never refills, so stop asking.
    exhausted: bool,
    sum: u64,
    leaves: u64,
}

impl<J: Job> PoolWorker<J> {
    /// Split `task` down to a leaf, offering the other halves to thieves,
    /// and run the leaf. `counted`: `task` is in `splittable`.
    fn descend(&mut self, mut task: J::Task, counted: bool) {
        let p = &*self.pool;
        let was_splittable = p.job.splittable(&task);
        while p.job.splittable(&task) {
            let (keep, offer, own) = p.job.split(task);
            self.sum = self.sum.wrapping_add(own);
            if p.job.splittable(&offer) {
                p.splittable.fetch_add(1, Ordering::SeqCst);
            }
            self.local.push(offer);
            task = keep;
        }
        if counted && was_splittable {
            p.splittable.fetch_sub(1, Ordering::SeqCst);
        }
        self.sum = self.sum.wrapping_add(p.job.leaf(task));
        self.leaves += 1;
    }

    /// A top-level task from the shared queue, already counted in
    /// `splittable` if it can be split.
    fn claim(&mut self) -> Option<J::Task> {
        if self.exhausted {
            return None;
        }
        let p = &*self.pool;
        // Count it before claiming (see the module comment).
        p.splittable.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let id = p.queue.next();
        fence(Ordering::SeqCst);
        if id >= p.total_tasks {
            p.splittable.fetch_sub(1, Ordering::SeqCst);
            self.exhausted = true;
            return None;
        }
        let t = id % p.per_instance;
        if t == 0 {
            self.sum = self.sum.wrapping_add(p.job.base());
        }
        let task = p.job.top(t);
        if !p.job.splittable(&task) {
            p.splittable.fetch_sub(1, Ordering::SeqCst);
        }
        Some(task)
    }

    /// A task stolen from another thread of this process (counted in
    /// `splittable` by its owner if splittable).
    fn steal(&self) -> Option<J::Task> {
        let p = &*self.pool;
        let n = p.stealers.len();
        loop {
            let mut retry = false;
            for k in 1..n {
                match p.stealers[(self.thread + k) % n].steal() {
                    Steal::Success(t) => return Some(t),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }
}

impl<J: Job> WorkerState for PoolWorker<J> {
    fn step(&mut self, max_ops: u64) -> u64 {
        let start = self.leaves;
        let mut idle = 0u32;
        while self.leaves - start < max_ops.max(1) {
            if let Some(t) = self.local.pop() {
                self.descend(t, true);
            } else if let Some(t) = self.claim() {
                self.descend(t, true);
            } else if let Some(t) = self.steal() {
                idle = 0;
                self.descend(t, true);
            } else if self.leaves > start || self.pool.splittable.load(Ordering::SeqCst) == 0 {
                // Either report what was done (and come back), or nothing is
                // left that this process could still share: done.
                break;
            } else {
                // Another thread is about to push the halves of a task it is
                // splitting (a few nanoseconds), unless it was preempted.
                idle += 1;
                if idle < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        self.leaves - start
    }

    fn finish(&mut self) -> WorkerResult {
        let p = &*self.pool;
        let mut partial = self.sum;
        if p.corrupt && self.worker == 0 {
            partial = partial.wrapping_add(1);
        }
        p.queue.word(W_TOTAL).fetch_add(partial, Ordering::SeqCst);
        let finished = p.queue.word(W_FINISHED).fetch_add(1, Ordering::SeqCst) + 1;
        if finished == p.workers as u64 {
            let total = p.queue.word(W_TOTAL).load(Ordering::SeqCst);
            *p.grand_total.lock().expect("not poisoned") = Some(total);
        }
        WorkerResult {
            ops: self.leaves,
            checksum: partial,
        }
    }
}

/// Test helper: run a job's process with `threads` threads by hand, as the
/// worker loop does, and return the verification outcome.
#[cfg(test)]
pub fn run_by_hand(
    w: &dyn crate::Workload,
    params: &[(&str, &str)],
    threads: usize,
    work: u64,
) -> anyhow::Result<Result<(), WrongResult>> {
    use crate::testing;
    let config = testing::config(w, params)?;
    let ctx = testing::ctx_mode(threads, Mode::FixedWork { work });
    let state: Arc<dyn ProcessState> = Arc::from(w.setup(&config, &ctx)?);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let state = state.clone();
            std::thread::spawn(move || {
                let slot = testing::slot(t, threads);
                let mut ws = state.worker(slot).unwrap();
                while ws.step(7) != 0 {}
                (slot, ws.finish())
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    Ok(state.verify(&results))
}
