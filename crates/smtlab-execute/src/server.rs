//! One sample of a [`Program::Server`] point (`-w web`, `-w nginx`): the
//! server started on the point's CPUs, driven by smtlab's load generator
//! on other CPUs for the sample's window, then stopped.
//!
//! A sample is one server lifetime, so its resource usage is exact and
//! nothing is shared between samples: the server is started in its own
//! process group behind `smtlab __gate` (counters attached before it
//! execs, as for user commands), found ready (its address: `web`'s first
//! line, or the port smtlab gave nginx; and ready means answering: a GET
//! of the file set's first file has its status line back, since nginx
//! accepts connections before its workers exist), loaded for the window,
//! stopped with SIGTERM (both stop cleanly on it: `web` prints its stats line) and
//! reaped; `wait4` gives the CPU time and context switches of the server
//! and every worker it reaped. Its process group (and nginx's directory)
//! is named to the [`watchdog`](crate::watchdog) from its gate to its
//! reaping, so that a SIGKILL of smtlab leaves neither behind (nginx's
//! workers do not get smtlab's PDEATHSIG). Per request: server CPU µs,
//! user and system apart, and context switches, over the requests answered
//! in the window (the metric: successful requests per second).
//! They include the server's start and stop (a few milliseconds against a
//! window of seconds), said so in the docs.
//!
//! The file set is written once per size into a cache directory
//! (`$XDG_CACHE_HOME/smtlab/web-files/dirsN`, else `~/.cache/...`, else
//! the temporary directory) and served from there by both servers, so a
//! sample never waits for it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use smtlab_counters::memory::PeakSampler;
use smtlab_counters::perf_counters::{CounterPlan, ThreadCounters};
use smtlab_counters::rusage::usage_from_wait4;
use smtlab_serving::client_cpus;
use smtlab_sys::{self as sys, ChildEnd};
use smtlab_types::cpuset::CpuSet;
use smtlab_types::{CounterStatus, Mode, Outcome, Point, Program};
use smtlab_types::{ResourceUsage, Sample, SampleStatus};
use smtlab_web::fileset::{parse_size, FileSet, DEFAULT_DIRS};
use smtlab_web::load::probe::{self, ProbeError};
use smtlab_web::load::{self, LoadConfig, LoadReport, Urls};
use smtlab_web::nginx::{self, NginxConfig};

use crate::context::SampleContext;
use crate::error::{ExecError, ServerParamError};
use crate::watchdog::{WatchedDir, WatchedGroup};

/// The servers this file measures (the chat servers are `chat_sample`'s).
pub const WEB_SERVERS: [&str; 2] = ["web", "nginx"];
/// The window of a server sample without `--duration`, seconds.
pub const DEFAULT_WINDOW_S: f64 = 1.0;
/// The parameters a server point takes (`--param K=V`).
pub const PARAMS: [&str; 5] = ["files", "connections", "keepalive", "url", "helpers"];
/// How long a server may take to accept connections.
const START_LIMIT: Duration = Duration::from_secs(30);
/// How long a server may take to stop after SIGTERM before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(10);
/// Longest wait for one response before the load generator calls it a
/// timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(20);
/// How long one readiness request waits for its answer before another is
/// sent on a new connection (the first may be lost with a worker that
/// died starting); all of them within the start limit.
const PROBE_ATTEMPT: Duration = Duration::from_secs(2);

/// How a server point is measured, from its `--param`s and
/// `--client-cpus`, checked when the run is planned.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerParams {
    /// `files=SIZE`: the file set (default about 51 MB: fits the page cache).
    pub files: FileSet,
    /// `connections=C`: the load generator's connections (default: two per
    /// server worker, so a blocking server always has a request waiting).
    pub connections: Option<usize>,
    /// `keepalive=0|1` (default 0: a new connection per request, as
    /// SPECweb96's HTTP/1.0 clients; with 1 a blocking server keeps a
    /// worker per connection, so give connections <= workers).
    pub keep_alive: bool,
    /// `url=PATH`: ask for this path only (e.g. a 1 KB file:
    /// `/dir00000/class1_0`) instead of the SPECweb96 mix.
    pub url: Option<String>,
    /// `helpers=K`: the `event` model's helper threads (web only).
    pub helpers: Option<usize>,
    /// `client_cpus`: where the load generator runs (`--client-cpus`);
    /// default: the CPUs the server does not use.
    pub client_cpus: Option<CpuSet>,
}

