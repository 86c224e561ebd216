//! smtlab's side of one sample of a user command (`--cmd TEMPLATE`).
//!
//! One process per rank runs `sh -c` with the template's placeholders
//! filled in: `{threads}` or its short form `{n}` (threads for this
//! process), `{rank}`, `{cpus}` (its CPU list, comma-separated; empty when
//! not pinned). `{threads}` exists because clap's help renderer turns a
//! literal `{n}` into a line break, so `--help` texts cannot show `{n}`. In the thread and hybrid
//! models the process's threads are pinned one by one with `smtlab pin`'s
//! preload library; in the process model each process is confined to its
//! CPU. All processes are created blocked before `exec` (so counters can be
//! attached with `enable_on_exec`), then released together: the wall time
//! runs from that release to the last exit (so it includes the `exec` of
//! the shell, as hyperfine's includes its fork and exec). Each process leads its own
//! process group, so a timeout or Ctrl-C kills everything it started.

use std::io::{BufRead, BufReader, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ChildStderr, ChildStdout, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::context::SampleContext;
use crate::error::ExecError;
use smtlab_counters::memory::PeakSampler;
use smtlab_counters::perf_counters::{sum_counters, CounterPlan, ThreadCounters};
use smtlab_counters::rusage::{sum_usage, usage_from_wait4};
use smtlab_sys::{self as sys, ChildEnd};
use smtlab_types::cpuset::CpuSet;
use smtlab_types::{Outcome, Point, Program};
use smtlab_types::{ResourceUsage, Sample, SampleStatus, WorkerSample};

const POLL: Duration = Duration::from_millis(50);
/// Output kept per process for `--metric` (the end of it).
const KEEP_OUTPUT: usize = 1 << 20;

/// The placeholders a `--cmd` template may hold.
pub const PLACEHOLDERS: [&str; 4] = ["{threads}", "{n}", "{rank}", "{cpus}"];

/// A `--cmd` template naming a placeholder smtlab does not fill.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--cmd: unknown placeholder {{{name}}}; smtlab fills {{threads}} (or {{n}}), {{rank}} and \
     {{cpus}} (a shell's ${{{name}}} is left to the shell)"
)]
pub struct UnknownPlaceholder {
    pub name: String,
}

/// The pieces of a template: literal text and placeholder names. A
/// placeholder is `{NAME}` with NAME a word (letters, digits, `_`, not
/// starting with a digit) not preceded by `$`; anything else in braces (a
/// shell's `${VAR}`, `{a,b}`, `{1..3}`, awk's `{print $1}`) is literal text,
/// so shell commands keep working.
fn pieces(template: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut literal_from = 0;
    let bytes = template.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' && (i == 0 || bytes[i - 1] != b'$') {
            let rest = &template[i + 1..];
            let len = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            let is_word = len > 0 && !rest.as_bytes()[0].is_ascii_digit();
            if is_word && rest.as_bytes().get(len) == Some(&b'}') {
                out.push((&template[literal_from..i], false));
                out.push((&rest[..len], true));
                i += len + 2;
                literal_from = i;
                continue;
            }
        }
        i += 1;
    }
    out.push((&template[literal_from..], false));
    out
}

/// Refuse a template with a placeholder smtlab does not know (`{foo}`):
/// passed on literally, it would run a different command than meant.
pub fn check_template(template: &str) -> Result<(), UnknownPlaceholder> {
    match pieces(template)
        .into_iter()
        .find(|(p, is_name)| *is_name && !PLACEHOLDERS.contains(&format!("{{{p}}}").as_str()))
    {
        Some((name, _)) => Err(UnknownPlaceholder {
            name: name.to_string(),
        }),
        None => Ok(()),
    }
}

