//! Why a load run could not be made ([`LoadError`]).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use super::config::{MAX_CONNECTIONS, MAX_RATE, MAX_THREADS};

/// Why a load run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0} connections: expected 1 to {MAX_CONNECTIONS}")]
    Connections(usize),
    #[error("{0} client threads: expected 1 to {MAX_THREADS}")]
    Threads(usize),
    #[error(
        "{threads} client threads for {connections} connections: every thread needs at least \
         one connection"
    )]
    ThreadsAboveConnections { threads: usize, connections: usize },
    #[error("rate {0} requests/s: expected a finite number above 0, at most {MAX_RATE:e}")]
    Rate(f64),
    #[error("{what} {given:?}: expected {least} to 30 days")]
    Duration {
        what: &'static str,
        given: Duration,
        least: &'static str,
    },
    #[error("no path to ask for: the URL list is empty")]
    NoPaths,
    #[error(
        "path {0:?}: expected a path that starts with / and has no spaces or control characters"
    )]
    BadPath(String),
    #[error("host {0:?}: a Host header has no spaces or control characters")]
    BadHost(String),
    // The io errors are in the messages, not sources: each is one line.
    #[error("cannot connect to {target}: {error}")]
    Unreachable {
        target: SocketAddr,
        error: io::Error,
    },
    #[error("pinning client thread {thread} to CPU {cpu}: {error}")]
    Affinity {
        thread: usize,
        cpu: u32,
        error: io::Error,
    },
    #[error("{what}: {error}")]
    Io {
        what: &'static str,
        error: io::Error,
    },
    /// A thread was told not to start because another could not be made.
    #[error("the run was called off before it started")]
    CalledOff,
    #[error("a client thread panicked")]
    Panicked,
}