impl ServerParams {
    /// Parse and check a server point's parameters; the message names the
    /// parameter and what would be valid.
    pub fn parse(
        server: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<ServerParams, ServerParamError> {
        if !WEB_SERVERS.contains(&server) {
            return Err(ServerParamError::NotAWebServer {
                server: server.into(),
                servers: &WEB_SERVERS,
            });
        }
        let mut p = ServerParams {
            files: FileSet::with_dirs(DEFAULT_DIRS).expect("the default file set is valid"),
            connections: None,
            keep_alive: false,
            url: None,
            helpers: None,
            client_cpus: None,
        };
        for (k, v) in params {
            match k.as_str() {
                "files" => {
                    let bytes = parse_size(v)
                        .ok_or_else(|| ServerParamError::NotASize { value: v.clone() })?;
                    p.files = FileSet::with_total_bytes(bytes).map_err(|error| {
                        ServerParamError::FileSet {
                            value: v.clone(),
                            error,
                        }
                    })?;
                }
                "connections" => match v.parse::<usize>() {
                    Ok(c) if (1..=load::MAX_CONNECTIONS).contains(&c) => p.connections = Some(c),
                    _ => {
                        return Err(ServerParamError::OutOfRange {
                            param: k.clone(),
                            value: v.clone(),
                            min: 1,
                            max: load::MAX_CONNECTIONS,
                        })
                    }
                },
                "keepalive" => {
                    p.keep_alive = match v.as_str() {
                        "1" | "true" | "on" => true,
                        "0" | "false" | "off" => false,
                        _ => return Err(ServerParamError::KeepAlive { value: v.clone() }),
                    }
                }
                "url" => {
                    let clean = v.starts_with('/')
                        && !v.chars().any(|c| c.is_whitespace() || c.is_control());
                    if !clean {
                        return Err(ServerParamError::Url { value: v.clone() });
                    }
                    p.url = Some(v.clone());
                }
                "helpers" if server == "web" => match v.parse::<usize>() {
                    Ok(h) if h <= 1024 => p.helpers = Some(h),
                    _ => {
                        return Err(ServerParamError::OutOfRange {
                            param: k.clone(),
                            value: v.clone(),
                            min: 0,
                            max: 1024,
                        })
                    }
                },
                "client_cpus" => {
                    let set = CpuSet::parse_list(v)
                        .ok()
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| ServerParamError::ClientCpus { value: v.clone() })?;
                    p.client_cpus = Some(set);
                }
                _ => return Err(unknown_web(server, k)),
            }
        }
        Ok(p)
    }

    /// The load generator's connections for `workers` server workers.
    pub fn connections_for(&self, workers: usize) -> usize {
        self.connections
            .unwrap_or(2 * workers)
            .min(load::MAX_CONNECTIONS)
    }
}

/// Where the file set of `set` is kept between samples and runs.
pub fn files_dir(set: &FileSet) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("smtlab")
        .join("web-files")
        .join(format!("dirs{}", set.dirs))
}

/// Take one sample of a server point.
pub fn run(point: &Point, ctx: &SampleContext, seq: usize, warmup: bool) -> Outcome {
    measure(point, ctx, seq, warmup, run_inner)
}

/// How one server sample is taken: `Ok(None)` when Ctrl-C stopped it.
pub(crate) type TakeSample = fn(
    &Point,
    &str,
    &BTreeMap<String, String>,
    &SampleContext,
) -> Result<Option<Sample>, ExecError>;

