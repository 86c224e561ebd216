//! A server's life for one sample, whichever server it is (`server`'s web
//! servers, `chat_sample`'s chat servers): started in its own process
//! group behind `smtlab __gate` with the point's allocator and CPUs
//! (counters attached before it execs), named to the
//! [`watchdog`](crate::watchdog) from its gate to its reaping, found ready
//! (its address; for the HTTP servers, an answer), stopped with a signal
//! (SIGKILL after a limit), reaped, and how it ended said in words; and
//! the sample it gave, as an [`Outcome`].
//!
//! Apart from the samples because both kinds share it, while each judges and
//! fills its own sample.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use smtlab_counters::perf_counters::{CounterPlan, ThreadCounters};
use smtlab_counters::rusage::usage_from_wait4;
use smtlab_sys::{self as sys, ChildEnd};
use smtlab_types::cpuset::CpuSet;
use smtlab_types::{Outcome, Point, Program, ResourceUsage, Sample, SampleStatus, ServerKind};
use smtlab_web::load::probe::{self, ProbeError};

use crate::context::SampleContext;
use crate::error::ExecError;
use crate::watchdog::{WatchedDir, WatchedGroup};

/// How long a server may take to accept connections.
const START_LIMIT: Duration = Duration::from_secs(30);
/// How long a server may take to stop after SIGTERM before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(10);
/// How often a server's state (and Ctrl-C) is looked at while waiting.
pub(crate) const POLL: Duration = Duration::from_millis(20);
/// How long one readiness request waits for its answer before another is
/// sent on a new connection (the first may be lost with a worker that
/// died starting); all of them within the start limit.
const PROBE_ATTEMPT: Duration = Duration::from_secs(2);

/// One sample of a server point taken by `take` (given the point's
/// server; `Ok(None)` when Ctrl-C stopped it), as an [`Outcome`]: its
/// place in the run set, or a failed sample with the error.
pub(crate) fn measure(
    point: &Point,
    seq: usize,
    warmup: bool,
    take: impl FnOnce(ServerKind) -> Result<Option<Sample>, ExecError>,
) -> Outcome {
    let Program::Server { server, .. } = &point.program else {
        unreachable!("server_lifecycle::measure is only called for server points");
    };
    let started_at = sys::unix_now_s();
    match take(*server) {
        Ok(Some(mut s)) => {
            s.seq = seq;
            s.warmup = warmup;
            s.started_at = started_at;
            Outcome::Measured(Box::new(s))
        }
        Ok(None) => Outcome::Interrupted,
        Err(e) => Outcome::Measured(Box::new(Sample::without_result(
            seq,
            warmup,
            SampleStatus::Failed,
            e.reason(),
            started_at,
            0.0,
        ))),
    }
}

/// A started server: its process (group leader), how it ended when it has,
/// and what it printed.
pub(crate) struct Running {
    pub pid: i32,
    pub ended: mpsc::Receiver<(Option<ChildEnd>, ResourceUsage)>,
    pub stdout: mpsc::Receiver<String>,
    pub stderr: std::thread::JoinHandle<String>,
    /// nginx, ngircd: its address (it cannot report a port the kernel
    /// chose, so smtlab chose one) and its own directory (configuration,
    /// pid, logs), removed on drop.
    pub fixed: Option<(SocketAddr, WatchedDir)>,
    /// Its process group, named to the watchdog (killed if smtlab is
    /// killed) until dropped, after the server was stopped and reaped:
    /// held for its drop.
    pub _group: Option<WatchedGroup>,
}

impl Running {
    pub fn kill(&self) {
        sys::kill(-self.pid, Signal::SIGKILL);
        sys::kill(self.pid, Signal::SIGKILL);
    }
}

