//! The HTTP load generator behind `smtlab load http URL` and the `web`
//! workload's samples: [`run`] drives a server with a [`LoadConfig`] and
//! returns a [`LoadReport`].
//!
//! * `client.rs`: one client thread, a mio event loop over its share of the
//!   connections, closed or open loop;
//! * `connection.rs`: one non-blocking connection (connect, write, read);
//! * `response.rs`: responses parsed from whatever bytes arrived (httparse);
//! * `open_loop.rs`: the open loop's intended send times, from which every
//!   latency is measured (no coordinated omission);
//! * `urls.rs`: which path each request asks for, and its body check;
//! * `record.rs`: latencies (HdrHistogram), answers, errors by kind;
//! * `smtlab_serving::cpu`: the client's own CPU time and when it was the
//!   bottleneck (shared with the chat load generator);
//! * [`probe`]: whether a server answers at all (one request, its status
//!   line waited for), asked before a measured window opens;
//! * `smtlab_serving::client_cpus`: which CPUs `smtlab load` pins itself to
//!   (those the server does not use; shared with the chat load generator).
//!
//! What the window holds: in a closed loop, the requests that ended in it
//! (as wrk counts); in an open loop, the requests intended in it, each
//! with its latency from its intended time — the run goes on after the
//! window (at most the request timeout) until they have ended, and those
//! without an answer by then are timeouts, so a stall at the very end is
//! not lost either. Errors count only the kinds that happened. Beside
//! them, what was sent in the window (`sent`) and, in a closed loop, what
//! was still waiting for its answer when the window ended
//! (`in_flight_at_end`: neither an answer nor an error), so a server that
//! accepted connections but answered nothing is told apart from one that
//! was never asked.
//!
//! Before the run one connection is opened and closed to check that the
//! server is there ([`LoadError::Unreachable`] if not); a server counting
//! connections sees it.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

mod client;
mod config;
mod connection;
mod error;
mod open_loop;
pub mod probe;
mod record;
mod response;
mod urls;

pub use config::{LoadConfig, Urls, MAX_CONNECTIONS, MAX_DURATION, MAX_RATE, MAX_THREADS};
pub use error::LoadError;
pub use smtlab_serving::Latency;
pub use smtlab_serving::CLIENT_BOUND_SHARE;

/// How long the reachability check waits for a connection at most.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What a load run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadReport {
    /// Requests answered in the window (any status).
    pub requests: u64,
    /// Of them, answered 2xx/3xx with a verified (or unverified) body:
    /// the successful requests, the only ones `requests_per_s` counts.
    pub ok: u64,
    /// Errors by kind: `connect`, `read`, `write`, `timeout`, `status_4xx`,
    /// `status_5xx`, `body` (verification failed), `parse`, `closed`.
    pub errors: BTreeMap<String, u64>,
    pub bytes: u64,
    pub seconds: f64,
    /// Successful requests (`ok`) per second of the window: a server that
    /// answers everything with 404, or not at all, has a rate of 0 (its
    /// answers are in `requests` and `errors`).
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
    /// Requests sent in the window (closed loop: sent in it; open loop:
    /// intended in it and sent), whatever became of them; a send that
    /// failed at once (connect refused) counts, and is an error too.
    pub sent: u64,
    /// Closed loop: requests still waiting for their answer when the
    /// window ended, counted neither as answered nor as errors (a server
    /// that accepts connections but does not answer shows here, not in
    /// `errors`). Open loop: 0, since what is still waiting after the drain
    /// is a `timeout`.
    pub in_flight_at_end: u64,
}

impl LoadReport {
    /// Why this run has no result, if it has none: a body differed from
    /// the file served (a wrong result), or no request succeeded. The one
    /// judgement of `smtlab load http` (exit 3) and of a `-w web` sample
    /// (failed).
    pub fn failure(&self) -> Option<String> {
        if let Some(n) = self.errors.get("body").filter(|n| **n > 0) {
            return Some(format!(
                "{n} response bodies differed from the files served: a wrong result"
            ));
        }
        (self.ok == 0).then(|| self.nothing_succeeded())
    }