/// One sample of a server point taken by `take`, as an [`Outcome`]: its
/// place in the run set, or a failed sample with the error.
pub(crate) fn measure(
    point: &Point,
    ctx: &SampleContext,
    seq: usize,
    warmup: bool,
    take: TakeSample,
) -> Outcome {
    let Program::Server { server, params } = &point.program else {
        unreachable!("server::measure is only called for server points");
    };
    let started_at = sys::unix_now_s();
    match take(point, server, params, ctx) {
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

fn run_inner(
    point: &Point,
    server: &str,
    params: &BTreeMap<String, String>,
    ctx: &SampleContext,
) -> Result<Option<Sample>, ExecError> {
    let p = ServerParams::parse(server, params)?;
    let window = match point.mode {
        Mode::FixedTime { seconds } => Duration::from_secs_f64(seconds),
        Mode::FixedWork { .. } => Duration::from_secs_f64(DEFAULT_WINDOW_S),
    };
    let root = files_dir(&p.files);
    p.files
        .write_to(&root)
        .map_err(|source| ExecError::WriteFileSet {
            dir: root.clone(),
            source,
        })?;

    let plan = ctx.counters.then(CounterPlan::probe);
    let (mut running, mut counters) = start(point, server, &p, &root, ctx, plan.as_ref())?;
    let sampler = PeakSampler::start(&[running.pid], Duration::from_millis(50), true);

    // Ready: an address that answers, or the reason it never did.
    let ready = wait_answering(&mut running, server, ctx, &p.files.files[0].path);
    let addr = match ready {
        Ok(Some(a)) => a,
        Ok(None) => {
            stop(&running, Signal::SIGKILL);
            sampler.stop();
            return Ok(None);
        }
        Err(e) => {
            stop(&running, Signal::SIGKILL);
            sampler.stop();
            let err = running.stderr.join().unwrap_or_default();
            let err = err.trim().replace('\n', " | ");
            if err.is_empty() {
                return Err(e);
            }
            return Err(ExecError::ServerSaid {
                stderr: err,
                source: Box::new(e),
            });
        }
    };

    let given = p.client_cpus.clone();
    let chosen = client_cpus::choose(addr, given.as_ref());
    let client: Vec<u32> = chosen.cpus();
    let connections = p.connections_for(point.workers);
    let threads = client.len().max(1).min(connections);
    let urls = match &p.url {
        Some(u) => Urls::List(vec![u.clone()]),
        None => Urls::Mix(p.files.clone()),
    };
    let config = LoadConfig {
        target: addr,
        host: addr.to_string(),
        urls,
        connections,
        keep_alive: p.keep_alive,
        rate: None,
        duration: window,
        warmup: Duration::ZERO,
        threads,
        cpus: client.clone(),
        verify: true,
        seed: 0x5eed,
        request_timeout: REQUEST_TIMEOUT,
    };
    // The load runs in its own thread so that Ctrl-C is seen meanwhile; it
    // ends with its window whatever happens to the server.
    let (ltx, lrx) = mpsc::channel();
    let loader = std::thread::Builder::new()
        .name("smtlab-load".into())
        .spawn(move || {
            let _ = ltx.send(load::run(&config));
        });
    if let Err(io) = loader {
        stop(&running, Signal::SIGKILL);
        sampler.stop();
        return Err(ExecError::LoadThread { io });
    }
    let mut interrupted = false;
    let report: Result<LoadReport, ExecError> = loop {
        if ctx.stop.load(Ordering::SeqCst) && !interrupted {
            interrupted = true;
            running.kill();
        }
        match lrx.recv_timeout(POLL) {
            Ok(r) => break r.map_err(ExecError::Load),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(ExecError::LoadEndedWithoutReport)
            }
        }
    };
    let memory = sampler.peak();
    let (end, mut usage) = stop(&running, Signal::SIGTERM);
    sampler.stop();
    if interrupted || ctx.stop.load(Ordering::SeqCst) {
        return Ok(None);
    }
    // To its end (the stats line comes last): the server has exited, so
    // the reader ends as soon as the pipe is drained.
    let mut stdout = Vec::new();
    while let Ok(line) = running.stdout.recv_timeout(Duration::from_secs(2)) {
        stdout.push(line);
    }
    let stderr = running.stderr.join().unwrap_or_default();
    if let Some(m) = memory.filter(|m| m.samples > 0) {
        usage.pss_kb = Some(m.pss_kb);
        usage.anon_huge_kb = Some(m.anon_huge_kb);
    }
    let counter_values = counters.as_mut().map(|c| c.read()).unwrap_or_default();

    let mut sample = Sample {
        seq: 0,
        warmup: false,
        status: SampleStatus::Ok,
        reason: None,
        started_at: 0.0,
        wall_s: window.as_secs_f64(),
        ops: None,
        metric: None,
        usage,
        counters: counter_values,
        workers: Vec::new(),
        extras: BTreeMap::new(),
    };
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            sample.status = SampleStatus::Failed;
            sample.reason = Some(format!("load generator: {e}"));
            return Ok(Some(sample));
        }
    };
    let failure = judge(server, end, &report, &stderr);
    fill(&mut sample, &report, &chosen, &stdout);
    if let Some((status, reason)) = failure {
        sample.status = status;
        sample.reason = Some(reason);
        sample.metric = None;
    }
    Ok(Some(sample))
}

