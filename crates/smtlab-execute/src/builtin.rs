//! smtlab's side of one sample of a built-in workload: start the worker
//! processes (exec of `smtlab __worker`, or fork), wait until every one is
//! set up, say `go` to all at once, collect their reports, and turn them
//! into a [`Sample`](smtlab_types::Sample). A worker that crashes, errs, returns a wrong result or
//! passes the timeout fails the sample with the reason; every worker is
//! reaped before this returns, whatever happened.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::assemble::assemble_sample;
use crate::context::SampleContext;
use crate::error::ExecError;
use crate::protocol::{ProcessMeasurement, WorkerMsg, WorkerSpec};
use smtlab_sys::{self as sys, ChildEnd};
use smtlab_types::SampleStatus;
use smtlab_types::{Outcome, Point, Program, Spawn};
use smtlab_workloads::WorkloadConfig;

/// Set-up may take long (building tables), but not forever: without
/// `--timeout`, it gets this long; with it, `--timeout` bounds the set-up
/// as it bounds the measured run, each phase on its own.
const SETUP_TIMEOUT: Duration = Duration::from_secs(300);
/// How often a wait checks for Ctrl-C.
const POLL: Duration = Duration::from_millis(50);

enum FromWorker {
    Msg(usize, WorkerMsg),
    Garbage(usize, String),
    Eof(usize),
}

struct Worker {
    pid: i32,
    stdin: Option<Box<dyn Write + Send>>,
    stderr_tail: mpsc::Receiver<String>,
}

/// A started worker whose output is not read yet.
struct Spawned {
    pid: i32,
    stdin: Box<dyn Write + Send>,
    stdout: Box<dyn Read + Send>,
    stderr: Box<dyn Read + Send>,
}

/// Run one sample of a built-in workload, whose workers set up from
/// `config`, its parameters as planned.
pub fn run(
    point: &Point,
    config: &WorkloadConfig,
    ctx: &SampleContext,
    seq: usize,
    warmup: bool,
) -> Outcome {
    let Program::Builtin { workload, .. } = &point.program else {
        unreachable!("builtin::run is only called for built-in workloads");
    };
    let (procs, threads) = point.model.shape(point.workers);
    let started_at = sys::unix_now_s();
    let (tx, rx) = mpsc::channel::<FromWorker>();
    let mut failure: Option<(SampleStatus, String)> = None;

    let queue = match QueueFile::create() {
        Ok(q) => q,
        Err(e) => {
            return Outcome::Measured(Box::new(assemble_sample(
                point,
                seq,
                warmup,
                started_at,
                Some((
                    SampleStatus::Failed,
                    format!("creating the task queue: {e}"),
                )),
                &[],
            )))
        }
    };
    let spawned = spawn_workers(point, ctx, procs, &mut failure, |rank| WorkerSpec {
        processes: procs,
        queue: Some(queue.path.clone()),
        workload: workload.clone(),
        config: config.clone(),
        rank,
        threads,
        workers: point.workers,
        cpus: point
            .cpus
            .as_ref()
            .map(|c| c[rank * threads..(rank + 1) * threads].to_vec()),
        mode: point.mode,
        counters: ctx.counters,
    });
    let workers = read_workers(spawned, &tx, &mut failure);
    drop(tx);

    let mut phases = Phases {
        workers,
        rx,
        reports: vec![None; procs],
        ended_first: None,
        failure,
    };
    if phases.failure.is_none() && phases.set_up(ctx).is_err() {
        return Outcome::Interrupted;
    }
    // Every worker has mapped the queue by now: its name can go, so even a
    // kill -9 of smtlab from here on leaves nothing in /dev/shm.
    queue.unlink();
    if phases.failure.is_none() && phases.measure(ctx).is_err() {
        return Outcome::Interrupted;
    }
    if phases.failure.is_some() {
        kill_all(&phases.workers);
    }
    let ends = reap_all(&phases.workers);
    phases.name_a_crash(&ends);
    let reports: Vec<ProcessMeasurement> = phases.reports.into_iter().flatten().collect();
    Outcome::Measured(Box::new(assemble_sample(
        point,
        seq,
        warmup,
        started_at,
        phases.failure,
        &reports,
    )))
}

