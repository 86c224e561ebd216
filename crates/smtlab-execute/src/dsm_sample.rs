//! One sample of a DSM point (`Program::Ranks`, `-w sor --comm thr2`):
//! start N `smtlab __rank` processes on this machine, each pinned before
//! its exec to its node's CPUs, meeting in a fresh rendezvous directory;
//! read rank 0's report (one JSON line) and make it a [`Sample`].
//!
//! A rank that fails would leave the others waiting for it forever (in
//! the rendezvous, a barrier, a page it was to serve), so the first rank
//! to exit other than cleanly gets the rest killed; so do `--timeout` and
//! Ctrl-C. Every rank has PDEATHSIG and is reaped before this returns.
//!
//! [`dsm_sample`] is the one place a [`RunReport`] becomes a sample: this
//! module's launch and `smtlab rank` (ranks started by `mpirun`/`srun`)
//! both use it. Uses `context`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use smtlab_counters::rusage::{sum_usage, usage_from_wait4};
use smtlab_dsm::{DsmPointParams, RunReport};
use smtlab_sys::{self as sys, ChildEnd};
use smtlab_types::extras::dsm;
use smtlab_types::{
    CpuSet, Outcome, Point, Program, ResourceUsage, Sample, SampleStatus, WorkerSample,
};

use crate::context::SampleContext;

/// How often the wait for the ranks looks at Ctrl-C and the deadline.
const POLL: Duration = Duration::from_millis(50);

/// How long a rank waits at the rendezvous for the others: they start
/// together on this machine, so this only bounds a rank that died before
/// publishing its address unnoticed.
const MEET_TIMEOUT_S: u64 = 60;

/// The stderr a rank's failure quotes, at most: its last bytes, and its
/// first panic's report (see [`RankStderr`]).
const KEEP_STDERR: usize = 4096;

/// Run one sample of a DSM point with its parameters, parsed and checked
/// when the run was planned; the ranks, processes of their own, are handed
/// them as planned (`__rank --planned JSON`), not the point's text.
pub fn run(
    point: &Point,
    dsm: &DsmPointParams,
    ctx: &SampleContext,
    seq: usize,
    warmup: bool,
) -> Outcome {
    let per_node = dsm.dsm.per_node;
    let Program::Ranks { comm, .. } = &point.program else {
        unreachable!("dsm_sample::run is only called for DSM points");
    };
    let started_at = sys::unix_now_s();
    let failed = |status: SampleStatus, reason: String, usage: ResourceUsage| {
        Outcome::Measured(Box::new(failed_sample(
            seq, warmup, started_at, status, reason, usage,
        )))
    };
    // What the ranks of an earlier run left when that run was killed
    // outright (its ranks die with it: PDEATHSIG), once per process.
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(|| smtlab_dsm::sweep_stale(&std::env::temp_dir(), None));
    // Fresh per sample, removed when it ends: no address of an earlier
    // sample can be taken for a rank of this one.
    let dir = match tempfile::Builder::new()
        .prefix(smtlab_dsm::DIR_PREFIX)
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            return failed(
                SampleStatus::Failed,
                format!("creating the rendezvous directory: {e}"),
                ResourceUsage::default(),
            )
        }
    };
    let ranks = point.workers;
    // Each sample its own loss pattern, the same again in a rerun.
    let seed = ((point.index as u64) << 32) ^ seq as u64;
    let planned = serde_json::to_string(dsm).expect("planned parameters serialise");
    let command = |rank: usize| {
        let mut cmd = Command::new(&ctx.exe);
        cmd.arg("__rank")
            .args(["--comm", comm.as_str()])
            .args(["--rank", &rank.to_string(), "--ranks", &ranks.to_string()])
            .arg("--rendezvous")
            .arg(format!("dir:{}", dir.path().display()))
            .args(["--bind", "127.0.0.1", "--seed", &seed.to_string()])
            .args(["--meet-timeout", &format!("{MEET_TIMEOUT_S}s")]);
        // The parameters as planned, not their text: a rank parses none.
        cmd.arg("--planned").arg(&planned);
        cmd
    };
    let mut children = match spawn_ranks(point, per_node, ctx, command) {
        Ok(c) => c,
        Err(reason) => return failed(SampleStatus::Failed, reason, ResourceUsage::default()),
    };
    let watch = match watch_ranks(&mut children) {
        Ok(w) => w,
        Err(reason) => {
            // The waiters started block until their ranks end: killed now.
            kill_and_reap(&children, &[]);
            return failed(SampleStatus::Failed, reason, ResourceUsage::default());
        }
    };
    let ended = wait_for_ranks(&children, &watch.exited, ctx);
    drop(dir);
    if ended.interrupted {
        return Outcome::Interrupted;
    }
    let stderr: Vec<RankStderr> = watch
        .stderr_tails
        .into_iter()
        .map(|t| t.and_then(|h| h.join().ok()).unwrap_or_default())
        .collect();
    let report_text = watch
        .report_reader
        .and_then(|h| h.join().ok())
        .unwrap_or_default();
    let usage = sum_usage(
        &ended
            .ends
            .iter()
            .map(|e| e.as_ref().map(|(_, u)| u.clone()).unwrap_or_default())
            .collect::<Vec<_>>(),
    );
    match rank_0_report(ctx, &children, &ended, &stderr, &report_text) {
        Ok(report) => Outcome::Measured(Box::new(dsm_sample(
            point, per_node, seq, warmup, started_at, &report, usage,
        ))),
        Err((status, reason)) => failed(status, reason, usage),
    }
}

