//! One sample of a chat point (`-w chat`, `-w ngircd`): the server started
//! on the point's CPUs (`smtlab serve chat` in the point's model, or
//! Debian's ngircd with a generated configuration in a directory of its
//! own), driven by smtlab's VolanoMark-shaped load generator
//! (`smtlab_chat::load`) on other CPUs, then stopped.
//!
//! What a sample measures, per delivered message and per connection, over
//! the **message phase only**: the load generator calls back once every
//! client has joined (before the first message) and once every message is
//! in (before any connection closes), and at both instants the server's CPU
//! time (`/proc/PID/stat`: all its threads, user and system apart), its
//! context switches (summed over `/proc/PID/task/*/status`: every thread
//! lives through the whole phase, so the sum's difference is the phase's),
//! its PSS and threads, and its hardware counters are read. Registration of
//! 10,000 clients and their tear-down are thus not charged to the
//! messages. The metric is messages delivered per second (VolanoMark's
//! score); the server's whole life (`wait4`) is kept as the sample's usage.
//!
//! A message lost, duplicated or out of order fails the sample: a wrong
//! result, like a wrong web body.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;
use smtlab_chat::load::{self as chatload, ChatLoadConfig, ChatLoadReport, Hook};
use smtlab_chat::ngircd::{self, NgircdConfig};
use smtlab_chat::params::ChatParams;
use smtlab_counters::perf_counters::{CounterPlan, ThreadCounters};
use smtlab_serving::client_cpus;
use smtlab_sys::ChildEnd;
use smtlab_types::extras::{self, chat};
use smtlab_types::{CounterValue, Outcome, Point, Sample, SampleStatus};

use crate::context::SampleContext;
use crate::error::ExecError;
use crate::per_op_counters::counter_extras;
use crate::server_lifecycle::{self as lifecycle, Running};
use crate::watchdog::WatchedDir;

/// A delivery not made this long after its message was sent is lost.
const LOSS_TIMEOUT: Duration = Duration::from_secs(60);
/// How long smtlab's chat server may take to stop after SIGTERM.
const STOP_LIMIT: Duration = Duration::from_secs(60);
/// How long ngircd may: its measured phase is over, and with thousands of
/// clients just gone it may not stop for minutes.
const NGIRCD_STOP_LIMIT: Duration = Duration::from_secs(5);
/// The server at one phase boundary.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    user_s: f64,
    sys_s: f64,
    voluntary_cs: u64,
    involuntary_cs: u64,
    threads: u64,
    pss_kb: Option<u64>,
    counters: Vec<CounterValue>,
}

/// CPU time of process `pid` (all its threads, the ended ones included),
/// from `/proc/PID/stat` fields 14 and 15, in clock ticks.
fn cpu_of(pid: i32) -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may hold spaces or parentheses: fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime / tick, stime / tick))
}

/// Context switches summed over the live threads of `pid`, and how many
/// threads there are.
fn switches_of(pid: i32) -> (u64, u64, u64) {
    let (mut v, mut n, mut threads) = (0, 0, 0);
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0, 0);
    };
    for task in dir.flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue;
        };
        threads += 1;
        for line in status.lines() {
            let num = |l: &str| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|x| x.parse::<u64>().ok())
            };
            if line.starts_with("voluntary_ctxt_switches:") {
                v += num(line).unwrap_or(0);
            } else if line.starts_with("nonvoluntary_ctxt_switches:") {
                n += num(line).unwrap_or(0);
            }
        }
    }
    (v, n, threads)
}

fn snapshot(pid: i32, counters: &Mutex<Option<ThreadCounters>>) -> Snapshot {
    let (user_s, sys_s) = cpu_of(pid).unwrap_or_default();
    let (voluntary_cs, involuntary_cs, threads) = switches_of(pid);
    let counters = counters
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .map(|c| c.read())
        .unwrap_or_default();
    Snapshot {
        user_s,
        sys_s,
        voluntary_cs,
        involuntary_cs,
        threads,
        pss_kb: smtlab_counters::memory_of(pid).ok().map(|m| m.pss_kb),
        counters,
    }
}

