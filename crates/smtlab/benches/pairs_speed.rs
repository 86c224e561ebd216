//! Benchmark: `smtlab pairs` end to end, and the pairs analysis against its
//! targets, side by side in one run (`cargo bench -p smtlab --bench
//! pairs_speed`):
//!
//! * what the command does, for 500 and 2,000 programs (matrices generated
//!   here, seeded, WS 0.8..2.0, written as CSV): read the file, parse it
//!   (`Matrix::from_csv`), analyse it (`pairs::analyse_watched`: the exact
//!   best and worst schedules, the random schedules, re-randomization) and
//!   write the JSON (`--json`, the longer output), through the very
//!   functions the command calls, with `--trials 1` and with the default
//!   trials; each stage timed (the analysis' own progress phases, watched
//!   from another thread) and the peak RSS of each run (the kernel's
//!   high-water mark, reset before it). Targets (issue 29): 500 programs
//!   ≤ 1 s with `--trials 1` and ≤ 5 s by default, 2,000 programs ≤ 30 s;
//! * the command itself, the built `smtlab pairs FILE` as a user runs it,
//!   beside the in-process figure (the same work, plus a process), and
//!   beside an older build if `PAIRS_SPEED_COMPARE=/path/to/smtlab` names
//!   one: each case alternates the two, so the ratio is measured on one
//!   machine in one state (an older build that takes more than
//!   `PAIRS_SPEED_TIMEOUT` seconds, 150 by default, is stopped and said);
//! * the exact best schedule of 26 programs (target < 10 ms, median of 21)
//!   and 10 million random pairings of 26 programs on every core (target
//!   < 2 s on 2 cores) against the same draws on one thread (the same
//!   numbers, which the bench checks), with the machine's ceiling for that
//!   speedup: a control that shares nothing (a register-only loop), the
//!   same work on one thread and split over every core; rounds interleave
//!   the four, medians of 3.
//!
//! Writes `target/bench-results/pairs_speed.json`.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use smtlab_analyse::pairs::{self, matching, random, Matrix, Phase, Progress};

/// Random pairings drawn, as in the paper.
const TRIALS: u64 = 10_000_000;
const ROUNDS: usize = 3;

/// The upper triangle of a seeded matrix of `n` programs, row by row.
fn values(n: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Three decimals, as a published matrix holds.
        0.8 + (x % 1201) as f64 / 1000.0
    };
    let mut ws = vec![vec![0.0; n]; n];
    for (i, j) in (0..n).flat_map(|i| (i..n).map(move |j| (i, j))) {
        let v = next();
        ws[i][j] = v;
        ws[j][i] = v;
    }
    ws
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("p{i}")).collect()
}

fn matrix(n: usize, seed: u64) -> Matrix {
    Matrix::new(names(n), values(n, seed)).expect("a valid matrix")
}