    /// Why a window without a successful answer failed: what was sent,
    /// what was answered (unsuccessfully), what was still waiting at its
    /// end, and the errors, so "no success" and "no error" are never both
    /// said alone.
    fn nothing_succeeded(&self) -> String {
        let errors = smtlab_serving::errors_list(&self.errors);
        let (what, answered) = if self.requests == 0 {
            ("no request answered", String::new())
        } else {
            (
                "no request answered successfully",
                format!(", {} answered", self.requests),
            )
        };
        let nothing = self.requests == 0 && self.errors.is_empty();
        // A closed loop sends as soon as its window starts: nothing sent
        // means its threads first ran after the window (an overloaded
        // machine).
        let idle = if nothing && self.sent == 0 {
            " (the load generator's threads did not run in it)"
        } else {
            ""
        };
        let silent = if nothing && self.in_flight_at_end > 0 {
            " (the server was not answering)"
        } else {
            ""
        };
        format!(
            "{what} in the {} s window: {} sent{idle}{answered}, {} still waiting at its \
             end{silent}, errors: {errors}",
            self.seconds, self.sent, self.in_flight_at_end,
        )
    }
}

/// Check a configuration's bounds (what `run` checks first).
pub fn check(config: &LoadConfig) -> Result<(), LoadError> {
    if !(1..=MAX_CONNECTIONS).contains(&config.connections) {
        return Err(LoadError::Connections(config.connections));
    }
    if !(1..=MAX_THREADS).contains(&config.threads) {
        return Err(LoadError::Threads(config.threads));
    }
    if config.threads > config.connections {
        return Err(LoadError::ThreadsAboveConnections {
            threads: config.threads,
            connections: config.connections,
        });
    }
    if let Some(r) = config.rate {
        if !(r.is_finite() && r > 0.0 && r <= MAX_RATE) {
            return Err(LoadError::Rate(r));
        }
    }
    let durations = [
        ("duration", config.duration, false),
        ("warm-up", config.warmup, true),
        ("request timeout", config.request_timeout, false),
    ];
    for (what, given, zero_ok) in durations {
        if given > MAX_DURATION || (given.is_zero() && !zero_ok) {
            let least = if zero_ok { "0" } else { "more than 0" };
            return Err(LoadError::Duration { what, given, least });
        }
    }
    let clean = |s: &str| !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control());
    if !clean(&config.host) {
        return Err(LoadError::BadHost(config.host.clone()));
    }
    if let Urls::List(paths) = &config.urls {
        if paths.is_empty() {
            return Err(LoadError::NoPaths);
        }
        if let Some(bad) = paths.iter().find(|p| !p.starts_with('/') || !clean(p)) {
            return Err(LoadError::BadPath(bad.clone()));
        }
    }
    Ok(())
}

/// Load the server as `config` says and report what was measured. Takes
/// the warm-up plus the duration (an open loop up to the request timeout
/// longer, to let the window's last requests finish).
pub fn run(config: &LoadConfig) -> Result<LoadReport, LoadError> {
    check(config)?;
    std::net::TcpStream::connect_timeout(&config.target, config.request_timeout.min(PROBE_TIMEOUT))
        .map_err(|error| LoadError::Unreachable {
            target: config.target,
            error,
        })?;
    let paths = match &config.urls {
        Urls::Mix(set) => urls::Paths::mix(set),
        Urls::List(list) => urls::Paths::list(list),
    };
    if config.verify {
        paths.keep_all();
    }
    let results = run_threads(config, &paths, thread_plans(config));
    let finished = first_failure(results)?;
    Ok(report(config, finished))
}

/// Each client thread's share: its connections, its CPU, and in an open
/// loop its rate and offset.
fn thread_plans(config: &LoadConfig) -> Vec<client::ThreadPlan> {
    (0..config.threads)
        .map(|k| client::ThreadPlan {
            index: k,
            connections: config.connections / config.threads
                + usize::from(k < config.connections % config.threads),
            cpu: (!config.cpus.is_empty()).then(|| config.cpus[k % config.cpus.len()]),
            rate: config.rate.map(|r| {
                // Thread k's requests are k/R after thread 0's: together
                // they go out evenly, R per second.
                (
                    r / config.threads as f64,
                    Duration::from_secs_f64(k as f64 / r),
                )
            }),
        })
        .collect()
}

/// Start one client thread per plan, start them together once every one
/// is ready (pinned and set up), and collect each one's result; a thread
/// that could not be started is the first error.
fn run_threads(
    config: &LoadConfig,
    paths: &urls::Paths<'_>,
    plans: Vec<client::ThreadPlan>,
) -> Vec<Result<client::ThreadResult, LoadError>> {
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        let mut starts = Vec::new();
        let mut spawn_error = None;
        let (ready_tx, ready_rx) = mpsc::channel::<bool>();
        for plan in plans {
            let (tx, rx) = mpsc::channel::<Instant>();
            let ready = ready_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("smtlab-load-{}", plan.index))
                .spawn_scoped(scope, move || {
                    client::run_thread(config, paths, plan, ready, rx)
                });
            match spawned {
                Ok(h) => {
                    handles.push(h);
                    starts.push(tx);
                }
                Err(error) => {
                    spawn_error = Some(LoadError::Io {
                        what: "starting a client thread",
                        error,
                    });
                    break;
                }
            }
        }
        drop(ready_tx);
        // Every thread pinned and set up (a thread that failed says so, or
        // hangs up by ending): only then does the run start.
        let all_ready =
            spawn_error.is_none() && (0..handles.len()).all(|_| ready_rx.recv().unwrap_or(false));
        if all_ready {
            let begin = Instant::now();
            for tx in &starts {
                let _ = tx.send(begin);
            }
        }
        // Dropping the senders calls the threads off when one failed.
        drop(starts);
        let mut results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(LoadError::Panicked)))
            .collect();
        if let Some(e) = spawn_error {
            results.insert(0, Err(e));
        }
        results
    })
}