/// Take one sample of a chat point with its parameters, parsed and checked
/// when the run was planned.
pub fn run(
    point: &Point,
    p: &ChatParams,
    ctx: &SampleContext,
    seq: usize,
    warmup: bool,
) -> Outcome {
    lifecycle::measure(point, seq, warmup, |server| {
        run_inner(point, server.as_str(), p, ctx)
    })
}

/// One chat sample: the server started and found ready, the load's
/// message phase measured, the server stopped, the sample judged and
/// filled; `Ok(None)` when Ctrl-C stopped it.
fn run_inner(
    point: &Point,
    server: &str,
    p: &ChatParams,
    ctx: &SampleContext,
) -> Result<Option<Sample>, ExecError> {
    // Each connection is a descriptor here and in the server (which
    // inherits the limit): lift the soft limit to the hard one.
    let _ = smtlab_counters::raise_fd_limit();
    let plan = ctx.counters.then(CounterPlan::probe);
    let (mut running, counters) = start(point, server, p, ctx, plan.as_ref())?;
    let counters = Arc::new(Mutex::new(counters));
    let addr = match lifecycle::wait_ready(&mut running, server, ctx) {
        Ok(Some(a)) => a,
        Ok(None) => {
            lifecycle::stop(&running, Signal::SIGKILL);
            return Ok(None);
        }
        Err(e) => {
            lifecycle::stop(&running, Signal::SIGKILL);
            return Err(lifecycle::with_server_errors(running, e));
        }
    };
    let pid = running.pid;
    let baseline = snapshot(pid, &counters);

    let chosen = client_cpus::choose(addr, p.client_cpus.as_ref());
    let mut config = ChatLoadConfig::new(addr, p.connections / p.room, p.room, p.messages);
    config.rate = p.rate;
    config.cpus = chosen.cpus();
    config.threads = 1;
    // Late is not lost: at 10,000 connections the first messages of every
    // user reach a single-threaded server at once, and ngircd needs over
    // 10 s to deliver them all (measured); a delivery counts as lost only
    // past this.
    config.timeout = LOSS_TIMEOUT;
    config.connect_timeout = ctx
        .timeout
        .unwrap_or(Duration::from_secs(120))
        .max(Duration::from_secs(10));
    let phases: Arc<Mutex<Vec<Snapshot>>> = Arc::default();
    for hook in [&mut config.on_start, &mut config.on_end] {
        let (c, ph) = (counters.clone(), phases.clone());
        *hook = Some(Hook(Arc::new(move || {
            let s = snapshot(pid, &c);
            ph.lock().unwrap_or_else(|e| e.into_inner()).push(s);
        })));
    }
    let (ltx, lrx) = mpsc::channel();
    let loader = std::thread::Builder::new()
        .name("smtlab-chat-load".into())
        .spawn(move || {
            let _ = ltx.send(chatload::run(&config));
        });
    if let Err(io) = loader {
        lifecycle::stop(&running, Signal::SIGKILL);
        return Err(ExecError::LoadThread { io });
    }
    let mut interrupted = false;
    let report: Result<ChatLoadReport, ExecError> = loop {
        if ctx.stop.load(Ordering::SeqCst) && !interrupted {
            interrupted = true;
            running.kill();
        }
        match lrx.recv_timeout(Duration::from_millis(20)) {
            Ok(r) => break r.map_err(ExecError::ChatLoad),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(ExecError::LoadEndedWithoutReport)
            }
        }
    };
    // ngircd may take long to stop once thousands of clients have left:
    // its measured phase is over by now, so it is given time, then killed
    // (said with the sample, not counted as a crash).
    // ngircd at 10,000 connections did not stop within a minute of SIGTERM
    // (measured): its limit is short.
    let limit = if server == "ngircd" {
        NGIRCD_STOP_LIMIT
    } else {
        STOP_LIMIT
    };
    let ((end, usage), killed) = lifecycle::stop_within(&running, Signal::SIGTERM, limit);
    if interrupted || ctx.stop.load(Ordering::SeqCst) {
        return Ok(None);
    }
    let stderr = running.stderr.join().unwrap_or_default();
    let mut sample = Sample {
        seq: 0,
        warmup: false,
        status: SampleStatus::Ok,
        reason: None,
        started_at: 0.0,
        wall_s: 0.0,
        ops: None,
        metric: None,
        usage,
        counters: Vec::new(),
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
    let phases = phases.lock().unwrap_or_else(|e| e.into_inner()).clone();
    fill(&mut sample, &report, &baseline, &phases, &chosen);
    let end = if killed { None } else { end };
    if let Some((status, reason)) = judge(server, end, &report, &stderr) {
        sample.status = status;
        sample.reason = Some(reason);
        sample.metric = None;
    } else if killed {
        let note = format!(
            "the {server} server did not stop within {} s of SIGTERM after the messages and \
             was killed (its usage until then is kept)",
            limit.as_secs()
        );
        sample.reason = Some(match sample.reason.take() {
            Some(r) => format!("{r}; {note}"),
            None => note,
        });
    }
    Ok(Some(sample))
}