/// Fill in a template's placeholders (see [`check_template`]).
pub fn expand(template: &str, n: usize, rank: usize, cpus: &[u32]) -> String {
    let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    let mut out = String::with_capacity(template.len());
    for (piece, is_name) in pieces(template) {
        match (is_name, piece) {
            (false, text) => out.push_str(text),
            (true, "threads" | "n") => out.push_str(&n.to_string()),
            (true, "rank") => out.push_str(&rank.to_string()),
            (true, "cpus") => out.push_str(&list.join(",")),
            // Checked away when the command line was parsed; kept as
            // written if a stored run holds one.
            (true, other) => {
                out.push('{');
                out.push_str(other);
                out.push('}');
            }
        }
    }
    out
}

struct Child {
    pid: i32,
    gate: Option<sys::Gate>,
}

struct Ended {
    rank: usize,
    end: Option<ChildEnd>,
    usage: ResourceUsage,
    at: f64,
}

pub fn run(point: &Point, ctx: &SampleContext, seq: usize, warmup: bool) -> Outcome {
    let Program::Command { template } = &point.program else {
        unreachable!("command::run is only called for user commands");
    };
    match run_inner(point, template, ctx, seq, warmup) {
        Ok(o) => o,
        Err(e) => Outcome::Measured(Box::new(failed(point, seq, warmup, e.reason()))),
    }
}

fn failed(point: &Point, seq: usize, warmup: bool, reason: String) -> Sample {
    let _ = point;
    Sample::without_result(
        seq,
        warmup,
        SampleStatus::Failed,
        reason,
        sys::unix_now_s(),
        0.0,
    )
}

/// One sample of a user command: its ranks spawned at their gates,
/// counters and readers attached, released together, waited for (or
/// killed at the timeout or on Ctrl-C), then the sample from how they
/// ended and what they printed.
fn run_inner(
    point: &Point,
    template: &str,
    ctx: &SampleContext,
    seq: usize,
    warmup: bool,
) -> Result<Outcome, ExecError> {
    let (procs, threads) = point.model.shape(point.workers);
    let pin_lib = match (&point.cpus, threads > 1) {
        (Some(_), true) => Some(crate::pin::preload_library()?),
        _ => None,
    };
    let plan = ctx.counters.then(CounterPlan::probe);
    let Ranks {
        mut children,
        outputs,
        errors,
    } = spawn_ranks(point, template, ctx, (procs, threads), pin_lib.as_deref())?;

    let mut counters: Vec<ThreadCounters> = match &plan {
        Some(p) => children
            .iter()
            .map(|c| ThreadCounters::open_for_process(c.pid, p))
            .collect(),
        None => Vec::new(),
    };
    let pids: Vec<i32> = children.iter().map(|c| c.pid).collect();
    // Descendants too: `sh -c` may fork the real program.
    let sampler = PeakSampler::start(&pids, Duration::from_millis(50), true);

    // Readers and waiters before the release, so nothing is missed.
    let orx = start_readers(&children, outputs, errors)?;
    let (started_at, start) = release(&mut children);
    let wrx = start_waiters(&children)?;
    let waited = wait_for_ranks(&children, &wrx, ctx, procs);
    // Whatever the ranks started in the background dies with them.
    kill_groups(&children);
    let memory = sampler.stop();
    if waited.interrupted {
        return Ok(Outcome::Interrupted);
    }
    let mut texts: Vec<(String, String)> = vec![(String::new(), String::new()); procs];
    for (rank, o, e) in orx.iter() {
        texts[rank] = (o, e);
    }
    let ended = waited.ended;
    let end = ended.iter().flatten().map(|e| e.at).fold(start, f64::max);
    let wall_s = end - start;

    let per_proc: Vec<Vec<_>> = counters.iter_mut().map(|c| c.read()).collect();
    let summed = sum_counters(&per_proc);
    let mut usage = sum_usage(
        &ended
            .iter()
            .flatten()
            .map(|e| e.usage.clone())
            .collect::<Vec<_>>(),
    );
    if let Some(m) = memory.filter(|m| m.samples > 0) {
        usage.pss_kb = Some(m.pss_kb);
        usage.anon_huge_kb = Some(m.anon_huge_kb);
    }

    let (mut status, mut reason) = judge_ends(&ended, &texts, waited.timed_out, ctx.timeout);
    let mut metric = (status == SampleStatus::Ok).then_some(wall_s);
    if let (Some(re), SampleStatus::Ok) = (&ctx.metric_regex, status) {
        match user_metric(re, &texts, point.metric.higher_is_better) {
            Ok(value) => metric = Some(value),
            Err(why) => {
                status = SampleStatus::Failed;
                reason = Some(why);
                metric = None;
            }
        }
    }
    let workers = children
        .iter()
        .enumerate()
        .map(|(rank, c)| WorkerSample {
            worker: rank * threads,
            rank,
            thread: 0,
            pid: c.pid as u32,
            tid: None,
            cpu: point.cpus.as_ref().map(|v| v[rank * threads]),
            last_cpu: None,
            ops: 0,
            start_s: start,
            end_s: ended[rank].as_ref().map_or(end, |e| e.at),
            counters: per_proc.get(rank).cloned().unwrap_or_default(),
        })
        .collect();
    Ok(Outcome::Measured(Box::new(Sample {
        seq,
        warmup,
        status,
        reason,
        started_at,
        wall_s,
        ops: None,
        metric,
        usage,
        counters: summed,
        workers,
        // A user command reports nothing but its metric.
        extras: Default::default(),
    })))
}