/// Starts `cmd` (`smtlab __gate` and the server's command line) in its own
/// process group with the point's allocator and CPUs, opens the counters
/// while it waits at the gate, then lets it exec. From here on the child is
/// reaped whatever happens.
pub(crate) fn spawn(
    mut cmd: Command,
    point: &Point,
    server: &str,
    ctx: &SampleContext,
    plan: Option<&CounterPlan>,
    fixed: Option<(SocketAddr, WatchedDir)>,
) -> Result<(Running, Option<ThreadCounters>), ExecError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(pre) = ctx.preload_for(point) {
        cmd.env("LD_PRELOAD", pre.library.display().to_string());
        cmd.envs(pre.env.iter().map(|(k, v)| (k, v)));
    }
    let set: Option<CpuSet> = point.cpus.as_ref().map(|c| c.iter().copied().collect());
    let (gate, (gate_r, ready_w)) = sys::gate_pipes()?;
    sys::configure_gated_child(
        &mut cmd,
        set.as_ref(),
        Some((gate_r.as_raw_fd(), ready_w.as_raw_fd())),
    )?;
    let mut child = cmd.spawn().map_err(|source| ExecError::ServerStart {
        server: server.into(),
        source,
    })?;
    drop((gate_r, ready_w));
    let pid = child.id() as i32;
    // Named before the gate opens: until then the child is `smtlab
    // __gate`, which PDEATHSIG kills with smtlab; from the exec on, the
    // server (and whatever it forks) is the watchdog's if smtlab is killed.
    let group = match WatchedGroup::new(&ctx.exe, pid) {
        Ok(g) => g,
        Err(io) => {
            sys::kill(pid, Signal::SIGKILL);
            let _ = sys::wait4(pid);
            return Err(ExecError::ServerUnwatched {
                server: server.into(),
                io,
            });
        }
    };
    let out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    // From here on the child is reaped whatever happens: the waiter owns it.
    let (etx, ended) = mpsc::channel();
    let waiter = std::thread::Builder::new().spawn(move || {
        let r = match sys::wait4(pid) {
            Ok((end, ru)) => (Some(end), usage_from_wait4(&ru)),
            Err(_) => (None, ResourceUsage::default()),
        };
        let _ = etx.send(r);
    });
    if let Err(io) = waiter {
        sys::kill(-pid, Signal::SIGKILL);
        sys::kill(pid, Signal::SIGKILL);
        let _ = sys::wait4(pid);
        return Err(ExecError::ServerWaiter { io });
    }
    let (otx, stdout) = mpsc::channel();
    let kill_now = |what: &'static str, io: std::io::Error| {
        sys::kill(-pid, Signal::SIGKILL);
        sys::kill(pid, Signal::SIGKILL);
        ExecError::ServerReader { what, io }
    };
    std::thread::Builder::new()
        .spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if otx.send(line).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| kill_now("output", e))?;
    let stderr = std::thread::Builder::new()
        .spawn(move || {
            let mut s = String::new();
            let _ = BufReader::new(err).take(1 << 16).read_to_string(&mut s);
            s
        })
        .map_err(|e| kill_now("errors", e))?;
    let running = Running {
        pid,
        ended,
        stdout,
        stderr,
        fixed,
        _group: Some(group),
    };
    let counters = plan.map(|pl| ThreadCounters::open_for_process(pid, pl));
    gate.wait_ready();
    gate.open();
    Ok((running, counters))
}

/// How long a server may take to start: [`START_LIMIT`], or the run's
/// `--timeout` when shorter.
fn start_limit(ctx: &SampleContext) -> Duration {
    ctx.timeout.map_or(START_LIMIT, |t| t.min(START_LIMIT))
}

/// The server's address once it accepts connections; `None` on Ctrl-C.
///
/// Enough for the chat servers: smtlab's prints its address once its
/// loops run, ngircd is one process that listens and serves from the same
/// loop, and the chat load measures only once every client has joined.
/// The HTTP servers are asked for an answer ([`wait_answering`]).
pub(crate) fn wait_ready(
    running: &mut Running,
    server: &str,
    ctx: &SampleContext,
) -> Result<Option<SocketAddr>, ExecError> {
    let limit = start_limit(ctx);
    wait_address(running, server, ctx, Instant::now() + limit, limit, true)
}