/// The worker processes, one per rank, each from its `spec`; the first
/// that cannot be started fails the sample and no more are started.
fn spawn_workers(
    point: &Point,
    ctx: &SampleContext,
    procs: usize,
    failure: &mut Option<(SampleStatus, String)>,
    spec: impl Fn(usize) -> WorkerSpec,
) -> Vec<Spawned> {
    let mut spawned: Vec<Spawned> = Vec::with_capacity(procs);
    for rank in 0..procs {
        match spawn(point.spawn, &ctx.exe, ctx.preload_for(point), &spec(rank)) {
            Ok(w) => spawned.push(w),
            Err(e) => {
                *failure = Some((
                    SampleStatus::Failed,
                    format!("starting worker {rank}: {}", e.reason()),
                ));
                break;
            }
        }
    }
    spawned
}

/// Every started worker with its readers, which send its messages to
/// `tx`. Readers start only now: forking while reader threads run could
/// fork with a lock held (see `sys::fork_child`). A reader that cannot be
/// started fails the sample; its worker is still killed and reaped with
/// the others.
fn read_workers(
    spawned: Vec<Spawned>,
    tx: &mpsc::Sender<FromWorker>,
    failure: &mut Option<(SampleStatus, String)>,
) -> Vec<Worker> {
    let mut workers: Vec<Worker> = Vec::with_capacity(spawned.len());
    for (rank, s) in spawned.into_iter().enumerate() {
        let stderr_tail = match start_readers(rank, s.stdout, s.stderr, tx) {
            Ok(tail) => tail,
            Err(e) => {
                // Out of threads (the process limit).
                if failure.is_none() {
                    *failure = Some((
                        SampleStatus::Failed,
                        format!("starting worker {rank}: cannot start a thread to read it: {e}"),
                    ));
                }
                mpsc::channel().1
            }
        };
        workers.push(Worker {
            pid: s.pid,
            stdin: Some(s.stdin),
            stderr_tail,
        });
    }
    workers
}

/// Ctrl-C came during a phase: every worker was killed and reaped.
struct Interrupted;

/// What a sample's two phases (set-up, then the measured run) share: the
/// workers, what they sent, and the first failure, which ends either.
struct Phases {
    workers: Vec<Worker>,
    rx: mpsc::Receiver<FromWorker>,
    reports: Vec<Option<ProcessMeasurement>>,
    /// The worker whose output ended before it reported, if that is what
    /// failed the sample.
    ended_first: Option<usize>,
    failure: Option<(SampleStatus, String)>,
}

impl Phases {
    /// Phase 1: every worker set up and ready, within the set-up limit
    /// (`--timeout`, else [`SETUP_TIMEOUT`]).
    fn set_up(&mut self, ctx: &SampleContext) -> Result<(), Interrupted> {
        let mut ready = 0;
        let setup_limit = ctx.timeout.unwrap_or(SETUP_TIMEOUT);
        let until = Instant::now() + setup_limit;
        while ready < self.workers.len() && self.failure.is_none() {
            match wait_event(&self.rx, until, ctx) {
                Waited::FromWorker(FromWorker::Msg(_, WorkerMsg::Ready { .. })) => ready += 1,
                Waited::FromWorker(e) => self.fail_on(e),
                Waited::Timeout => {
                    self.failure = Some((
                        SampleStatus::Timeout,
                        match ctx.timeout {
                            Some(t) => format!(
                                "workers did not finish setting up within --timeout {} s; killed",
                                t.as_secs_f64()
                            ),
                            None => format!(
                                "workers did not finish setting up within {} s; killed",
                                SETUP_TIMEOUT.as_secs()
                            ),
                        },
                    ))
                }
                Waited::Interrupted => return Err(self.interrupt()),
            }
        }
        Ok(())
    }