/// The matrix of `n` programs as the CSV `smtlab pairs` reads, in `dir`.
fn write_csv(dir: &Path, n: usize, seed: u64) -> PathBuf {
    let m = Matrix::new(names(n), values(n, seed)).expect("a valid matrix");
    let path = dir.join(format!("m{n}.csv"));
    std::fs::write(&path, m.to_csv()).expect("writing the matrix");
    path
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

fn seconds(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

/// This process's peak resident set (VmHWM) in KiB.
fn peak_rss_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Reset this process's peak resident set to what it holds now (Linux's
/// `clear_refs` 5); false where the kernel refuses.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// One run of the command's work in this process, timed by stage.
#[derive(Debug, serde::Serialize)]
struct Run {
    programs: usize,
    trials: u64,
    parse_s: f64,
    exact_s: f64,
    draws_s: f64,
    output_s: f64,
    total_s: f64,
    /// Peak RSS of the run; `None` where it could not be reset first.
    peak_rss_mib: Option<f64>,
}

/// What `smtlab pairs FILE [--trials N] --json` does, through the same
/// functions: read, parse, analyse (its phases timed from a watching
/// thread), write the JSON (into a sink: the terminal is not measured).
fn pipeline(path: &Path, trials: Option<u64>) -> Run {
    let reset = reset_peak_rss();
    let t0 = Instant::now();
    let m = {
        let text = std::fs::read_to_string(path).expect("reading the matrix");
        Matrix::from_csv(&text).expect("a valid matrix")
    };
    let parsed = t0.elapsed();
    let trials = trials.unwrap_or_else(|| pairs::default_trials(m.len()));
    let progress = Progress::new();
    let done = AtomicBool::new(false);
    let (analysis, random_at) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            // When the exact schedules end and the draws begin.
            while progress.phase() != Phase::Random && !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_micros(200));
            }
            t0.elapsed()
        });
        let a = pairs::analyse_watched(&m, trials, pairs::SCHEDULERS, 1, &progress);
        done.store(true, Ordering::Relaxed);
        (a, watcher.join().expect("the watcher does not panic"))
    });
    let analysed = t0.elapsed();
    let mut sink = std::io::BufWriter::new(std::io::sink());
    serde_json::to_writer_pretty(&mut sink, &analysis).expect("JSON");
    sink.write_all(b"\n").expect("a sink");
    drop(sink);
    let total = t0.elapsed();
    Run {
        programs: m.len(),
        trials,
        parse_s: parsed.as_secs_f64(),
        exact_s: (random_at - parsed).as_secs_f64(),
        draws_s: (analysed - random_at).as_secs_f64(),
        output_s: (total - analysed).as_secs_f64(),
        total_s: total.as_secs_f64(),
        peak_rss_mib: reset
            .then(|| peak_rss_kib("self"))
            .flatten()
            .map(|k| k as f64 / 1024.0),
    }
}

/// A built smtlab run as a user runs it, stdout to /dev/null: seconds and
/// its peak RSS in MiB (sampled every 10 ms), or `None` past `timeout`
/// (then stopped).
fn command(bin: &Path, path: &Path, trials: Option<u64>, timeout: f64) -> Option<(f64, f64)> {
    let mut cmd = Command::new(bin);
    cmd.arg("pairs").arg(path);
    if let Some(t) = trials {
        cmd.args(["--trials", &t.to_string()]);
    }
    let t0 = Instant::now();
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("smtlab starts");
    let pid = child.id().to_string();
    let mut peak = 0;
    loop {
        if let Some(status) = child.try_wait().expect("waiting for smtlab") {
            assert!(
                status.success(),
                "{} pairs {}",
                bin.display(),
                path.display()
            );
            return Some((t0.elapsed().as_secs_f64(), peak as f64 / 1024.0));
        }
        peak = peak.max(peak_rss_kib(&pid).unwrap_or(0));
        if t0.elapsed().as_secs_f64() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The control: `units` units of register-only work (xorshift), split over
/// `threads` threads that share nothing.
fn spin(units: u64, threads: u64) {
    const PER_UNIT: u64 = 150_000_000;
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut x = 0x2545_f491_4f6c_dd1d_u64 ^ t;
                for _ in 0..units * PER_UNIT / threads {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                }
                std::hint::black_box(x);
            });
        }
    });
}

fn mib(x: Option<f64>) -> String {
    x.map_or("?".into(), |m| format!("{m:.0} MiB"))
}

/// One case of the end-to-end table: the matrix file, `--trials` (`None`:
/// the default) and the target in seconds.
type Case<'a> = (&'a Path, Option<u64>, f64);