/// The server's address once it answers an HTTP request for `path` (a
/// whole status line, whatever its code); `None` on Ctrl-C. Accepting a
/// connection is not answering: nginx's master listens before its workers
/// exist, and a window opened then measures their start (under emulation
/// hundreds of milliseconds in which connections wait in the backlog).
/// Within the same start limit as [`wait_ready`]; the probe's request is
/// one more the server answers (in `web`'s own count, not in the window's).
pub(crate) fn wait_answering(
    running: &mut Running,
    server: &str,
    ctx: &SampleContext,
    path: &str,
) -> Result<Option<SocketAddr>, ExecError> {
    let limit = start_limit(ctx);
    let deadline = Instant::now() + limit;
    // A fixed address is not connected to here: the probe does that.
    let Some(addr) = wait_address(running, server, ctx, deadline, limit, false)? else {
        return Ok(None);
    };
    let host = addr.to_string();
    let mut accepted = false;
    loop {
        let mut ended = None;
        let left = deadline.saturating_duration_since(Instant::now());
        let tried = probe::answer(addr, &host, path, left.min(PROBE_ATTEMPT), || {
            if ctx.stop.load(Ordering::SeqCst) {
                return false;
            }
            match running.ended.try_recv() {
                Ok(end) => {
                    ended = Some(end.0);
                    false
                }
                Err(_) => true,
            }
        });
        let why = match tried {
            Ok(_) => return Ok(Some(addr)),
            Err(e) => e,
        };
        if ctx.stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        if ended.is_none() {
            ended = running.ended.try_recv().ok().map(|e| e.0);
        }
        if let Some(end) = ended {
            let what = if accepted || why.connected() {
                "answered a request"
            } else {
                "accepted connections"
            };
            return Err(ExecError::ServerEnded {
                server: server.into(),
                what,
                end: describe(end),
            });
        }
        accepted |= why.connected();
        if Instant::now() >= deadline {
            let secs = limit.as_secs_f64();
            let server = server.into();
            if accepted {
                return Err(ExecError::NotAnswering {
                    server,
                    secs,
                    path: path.into(),
                    why,
                });
            }
            return Err(ExecError::NotAccepting { server, secs, why });
        }
        if !matches!(why, ProbeError::Silent(_)) {
            // Refused, dropped or garbled at once: not listening yet, or
            // not serving yet; try again shortly, not in a spin.
            std::thread::sleep(POLL);
        }
    }
}

