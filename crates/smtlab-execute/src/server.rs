//! One sample of a web server point
//! ([`Program::Server`](smtlab_types::Program::Server): `-w web`, `-w
//! nginx`), with its parameters as planned ([`WebParams`]): the server
//! started on the point's CPUs, driven by smtlab's load generator on other
//! CPUs for the sample's window, then stopped.
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
//! window of seconds), said so in the docs. Starting, finding ready and
//! stopping a server are `server_lifecycle`'s (the chat sample shares
//! them); this file holds what is the web sample's own: its parameters,
//! the file set, the load run, and the sample judged and filled.
//!
//! The file set is written once per size into a cache directory
//! (`$XDG_CACHE_HOME/smtlab/web-files/dirsN`, else `~/.cache/...`, else
//! the temporary directory) and served from there by both servers, so a
//! sample never waits for it.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::Signal;
use smtlab_counters::memory::PeakSampler;
use smtlab_counters::perf_counters::{CounterPlan, ThreadCounters};
use smtlab_serving::client_cpus;
use smtlab_sys::ChildEnd;
use smtlab_types::extras::{self, web};
use smtlab_types::{Mode, Outcome, Point, Sample, SampleStatus};
use smtlab_web::fileset::FileSet;
use smtlab_web::load::{self, LoadConfig, LoadReport, Urls};
use smtlab_web::nginx::{self, NginxConfig};
use smtlab_web::params::WebParams;

use crate::context::SampleContext;
use crate::error::ExecError;
use crate::per_op_counters::counter_extras;
use crate::server_lifecycle::{
    describe, measure, spawn, stop, wait_answering, with_server_errors, Running, POLL,
};
use crate::watchdog::WatchedDir;

/// The window of a server sample without `--duration`, seconds.
pub const DEFAULT_WINDOW_S: f64 = 1.0;
/// Longest wait for one response before the load generator calls it a
/// timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

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

/// Take one sample of a web server point with its parameters, parsed and
/// checked when the run was planned.
pub fn run(point: &Point, p: &WebParams, ctx: &SampleContext, seq: usize, warmup: bool) -> Outcome {
    measure(point, seq, warmup, |server| {
        run_inner(point, server.as_str(), p, ctx)
    })
}

/// One web sample: the file set on disk, the server started and found
/// answering, loaded for the window, stopped, and the sample judged and
/// filled; `Ok(None)` when Ctrl-C stopped it.
fn run_inner(
    point: &Point,
    server: &str,
    p: &WebParams,
    ctx: &SampleContext,
) -> Result<Option<Sample>, ExecError> {
    let window = window(point);
    let root = write_file_set(&p.files)?;

    let plan = ctx.counters.then(CounterPlan::probe);
    let (mut running, mut counters) = start(point, server, p, &root, ctx, plan.as_ref())?;
    let sampler = PeakSampler::start(&[running.pid], Duration::from_millis(50), true);

    // Ready: an address that answers, or the reason it never did.
    let addr = match wait_answering(&mut running, server, ctx, &p.files.files[0].path) {
        Ok(Some(a)) => a,
        Ok(None) => {
            abandon(&running, sampler);
            return Ok(None);
        }
        Err(e) => {
            abandon(&running, sampler);
            return Err(with_server_errors(running, e));
        }
    };

    let (config, chosen) = load_config(point, p, addr, window);
    let (report, interrupted) = match load_watching_ctrl_c(&running, config, ctx) {
        Ok(r) => r,
        Err(e) => {
            abandon(&running, sampler);
            return Err(e);
        }
    };
    let memory = sampler.peak();
    let (end, mut usage) = stop(&running, Signal::SIGTERM);
    sampler.stop();
    if interrupted || ctx.stop.load(Ordering::SeqCst) {
        return Ok(None);
    }
    let (stdout, stderr) = output(running);
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
    conclude(&mut sample, server, end, report, &chosen, &stdout, &stderr);
    Ok(Some(sample))
}

/// The sample's window: `--duration`, or [`DEFAULT_WINDOW_S`] for a
/// fixed-work point (a server has no work to finish).
fn window(point: &Point) -> Duration {
    match point.mode {
        Mode::FixedTime { seconds } => Duration::from_secs_f64(seconds),
        Mode::FixedWork { .. } => Duration::from_secs_f64(DEFAULT_WINDOW_S),
    }
}

/// The file set written into its cache directory ([`files_dir`], kept
/// between samples and runs), which both servers are given as their root.
fn write_file_set(files: &FileSet) -> Result<PathBuf, ExecError> {
    let root = files_dir(files);
    files
        .write_to(&root)
        .map_err(|source| ExecError::WriteFileSet {
            dir: root.clone(),
            source,
        })?;
    Ok(root)
}

/// A server given up on before its window ended: killed, reaped, its
/// memory no longer sampled.
fn abandon(running: &Running, sampler: PeakSampler) {
    stop(running, Signal::SIGKILL);
    sampler.stop();
}

/// The load generator's configuration for the window against `addr`, and
/// the CPUs it runs on (`--client-cpus`, else the ones the server does not
/// use).
fn load_config(
    point: &Point,
    p: &WebParams,
    addr: SocketAddr,
    window: Duration,
) -> (LoadConfig, client_cpus::ClientCpus) {
    let chosen = client_cpus::choose(addr, p.client_cpus.as_ref());
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
    (config, chosen)
}