    /// Phase 2: go, all at once, then every worker's report, within
    /// `--timeout`.
    fn measure(&mut self, ctx: &SampleContext) -> Result<(), Interrupted> {
        for w in &mut self.workers {
            if let Some(stdin) = w.stdin.as_mut() {
                let _ = stdin.write_all(b"go\n").and_then(|_| stdin.flush());
            }
        }
        let until = ctx
            .timeout
            .map_or(Instant::now() + Duration::from_secs(365 * 86400), |t| {
                Instant::now() + t
            });
        let mut done = 0;
        while done < self.workers.len() && self.failure.is_none() {
            match wait_event(&self.rx, until, ctx) {
                Waited::FromWorker(FromWorker::Msg(rank, WorkerMsg::Done(r))) => {
                    self.reports[rank] = Some(*r);
                    done += 1;
                }
                // A worker that reported closes its pipe as it exits.
                Waited::FromWorker(FromWorker::Eof(rank)) if self.reports[rank].is_some() => {}
                Waited::FromWorker(e) => self.fail_on(e),
                Waited::Timeout => {
                    let t = ctx
                        .timeout
                        .expect("a deadline means a timeout")
                        .as_secs_f64();
                    self.failure = Some((
                        SampleStatus::Timeout,
                        format!("workers did not finish within --timeout {t} s; killed"),
                    ))
                }
                Waited::Interrupted => return Err(self.interrupt()),
            }
        }
        Ok(())
    }

    /// A message a phase did not expect fails the sample; a worker whose
    /// output ended is remembered, for [`name_a_crash`](Self::name_a_crash).
    fn fail_on(&mut self, e: FromWorker) {
        if let FromWorker::Eof(rank) = e {
            self.ended_first = Some(rank);
        }
        self.failure = Some(event_failure(e, &self.workers));
    }

    /// Every worker killed and reaped, on Ctrl-C.
    fn interrupt(&self) -> Interrupted {
        kill_all(&self.workers);
        reap_all(&self.workers);
        Interrupted
    }

    /// A crash is reported by the pipe closing; the wait status (`ends`)
    /// says how. smtlab kills the other workers with SIGKILL once one has
    /// failed, so SIGKILL names the cause only for the worker that ended
    /// first (killed from outside: `kill -9`, the OOM killer).
    fn name_a_crash(&mut self, ends: &[Option<ChildEnd>]) {
        let Some((status, reason)) = &mut self.failure else {
            return;
        };
        if *status != SampleStatus::Failed {
            return;
        }
        for (rank, (w, end)) in self.workers.iter().zip(ends).enumerate() {
            if let Some(ChildEnd::Signaled(sig)) = end {
                if *sig != Signal::SIGKILL as i32 || self.ended_first == Some(rank) {
                    *status = SampleStatus::Crashed;
                    *reason = format!(
                        "worker pid {} killed by signal {}{}",
                        w.pid,
                        sys::signal_name(*sig),
                        stderr_of(w)
                    );
                }
            }
        }
    }
}

enum Waited {
    FromWorker(FromWorker),
    Timeout,
    Interrupted,
}

fn wait_event(rx: &mpsc::Receiver<FromWorker>, until: Instant, ctx: &SampleContext) -> Waited {
    loop {
        if ctx.stop.load(Ordering::SeqCst) {
            return Waited::Interrupted;
        }
        let now = Instant::now();
        if now >= until {
            return Waited::Timeout;
        }
        match rx.recv_timeout(POLL.min(until - now)) {
            Ok(e) => return Waited::FromWorker(e),
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            // Every reader thread ended without a message we were waiting
            // for: treat as the end of the first worker.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Waited::FromWorker(FromWorker::Eof(0))
            }
        }
    }
}