/// The ranks' processes, each held at its gate, and their output pipes.
struct Ranks {
    children: Vec<Child>,
    outputs: Vec<ChildStdout>,
    errors: Vec<ChildStderr>,
}

/// Every rank's process created and held at its gate; if one cannot be,
/// those already created are killed and reaped.
fn spawn_ranks(
    point: &Point,
    template: &str,
    ctx: &SampleContext,
    (procs, threads): (usize, usize),
    pin_lib: Option<&Path>,
) -> Result<Ranks, ExecError> {
    let mut ranks = Ranks {
        children: Vec::with_capacity(procs),
        outputs: Vec::with_capacity(procs),
        errors: Vec::with_capacity(procs),
    };
    for rank in 0..procs {
        match spawn_rank(point, template, ctx, rank, threads, pin_lib) {
            Ok((child, out, err)) => {
                ranks.outputs.push(out);
                ranks.errors.push(err);
                ranks.children.push(child);
            }
            Err(e) => {
                kill_and_reap(&ranks.children);
                return Err(e);
            }
        }
    }
    Ok(ranks)
}

/// One rank's process: `sh -c` with the template filled in for it, its
/// CPUs, pinning library and allocator, held by `smtlab __gate` until
/// every rank is created and its counters are attached.
fn spawn_rank(
    point: &Point,
    template: &str,
    ctx: &SampleContext,
    rank: usize,
    threads: usize,
    pin_lib: Option<&Path>,
) -> Result<(Child, ChildStdout, ChildStderr), ExecError> {
    let cpus: Vec<u32> = point
        .cpus
        .as_ref()
        .map(|c| c[rank * threads..(rank + 1) * threads].to_vec())
        .unwrap_or_default();
    let mut cmd = Command::new(&ctx.exe);
    cmd.args(["__gate", "/bin/sh", "-c"])
        .arg(expand(template, threads, rank, &cpus))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("SMTLAB_RANK", rank.to_string())
        .env("SMTLAB_THREADS", threads.to_string())
        .process_group(0);
    let mut preload: Vec<String> = Vec::new();
    if let Some(lib) = pin_lib {
        preload.push(lib.display().to_string());
        cmd.env(crate::pin::ENV_CPUS, cpus_list(&cpus));
    }
    if let Some(p) = ctx.preload_for(point) {
        preload.push(p.library.display().to_string());
        cmd.envs(p.env.iter().map(|(k, v)| (k, v)));
    }
    if !preload.is_empty() {
        cmd.env("LD_PRELOAD", preload.join(":"));
    }
    let set: Option<CpuSet> = point.cpus.as_ref().map(|_| cpus.iter().copied().collect());
    // Close-on-exec: only the copy of the read end made at GATE_FD
    // reaches `__gate`, and nothing leaks into the user's program.
    let (gate, (gate_r, ready_w)) = sys::gate_pipes()?;
    sys::configure_gated_child(
        &mut cmd,
        set.as_ref(),
        Some((gate_r.as_raw_fd(), ready_w.as_raw_fd())),
    )?;
    let mut child = cmd.spawn().map_err(|io| ExecError::CommandStart { io })?;
    drop((gate_r, ready_w));
    let out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    let child = Child {
        pid: child.id() as i32,
        gate: Some(gate),
    };
    Ok((child, out, err))
}