/// Every rank's process from `command` (its `smtlab __rank` command line),
/// pinned before its exec to its node's CPUs, with the point's allocator;
/// if one cannot be started, those already started are killed and reaped
/// and the reason is returned.
fn spawn_ranks(
    point: &Point,
    per_node: usize,
    ctx: &SampleContext,
    command: impl Fn(usize) -> Command,
) -> Result<Vec<Rank>, String> {
    let mut children: Vec<Rank> = Vec::with_capacity(point.workers);
    for rank in 0..point.workers {
        let mut cmd = command(rank);
        cmd.stdin(Stdio::null())
            // Only rank 0 reports; the others' stdout goes nowhere.
            .stdout(if rank == 0 {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(Stdio::piped());
        if let Some(p) = ctx.preload_for(point) {
            cmd.env("LD_PRELOAD", &p.library);
            cmd.envs(p.env.iter().map(|(k, v)| (k, v)));
        }
        let cpus: Option<CpuSet> =
            rank_cpus(point, per_node, rank).map(|c| c.into_iter().collect());
        let spawned = sys::configure_child(&mut cmd, cpus.as_ref()).and_then(|_| cmd.spawn());
        match spawned {
            Ok(mut child) => {
                let stdout = child.stdout.take();
                let stderr = child.stderr.take().expect("piped");
                // Reaped by pid with wait4 below; dropping the handle
                // neither waits nor kills.
                children.push(Rank {
                    pid: child.id() as i32,
                    stdout,
                    stderr: Some(stderr),
                });
            }
            Err(e) => {
                kill_and_reap(&children, &[]);
                return Err(format!("starting rank {rank}: {e}"));
            }
        }
    }
    Ok(children)
}

/// The threads that read the ranks and say when they exit.
struct Watch {
    /// Rank 0's whole stdout (its report, one line).
    report_reader: Option<std::thread::JoinHandle<String>>,
    /// Every rank's stderr (its tail and its first panic).
    stderr_tails: Vec<Option<std::thread::JoinHandle<RankStderr>>>,
    /// The rank of each that exited (left a zombie, so that its pid cannot
    /// be reused before it is killed or reaped here).
    exited: mpsc::Receiver<usize>,
}

/// The readers and waiters of every rank; if a thread cannot be started
/// (the process limit counts threads), the reason, so that the sample
/// fails with it instead of a panic (threads are made with `Builder`).
fn watch_ranks(children: &mut [Rank]) -> Result<Watch, String> {
    let mut thread_failure: Option<String> = None;
    let report_reader = children[0].stdout.take().and_then(|out| {
        std::thread::Builder::new()
            .name("rank-0-out".into())
            .spawn(move || tail(out, usize::MAX))
            .map_err(|e| {
                thread_failure = Some(format!("cannot start a thread to read rank 0: {e}"))
            })
            .ok()
    });
    let mut stderr_tails = Vec::with_capacity(children.len());
    for (rank, c) in children.iter_mut().enumerate() {
        let err = c.stderr.take().expect("taken once");
        match std::thread::Builder::new()
            .name(format!("rank-{rank}-err"))
            .spawn(move || RankStderr::read(err, KEEP_STDERR))
        {
            Ok(h) => stderr_tails.push(Some(h)),
            Err(e) => {
                stderr_tails.push(None);
                thread_failure
                    .get_or_insert(format!("cannot start a thread to read rank {rank}: {e}"));
            }
        }
    }
    let (tx, exited) = mpsc::channel::<usize>();
    for (rank, c) in children.iter().enumerate() {
        if thread_failure.is_some() {
            break;
        }
        let (tx, pid) = (tx.clone(), c.pid);
        let waiter = std::thread::Builder::new()
            .name(format!("rank-{rank}-wait"))
            .spawn(move || {
                let _ = sys::wait_exited_keep_zombie(pid);
                let _ = tx.send(rank);
            });
        if let Err(e) = waiter {
            thread_failure = Some(format!(
                "cannot start a thread to wait for rank {rank}: {e}"
            ));
        }
    }
    drop(tx);
    match thread_failure {
        Some(reason) => Err(reason),
        None => Ok(Watch {
            report_reader,
            stderr_tails,
            exited,
        }),
    }
}

/// How the ranks ended: each one's end and usage (by rank), the first
/// that failed on its own, and whether the deadline or Ctrl-C ended them.
struct RanksEnded {
    ends: Vec<Option<(ChildEnd, ResourceUsage)>>,
    first_failure: Option<usize>,
    timed_out: bool,
    interrupted: bool,
}

/// Wait for every rank and reap it; the first that fails, the deadline or
/// Ctrl-C ends the others.
fn wait_for_ranks(
    children: &[Rank],
    exited: &mpsc::Receiver<usize>,
    ctx: &SampleContext,
) -> RanksEnded {
    let ranks = children.len();
    let deadline = ctx.timeout.map(|t| Instant::now() + t);
    let mut ends: Vec<Option<(ChildEnd, ResourceUsage)>> = vec![None; ranks];
    let mut first_failure: Option<usize> = None;
    let mut timed_out = false;
    let mut interrupted = false;
    let mut killed = false;
    let mut left = ranks;
    while left > 0 {
        if !killed {
            if ctx.stop.load(Ordering::SeqCst) {
                interrupted = true;
            } else if deadline.is_some_and(|d| Instant::now() >= d) {
                timed_out = true;
            }
            if interrupted || timed_out || first_failure.is_some() {
                kill_running(children, &ends);
                killed = true;
            }
        }
        match exited.recv_timeout(POLL) {
            Ok(rank) => {
                let end = match sys::wait4(children[rank].pid) {
                    Ok((end, ru)) => (end, usage_from_wait4(&ru)),
                    // Cannot happen for our own child; counted as a crash.
                    Err(_) => (ChildEnd::Signaled(0), ResourceUsage::default()),
                };
                if end.0 != ChildEnd::Exited(0) && first_failure.is_none() && !killed {
                    first_failure = Some(rank);
                }
                ends[rank] = Some(end);
                left -= 1;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    // Every waiter has sent (or the channel closed): reap any left.
    for (c, e) in children.iter().zip(&ends) {
        if e.is_none() {
            let _ = sys::wait4(c.pid);
        }
    }
    RanksEnded {
        ends,
        first_failure,
        timed_out,
        interrupted,
    }
}

/// Rank 0's report (the last line it printed), or why the sample has
/// none: the deadline, the first rank that failed (how it ended, what it
/// said), or a report that does not parse.
fn rank_0_report(
    ctx: &SampleContext,
    children: &[Rank],
    ended: &RanksEnded,
    stderr: &[RankStderr],
    report_text: &str,
) -> Result<RunReport, (SampleStatus, String)> {
    if ended.timed_out {
        let t = ctx
            .timeout
            .expect("a deadline means a timeout")
            .as_secs_f64();
        return Err((
            SampleStatus::Timeout,
            format!("the ranks did not finish within --timeout {t} s; killed"),
        ));
    }
    if let Some(rank) = ended.first_failure {
        let said = stderr[rank].said();
        let said = if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        };
        let pid = children[rank].pid;
        return Err(match ended.ends[rank].as_ref().map(|(e, _)| *e) {
            Some(ChildEnd::Signaled(sig)) => (
                SampleStatus::Crashed,
                format!(
                    "rank {rank} (pid {pid}) killed by signal {}{said}",
                    sys::signal_name(sig)
                ),
            ),
            Some(ChildEnd::Exited(code)) => (
                SampleStatus::Failed,
                format!("rank {rank} (pid {pid}) exited with status {code}{said}"),
            ),
            None => (SampleStatus::Failed, format!("rank {rank} was lost{said}")),
        });
    }
    let line = report_text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    serde_json::from_str::<RunReport>(line).map_err(|e| {
        (
            SampleStatus::Failed,
            format!(
                "rank 0 printed no report ({e}){}",
                match stderr[0].said() {
                    s if s.is_empty() => String::new(),
                    s => format!(": {s}"),
                }
            ),
        )
    })
}

/// The CPUs rank `rank` of `point` is pinned to: with one rank per node,
/// its own (`cpus[rank]`); with two (`per_node=2`), ranks 2k and 2k+1
/// share node k's two CPUs, as the paper's dual-processor nodes did;
/// `None` when the point is not pinned.
pub fn rank_cpus(point: &Point, per_node: usize, rank: usize) -> Option<Vec<u32>> {
    let cpus = point.cpus.as_ref()?;
    let node = rank / per_node;
    cpus.get(node * per_node..(node + 1) * per_node)
        .map(<[u32]>::to_vec)
}

/// The sample of a DSM point from its gathered report: the one place a
/// [`RunReport`] becomes a [`Sample`], for smtlab's own launch and for
/// ranks a launcher started (`smtlab rank`). Verified is `ok` with the
/// parallel section's wall time as the metric; else a wrong result, with
/// the report's reason. `per_node` is the point's ranks per node, as
/// planned; `usage` is what is known of the ranks' processes.
pub fn dsm_sample(
    point: &Point,
    per_node: usize,
    seq: usize,
    warmup: bool,
    started_at: f64,
    report: &RunReport,
    usage: ResourceUsage,
) -> Sample {
    let workers: Vec<WorkerSample> = report
        .per_rank
        .iter()
        .map(|r| WorkerSample {
            worker: r.rank,
            rank: r.rank,
            thread: 0,
            pid: r.pid,
            tid: None,
            // A rank pinned to its node's two CPUs has no one CPU.
            cpu: rank_cpus(point, per_node, r.rank).and_then(|c| match c[..] {
                [one] => Some(one),
                _ => None,
            }),
            last_cpu: None,
            ops: r.work,
            start_s: r.start_s,
            end_s: r.end_s,
            counters: Vec::new(),
        })
        .collect();
    let mut extras: BTreeMap<String, f64> = report.extras();
    // Equal inputs give equal checksums: what a launcher's run and a
    // local run of the same problem are compared by.
    if report.checksum.is_finite() {
        extras.insert(dsm::CHECKSUM.into(), report.checksum);
    }
    extras.retain(|_, v| v.is_finite());
    let (status, reason, metric) = if report.per_rank.len() != point.workers {
        (
            SampleStatus::Failed,
            Some(format!(
                "{} of {} ranks reported",
                report.per_rank.len(),
                point.workers
            )),
            None,
        )
    } else if !report.verified {
        (
            SampleStatus::WrongResult,
            Some(report.verify_detail.clone()),
            None,
        )
    } else if report.wall_s.is_finite() && report.wall_s > 0.0 {
        (SampleStatus::Ok, None, Some(report.wall_s))
    } else {
        // A success must carry a value.
        (
            SampleStatus::Failed,
            Some(format!(
                "the parallel section's wall time is {} s",
                report.wall_s
            )),
            None,
        )
    };
    Sample {
        seq,
        warmup,
        status,
        reason,
        started_at,
        wall_s: report.wall_s,
        ops: Some(report.work),
        metric,
        usage,
        counters: Vec::new(),
        workers,
        extras,
    }
}

/// A sample without a report: the ranks failed, crashed or timed out.
fn failed_sample(
    seq: usize,
    warmup: bool,
    started_at: f64,
    status: SampleStatus,
    reason: String,
    usage: ResourceUsage,
) -> Sample {
    Sample {
        seq,
        warmup,
        status,
        reason: Some(reason),
        started_at,
        wall_s: 0.0,
        ops: None,
        metric: None,
        usage,
        counters: Vec::new(),
        workers: Vec::new(),
        extras: BTreeMap::new(),
    }
}

/// A started rank: its pid, and its pipes until their readers take them.
struct Rank {
    pid: i32,
    stdout: Option<std::process::ChildStdout>,
    stderr: Option<std::process::ChildStderr>,
}

/// Kill the ranks that have not ended yet.
fn kill_running(children: &[Rank], ends: &[Option<(ChildEnd, ResourceUsage)>]) {
    for (i, c) in children.iter().enumerate() {
        if ends.get(i).is_none_or(Option::is_none) {
            sys::kill(c.pid, Signal::SIGKILL);
        }
    }
}

/// Kill and reap every rank (a launch that failed half way).
fn kill_and_reap(children: &[Rank], ends: &[Option<(ChildEnd, ResourceUsage)>]) {
    kill_running(children, ends);
    for c in children {
        let _ = sys::wait4(c.pid);
    }
}

/// The last `keep` bytes a pipe carried until it closed.
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
        if buf.len() > keep.saturating_mul(2) {
            buf.drain(..buf.len() - keep);
        }
    }
    if buf.len() > keep {
        buf.drain(..buf.len() - keep);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
}

/// What a rank wrote on stderr: the last bytes, and its first panic's
/// report from the `panicked at` line on. A panic's report is followed by
/// a note on backtraces, or by the backtrace itself, which would push the
/// message out of the tail and leave the note as the rank's last word.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct RankStderr {
    tail: String,
    panic: String,
}

impl RankStderr {
    /// Read `r` until it closes, keeping the last `keep` bytes, and at
    /// most `keep` bytes of the first panic's report.
    fn read(r: impl Read, keep: usize) -> RankStderr {
        let mut tail: Vec<u8> = Vec::new();
        let mut line: Vec<u8> = Vec::new();
        let mut panic: Vec<u8> = Vec::new();
        let mut panicked = false;
        let mut take_line = |line: &mut Vec<u8>, panic: &mut Vec<u8>| {
            if !panicked && contains(line, PANICKED_AT.as_bytes()) {
                panicked = true;
            }
            if panicked && panic.len() < keep {
                let room = keep - panic.len();
                panic.extend_from_slice(&line[..line.len().min(room)]);
            }
            line.clear();
        };
        let mut reader = BufReader::new(r);
        loop {
            let chunk = match reader.fill_buf() {
                Ok([]) | Err(_) => break,
                Ok(c) => c.to_vec(),
            };
            reader.consume(chunk.len());
            for piece in chunk.split_inclusive(|&b| b == b'\n') {
                // A line longer than `keep` is cut: only its start can
                // hold the `panicked at`.
                let room = keep.saturating_sub(line.len());
                line.extend_from_slice(&piece[..piece.len().min(room)]);
                if piece.ends_with(b"\n") {
                    take_line(&mut line, &mut panic);
                }
            }
            tail.extend_from_slice(&chunk);
            if tail.len() > keep.saturating_mul(2) {
                tail.drain(..tail.len() - keep);
            }
        }
        if !line.is_empty() {
            take_line(&mut line, &mut panic);
        }
        if tail.len() > keep {
            tail.drain(..tail.len() - keep);
        }
        RankStderr {
            tail: String::from_utf8_lossy(&tail).into_owned(),
            panic: String::from_utf8_lossy(&panic).into_owned(),
        }
    }

    /// What a failure quotes: the panic (`panicked at FILE:LINE:COL:
    /// MESSAGE`) if the rank panicked, else its last line.
    fn said(&self) -> String {
        panic_summary(&self.panic).unwrap_or_else(|| last_line(&self.tail).to_string())
    }
}

/// What the standard panic hook writes before the location.
const PANICKED_AT: &str = "panicked at ";

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The first panic in `text` as one line, `panicked at FILE:LINE:COL:
/// MESSAGE`: the hook's `thread 'main' panicked at FILE:LINE:COL:` line
/// and the message on the lines after it, up to the note on backtraces,
/// the backtrace or another thread's panic. (Before Rust 1.73 the hook
/// wrote `panicked at 'MESSAGE', FILE:LINE:COL` on one line: kept as it
/// is.)
fn panic_summary(text: &str) -> Option<String> {
    let mut lines = text.lines();
    let first = lines.find(|l| l.contains(PANICKED_AT))?;
    let at = first[first.find(PANICKED_AT)?..].trim_end();
    let Some(location) = at.strip_suffix(':') else {
        return Some(at.to_string());
    };
    let message: Vec<&str> = lines
        .take_while(|l| {
            !(l.starts_with("note: ")
                || l.starts_with("stack backtrace:")
                || l.contains(PANICKED_AT))
        })
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    Some(if message.is_empty() {
        location.to_string()
    } else {
        format!("{location}: {}", message.join(" "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_dsm::{RankStats, TimeSplit};
    use smtlab_types::{Comm, Metric, Mode, Model, Spawn};

    fn point(per_node: &str, cpus: Option<Vec<u32>>) -> Point {
        Point {
            index: 0,
            program: Program::Ranks {
                app: "sor".into(),
                comm: Comm::Thr2,
                params: [("per_node".to_string(), per_node.to_string())].into(),
            },
            model: Model::Process,
            spawn: Spawn::Exec,
            placement: "compact".into(),
            workers: 4,
            cpus,
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: Mode::FixedWork { work: 1 },
            metric: Metric {
                name: "wall_time".into(),
                unit: "s".into(),
                higher_is_better: false,
            },
        }
    }

    fn report(verified: bool) -> RunReport {
        RunReport {
            app: "sor".into(),
            comm: Comm::Thr2,
            ranks: 4,
            wall_s: 0.5,
            verified,
            verify_detail: if verified { "" } else { "cell 3 differs" }.into(),
            checksum: 12.5,
            work: 40,
            per_rank: (0..4)
                .map(|r| RankStats {
                    rank: r,
                    pid: 100 + r as u32,
                    work: 10,
                    start_s: 1.0,
                    end_s: 1.5,
                    getp: 2,
                    time: TimeSplit {
                        wait_s: 0.1,
                        ..TimeSplit::default()
                    },
                    ..RankStats::default()
                })
                .collect(),
        }
    }

    fn stderr_of(text: &str, keep: usize) -> RankStderr {
        RankStderr::read(text.as_bytes(), keep)
    }

    #[test]
    fn a_failure_quotes_the_panic_not_the_note_after_it() {
        let panic = "thread 'main' panicked at crates/smtlab-dsm/src/node.rs:464:17:\n\
                     rank 1: no reply\n\
                     note: run with `RUST_BACKTRACE=1` environment variable to display a \
                     backtrace\n";
        let want = "panicked at crates/smtlab-dsm/src/node.rs:464:17: rank 1: no reply";
        assert_eq!(stderr_of(panic, KEEP_STDERR).said(), want);
        // A backtrace longer than the tail kept: the panic is still quoted.
        let frames: String = (0..400)
            .map(|i| format!("  {i:3}: smtlab_dsm::node::Node::wait::h0123456789abcdef\n"))
            .collect();
        let long = format!(
            "warning: something first\n{}stack backtrace:\n{frames}note: Some details are \
             omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n",
            panic
                .lines()
                .take(2)
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        );
        assert!(long.len() > 4 * KEEP_STDERR);
        let said = stderr_of(&long, KEEP_STDERR);
        assert!(!said.tail.contains("panicked"), "the panic left the tail");
        assert_eq!(said.said(), want);
        // Read in pieces of any size, the same.
        struct Dribble<'a>(&'a [u8], usize);
        impl Read for Dribble<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.1.min(buf.len()).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        for piece in [1, 7, 100] {
            let r = RankStderr::read(Dribble(long.as_bytes(), piece), KEEP_STDERR);
            assert_eq!(r.said(), want, "pieces of {piece}");
        }
        // A message of several lines becomes one; the first panic is the
        // one quoted; the old one-line format is kept as it is.
        let two = "thread 'main' panicked at src/a.rs:1:2:\nfirst\nsecond\n\n\
                   thread 'dsm-recv' panicked at src/b.rs:3:4:\nlater\n";
        assert_eq!(
            stderr_of(two, KEEP_STDERR).said(),
            "panicked at src/a.rs:1:2: first second"
        );
        let old = "thread 'main' panicked at 'boom', src/main.rs:2:5\nnote: run with ...\n";
        assert_eq!(
            stderr_of(old, KEEP_STDERR).said(),
            "panicked at 'boom', src/main.rs:2:5"
        );
        // No panic: the last line, as before.
        let plain = "rank 1: rendezvous dir:/x: rank 0 did not appear within 60 s\n\n";
        assert_eq!(
            stderr_of(plain, KEEP_STDERR).said(),
            "rank 1: rendezvous dir:/x: rank 0 did not appear within 60 s"
        );
        assert_eq!(stderr_of("", KEEP_STDERR).said(), "");
    }

    #[test]
    fn ranks_sit_on_their_nodes_cpus() {
        let p = point("1", Some(vec![4, 5, 6, 7]));
        assert_eq!(rank_cpus(&p, 1, 2), Some(vec![6]));
        let p = point("2", Some(vec![4, 5, 6, 7]));
        assert_eq!(rank_cpus(&p, 2, 0), Some(vec![4, 5]));
        assert_eq!(rank_cpus(&p, 2, 1), Some(vec![4, 5]));
        assert_eq!(rank_cpus(&p, 2, 3), Some(vec![6, 7]));
        assert_eq!(rank_cpus(&point("2", None), 2, 3), None);
    }

    #[test]
    fn a_verified_report_is_an_ok_sample_with_its_extras() {
        let p = point("1", Some(vec![0, 1, 0, 1]));
        let s = dsm_sample(
            &p,
            1,
            3,
            false,
            10.0,
            &report(true),
            ResourceUsage::default(),
        );
        assert_eq!(s.status, SampleStatus::Ok);
        assert_eq!((s.metric, s.ops, s.seq), (Some(0.5), Some(40), 3));
        assert_eq!(s.workers.len(), 4);
        let w = &s.workers[3];
        assert_eq!((w.rank, w.pid, w.cpu, w.ops), (3, 103, Some(1), 10));
        assert_eq!((w.start_s, w.end_s), (1.0, 1.5));
        assert_eq!(s.extras["getp"], 8.0);
        assert_eq!(s.extras["rank.2.getp"], 2.0);
        assert_eq!(s.extras["checksum"], 12.5);
        // Two ranks per node: pinned to two CPUs, no one CPU to name.
        let s = dsm_sample(
            &point("2", Some(vec![0, 1, 2, 3])),
            2,
            0,
            false,
            0.0,
            &report(true),
            ResourceUsage::default(),
        );
        assert!(s.workers.iter().all(|w| w.cpu.is_none()));
    }

    #[test]
    fn an_unverified_or_short_report_is_no_result() {
        let p = point("1", None);
        let s = dsm_sample(
            &p,
            1,
            0,
            false,
            0.0,
            &report(false),
            ResourceUsage::default(),
        );
        assert_eq!(s.status, SampleStatus::WrongResult);
        assert_eq!(s.reason.as_deref(), Some("cell 3 differs"));
        assert_eq!(s.metric, None);
        let mut short = report(true);
        short.per_rank.pop();
        let s = dsm_sample(&p, 1, 0, false, 0.0, &short, ResourceUsage::default());
        assert_eq!(s.status, SampleStatus::Failed);
        assert_eq!(s.reason.as_deref(), Some("3 of 4 ranks reported"));
        let mut zero = report(true);
        zero.wall_s = 0.0;
        let s = dsm_sample(&p, 1, 0, false, 0.0, &zero, ResourceUsage::default());
        assert_eq!(s.status, SampleStatus::Failed);
    }
}
