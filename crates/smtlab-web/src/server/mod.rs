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

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

pub use config::{
    Model, ServerConfig, UnknownModel, DEFAULT_MAX_CONNECTIONS, DEFAULT_QUEUE_CAPACITY,
    DEFAULT_REQUEST_TIMEOUT,
};
use running::Running;
pub use stats::{CounterSnapshot, Counters, ServerStats, StageStats};

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
mod config;
mod event;
mod nonblocking;
pub mod process;
mod running;
mod staged;
mod stats;
mod thread;