/// One reader per rank, each sending (rank, the end of its output, the
/// start of its errors) once both pipes are closed; if one cannot be
/// started, every rank is killed and reaped.
fn start_readers(
    children: &[Child],
    outputs: Vec<ChildStdout>,
    errors: Vec<ChildStderr>,
) -> Result<mpsc::Receiver<(usize, String, String)>, ExecError> {
    let (otx, orx) = mpsc::channel::<(usize, String, String)>();
    // Threads are created with `Builder` throughout: at the process limit
    // (which counts threads) that fails with an error, and the sample
    // fails with it, where `thread::spawn` would panic.
    for (rank, (out, err)) in outputs.into_iter().zip(errors).enumerate() {
        let otx = otx.clone();
        let reader = std::thread::Builder::new().spawn(move || {
            let (o, e) = std::thread::scope(|s| {
                let e = std::thread::Builder::new().spawn_scoped(s, || tail(err, 4096));
                let o = tail(out, KEEP_OUTPUT);
                // No thread for stderr: its pipe is closed unread.
                (o, e.map_or(String::new(), |e| e.join().unwrap_or_default()))
            });
            let _ = otx.send((rank, o, e));
        });
        if let Err(io) = reader {
            kill_and_reap(children);
            return Err(ExecError::RankReader { rank, io });
        }
    }
    Ok(orx)
}

/// Every rank at its gate (its own start-up done), then the clock starts
/// and all go at once: the start as a Unix time and on the monotonic clock.
fn release(children: &mut [Child]) -> (f64, f64) {
    for c in children.iter() {
        if let Some(g) = &c.gate {
            g.wait_ready();
        }
    }
    let started_at = sys::unix_now_s();
    let start = sys::monotonic_s();
    for c in children.iter_mut() {
        if let Some(g) = c.gate.take() {
            g.open();
        }
    }
    (started_at, start)
}

/// One waiter per rank, which reaps it and sends how and when it ended;
/// if one cannot be started, every rank is killed (those before it are
/// reaped by their waiters, the others here).
fn start_waiters(children: &[Child]) -> Result<mpsc::Receiver<Ended>, ExecError> {
    let (wtx, wrx) = mpsc::channel::<Ended>();
    for (rank, c) in children.iter().enumerate() {
        let (wtx, pid) = (wtx.clone(), c.pid);
        let waiter = std::thread::Builder::new().spawn(move || {
            let (end, usage) = match sys::wait4(pid) {
                Ok((end, ru)) => (Some(end), usage_from_wait4(&ru)),
                Err(_) => (None, ResourceUsage::default()),
            };
            let _ = wtx.send(Ended {
                rank,
                end,
                usage,
                at: sys::monotonic_s(),
            });
        });
        if let Err(io) = waiter {
            // The ranks before this one are reaped by their waiters.
            kill_groups(children);
            for c in &children[rank..] {
                let _ = sys::wait4(c.pid);
            }
            return Err(ExecError::RankWaiter { rank, io });
        }
    }
    Ok(wrx)
}

/// How the ranks' wait ended: each rank's end (by rank), and whether they
/// were killed at `--timeout` or on Ctrl-C.
struct Waited {
    ended: Vec<Option<Ended>>,
    timed_out: bool,
    interrupted: bool,
}

