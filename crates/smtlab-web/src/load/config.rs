//! What to load and how ([`LoadConfig`]), and the bounds its values are
//! checked against.

use std::net::SocketAddr;
use std::time::Duration;

use crate::fileset::FileSet;

/// The most connections a run opens.
pub const MAX_CONNECTIONS: usize = 100_000;
/// The most client threads.
pub const MAX_THREADS: usize = 1024;
/// The highest open-loop rate, requests/s (one per nanosecond: far past
/// what any client sends; a bound so the schedule's arithmetic holds).
pub const MAX_RATE: f64 = 1e9;
/// The longest duration, warm-up or request timeout: 30 days.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);
/// Which URLs to ask for.
#[derive(Debug, Clone)]
pub enum Urls {
    /// The SPECweb96 mix over a file set the server serves (bodies verified
    /// with [`crate::fileset::BodyCheck`] when `verify`).
    Mix(FileSet),
    /// These paths in turn (`/index.html`); bodies not verified unless a
    /// path is one of the file set's.
    List(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub target: SocketAddr,
    /// The Host header (`127.0.0.1:8080`).
    pub host: String,
    pub urls: Urls,
    /// Open connections (closed loop: each has one request outstanding).
    pub connections: usize,
    /// Keep connections alive, or one new connection per request.
    pub keep_alive: bool,
    /// Open loop: requests per second in all, each latency measured from the
    /// request's intended send time. `None`: closed loop.
    pub rate: Option<f64>,
    /// Measured window, after `warmup` (not recorded).
    pub duration: Duration,
    pub warmup: Duration,
    /// Client threads (connections spread over them).
    pub threads: usize,
    /// Client thread k runs on `cpus[k % len]`; empty = not pinned.
    pub cpus: Vec<u32>,
    pub verify: bool,
    pub seed: u64,
    /// A request without a whole response after this is an error
    /// (`timeout`) and its connection is closed.
    pub request_timeout: Duration,
}
