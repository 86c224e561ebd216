//! The static HTTP server, `web`, in four architectures (Ruan et al. §2.1):
//!
//! * [`Model::Process`]: N worker processes, each serving one connection at
//!   a time with blocking I/O (Apache prefork) — `process.rs`;
//! * [`Model::Thread`]: N threads of one process, each serving one
//!   connection at a time (Apache worker) — `thread.rs`;
//! * [`Model::Event`]: N single-threaded epoll loops with non-blocking
//!   sockets and `sendfile`, one per worker CPU (Flash, nginx); with
//!   `helpers = K`, file opens and cold reads go to K helper threads
//!   (Flash's AMPED) — `event.rs`;
//! * [`Model::Staged`]: accept, read-and-parse, find-the-file and send
//!   stages, each with its own threads and a bounded queue between them
//!   (Haboob, SEDA) — `staged.rs`.
//!
//! Every architecture answers through [`crate::http`] (the same parser,
//! root and heads), counts into one [`Counters`], and is started and
//! stopped through [`start`] and [`Server`]. The blocking models share the
//! per-connection loop in `blocking.rs`.

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

/// The four architectures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    Process,
    Thread,
    Event,
    Staged,
}

impl Model {
    pub const ALL: [Model; 4] = [Model::Process, Model::Thread, Model::Event, Model::Staged];

    pub fn name(self) -> &'static str {
        match self {
            Model::Process => "process",
            Model::Thread => "thread",
            Model::Event => "event",
            Model::Staged => "staged",
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown web server model `{0}`; expected process, thread, event or staged")]
pub struct UnknownModel(pub String);

impl FromStr for Model {
    type Err = UnknownModel;
    fn from_str(s: &str) -> Result<Model, UnknownModel> {
        Model::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownModel(s.to_string()))
    }
}

/// How long a connection may take to send a whole request head, and may
/// stay idle between keep-alive requests, before the server answers 408 and
/// closes it: a client sending a byte a second cannot hold a worker of a
/// blocking model for longer than this.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Open connections the `event` or `staged` server keeps at most (all its
/// loops or stages together); past it a new connection gets 503 and is
/// closed.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16_384;
/// Items each queue between two `staged` stages holds; past it an item is
/// refused with 503.
pub const DEFAULT_QUEUE_CAPACITY: usize = 1024;

/// What to start.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub model: Model,
    /// Worker processes, threads or event loops (for `staged`, the threads
    /// of each stage). At least 1.
    pub workers: usize,
    /// `event` only: helper threads for opening and reading files (0 = none,
    /// the loop does it itself).
    pub helpers: usize,
    /// The document root.
    pub root: PathBuf,
    /// Worker k runs on `worker_cpus[k % len]` (pinned); empty = not pinned.
    pub worker_cpus: Vec<u32>,
    pub request_timeout: Duration,
    pub max_connections: usize,
    /// `staged` only: the capacity of each queue between stages (at least 1).
    pub queue_capacity: usize,
    /// `process` only: the program and leading arguments that run one worker
    /// process (the smtlab binary and `__web-worker`); the worker finds the
    /// listening socket and its settings as `process.rs` documents.
    pub worker_program: Option<(PathBuf, Vec<String>)>,
    /// Tests only: called before each file is opened (a slow disk on
    /// demand); `None` to serve.
    pub before_open: Option<crate::http::BeforeOpen>,
}