/// Start the server behind the gate, counters attached, then let it exec.
fn start(
    point: &Point,
    server: &str,
    p: &ServerParams,
    root: &Path,
    ctx: &SampleContext,
    plan: Option<&CounterPlan>,
) -> Result<(Running, Option<ThreadCounters>), ExecError> {
    let cpus: Vec<u32> = point.cpus.clone().unwrap_or_default();
    let list = cpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut nginx_at = None;
    let mut cmd = Command::new(&ctx.exe);
    cmd.arg("__gate");
    match server {
        "web" => {
            cmd.arg(&ctx.exe).args([
                "serve",
                "web",
                "--model",
                &point.model.to_string(),
                "--threads",
                &point.workers.to_string(),
                "--listen",
                "127.0.0.1:0",
            ]);
            cmd.arg("--root").arg(root);
            if !list.is_empty() {
                cmd.args(["--cpus", &list]);
            }
            if let Some(h) = p.helpers {
                cmd.args(["--param", &format!("helpers={h}")]);
            }
        }
        _ => {
            let exe = nginx::find().ok_or(ExecError::ServerMissing {
                reason: nginx::missing_reason(),
            })?;
            let d = WatchedDir::new(&ctx.exe, "smtlab-nginx-").map_err(|source| {
                ExecError::ConfigDir {
                    server: "nginx",
                    source,
                }
            })?;
            // nginx cannot report a port the kernel chose: take a free one
            // now (a race with another program is possible but rare; the
            // sample then fails saying the address is in use).
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|source| ExecError::FreePort {
                    server: "nginx",
                    source,
                })?
                .port();
            let listen = SocketAddr::from(([127, 0, 0, 1], port));
            let conf = NginxConfig {
                workers: point.workers,
                cpus: cpus.clone(),
                root: root.canonicalize().unwrap_or_else(|_| root.to_path_buf()),
                listen,
                as_root: nix::unistd::geteuid().is_root(),
            };
            let path = d.path().join("nginx.conf");
            std::fs::write(&path, conf.render(d.path())).map_err(|source| {
                ExecError::WriteConfig {
                    path: path.clone(),
                    source,
                }
            })?;
            cmd.arg(exe).args(["-e", "stderr", "-p"]).arg(d.path());
            cmd.arg("-c").arg(&path);
            nginx_at = Some((listen, d));
        }
    }
    spawn(cmd, point, server, ctx, plan, nginx_at)
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

/// Why a sample failed, if it did: the server crashed or exited with an
/// error, a body was wrong (a wrong result), or nothing was answered.
fn judge(
    server: &str,
    end: Option<ChildEnd>,
    report: &LoadReport,
    stderr: &str,
) -> Option<(SampleStatus, String)> {
    let err = stderr.trim().replace('\n', " | ");
    let err = if err.is_empty() {
        String::new()
    } else {
        format!(": {err}")
    };
    match end {
        Some(ChildEnd::Exited(0)) => {}
        Some(ChildEnd::Signaled(_)) => {
            return Some((
                SampleStatus::Crashed,
                format!("the {server} server was {}{err}", describe(end)),
            ))
        }
        _ => {
            return Some((
                SampleStatus::Failed,
                format!("the {server} server stopped with {}{err}", describe(end)),
            ))
        }
    }
    report.failure().map(|why| (SampleStatus::Failed, why))
}

/// CPI and the paper's counters per operation (`unit`: `req`, `msg`), user
/// and kernel apart, from counters that were counted (`Ok`): the web and
/// chat samples' `cpi.SCOPE`, `instructions_per_UNIT.SCOPE` and
/// `EVENT_per_UNIT.SCOPE` extras.
pub(crate) fn counter_extras(
    counters: &[smtlab_types::CounterValue],
    per: impl Fn(f64) -> f64,
    unit: &str,
    x: &mut BTreeMap<String, f64>,
) {
    let counted = |name: &str, scope: &str| {
        counters
            .iter()
            .find(|c| c.name == name && c.scope.as_str() == scope && c.status == CounterStatus::Ok)
            .and_then(|c| c.value)
    };
    for scope in ["user", "kernel"] {
        if let (Some(cy), Some(ins)) = (counted("cycles", scope), counted("instructions", scope)) {
            if ins > 0.0 {
                x.insert(format!("cpi.{scope}"), cy / ins);
            }
            x.insert(format!("instructions_per_{unit}.{scope}"), per(ins));
        }
        for ev in [
            "L1-icache-load-misses",
            "L1-dcache-load-misses",
            "iTLB-load-misses",
            "branch-misses",
        ] {
            if let Some(v) = counted(ev, scope) {
                x.insert(format!("{ev}_per_{unit}.{scope}"), per(v));
            }
        }
    }
}

