//! What to start: the architecture ([`Model`]) and its settings
//! ([`ServerConfig`]). Its own file, as are the counters (`stats.rs`), so
//! that the architectures share them without using the module that starts
//! them.

use std::path::PathBuf;
use std::time::Duration;

smtlab_serving::server_models! {
    /// The four architectures.
    pub enum Model {
        Process = "process",
        Thread = "thread",
        Event = "event",
        Staged = "staged",
    }
    #[error("unknown web server model `{0}`; expected process, thread, event or staged")]
    pub struct UnknownModel;
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