fn main() {
    println!("pairs_speed: `smtlab pairs` end to end (issue 29), and the analysis (issue 16)");
    println!("machine: {}", common::machine());
    let tmp = tempfile::tempdir().expect("a scratch directory");
    let rt_before = common::core_round_trip(tmp.path());
    println!("{}", common::show_round_trip("before", rt_before));

    // The command's work, end to end.
    let m500 = write_csv(tmp.path(), 500, 2);
    let m2000 = write_csv(tmp.path(), 2000, 3);
    println!(
        "matrices: 500 and 2,000 programs, WS 0.8..2.0 (seeded), {} and {} MB of CSV",
        std::fs::metadata(&m500).map_or(0, |m| m.len() >> 20),
        std::fs::metadata(&m2000).map_or(0, |m| m.len() >> 20)
    );
    let cases: [Case; 4] = [
        (&m500, Some(1), 1.0),
        (&m500, None, 5.0),
        (&m2000, Some(1), 30.0),
        (&m2000, None, 30.0),
    ];
    let (runs, in_process_ok) = in_process(&cases);
    let (commands, command_ok) = as_a_user_runs_it(&cases);
    print_memory();

    // Issue 16's targets.
    let m26 = matrix(26, 1);
    let (t26, t26_worst) = exact_best(&m26);
    let draws = random_draws(&m26);
    let pass = in_process_ok && command_ok && t26 < 0.010 && draws.dn < 2.0;
    let rt_after = common::core_round_trip(tmp.path());
    println!("{}", common::show_round_trip("after", rt_after));

    common::write_results(
        "pairs_speed",
        &serde_json::json!({
            "machine": common::machine(),
            "end_to_end": runs, "command": commands,
            "exact_26_s": t26, "exact_26_worst_s": t26_worst,
            "random_10m_s": draws.dn, "random_10m_one_thread_s": draws.d1,
            "threads": draws.threads,
            "random_speedup": draws.speedup, "control_speedup": draws.ceiling,
            "core_round_trip_ns": [rt_before, rt_after],
            "pass": pass,
        }),
    );
}

/// The command's work in this process, each case timed by stage and
/// printed against its target: the runs, and whether all met it.
fn in_process(cases: &[Case]) -> (Vec<Run>, bool) {
    println!(
        "{:<34} {:>6} {:>6} {:>6} {:>6} {:>7} {:>9}  target",
        "in process (s)", "parse", "exact", "draws", "json", "total", "peak RSS"
    );
    let mut runs = Vec::new();
    let mut pass = true;
    for &(path, trials, target) in cases {
        let r = pipeline(path, trials);
        let ok = r.total_s <= target;
        pass &= ok;
        let label = format!(
            "{} programs, {}",
            r.programs,
            match trials {
                Some(t) => format!("--trials {t}"),
                None => format!("default ({})", r.trials),
            }
        );
        println!(
            "{label:<34} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>7.2} {:>9}  <= {target} s {}",
            r.parse_s,
            r.exact_s,
            r.draws_s,
            r.output_s,
            r.total_s,
            mib(r.peak_rss_mib),
            verdict(ok)
        );
        runs.push(r);
    }
    (runs, pass)
}

/// The built command on each case, beside an older build when
/// `PAIRS_SPEED_COMPARE` names one, printed against its target: a row
/// each for the results file, and whether all met it.
fn as_a_user_runs_it(cases: &[Case]) -> (Vec<serde_json::Value>, bool) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_smtlab"));
    let older = std::env::var_os("PAIRS_SPEED_COMPARE").map(PathBuf::from);
    let timeout: f64 = std::env::var("PAIRS_SPEED_TIMEOUT")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(150.0);
    let mut commands = Vec::new();
    let mut pass = true;
    println!("the command itself (smtlab pairs FILE > /dev/null), peak RSS sampled every 10 ms:");
    for &(path, trials, target) in cases {
        let label = format!(
            "{} {}",
            path.file_name().unwrap_or_default().to_string_lossy(),
            trials.map_or("default".into(), |t| format!("--trials {t}"))
        );
        // Alternating with the older build, when there is one: the older
        // first, so that neither always runs on a warmer machine.
        let old = older.as_ref().map(|o| command(o, path, trials, timeout));
        let (s, rss) = command(&bin, path, trials, f64::INFINITY).expect("no timeout");
        let ok = s <= target;
        pass &= ok;
        let beside = match &old {
            None => String::new(),
            Some(None) => format!("; older build: not done after {timeout:.0} s, stopped"),
            Some(Some((os, orss))) => format!(
                "; older build {os:.2} s, {orss:.0} MiB: {:.1}x faster",
                os / s
            ),
        };
        println!(
            "  {label:<24} {s:>7.2} s {rss:>5.0} MiB  <= {target} s {}{beside}",
            verdict(ok)
        );
        commands.push(serde_json::json!({
            "case": label, "seconds": s, "peak_rss_mib": rss,
            "older_seconds": old.as_ref().map(|o| o.map(|(s, _)| s)),
            "older_peak_rss_mib": old.as_ref().map(|o| o.map(|(_, r)| r)),
        }));
    }
    (commands, pass)
}