/// Starts the chat server or ngircd behind the gate.
fn start(
    point: &Point,
    server: &str,
    p: &ChatParams,
    ctx: &SampleContext,
    plan: Option<&CounterPlan>,
) -> Result<(Running, Option<ThreadCounters>), ExecError> {
    let cpus: Vec<u32> = point.cpus.clone().unwrap_or_default();
    let list = cpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut cmd = Command::new(&ctx.exe);
    cmd.arg("__gate");
    let mut fixed = None;
    if server == "chat" {
        cmd.arg(&ctx.exe).args([
            "serve",
            "chat",
            "--model",
            &point.model.to_string(),
            "--threads",
            &point.workers.to_string(),
            "--listen",
            "127.0.0.1:0",
            "--max-connections",
            &(p.connections + 100).to_string(),
        ]);
        if !list.is_empty() {
            cmd.args(["--cpus", &list]);
        }
    } else {
        let exe = ngircd::find().ok_or(ExecError::ServerMissing {
            reason: ngircd::missing_reason(),
        })?;
        let d =
            WatchedDir::new(&ctx.exe, "smtlab-ngircd-").map_err(|source| ExecError::ConfigDir {
                server: "ngircd",
                source,
            })?;
        // ngircd cannot listen on port 0: take a free port now (a race with
        // another program is possible but rare; the sample then fails
        // saying so).
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|source| ExecError::FreePort {
                server: "ngircd",
                source,
            })?
            .port();
        let listen = SocketAddr::from(([127, 0, 0, 1], port));
        let conf = NgircdConfig {
            listen,
            max_connections: p.connections + 100,
            dir: d.path().to_path_buf(),
        };
        ngircd::write_files(&conf).map_err(|source| ExecError::WriteNgircdConfig { source })?;
        cmd.arg(exe).args(conf.args());
        fixed = Some((listen, d));
    }
    lifecycle::spawn(cmd, point, server, ctx, plan, fixed)
}