fn event_failure(e: FromWorker, workers: &[Worker]) -> (SampleStatus, String) {
    match e {
        FromWorker::Msg(rank, WorkerMsg::Error { reason }) => {
            (SampleStatus::Failed, format!("worker {rank}: {reason}"))
        }
        FromWorker::Msg(rank, other) => (
            SampleStatus::Failed,
            format!("worker {rank}: unexpected message {other:?}"),
        ),
        FromWorker::Garbage(rank, line) => (
            SampleStatus::Failed,
            format!("worker {rank}: unreadable message `{line}`"),
        ),
        FromWorker::Eof(rank) => (
            SampleStatus::Failed,
            format!(
                "worker {rank} (pid {}) ended without reporting{}",
                workers.get(rank).map_or(0, |w| w.pid),
                workers.get(rank).map(stderr_of).unwrap_or_default()
            ),
        ),
    }
}

fn stderr_of(w: &Worker) -> String {
    let text: String = w.stderr_tail.try_iter().collect();
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        let tail: String = text
            .chars()
            .rev()
            .take(400)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!(": {}", tail.replace('\n', " | "))
    }
}

fn kill_all(workers: &[Worker]) {
    for w in workers {
        sys::kill(w.pid, Signal::SIGKILL);
    }
}

fn reap_all(workers: &[Worker]) -> Vec<Option<ChildEnd>> {
    workers
        .iter()
        .map(|w| sys::wait4(w.pid).ok().map(|(end, _)| end))
        .collect()
}

/// Forward a worker's stdout messages to the channel; keep its stderr tail.
/// Fails when no thread can be started (the process limit counts threads):
/// the sample fails with the reason instead of smtlab panicking.
fn start_readers(
    rank: usize,
    stdout: Box<dyn Read + Send>,
    stderr: Box<dyn Read + Send>,
    tx: &mpsc::Sender<FromWorker>,
) -> std::io::Result<mpsc::Receiver<String>> {
    let tx = tx.clone();
    std::thread::Builder::new()
        .name(format!("worker-{rank}-out"))
        .spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let ev = match serde_json::from_str::<WorkerMsg>(&line) {
                    Ok(m) => FromWorker::Msg(rank, m),
                    Err(_) => FromWorker::Garbage(rank, line),
                };
                if tx.send(ev).is_err() {
                    return;
                }
            }
            let _ = tx.send(FromWorker::Eof(rank));
        })?;
    let (etx, erx) = mpsc::channel();
    std::thread::Builder::new()
        .name(format!("worker-{rank}-err"))
        .spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut buf = String::new();
            while matches!(r.read_line(&mut buf), Ok(n) if n > 0) {
                let _ = etx.send(std::mem::take(&mut buf));
            }
        })?;
    Ok(erx)
}

fn spawn(
    how: Spawn,
    exe: &Path,
    preload: Option<&smtlab_allocators::Preload>,
    spec: &WorkerSpec,
) -> Result<Spawned, ExecError> {
    let mut line = serde_json::to_string(spec)?;
    line.push('\n');
    match how {
        Spawn::Exec => {
            let mut cmd = Command::new(exe);
            cmd.arg("__worker")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if let Some(p) = preload {
                cmd.env("LD_PRELOAD", &p.library);
                cmd.envs(p.env.iter().map(|(k, v)| (k, v)));
            }
            sys::configure_child(&mut cmd, None)?;
            let mut child = cmd.spawn()?;
            let mut stdin = child.stdin.take().expect("piped");
            stdin.write_all(line.as_bytes())?;
            let stdout = child.stdout.take().expect("piped");
            let stderr = child.stderr.take().expect("piped");
            let pid = child.id() as i32;
            // The child is reaped with wait4 by pid; dropping the handle
            // neither waits nor kills.
            drop(child);
            Ok(Spawned {
                pid,
                stdin: Box::new(stdin),
                stdout: Box::new(stdout),
                stderr: Box::new(stderr),
            })
        }
        Spawn::Fork => {
            let (in_r, in_w) = nix::unistd::pipe()?;
            let (out_r, out_w) = nix::unistd::pipe()?;
            let (err_r, err_w) = nix::unistd::pipe()?;
            // The closure owns the child's pipe ends; in the parent it is
            // dropped unused when fork_child returns, closing them there,
            // so the parent sees EOF when the child exits.
            let pid = sys::fork_child(move || {
                let mut input = BufReader::new(std::fs::File::from(in_r));
                let mut output = std::fs::File::from(out_w);
                let _ =
                    nix::unistd::dup2(std::os::fd::AsRawFd::as_raw_fd(&err_w), libc::STDERR_FILENO);
                crate::worker::worker_main(&mut input, &mut output)
            })?;
            let mut stdin = std::fs::File::from(in_w);
            stdin.write_all(line.as_bytes())?;
            Ok(Spawned {
                pid,
                stdin: Box::new(stdin),
                stdout: Box::new(std::fs::File::from(out_r)),
                stderr: Box::new(std::fs::File::from(err_r)),
            })
        }
    }
}