impl ServerConfig {
    pub fn new(model: Model, workers: usize, root: PathBuf) -> ServerConfig {
        ServerConfig {
            model,
            workers,
            helpers: 0,
            root,
            worker_cpus: Vec::new(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            worker_program: None,
            before_open: None,
        }
    }
}

/// Counts every architecture keeps (atomics: workers of one process share
/// them; `process` workers add theirs through shared memory).
#[derive(Debug, Default)]
pub struct Counters {
    pub connections: AtomicU64,
    pub open_connections: AtomicU64,
    pub requests: AtomicU64,
    /// Responses by status class: 2xx, 3xx, 4xx, 5xx.
    pub by_class: [AtomicU64; 4],
    /// Bytes of responses sent (heads and bodies).
    pub bytes_sent: AtomicU64,
    /// Connections closed because of a timeout, an error or overload.
    pub timeouts: AtomicU64,
    pub overloads: AtomicU64,
    pub io_errors: AtomicU64,
}

impl Counters {
    /// Count one response of `status` that sent `bytes`.
    pub fn response(&self, status: crate::http::Status, bytes: u64) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let class = (status.code() / 100).clamp(2, 5) as usize - 2;
        self.by_class[class].fetch_add(1, Ordering::Relaxed);
        self.bytes_sent.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> CounterSnapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CounterSnapshot {
            connections: get(&self.connections),
            open_connections: get(&self.open_connections),
            requests: get(&self.requests),
            by_class: [
                get(&self.by_class[0]),
                get(&self.by_class[1]),
                get(&self.by_class[2]),
                get(&self.by_class[3]),
            ],
            bytes_sent: get(&self.bytes_sent),
            timeouts: get(&self.timeouts),
            overloads: get(&self.overloads),
            io_errors: get(&self.io_errors),
        }
    }
}

/// [`Counters`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CounterSnapshot {
    pub connections: u64,
    pub open_connections: u64,
    pub requests: u64,
    pub by_class: [u64; 4],
    pub bytes_sent: u64,
    pub timeouts: u64,
    pub overloads: u64,
    pub io_errors: u64,
}

/// One stage of the `staged` server, as [`Server::stats`] reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StageStats {
    pub name: String,
    pub threads: usize,
    /// Items that went through the stage.
    pub items: u64,
    /// Mean and largest queue length seen by items entering the stage.
    pub queue_mean: f64,
    pub queue_max: u64,
    /// Mean time an item spent in the stage's handler, µs.
    pub busy_us_mean: f64,
    /// Items refused because the queue was full (answered 503).
    pub refused: u64,
}

/// What a running server reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerStats {
    pub counters: CounterSnapshot,
    /// `staged` only.
    pub stages: Vec<StageStats>,
    /// The server's processes (1, or 1 + N for `process`), and threads in
    /// all of them.
    pub processes: usize,
    pub threads: usize,
    /// Process ids whose CPU time and context switches are the server's.
    pub pids: Vec<i32>,
}

/// What each architecture's `start` returns: how to stop it and what it
/// reports. Stopping closes the listener, ends every worker (threads
/// joined, processes reaped) and closes every connection.
pub(crate) trait Running: Send {
    fn stats(&self) -> ServerStats;
    fn stop(&mut self) -> io::Result<()>;
}

/// A running server. Dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    model: Model,
    running: Box<dyn Running>,
    stopped: bool,
}

impl Server {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn model(&self) -> Model {
        self.model
    }

    pub fn stats(&self) -> ServerStats {
        self.running.stats()
    }

    /// Stop serving: every worker ended and reaped before it returns.
    pub fn stop(mut self) -> io::Result<()> {
        self.stopped = true;
        self.running.stop()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.running.stop();
        }
    }
}

/// Start `config.model` on `listener` (bound by the caller, e.g. to
/// `127.0.0.1:0`; the kernel's port is [`Server::addr`]).
///
/// [`Model::Process`] forks its workers: start it only while the calling
/// process has a single thread (it refuses otherwise; see [`process`]).
pub fn start(config: &ServerConfig, listener: TcpListener) -> io::Result<Server> {
    if config.workers == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a web server needs at least 1 worker",
        ));
    }
    let addr = listener.local_addr()?;
    let site = crate::http::Site::new(&config.root)?.with_before_open(config.before_open.clone());
    let counters = Arc::new(Counters::default());
    let running: Box<dyn Running> = match config.model {
        Model::Process => Box::new(process::start(config, listener, site, counters)?),
        Model::Thread => Box::new(thread::start(config, listener, site, counters)?),
        Model::Event => Box::new(event::start(config, listener, site, counters)?),
        Model::Staged => Box::new(staged::start(config, listener, site, counters)?),
    };
    Ok(Server {
        addr,
        model: config.model,
        running,
        stopped: false,
    })
}

mod blocking;
pub(crate) use blocking::check_worker_cpus;
mod event;
mod nonblocking;
pub mod process;
mod staged;
mod thread;