/// The server's address (`web`, `chat`: its first line; nginx, ngircd:
/// the one smtlab gave it, once it accepts a connection when `connect`),
/// by `deadline`; `None` on Ctrl-C.
fn wait_address(
    running: &mut Running,
    server: &str,
    ctx: &SampleContext,
    deadline: Instant,
    limit: Duration,
    connect: bool,
) -> Result<Option<SocketAddr>, ExecError> {
    loop {
        if ctx.stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        if let Ok((end, _)) = running.ended.try_recv() {
            return Err(ExecError::ServerEnded {
                server: server.into(),
                what: "accepted connections",
                end: describe(end),
            });
        }
        match running.fixed.as_ref().map(|(addr, _)| *addr) {
            None => match running.stdout.recv_timeout(POLL) {
                Ok(line) => {
                    let addr = line
                        .strip_prefix("listening on http://")
                        .or_else(|| line.strip_prefix("listening on irc://"))
                        .and_then(|r| r.split('/').next())
                        .and_then(|a| a.parse::<SocketAddr>().ok());
                    match addr {
                        Some(a) => return Ok(Some(a)),
                        None => {
                            return Err(ExecError::NotAnAddress {
                                server: server.into(),
                                line,
                            })
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // Its output closed: it is ending; the next turn says how.
                    std::thread::sleep(POLL);
                }
            },
            Some(addr) => {
                if !connect || TcpStream::connect_timeout(&addr, POLL).is_ok() {
                    return Ok(Some(addr));
                }
                std::thread::sleep(POLL);
            }
        }
        if Instant::now() >= deadline {
            return Err(ExecError::NotListening {
                server: server.into(),
                secs: limit.as_secs_f64(),
            });
        }
    }
}

/// Stop the server with `sig` (then SIGKILL after [`STOP_LIMIT`]), reap
/// it, and kill whatever is left of its group.
pub(crate) fn stop(running: &Running, sig: Signal) -> (Option<ChildEnd>, ResourceUsage) {
    stop_within(running, sig, STOP_LIMIT).0
}

/// [`stop`] with its own limit; also says whether the server had to be
/// killed after it (true: a SIGKILL in the result is smtlab's own).
pub(crate) fn stop_within(
    running: &Running,
    sig: Signal,
    limit: Duration,
) -> ((Option<ChildEnd>, ResourceUsage), bool) {
    sys::kill(running.pid, sig);
    let (result, killed) = match running.ended.recv_timeout(limit) {
        Ok(r) => (r, false),
        Err(_) => {
            running.kill();
            let r = running
                .ended
                .recv()
                .unwrap_or((None, ResourceUsage::default()));
            (r, true)
        }
    };
    // Workers of a server killed before it could stop them.
    sys::kill(-running.pid, Signal::SIGKILL);
    (result, killed)
}

pub(crate) fn describe(end: Option<ChildEnd>) -> String {
    match end {
        Some(ChildEnd::Exited(c)) => format!("exit code {c}"),
        Some(ChildEnd::Signaled(s)) => format!("killed by {}", sys::signal_name(s)),
        None => "could not wait for it".into(),
    }
}

/// `e`, with what the server wrote on its error output when it wrote
/// anything (on one line): why it did not start is often there.
pub(crate) fn with_server_errors(running: Running, e: ExecError) -> ExecError {
    let err = running.stderr.join().unwrap_or_default();
    let err = err.trim().replace('\n', " | ");
    if err.is_empty() {
        return e;
    }
    ExecError::ServerSaid {
        stderr: err,
        source: Box::new(e),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::net::TcpListener;
    use std::path::PathBuf;

    use super::*;

    /// A server as `wait_answering` sees it, without a process: an
    /// address smtlab gave it (as nginx's) and an `ended` that says nothing.
    pub(crate) struct Fake {
        pub running: Running,
        /// Keeps the `ended` channel open (the server has not ended);
        /// sending on it says it has.
        pub ended: mpsc::Sender<(Option<ChildEnd>, ResourceUsage)>,
    }

    pub(crate) fn fake(addr: SocketAddr) -> Fake {
        let (etx, ended) = mpsc::channel();
        let (_otx, stdout) = mpsc::channel();
        Fake {
            running: Running {
                pid: 0,
                ended,
                stdout,
                stderr: std::thread::spawn(String::new),
                fixed: Some((addr, WatchedDir::unwatched("smtlab-test-").unwrap())),
                _group: None,
            },
            ended: etx,
        }
    }

    /// A one-worker point of smtlab's web server on CPU 0, its load
    /// generator on `client_cpus`.
    pub(crate) fn web_point(client_cpus: Option<CpuSet>) -> Point {
        Point {
            index: 0,
            program: Program::Server {
                server: ServerKind::Web,
                params: Default::default(),
                client_cpus,
            },
            model: smtlab_types::Model::Event,
            spawn: smtlab_types::Spawn::Exec,
            placement: "compact".into(),
            workers: 1,
            cpus: Some(vec![0]),
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: smtlab_types::Mode::FixedTime { seconds: 1.0 },
            metric: smtlab_types::Metric {
                name: "requests".into(),
                unit: "req/s".into(),
                higher_is_better: true,
            },
        }
    }

    pub(crate) fn context(
        stop: &std::sync::atomic::AtomicBool,
        timeout: Duration,
    ) -> SampleContext<'_> {
        SampleContext {
            exe: PathBuf::new(),
            preloads: Default::default(),
            timeout: Some(timeout),
            counters: false,
            stop,
            metric_regex: None,
            programs: Default::default(),
        }
    }

    /// nginx under emulation: the port accepts at once (the backlog), the

    #[test]
    fn a_server_that_accepts_but_never_answers_is_not_ready() {
        // Listening, never accepting: connections wait in the backlog.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let ctx = context(&stop, Duration::from_millis(700));
        let mut f = fake(l.local_addr().unwrap());
        let t = Instant::now();
        let e = wait_answering(&mut f.running, "nginx", &ctx, "/dir00000/class0_0").unwrap_err();
        assert!(matches!(e, ExecError::NotAnswering { .. }), "{e:?}");
        let e = e.reason();
        assert!(
            e.starts_with(
                "the nginx server accepted connections but answered no request within 0.7 s"
            ),
            "{e}"
        );
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());

        // Nobody listening at all.
        let free = l.local_addr().unwrap();
        drop(l);
        let mut f = fake(free);
        let e = wait_answering(&mut f.running, "nginx", &ctx, "/").unwrap_err();
        assert!(matches!(e, ExecError::NotAccepting { .. }), "{e:?}");
        assert!(
            e.reason()
                .starts_with("the nginx server did not accept connections within 0.7 s"),
            "{e}"
        );

        // The server ended while it was waited for.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut f = fake(l.local_addr().unwrap());
        f.ended
            .send((Some(ChildEnd::Exited(1)), ResourceUsage::default()))
            .unwrap();
        let ctx = context(&stop, Duration::from_secs(10));
        let e = wait_answering(&mut f.running, "nginx", &ctx, "/").unwrap_err();
        assert_eq!(
            e.reason(),
            "the nginx server ended before it accepted connections (exit code 1)"
        );

        // Ctrl-C while waiting: no error, no address.
        let mut f = fake(l.local_addr().unwrap());
        stop.store(true, Ordering::SeqCst);
        let ctx = context(&stop, Duration::from_secs(10));
        assert!(wait_answering(&mut f.running, "nginx", &ctx, "/")
            .unwrap()
            .is_none());
    }
}
