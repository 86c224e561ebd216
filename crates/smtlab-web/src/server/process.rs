//! The `process` architecture (Apache prefork): N worker processes, forked
//! after the listening socket is bound, each blocking in `accept` on it and
//! serving the connection it got to the end with the blocking loop of
//! `blocking.rs` before accepting the next. Worker k is pinned to
//! `worker_cpus[k % len]`.
//!
//! # `start` forks: call it only while the process has ONE thread
//!
//! After `fork` only the calling thread exists in the child; a lock another
//! thread held at that moment (the allocator's, stdout's) would stay locked
//! in the child forever. `start` therefore refuses (`InvalidInput`) when
//! `/proc/self/task` shows more than one thread. `smtlab serve` guarantees
//! it: it starts the server before it makes any thread. (Nor may the
//! thread that called `start` end before the server is stopped: the
//! workers' parent-death signal is tied to it.)
//!
//! The workers are made with [`smtlab_sys::fork_child`], so each dies with
//! SIGKILL if its parent dies: no worker outlives the server. They count
//! into words of memory shared with the parent (a file in `/dev/shm`,
//! mapped before the fork and removed at once), one block per worker on
//! its own cache lines, which the server's stats sum. The `Counters` that
//! [`super::start`] passes are not used. `config.worker_program` is not
//! used either: the workers are forked, not exec'd.
//!
//! Stopping: SIGTERM to every worker (it ends at once, mid-response if it
//! was serving one), SIGKILL to any still there after [`GRACE`], every one
//! reaped with `wait4`, then the listening socket closed.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::net::TcpListener;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use smtlab_sys::SharedWords;

use super::blocking::{self, Tally, Which};
use super::config::ServerConfig;
use super::running::Running;
use super::stats::{Counters, ServerStats};
use crate::http::Site;

/// How long workers have to end after SIGTERM before they are killed.
pub const GRACE: Duration = Duration::from_secs(2);
/// Shared words per worker: its [`Which::COUNT`] counts, padded to 128
/// bytes so two workers never write the same cache line (or its
/// prefetched pair).
const STRIDE: usize = 16;
const _: () = assert!(Which::COUNT <= STRIDE);
/// Exit code of a worker whose serving loop panicked (never a client's
/// doing; the panic message is on stderr).
const PANICKED: i32 = 101;

/// A running `process` server.
pub(crate) struct Processes {
    /// Workers not reaped yet.
    running: Vec<i32>,
    /// Every worker started, for [`ServerStats::pids`].
    pids: Vec<i32>,
    words: SharedWords,
    /// Kept open until the workers are gone, then closed.
    listener: Option<TcpListener>,
    workers: usize,
}

/// Worker k's block of shared words.
struct Block<'a> {
    words: &'a SharedWords,
    base: usize,
}

impl Tally for Block<'_> {
    fn counter(&self, which: Which) -> &AtomicU64 {
        self.words.word(self.base + which.index())
    }
}

pub(crate) fn start(
    config: &ServerConfig,
    listener: TcpListener,
    site: Site,
    _counters: Arc<Counters>,
) -> io::Result<Processes> {
    let threads = thread_count()?;
    if threads > 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the process model forks its workers, so it must be started while the \
                 process has one thread; this one has {threads}"
            ),
        ));
    }
    smtlab_serving::check_worker_cpus(&config.worker_cpus)?;
    listener.set_nonblocking(false)?;
    let words = shared_words(config.workers * STRIDE)?;
    // Whatever sits in stdout's buffer would be written again by each
    // child when it flushes on exit.
    let _ = io::stdout().flush();
    let mut me = Processes {
        running: Vec::with_capacity(config.workers),
        pids: Vec::with_capacity(config.workers),
        words,
        listener: Some(listener),
        workers: config.workers,
    };
    for k in 0..config.workers {
        let cpu = (!config.worker_cpus.is_empty())
            .then(|| config.worker_cpus[k % config.worker_cpus.len()]);
        let listener = me.listener.as_ref().expect("kept until stop");
        let block = Block {
            words: &me.words,
            base: k * STRIDE,
        };
        let timeout = config.request_timeout;
        let forked = smtlab_sys::fork_child(|| {
            // A panic must never unwind out of the child into the parent's
            // frames copied with it (they would go on running, and their
            // destructors would delete what the parent owns).
            catch_unwind(AssertUnwindSafe(|| {
                worker_main(listener, &site, &block, cpu, timeout)
            }))
            .unwrap_or(PANICKED)
        });
        match forked {
            Ok(pid) => {
                me.running.push(pid);
                me.pids.push(pid);
            }
            // `me` is dropped: the workers already forked are stopped.
            Err(e) => return Err(e),
        }
    }
    Ok(me)
}