/// What 500 and 2,000 programs take in memory, by structure.
fn print_memory() {
    for n in [500usize, 2000] {
        let n2 = (n * n) as f64 / (1 << 20) as f64;
        println!(
            "memory of {n} programs: the matrix {:.0} MiB (f64; twice: the analysis keeps a copy \
             for its JSON), the draws' table {:.0} MiB (i32), the matching's weights {:.0} MiB \
             (i64, only while it runs), the JSON text never held (written as made)",
            8.0 * n2,
            4.0 * n2,
            8.0 * n2
        );
    }
}

/// The exact best and worst schedules of `m26`, medians of 21, printed:
/// (best, worst) in seconds.
fn exact_best(m26: &Matrix) -> (f64, f64) {
    let t26 = common::median(
        (0..21)
            .map(|_| seconds(|| drop(std::hint::black_box(matching::best(m26)))))
            .collect(),
    );
    let t26_worst = common::median(
        (0..21)
            .map(|_| seconds(|| drop(std::hint::black_box(matching::worst(m26)))))
            .collect(),
    );
    println!(
        "exact best, 26 programs:   {:>9.3} ms  (target < 10 ms)  {}   (worst: {:.3} ms)",
        t26 * 1e3,
        verdict(t26 < 0.010),
        t26_worst * 1e3
    );
    (t26, t26_worst)
}

/// The random draws on every core against one thread, and the control's
/// ceiling for that speedup (medians of [`ROUNDS`]), as the results file
/// holds them.
struct Draws {
    threads: usize,
    /// The draws on one thread and on every core, s.
    d1: f64,
    dn: f64,
    speedup: f64,
    ceiling: f64,
}

/// Time 10 million random pairings of `m26` on one thread and on every
/// core, beside the control, rounds interleaving the four; check both
/// give the same draws; print the speedup and its ceiling.
fn random_draws(m26: &Matrix) -> Draws {
    let (lo, hi) = (matching::worst(m26).speedup, matching::best(m26).speedup);
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let (mut c1, mut cn, mut d1, mut dn) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        c1.push(seconds(|| spin(threads as u64, 1)));
        cn.push(seconds(|| spin(threads as u64, threads as u64)));
        let mut one = None;
        d1.push(seconds(|| {
            one = Some(random::distribution_on(m26, TRIALS, 3, lo, hi, 1))
        }));
        let mut all = None;
        dn.push(seconds(|| {
            all = Some(random::distribution_on(m26, TRIALS, 3, lo, hi, threads))
        }));
        assert_eq!(one, all, "the same draws on any number of threads");
    }
    let (c1, cn, d1, dn) = (
        common::median(c1),
        common::median(cn),
        common::median(d1),
        common::median(dn),
    );
    println!(
        "10M random pairings, 26 programs, {threads} threads: {dn:>6.3} s  (target < 2 s)  {}",
        verdict(dn < 2.0)
    );
    let (speedup, ceiling) = (d1 / dn, c1 / cn);
    println!(
        "  the same draws on 1 thread: {d1:.3} s: {threads}-thread speedup {speedup:.2}x \
         (ideal {threads}.00x)"
    );
    println!(
        "  ceiling (control sharing nothing, {c1:.3} s on 1 thread, {cn:.3} s on {threads}): \
         {ceiling:.2}x; the draws reach {:.0}% of it",
        speedup / ceiling * 100.0
    );
    Draws {
        threads,
        d1,
        dn,
        speedup,
        ceiling,
    }
}
