//! The HTTP load generator behind `smtlab load http URL` and the `web`
//! workload's samples. Not built yet: the types below are the contract the
//! CLI and `smtlab-execute` are written against.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use serde::Serialize;

use crate::fileset::FileSet;

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

/// Latency percentiles, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// What a load run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadReport {
    /// Requests answered in the window (any status).
    pub requests: u64,
    /// Of them, answered 2xx/3xx with a verified (or unverified) body.
    pub ok: u64,
    /// Errors by kind: `connect`, `read`, `write`, `timeout`, `status_4xx`,
    /// `status_5xx`, `body` (verification failed), `parse`, `closed`.
    pub errors: BTreeMap<String, u64>,
    pub bytes: u64,
    pub seconds: f64,
    pub requests_per_s: f64,
    pub mbit_per_s: f64,
    pub latency_us: Latency,
    /// Open loop: requests that could not even be sent on time because
    /// every connection was busy (they still count, late, in the latency).
    pub late_sends: u64,
    /// The client's own CPU time (user + sys) in the window, s, and as a
    /// share of the CPUs it had (1.0 = every client CPU busy all along).
    pub client_cpu_s: f64,
    pub client_cpu_share: f64,
    /// The client, not the server, limited the throughput (its CPUs were
    /// saturated): every output says so.
    pub client_bound: bool,
}