/// A worker's life: serve connections until SIGTERM ends it.
fn worker_main(
    listener: &TcpListener,
    site: &Site,
    tally: &dyn Tally,
    cpu: Option<u32>,
    request_timeout: Duration,
) -> i32 {
    // SIGTERM from `stop` ends the worker: the parent's handlers (its
    // Ctrl-C flag), inherited through fork, would only set a flag here.
    if smtlab_sys::default_signal_actions().is_err() {
        return 1;
    }
    // Ctrl-C reaches the whole foreground process group; the parent
    // decides how the server stops.
    let _ = smtlab_sys::ignore_sigint();
    if let Some(c) = cpu {
        if blocking::pin(c).is_err() {
            return 1;
        }
    }
    loop {
        match listener.accept() {
            Ok((stream, _)) => blocking::serve(stream, site, tally, request_timeout),
            Err(e) => blocking::after_accept_error(&e),
        }
    }
}

/// Threads of this process, from `/proc/self/task`.
fn thread_count() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

/// `words` zeroed words shared with the children to come: a file in
/// `/dev/shm` (memory) where it exists, mapped, then removed at once, so
/// nothing is left behind however the server ends.
fn shared_words(words: usize) -> io::Result<SharedWords> {
    static SEQUENCE: AtomicU32 = AtomicU32::new(0);
    let shm = PathBuf::from("/dev/shm");
    let dir = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!(
        "smtlab-web-{}-{}",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    ));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    let mapped = file
        .set_len((words.max(1) * 8) as u64)
        .and_then(|()| SharedWords::map(&file, words));
    let _ = std::fs::remove_file(&path);
    mapped
}

/// Whether child `pid` has ended (not reaped: it stays a zombie until
/// `wait4`, so its pid cannot be reused meanwhile).
fn has_ended(pid: i32) -> bool {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::Pid(Pid::from_raw(pid)), flags) {
        Ok(WaitStatus::StillAlive) | Err(Errno::EINTR) => false,
        // Ended, or not a child to wait for any more.
        Ok(_) | Err(_) => true,
    }
}

impl Processes {
    fn stop_workers(&mut self) -> io::Result<()> {
        for &pid in &self.running {
            smtlab_sys::kill(pid, Signal::SIGTERM);
        }
        let deadline = Instant::now() + GRACE;
        let mut left: Vec<i32> = self.running.clone();
        loop {
            left.retain(|&pid| !has_ended(pid));
            if left.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        for &pid in &left {
            smtlab_sys::kill(pid, Signal::SIGKILL);
        }
        let mut first_error = None;
        for pid in self.running.drain(..) {
            if let Err(e) = smtlab_sys::wait4(pid) {
                first_error.get_or_insert(e);
            }
        }
        self.listener = None;
        first_error.map_or(Ok(()), Err)
    }
}

impl Running for Processes {
    fn stats(&self) -> ServerStats {
        let sum = |which: Which| {
            (0..self.workers)
                .map(|k| {
                    self.words
                        .word(k * STRIDE + which.index())
                        .load(Ordering::Relaxed)
                })
                .sum()
        };
        ServerStats {
            counters: blocking::snapshot(sum),
            stages: Vec::new(),
            processes: 1 + self.workers,
            // One serving thread in each worker.
            threads: self.workers,
            // The workers only: the parent serves nothing.
            pids: self.pids.clone(),
        }
    }

    fn stop(&mut self) -> io::Result<()> {
        self.stop_workers()
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        let _ = self.stop_workers();
    }
}