/// The metric (successful requests per second), the per-request server
/// costs, and what the load generator saw, into the sample.
fn fill(
    sample: &mut Sample,
    report: &LoadReport,
    chosen: &client_cpus::ClientCpus,
    stdout: &[String],
) {
    let ok = report.ok;
    sample.ops = Some(ok);
    sample.metric = Some(ok as f64 / report.seconds);
    let x = &mut sample.extras;
    let per = |v: f64| if ok > 0 { v / ok as f64 } else { 0.0 };
    if let Some(u) = sample.usage.user_s {
        x.insert("server_user_us_per_req".into(), per(u * 1e6));
    }
    if let Some(s) = sample.usage.sys_s {
        x.insert("server_sys_us_per_req".into(), per(s * 1e6));
    }
    if let Some(v) = sample.usage.voluntary_cs {
        x.insert("voluntary_cs_per_req".into(), per(v as f64));
    }
    if let Some(v) = sample.usage.involuntary_cs {
        x.insert("involuntary_cs_per_req".into(), per(v as f64));
    }
    counter_extras(&sample.counters, per, "req", x);
    x.insert("requests_answered".into(), report.requests as f64);
    x.insert("requests_sent".into(), report.sent as f64);
    x.insert(
        "requests_in_flight_at_end".into(),
        report.in_flight_at_end as f64,
    );
    x.insert("mbit_per_s".into(), report.mbit_per_s);
    x.insert("latency_p50_us".into(), report.latency_us.p50);
    x.insert("latency_p99_us".into(), report.latency_us.p99);
    x.insert("latency_p999_us".into(), report.latency_us.p999);
    x.insert("latency_max_us".into(), report.latency_us.max);
    x.insert("client_cpu_share".into(), report.client_cpu_share);
    x.insert(
        "client_bound".into(),
        f64::from(u8::from(report.client_bound)),
    );
    x.insert(
        "client_pinned".into(),
        f64::from(u8::from(!chosen.cpus().is_empty())),
    );
    for (kind, n) in &report.errors {
        x.insert(format!("errors.{kind}"), *n as f64);
    }
    // `web`'s own count of the requests it served, from its stats line.
    let served = stdout
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("stats: "))
        .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
        .and_then(|v| v["counters"]["requests"].as_u64());
    if let Some(n) = served {
        x.insert("server_requests".into(), n as f64);
    }
    let mut notes = Vec::new();
    if report.client_bound {
        notes.push(format!(
            "the load generator, not the server, was the bottleneck (its CPUs {:.0}% busy)",
            report.client_cpu_share * 100.0
        ));
    }
    if chosen.cpus().is_empty() {
        notes.push(format!("load generator {chosen}"));
    }
    if !notes.is_empty() {
        sample.reason = Some(notes.join("; "));
    }
}

