//! What every architecture counts ([`Counters`]) and a running server
//! reports ([`ServerStats`]).

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

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

/// One stage of the `staged` server, as [`Server::stats`](super::Server::stats) reports it.
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