/// The file behind a sample's shared task queue: in `/dev/shm` (memory)
/// when it exists, removed when the sample ends.
struct QueueFile {
    path: std::path::PathBuf,
}

impl QueueFile {
    fn unlink(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// Remove queue files left by smtlab processes that no longer exist
    /// (killed during a sample's set-up).
    fn remove_stale(dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("smtlab-queue-")) else {
                continue;
            };
            let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    fn create() -> std::io::Result<QueueFile> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = Path::new("/dev/shm");
        let dir = if dir.is_dir() {
            dir.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        if n == 0 {
            QueueFile::remove_stale(&dir);
        }
        let path = dir.join(format!("smtlab-queue-{}-{n}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        f.set_len((smtlab_workloads::QUEUE_WORDS * 8) as u64)?;
        Ok(QueueFile { path })
    }
}

impl Drop for QueueFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Phases over workers that are not processes: `pids` as given, an
    /// error output that says `said` for each.
    fn phases(pids: &[i32], failure: Option<(SampleStatus, String)>) -> Phases {
        let workers = pids
            .iter()
            .map(|&pid| {
                let (tx, stderr_tail) = mpsc::channel();
                tx.send("said\n".to_string()).unwrap();
                Worker {
                    pid,
                    stdin: None,
                    stderr_tail,
                }
            })
            .collect();
        Phases {
            workers,
            rx: mpsc::channel().1,
            reports: vec![None; pids.len()],
            ended_first: None,
            failure,
        }
    }

    fn failed() -> Option<(SampleStatus, String)> {
        Some((
            SampleStatus::Failed,
            "worker 1 ended without reporting".into(),
        ))
    }

    #[test]
    fn a_crash_is_named_but_not_the_kills_that_smtlab_sent_after_it() {
        let segv = Some(ChildEnd::Signaled(Signal::SIGSEGV as i32));
        let kill = Some(ChildEnd::Signaled(Signal::SIGKILL as i32));
        let fine = Some(ChildEnd::Exited(0));

        // A segfault is the cause whoever ended first.
        let mut p = phases(&[40, 41], failed());
        p.name_a_crash(&[kill, segv]);
        assert_eq!(
            p.failure,
            Some((
                SampleStatus::Crashed,
                "worker pid 41 killed by signal SIGSEGV: said".into()
            ))
        );

        // SIGKILL names the cause only for the worker that ended first:
        // the others' SIGKILL is smtlab's own.
        let mut p = phases(&[40, 41], failed());
        p.name_a_crash(&[kill, fine]);
        assert_eq!(p.failure, failed());
        let mut p = phases(&[40, 41], failed());
        p.ended_first = Some(0);
        p.name_a_crash(&[kill, fine]);
        assert_eq!(
            p.failure,
            Some((
                SampleStatus::Crashed,
                "worker pid 40 killed by signal SIGKILL: said".into()
            ))
        );

        // A timeout stays a timeout; no failure stays none.
        let timeout = Some((SampleStatus::Timeout, "workers did not finish".to_string()));
        let mut p = phases(&[40], timeout.clone());
        p.name_a_crash(&[segv]);
        assert_eq!(p.failure, timeout);
        let mut p = phases(&[40], None);
        p.name_a_crash(&[segv]);
        assert_eq!(p.failure, None);
    }
}