/// Every thread's result, or the error of the thread that failed rather
/// than the others' `CalledOff`.
fn first_failure(
    results: Vec<Result<client::ThreadResult, LoadError>>,
) -> Result<Vec<client::ThreadResult>, LoadError> {
    let mut finished = Vec::new();
    let mut failed: Option<LoadError> = None;
    for r in results {
        match r {
            Ok(t) => finished.push(t),
            Err(e) => {
                if failed
                    .as_ref()
                    .is_none_or(|f| matches!(f, LoadError::CalledOff))
                {
                    failed = Some(e);
                }
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(finished),
    }
}

/// The threads' records merged into the run's report, with the client's
/// own CPU share over the window.
fn report(config: &LoadConfig, finished: Vec<client::ThreadResult>) -> LoadReport {
    let mut merged: Option<record::Record> = None;
    let mut cpu_s = 0.0;
    for r in finished {
        cpu_s += r.cpu.as_secs_f64();
        match &mut merged {
            Some(m) => m.merge(&r.record),
            None => merged = Some(r.record),
        }
    }
    let merged = merged.expect("at least one thread");
    let seconds = config.duration.as_secs_f64();
    let allowed = smtlab_sys::current_affinity().ok().map(|s| s.len());
    let cpus = smtlab_serving::cpu::client_cpus(config.threads, &config.cpus, allowed);
    let share = smtlab_serving::cpu::share(cpu_s, seconds, cpus);
    LoadReport {
        requests: merged.requests,
        ok: merged.ok,
        errors: merged.errors_by_kind(),
        bytes: merged.bytes,
        seconds,
        requests_per_s: merged.ok as f64 / seconds,
        mbit_per_s: merged.bytes as f64 * 8.0 / seconds / 1e6,
        latency_us: merged.latency_us(),
        late_sends: merged.late_sends,
        client_cpu_s: cpu_s,
        client_cpu_share: share,
        client_bound: share >= CLIENT_BOUND_SHARE,
        sent: merged.sent,
        in_flight_at_end: merged.in_flight_at_end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn config(target: SocketAddr, connections: usize) -> LoadConfig {
        LoadConfig {
            target,
            host: target.to_string(),
            urls: Urls::List(vec!["/a".into()]),
            connections,
            keep_alive: false,
            rate: None,
            duration: Duration::from_millis(300),
            warmup: Duration::ZERO,
            threads: 1,
            cpus: Vec::new(),
            verify: false,
            seed: 1,
            request_timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn a_server_that_accepts_but_never_answers_leaves_every_request_in_flight() {
        // Listening, never accepting: every connection completes in the
        // kernel's backlog and its request is never read (nginx's master
        // before its workers exist).
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let r = run(&config(l.local_addr().unwrap(), 4)).unwrap();
        assert_eq!((r.requests, r.ok), (0, 0), "{r:?}");
        assert!(r.errors.is_empty(), "{r:?}");
        assert_eq!(r.sent, 4, "{r:?}");
        assert_eq!(r.in_flight_at_end, 4, "{r:?}");
    }

    #[test]
    fn what_was_sent_is_answered_failed_or_still_in_flight() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        l.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let server = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((mut c, _)) => {
                        let _ = c.set_nonblocking(false);
                        let _ = c.set_read_timeout(Some(Duration::from_millis(200)));
                        let mut b = [0u8; 512];
                        let _ = c.read(&mut b);
                        let _ = c.write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                        );
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        let r = run(&config(addr, 3));
        stop.store(true, Ordering::SeqCst);
        server.join().unwrap();
        let r = r.unwrap();
        assert!(r.ok > 0, "{r:?}");
        let errors: u64 = r.errors.values().sum();
        // No warm-up and a connection per request: every request sent in
        // the window is one of the three.
        assert_eq!(r.sent, r.requests + errors + r.in_flight_at_end, "{r:?}");
        assert!(r.in_flight_at_end <= 3, "{r:?}");
    }
}