/// Every rank's end from its waiter; on Ctrl-C or at `--timeout` every
/// rank is killed, and the wait goes on until their waiters have reaped
/// them.
fn wait_for_ranks(
    children: &[Child],
    wrx: &mpsc::Receiver<Ended>,
    ctx: &SampleContext,
    procs: usize,
) -> Waited {
    let deadline = ctx.timeout.map(|t| Instant::now() + t);
    let mut ended: Vec<Option<Ended>> = (0..procs).map(|_| None).collect();
    let mut timed_out = false;
    let mut interrupted = false;
    let mut left = procs;
    while left > 0 {
        if ctx.stop.load(Ordering::SeqCst) && !interrupted {
            interrupted = true;
            kill_groups(children);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) && !timed_out && !interrupted {
            timed_out = true;
            kill_groups(children);
        }
        match wrx.recv_timeout(POLL) {
            Ok(e) => {
                let r = e.rank;
                ended[r] = Some(e);
                left -= 1;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    Waited {
        ended,
        timed_out,
        interrupted,
    }
}

/// The sample's status and reason from how the ranks ended: the timeout
/// (`--timeout`'s value),
/// else the first rank (by its number) that failed, was killed
/// or could not be waited for, with the start of its errors.
fn judge_ends(
    ended: &[Option<Ended>],
    texts: &[(String, String)],
    timed_out: bool,
    timeout: Option<Duration>,
) -> (SampleStatus, Option<String>) {
    if timed_out {
        let t = timeout.map_or(0.0, |t| t.as_secs_f64());
        return (
            SampleStatus::Timeout,
            Some(format!(
                "--cmd did not finish within --timeout {t} s; killed"
            )),
        );
    }
    for e in ended.iter().flatten() {
        let err = texts[e.rank].1.trim().replace('\n', " | ");
        let err = if err.is_empty() {
            String::new()
        } else {
            format!(": {err}")
        };
        match e.end {
            Some(ChildEnd::Exited(0)) => {}
            Some(ChildEnd::Exited(c)) => {
                return (
                    SampleStatus::Failed,
                    Some(format!("rank {} exited with code {c}{err}", e.rank)),
                );
            }
            Some(ChildEnd::Signaled(s)) => {
                let name = sys::signal_name(s);
                return (
                    SampleStatus::Crashed,
                    Some(format!("rank {} killed by {name}{err}", e.rank)),
                );
            }
            None => {
                return (
                    SampleStatus::Failed,
                    Some(format!("rank {}: could not wait for it", e.rank)),
                );
            }
        }
    }
    (SampleStatus::Ok, None)
}

/// `--metric`: the value `re` captures last in each rank's output, summed
/// over the ranks when higher is better (rates add up), else the largest
/// (the slowest rank's time); or why there is none.
fn user_metric(
    re: &regex::Regex,
    texts: &[(String, String)],
    higher_is_better: bool,
) -> Result<f64, String> {
    let mut values = Vec::new();
    for (rank, (out, _)) in texts.iter().enumerate() {
        match last_capture(re, out) {
            Ok(v) => values.push(v),
            Err(CaptureError::NoMatch) => {
                return Err(format!(
                    "--metric: `{}` matched no number in the output of rank {rank}",
                    re.as_str()
                ))
            }
            Err(CaptureError::NotFinite(v)) => {
                return Err(format!(
                    "--metric: `{}` captured `{v}` in the output of rank {rank}, \
                     which is not a finite number",
                    re.as_str()
                ))
            }
        }
    }
    let value = if higher_is_better {
        values.iter().sum()
    } else {
        values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    };
    if !value.is_finite() {
        // Finite values whose sum overflows.
        return Err(format!(
            "--metric: the ranks' values add up to {value}, not a finite number"
        ));
    }
    Ok(value)
}

fn cpus_list(cpus: &[u32]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Every rank (and whatever it started) killed, then reaped.
fn kill_and_reap(children: &[Child]) {
    kill_groups(children);
    for c in children {
        let _ = sys::wait4(c.pid);
    }
}

fn kill_groups(children: &[Child]) {
    for c in children {
        // The negative pid is the process group each rank leads.
        sys::kill(-c.pid, Signal::SIGKILL);
        sys::kill(c.pid, Signal::SIGKILL);
    }
}

/// The last `keep` bytes of a stream, read to its end.
fn tail(r: impl Read, keep: usize) -> String {
    let mut buf: Vec<u8> = Vec::new();
    let mut reader = BufReader::new(r);
    loop {
        let chunk = match reader.fill_buf() {
            Ok([]) | Err(_) => break,
            Ok(c) => c.to_vec(),
        };
        reader.consume(chunk.len());
        buf.extend_from_slice(&chunk);
        if buf.len() > 2 * keep {
            buf.drain(..buf.len() - keep);
        }
    }
    if buf.len() > keep {
        buf.drain(..buf.len() - keep);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Why `--metric` found no value in a command's output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    #[error("matched no number")]
    NoMatch,
    /// `NaN`, `inf` or a number beyond f64 (`1e400`): a sample with such a
    /// value would be stored as a success and poison every statistic.
    #[error("captured `{0}`, which is not a finite number")]
    NotFinite(String),
}

/// The number in the first capture group (or the whole match) of the last
/// match of `re` in `text`: finite, or an error.
pub fn last_capture(re: &regex::Regex, text: &str) -> Result<f64, CaptureError> {
    let caps = re.captures_iter(text).last().ok_or(CaptureError::NoMatch)?;
    let m = caps
        .get(1)
        .or_else(|| caps.get(0))
        .ok_or(CaptureError::NoMatch)?;
    let text = m.as_str().trim();
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(CaptureError::NotFinite(text.to_string())),
        Err(_) => Err(CaptureError::NoMatch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        assert_eq!(
            expand(
                "run -t {n} --rank {rank} --cpus {cpus}",
                4,
                1,
                &[4, 5, 6, 7]
            ),
            "run -t 4 --rank 1 --cpus 4,5,6,7"
        );
        assert_eq!(expand("x {cpus}", 1, 0, &[]), "x ");
    }

    #[test]
    fn unknown_placeholders_are_refused_and_shell_braces_left_alone() {
        let e = check_template("run --x {foo} {n}").unwrap_err();
        assert_eq!(e.name, "foo");
        assert!(
            e.to_string()
                .starts_with("--cmd: unknown placeholder {foo}"),
            "{e}"
        );
        assert!(check_template("run {Threads}").is_err());
        for ok in [
            "run -t {n} -T {threads} -r {rank} -c {cpus}",
            "echo ${HOME} ${n} {a,b} {1..3} {} { x }",
            "awk '{print $1}' f",
            "f() { :; }; f",
            "x{",
            "}{",
        ] {
            assert_eq!(check_template(ok), Ok(()), "{ok}");
        }
        // The shell's own ${n} is not smtlab's {n}.
        assert_eq!(expand("echo ${n} {n}", 4, 0, &[]), "echo ${n} 4");
        assert_eq!(expand("awk '{print $1}'", 4, 0, &[]), "awk '{print $1}'");
    }

    #[test]
    fn threads_is_the_long_form_of_n() {
        assert_eq!(
            expand("a {threads} b {n} c {threads}", 3, 0, &[]),
            "a 3 b 3 c 3"
        );
    }

    fn ended(rank: usize, end: Option<ChildEnd>) -> Option<Ended> {
        Some(Ended {
            rank,
            end,
            usage: ResourceUsage::default(),
            at: 0.0,
        })
    }

    #[test]
    fn the_first_rank_by_number_that_failed_names_the_sample_with_its_errors() {
        let texts = vec![
            (String::new(), String::new()),
            (String::new(), "oops\nat line 2\n".to_string()),
            (String::new(), String::new()),
        ];
        let fine = ChildEnd::Exited(0);
        let all_fine = [
            ended(0, Some(fine)),
            ended(1, Some(fine)),
            ended(2, Some(fine)),
        ];
        assert_eq!(
            judge_ends(&all_fine, &texts, false, None),
            (SampleStatus::Ok, None)
        );
        let two_failed = [
            ended(0, Some(fine)),
            ended(1, Some(ChildEnd::Exited(3))),
            ended(2, Some(ChildEnd::Signaled(11))),
        ];
        assert_eq!(
            judge_ends(&two_failed, &texts, false, None),
            (
                SampleStatus::Failed,
                Some("rank 1 exited with code 3: oops | at line 2".into())
            )
        );
        let crashed = [ended(0, Some(ChildEnd::Signaled(11))), None, None];
        assert_eq!(
            judge_ends(&crashed, &texts, false, None),
            (
                SampleStatus::Crashed,
                Some("rank 0 killed by SIGSEGV".into())
            )
        );
        let lost = [ended(0, None), None, None];
        assert_eq!(
            judge_ends(&lost, &texts, false, None),
            (
                SampleStatus::Failed,
                Some("rank 0: could not wait for it".into())
            )
        );
        // The timeout wins over how the killed ranks ended.
        assert_eq!(
            judge_ends(&crashed, &texts, true, Some(Duration::from_millis(1500))),
            (
                SampleStatus::Timeout,
                Some("--cmd did not finish within --timeout 1.5 s; killed".into())
            )
        );
    }

    #[test]
    fn a_metric_adds_up_rates_and_takes_the_slowest_time_over_the_ranks() {
        let re = regex::Regex::new(r"v=(\S+)").unwrap();
        let texts: Vec<(String, String)> = ["v=2\n", "v=1\nv=5\n"]
            .iter()
            .map(|o| (o.to_string(), String::new()))
            .collect();
        assert_eq!(user_metric(&re, &texts, true), Ok(7.0));
        assert_eq!(user_metric(&re, &texts, false), Ok(5.0));
        let silent = vec![texts[0].clone(), (String::new(), String::new())];
        assert_eq!(
            user_metric(&re, &silent, true),
            Err("--metric: `v=(\\S+)` matched no number in the output of rank 1".into())
        );
        let nan = vec![("v=NaN".to_string(), String::new())];
        assert_eq!(
            user_metric(&re, &nan, true),
            Err(
                "--metric: `v=(\\S+)` captured `NaN` in the output of rank 0, which is not a \
                 finite number"
                    .into()
            )
        );
        let huge = vec![("v=1e308".to_string(), String::new()); 2];
        assert_eq!(
            user_metric(&re, &huge, true),
            Err("--metric: the ranks' values add up to inf, not a finite number".into())
        );
        assert_eq!(user_metric(&re, &huge, false), Ok(1e308));
    }

    #[test]
    fn metric_capture() {
        let re = regex::Regex::new(r"rate: ([0-9.]+)").unwrap();
        assert_eq!(last_capture(&re, "rate: 1.5\nrate: 2.5\n"), Ok(2.5));
        assert_eq!(last_capture(&re, "nothing"), Err(CaptureError::NoMatch));
    }

    #[test]
    fn a_metric_that_is_not_a_finite_number_is_not_a_value() {
        let re = regex::Regex::new(r"t=(\S+)").unwrap();
        for v in ["NaN", "nan", "inf", "-inf", "infinity", "1e400", "-1e400"] {
            assert_eq!(
                last_capture(&re, &format!("t={v}\n")),
                Err(CaptureError::NotFinite(v.to_string())),
                "{v}"
            );
        }
        assert_eq!(last_capture(&re, "t=1e300"), Ok(1e300));
        assert_eq!(last_capture(&re, "t=abc"), Err(CaptureError::NoMatch));
    }
}