/// The web parameter `param` is not one of `server`'s (`helpers` is
/// smtlab's own server's only).
fn unknown_web(server: &str, param: &str) -> ServerParamError {
    let takes = PARAMS
        .iter()
        .copied()
        .filter(|k| server == "web" || *k != "helpers")
        .collect();
    ServerParamError::Unknown {
        server: server.into(),
        param: param.into(),
        takes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parameters_are_checked_with_the_name_at_fault() {
        let p = ServerParams::parse("web", &params(&[])).unwrap();
        assert_eq!(p.files.dirs, DEFAULT_DIRS);
        assert_eq!(p.connections_for(3), 6);
        assert!(!p.keep_alive);
        let p = ServerParams::parse(
            "web",
            &params(&[
                ("files", "5MB"),
                ("connections", "8"),
                ("keepalive", "1"),
                ("url", "/dir00000/class1_0"),
                ("helpers", "2"),
                ("client_cpus", "1"),
            ]),
        )
        .unwrap();
        assert_eq!(p.files.dirs, 1);
        assert_eq!(p.connections_for(3), 8);
        assert!(p.keep_alive);
        assert_eq!(p.helpers, Some(2));
        assert_eq!(p.client_cpus.unwrap().iter().collect::<Vec<_>>(), vec![1]);
        for (kv, flag) in [
            (("files", "huge"), "--param files=huge"),
            (("connections", "0"), "--param connections=0"),
            (("keepalive", "maybe"), "--param keepalive=maybe"),
            (("url", "index.html"), "--param url=index.html"),
            (("client_cpus", "x"), "--client-cpus x"),
            (("threads", "2"), "--param threads"),
        ] {
            let e = ServerParams::parse("web", &params(&[kv]))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(flag), "{e}");
            assert!(!e.contains('\n'));
        }
        // helpers belong to smtlab's event model, not to nginx.
        let e = ServerParams::parse("nginx", &params(&[("helpers", "1")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such parameter"), "{e}");
        assert!(ServerParams::parse("apache", &params(&[])).is_err());
    }

    #[test]
    fn the_file_set_is_cached_by_size() {
        let a = files_dir(&FileSet::with_dirs(1).unwrap());
        let b = files_dir(&FileSet::with_dirs(2).unwrap());
        assert_ne!(a, b);
        assert!(a.ends_with("smtlab/web-files/dirs1"), "{}", a.display());
    }

    fn report(ok: u64, errors: &[(&str, u64)]) -> LoadReport {
        LoadReport {
            requests: ok + errors.iter().map(|e| e.1).sum::<u64>(),
            ok,
            errors: errors.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            seconds: 1.0,
            ..Default::default()
        }
    }

    #[test]
    fn a_wrong_body_a_crash_or_no_answer_fails_the_sample() {
        let fine = Some(ChildEnd::Exited(0));
        assert_eq!(judge("web", fine, &report(10, &[]), ""), None);
        assert_eq!(judge("web", fine, &report(10, &[("timeout", 1)]), ""), None);
        let (s, why) = judge("web", fine, &report(10, &[("body", 2)]), "").unwrap();
        assert_eq!(s, SampleStatus::Failed);
        assert!(why.contains("2 response bodies"), "{why}");
        let (s, why) = judge("web", fine, &report(0, &[("connect", 5)]), "").unwrap();
        assert_eq!(s, SampleStatus::Failed);
        assert!(why.contains("connect 5"), "{why}");
        let (s, why) = judge(
            "nginx",
            Some(ChildEnd::Signaled(11)),
            &report(5, &[]),
            "boom\n",
        )
        .unwrap();
        assert_eq!(s, SampleStatus::Crashed);
        assert!(why.contains("SIGSEGV") && why.ends_with(": boom"), "{why}");
        let (s, _) = judge("web", Some(ChildEnd::Exited(1)), &report(5, &[]), "").unwrap();
        assert_eq!(s, SampleStatus::Failed);
    }

    #[test]
    fn a_window_without_an_answer_says_what_was_sent_and_still_waiting() {
        let fine = Some(ChildEnd::Exited(0));
        let silent = LoadReport {
            sent: 64,
            in_flight_at_end: 64,
            seconds: 0.3,
            ..Default::default()
        };
        let (s, why) = judge("nginx", fine, &silent, "").unwrap();
        assert_eq!(s, SampleStatus::Failed);
        assert_eq!(
            why,
            "no request answered in the 0.3 s window: 64 sent, 64 still waiting at its end \
             (the server was not answering), errors: none"
        );
        // Answers that were all errors: named, and not "not answering".
        let refused = LoadReport {
            requests: 5,
            sent: 6,
            in_flight_at_end: 1,
            errors: [("status_5xx".to_string(), 5)].into(),
            seconds: 1.0,
            ..Default::default()
        };
        let (_, why) = judge("web", fine, &refused, "").unwrap();
        assert_eq!(
            why,
            "no request answered successfully in the 1 s window: 6 sent, 5 answered, 1 still \
             waiting at its end, errors: status_5xx 5"
        );
        // Nothing sent at all: the client, not the server, did not run.
        let idle = LoadReport {
            seconds: 0.3,
            ..Default::default()
        };
        let (_, why) = judge("web", fine, &idle, "").unwrap();
        assert_eq!(
            why,
            "no request answered in the 0.3 s window: 0 sent (the load generator's threads did \
             not run in it), 0 still waiting at its end, errors: none"
        );
    }

    /// A server as `wait_answering` sees it, without a process: an
    /// address smtlab gave it (as nginx's) and an `ended` that says nothing.
    struct Fake {
        running: Running,
        /// Keeps the `ended` channel open (the server has not ended);
        /// sending on it says it has.
        ended: mpsc::Sender<(Option<ChildEnd>, ResourceUsage)>,
    }

    fn fake(addr: SocketAddr) -> Fake {
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

    fn context(stop: &std::sync::atomic::AtomicBool, timeout: Duration) -> SampleContext<'_> {
        SampleContext {
            exe: PathBuf::new(),
            preloads: Default::default(),
            timeout: Some(timeout),
            counters: false,
            stop,
            metric_regex: None,
        }
    }

    /// nginx under emulation: the port accepts at once (the backlog), the
    /// requests are read only after `delay` (its workers started), then
    /// each connection is answered 200 and closed; until `stop`.
    fn late_server(
        delay: Duration,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> (SocketAddr, std::thread::JoinHandle<()>) {
        use std::io::Write;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            std::thread::sleep(delay);
            l.set_nonblocking(true).unwrap();
            while !stop.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((mut c, _)) => {
                        let _ = c.set_nonblocking(false);
                        let _ = c.set_read_timeout(Some(Duration::from_millis(200)));
                        let mut b = [0u8; 1024];
                        let _ = c.read(&mut b);
                        let _ = c.write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                        );
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        (addr, h)
    }

    #[test]
    fn ready_waits_until_the_server_answers_then_the_window_measures_requests() {
        let stop_server = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let delay = Duration::from_millis(800);
        let (addr, server) = late_server(delay, stop_server.clone());
        let stop = std::sync::atomic::AtomicBool::new(false);
        let ctx = context(&stop, Duration::from_secs(10));
        let mut f = fake(addr);
        let t = Instant::now();
        let ready = wait_answering(&mut f.running, "nginx", &ctx, "/dir00000/class0_0");
        let waited = t.elapsed();
        // A window as short as the one that failed under emulation.
        let report = ready.as_ref().ok().map(|_| {
            load::run(&LoadConfig {
                target: addr,
                host: addr.to_string(),
                urls: Urls::List(vec!["/x".into()]),
                connections: 2,
                keep_alive: false,
                rate: None,
                duration: Duration::from_millis(300),
                warmup: Duration::ZERO,
                threads: 1,
                cpus: Vec::new(),
                verify: false,
                seed: 1,
                request_timeout: REQUEST_TIMEOUT,
            })
        });
        stop_server.store(true, Ordering::SeqCst);
        server.join().unwrap();
        assert_eq!(ready.unwrap(), Some(addr));
        assert!(
            waited >= delay,
            "ready after {waited:?}, before it answered"
        );
        let report = report.unwrap().unwrap();
        assert!(report.ok > 0, "{report:?}");
        assert_eq!(judge("nginx", Some(ChildEnd::Exited(0)), &report, ""), None);
        drop(f.ended);
    }

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

    #[test]
    fn per_request_costs_divide_by_the_answered_requests() {
        let mut s = Sample {
            seq: 0,
            warmup: false,
            status: SampleStatus::Ok,
            reason: None,
            started_at: 0.0,
            wall_s: 1.0,
            ops: None,
            metric: None,
            usage: ResourceUsage {
                user_s: Some(0.2),
                sys_s: Some(0.6),
                voluntary_cs: Some(4000),
                involuntary_cs: Some(10),
                ..Default::default()
            },
            counters: Vec::new(),
            workers: Vec::new(),
            extras: BTreeMap::new(),
        };
        let chosen = client_cpus::ClientCpus::Given(CpuSet::parse_list("1").unwrap());
        let stats = r#"stats: {"counters":{"requests":2002}}"#.to_string();
        fill(&mut s, &report(2000, &[]), &chosen, &[stats]);
        assert_eq!(s.metric, Some(2000.0));
        assert_eq!(s.ops, Some(2000));
        assert!((s.extras["server_user_us_per_req"] - 100.0).abs() < 1e-9);
        assert!((s.extras["server_sys_us_per_req"] - 300.0).abs() < 1e-9);
        assert!((s.extras["voluntary_cs_per_req"] - 2.0).abs() < 1e-9);
        assert_eq!(s.extras["server_requests"], 2002.0);
        assert_eq!(s.extras["client_pinned"], 1.0);
        assert_eq!(s.reason, None);
    }
}