/// The load run for its window, and whether Ctrl-C came meanwhile (the
/// server is then killed at once). The load runs in its own thread so that
/// Ctrl-C is seen meanwhile; it ends with its window whatever happens to
/// the server. `Err` only when that thread could not be started.
fn load_watching_ctrl_c(
    running: &Running,
    config: LoadConfig,
    ctx: &SampleContext,
) -> Result<(Result<LoadReport, ExecError>, bool), ExecError> {
    let (ltx, lrx) = mpsc::channel();
    std::thread::Builder::new()
        .name("smtlab-load".into())
        .spawn(move || {
            let _ = ltx.send(load::run(&config));
        })
        .map_err(|io| ExecError::LoadThread { io })?;
    let mut interrupted = false;
    let report = loop {
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
    Ok((report, interrupted))
}

/// What the stopped server printed: its output lines (to their end: the
/// stats line comes last; the server has exited, so the reader ends as
/// soon as the pipe is drained) and its error output.
fn output(running: Running) -> (Vec<String>, String) {
    let mut stdout = Vec::new();
    while let Ok(line) = running.stdout.recv_timeout(Duration::from_secs(2)) {
        stdout.push(line);
    }
    let stderr = running.stderr.join().unwrap_or_default();
    (stdout, stderr)
}

/// The sample's status, metric and extras from the load's report (or its
/// error), how the server ended and what it printed.
fn conclude(
    sample: &mut Sample,
    server: &str,
    end: Option<ChildEnd>,
    report: Result<LoadReport, ExecError>,
    chosen: &client_cpus::ClientCpus,
    stdout: &[String],
    stderr: &str,
) {
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            sample.status = SampleStatus::Failed;
            sample.reason = Some(format!("load generator: {e}"));
            return;
        }
    };
    let failure = judge(server, end, &report, stderr);
    fill(sample, &report, chosen, stdout);
    if let Some((status, reason)) = failure {
        sample.status = status;
        sample.reason = Some(reason);
        sample.metric = None;
    }
}

/// Start the server behind the gate, counters attached, then let it exec.
fn start(
    point: &Point,
    server: &str,
    p: &WebParams,
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
        x.insert(web::SERVER_USER_US_PER_REQ.into(), per(u * 1e6));
    }
    if let Some(s) = sample.usage.sys_s {
        x.insert(web::SERVER_SYS_US_PER_REQ.into(), per(s * 1e6));
    }
    if let Some(v) = sample.usage.voluntary_cs {
        x.insert(web::VOLUNTARY_CS_PER_REQ.into(), per(v as f64));
    }
    if let Some(v) = sample.usage.involuntary_cs {
        x.insert(web::INVOLUNTARY_CS_PER_REQ.into(), per(v as f64));
    }
    counter_extras(&sample.counters, per, web::UNIT, x);
    x.insert(web::REQUESTS_ANSWERED.into(), report.requests as f64);
    x.insert(web::REQUESTS_SENT.into(), report.sent as f64);
    x.insert(
        web::REQUESTS_IN_FLIGHT_AT_END.into(),
        report.in_flight_at_end as f64,
    );
    x.insert(web::MBIT_PER_S.into(), report.mbit_per_s);
    x.insert(extras::server::LATENCY_P50_US.into(), report.latency_us.p50);
    x.insert(extras::server::LATENCY_P99_US.into(), report.latency_us.p99);
    x.insert(
        extras::server::LATENCY_P999_US.into(),
        report.latency_us.p999,
    );
    x.insert(extras::server::LATENCY_MAX_US.into(), report.latency_us.max);
    x.insert(
        extras::server::CLIENT_CPU_SHARE.into(),
        report.client_cpu_share,
    );
    x.insert(
        extras::server::CLIENT_BOUND.into(),
        f64::from(u8::from(report.client_bound)),
    );
    x.insert(
        extras::server::CLIENT_PINNED.into(),
        f64::from(u8::from(!chosen.cpus().is_empty())),
    );
    for (kind, n) in &report.errors {
        x.insert(extras::server::errors_key(kind), *n as f64);
    }
    // `web`'s own count of the requests it served, from its stats line.
    let served = stdout
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("stats: "))
        .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
        .and_then(|v| v["counters"]["requests"].as_u64());
    if let Some(n) = served {
        x.insert(web::SERVER_REQUESTS.into(), n as f64);
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

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::time::Instant;

    use smtlab_types::cpuset::CpuSet;
    use smtlab_types::ResourceUsage;

    use super::*;
    use crate::server_lifecycle::tests::{context, fake, web_point};

    /// `--client-cpus 2-3`, parsed once at the command line into a set,
    /// reaches the load generator as that set: its CPUs, and the reason it
    /// gives (the CPUs it was given), with no text in between.
    #[test]
    fn the_client_cpus_given_are_the_cpus_the_load_generator_runs_on() {
        let given = CpuSet::parse_list("2-3").unwrap();
        let point = web_point(Some(given.clone()));
        let typed = smtlab_plan::TypedPrograms::of(std::slice::from_ref(&point)).unwrap();
        let Some(smtlab_plan::ProgramParams::Web(p)) = typed.get(&point.program) else {
            panic!("a web point plans web parameters");
        };
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let (config, chosen) = load_config(&point, p, addr, Duration::from_secs(1));
        assert_eq!(config.cpus, vec![2, 3]);
        assert_eq!(chosen, client_cpus::ClientCpus::Given(given));
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