/// Why a sample failed, if it did: the server crashed or exited with an
/// error, or a message was lost, doubled or reordered (a wrong result),
/// or none was delivered.
fn judge(
    server: &str,
    end: Option<ChildEnd>,
    r: &ChatLoadReport,
    stderr: &str,
) -> Option<(SampleStatus, String)> {
    let err = stderr.trim().lines().last().unwrap_or("").to_string();
    let err = if err.is_empty() {
        String::new()
    } else {
        format!(": {err}")
    };
    match end {
        // ngircd ends on SIGTERM with status 0 or by the signal; `None`:
        // killed by smtlab after its stop limit (said by the caller).
        None => {}
        Some(ChildEnd::Exited(0)) => {}
        Some(ChildEnd::Signaled(15)) if server == "ngircd" => {}
        Some(ChildEnd::Signaled(_)) => {
            return Some((
                SampleStatus::Crashed,
                format!("the {server} server was {}{err}", lifecycle::describe(end)),
            ))
        }
        _ => {
            return Some((
                SampleStatus::Failed,
                format!(
                    "the {server} server stopped with {}{err}",
                    lifecycle::describe(end)
                ),
            ))
        }
    }
    r.failure().map(|why| (SampleStatus::Failed, why))
}

/// The metric (messages delivered per second), the per-message and
/// per-connection server costs of the message phase, and what the load
/// generator saw.
fn fill(
    sample: &mut Sample,
    r: &ChatLoadReport,
    baseline: &Snapshot,
    phases: &[Snapshot],
    chosen: &client_cpus::ClientCpus,
) {
    sample.ops = Some(r.deliveries);
    sample.metric = Some(r.messages_per_s);
    sample.wall_s = r.elapsed_s;
    let x = &mut sample.extras;
    let conns = r.connections.max(1) as f64;
    let per = |v: f64| {
        if r.deliveries > 0 {
            v / r.deliveries as f64
        } else {
            0.0
        }
    };
    x.insert(chat::CONNECTIONS.into(), r.connections as f64);
    x.insert(chat::MESSAGES_SENT.into(), r.sent as f64);
    x.insert(chat::DELIVERIES.into(), r.deliveries as f64);
    if let [start, end] = phases {
        x.insert(
            chat::SERVER_USER_US_PER_MSG.into(),
            per((end.user_s - start.user_s) * 1e6),
        );
        x.insert(
            chat::SERVER_SYS_US_PER_MSG.into(),
            per((end.sys_s - start.sys_s) * 1e6),
        );
        x.insert(
            chat::VOLUNTARY_CS_PER_MSG.into(),
            per(end.voluntary_cs.saturating_sub(start.voluntary_cs) as f64),
        );
        x.insert(
            chat::INVOLUNTARY_CS_PER_MSG.into(),
            per(end.involuntary_cs.saturating_sub(start.involuntary_cs) as f64),
        );
        x.insert(chat::SERVER_THREADS.into(), end.threads as f64);
        if let (Some(b), Some(e)) = (baseline.pss_kb, end.pss_kb) {
            x.insert(chat::SERVER_PSS_KB.into(), e as f64);
            x.insert(
                chat::SERVER_PSS_KB_PER_CONNECTION.into(),
                e.saturating_sub(b) as f64 / conns,
            );
        }
        // Hardware counters over the phase, per delivered message.
        let phase: Vec<CounterValue> = end
            .counters
            .iter()
            .map(|e| {
                let s = start
                    .counters
                    .iter()
                    .find(|s| s.name == e.name && s.scope == e.scope);
                let mut v = e.clone();
                if let (Some(a), Some(b)) = (s.and_then(|s| s.value), e.value) {
                    v.value = Some(b - a);
                }
                v
            })
            .collect();
        counter_extras(&phase, per, chat::UNIT, x);
        sample.counters = phase;
    }
    x.insert(extras::server::LATENCY_P50_US.into(), r.latency_us.p50);
    x.insert(extras::server::LATENCY_P99_US.into(), r.latency_us.p99);
    x.insert(extras::server::LATENCY_P999_US.into(), r.latency_us.p999);
    x.insert(extras::server::LATENCY_MAX_US.into(), r.latency_us.max);
    x.insert(chat::CONNECT_P50_US.into(), r.connect_us.p50);
    x.insert(chat::CONNECT_P99_US.into(), r.connect_us.p99);
    x.insert(extras::server::CLIENT_CPU_SHARE.into(), r.client_busy);
    x.insert(
        extras::server::CLIENT_BOUND.into(),
        f64::from(u8::from(r.client_bound)),
    );
    x.insert(
        extras::server::CLIENT_PINNED.into(),
        f64::from(u8::from(!chosen.cpus().is_empty())),
    );
    for (kind, n) in &r.errors {
        x.insert(extras::server::errors_key(kind), *n as f64);
    }
    let mut notes = Vec::new();
    if r.client_bound {
        notes.push(r.bottleneck.clone());
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
    use smtlab_types::cpuset::CpuSet;

    use super::*;

    #[test]
    fn a_lost_message_or_a_crash_fails_the_sample() {
        let ok = ChatLoadReport {
            connections: 4,
            sent: 8,
            deliveries: 24,
            expected_deliveries: 24,
            ..Default::default()
        };
        assert_eq!(judge("chat", Some(ChildEnd::Exited(0)), &ok, ""), None);
        assert_eq!(judge("ngircd", Some(ChildEnd::Signaled(15)), &ok, ""), None);
        let (s, why) = judge("chat", Some(ChildEnd::Signaled(11)), &ok, "boom").unwrap();
        assert_eq!(s, SampleStatus::Crashed);
        assert!(why.contains("SIGSEGV") && why.ends_with(": boom"), "{why}");
        let lost = ChatLoadReport {
            lost: 3,
            closed_reasons: [("SendQ exceeded".to_string(), 1)].into_iter().collect(),
            ..ok.clone()
        };
        let (s, why) = judge("chat", Some(ChildEnd::Exited(0)), &lost, "").unwrap();
        assert_eq!(s, SampleStatus::Failed);
        assert!(
            why.contains("3 were lost") && why.contains("1 x SendQ exceeded"),
            "{why}"
        );
    }

    #[test]
    fn per_message_costs_are_the_phase_over_the_deliveries() {
        let r = ChatLoadReport {
            connections: 200,
            sent: 1000,
            deliveries: 19_000,
            expected_deliveries: 19_000,
            messages_per_s: 95_000.0,
            elapsed_s: 0.2,
            ..Default::default()
        };
        let base = Snapshot {
            pss_kb: Some(2000),
            ..Default::default()
        };
        let start = Snapshot {
            user_s: 1.0,
            sys_s: 2.0,
            voluntary_cs: 100,
            involuntary_cs: 5,
            threads: 401,
            pss_kb: Some(9000),
            counters: Vec::new(),
        };
        let end = Snapshot {
            user_s: 1.19,
            sys_s: 2.38,
            voluntary_cs: 19_100,
            involuntary_cs: 5,
            threads: 401,
            pss_kb: Some(10_000),
            counters: Vec::new(),
        };
        let mut s = Sample {
            seq: 0,
            warmup: false,
            status: SampleStatus::Ok,
            reason: None,
            started_at: 0.0,
            wall_s: 0.0,
            ops: None,
            metric: None,
            usage: Default::default(),
            counters: Vec::new(),
            workers: Vec::new(),
            extras: BTreeMap::new(),
        };
        let chosen = client_cpus::ClientCpus::Given(CpuSet::parse_list("1").unwrap());
        fill(&mut s, &r, &base, &[start, end], &chosen);
        assert_eq!(s.metric, Some(95_000.0));
        assert_eq!(s.ops, Some(19_000));
        assert!((s.extras["server_user_us_per_msg"] - 10.0).abs() < 1e-6);
        assert!((s.extras["server_sys_us_per_msg"] - 20.0).abs() < 1e-6);
        assert!((s.extras["voluntary_cs_per_msg"] - 1.0).abs() < 1e-9);
        assert_eq!(s.extras["server_threads"], 401.0);
        assert!((s.extras["server_pss_kb_per_connection"] - 40.0).abs() < 1e-9);
    }
}
