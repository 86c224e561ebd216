//! Helpers shared by the benchmark binaries (`mod common;` in each): the
//! median, the machine description every result carries, the core-to-core
//! round trip that tells a VM's state, the plain C references of the
//! compute workloads (`benches/c/`), and writing a result to
//! `target/bench-results/NAME.json`.

#![allow(dead_code)] // each bench uses a subset

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use smtlab_store::Store;
use smtlab_types::SampleStatus;

/// The median (mean of the middle two for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `2 CPUs, AMD EPYC, kernel 6.18...`: benchmark numbers mean nothing
/// without the machine they came from.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_default();
    format!(
        "{} CPUs, {model}, kernel {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    )
}

/// The core-to-core round trip between CPUs 0 and 1 in ns
/// (`benches/c/core_round_trip.c`, compiled into `dir`); `None` with fewer
/// than 2 CPUs or without a C compiler. On a VM it shows whether the host
/// has the two vCPUs close together (tens of ns) or far apart (hundreds),
/// which moves every cross-thread result: benchmarks print it before and
/// after measuring.
pub fn core_round_trip(dir: &Path) -> Option<f64> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return None;
    }
    let exe = dir.join("core_round_trip");
    if !exe.is_file() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/c/core_round_trip.c");
        let ok = Command::new("cc")
            .args(["-O2", "-pthread", "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .ok()?
            .success();
        if !ok {
            return None;
        }
    }
    let out = Command::new(&exe).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// `core round trip: 410 ns` (or why it is unknown), for a bench's output.
pub fn show_round_trip(when: &str, ns: Option<f64>) -> String {
    match ns {
        Some(ns) => format!("core-to-core round trip {when}: {ns:.0} ns"),
        None => format!("core-to-core round trip {when}: not measured (needs 2 CPUs and cc)"),
    }
}

/// Run the smtlab under test with `args` (which ask for `--json`), insist
/// that it succeeds (its stderr in the panic), and parse its stdout.
pub fn smtlab_json<I, S>(args: I) -> serde_json::Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = Command::new(env!("CARGO_BIN_EXE_smtlab"))
        .args(args)
        .output()
        .expect("smtlab runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("smtlab printed JSON")
}

/// Write `doc` to `target/bench-results/NAME.json`.
pub fn write_results(name: &str, doc: &serde_json::Value) {
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-results");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(
        out.join(format!("{name}.json")),
        serde_json::to_string_pretty(doc).unwrap(),
    )
    .unwrap();
}

/// The C references of the compute workloads (`benches/c/NAME.c`) with the
/// arguments that match smtlab's defaults (`smtlab list`).
pub const C_REFERENCES: [(&str, &[&str]); 3] = [
    ("parfib", &["45"]),
    ("sumeuler", &["10000"]),
    ("mandel", &["1024", "1024", "3000"]),
];

/// Compile `benches/c/NAME.c` with `cc -O2` into `dir`.
pub fn compile_c(dir: &Path, name: &str) -> PathBuf {
    compile_c_with(dir, name, &[])
}

/// [`compile_c`] with extra compiler flags (such as `-pthread`).
pub fn compile_c_with(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let exe = dir.join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("benches/c/{name}.c"));
    let status = Command::new("cc")
        .arg("-O2")
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc -O2 {name}.c failed");
    exe
}

/// Start the C reference pinned to `cpu` (with `taskset` where it exists),
/// its output piped.
fn spawn_c(exe: &Path, args: &[&str], cpu: u32) -> std::process::Child {
    let pinned = Command::new("taskset").arg("--version").output().is_ok();
    let mut cmd = if pinned {
        let mut c = Command::new("taskset");
        c.args(["-c", &cpu.to_string()]).arg(exe);
        c
    } else {
        Command::new(exe)
    };
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("C program runs")
}

/// Wait for a C reference and read what it printed: (result, wall
/// seconds, CPU seconds).
fn wait_c(exe: &Path, child: std::process::Child) -> (String, f64, f64) {
    let out = child.wait_with_output().expect("C program runs");
    assert!(out.status.success(), "{}", exe.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| {
        text.split_whitespace()
            .find_map(|f| f.strip_prefix(k))
            .unwrap_or_else(|| panic!("no {k} in {text}"))
            .to_string()
    };
    (
        field("result="),
        field("seconds=").parse().unwrap(),
        field("cpu=").parse().unwrap(),
    )
}

/// Run the C reference once, pinned to CPU 0 as smtlab's one compact
/// worker is (so both meet the same neighbours on a shared machine):
/// (result, wall seconds, CPU seconds).
pub fn run_c(exe: &Path, args: &[&str]) -> (String, f64, f64) {
    wait_c(exe, spawn_c(exe, args, 0))
}

/// Two copies of the C program at once, pinned to CPUs 0 and 1 (where
/// `taskset` exists): each copy's wall seconds.
pub fn run_c_copies(exe: &Path, args: &[&str]) -> Vec<f64> {
    let children: Vec<_> = (0..2).map(|cpu| spawn_c(exe, args, cpu)).collect();
    children
        .into_iter()
        .map(|child| wait_c(exe, child).1)
        .collect()
}

/// The efficiency of two copies against one run alone: the mean over the
/// copies of time alone / time as a copy.
pub fn copies_efficiency(alone: f64, copies: &[f64]) -> f64 {
    copies.iter().map(|t| alone / t).sum::<f64>() / copies.len() as f64
}

/// The machine's ceiling for one C reference: a run alone on CPU 0, then
/// two copies at once on CPUs 0 and 1 (sharing nothing). Below 1 when one
/// busy CPU slows the other, which no two-worker program of that code
/// escapes.
pub fn c_two_copies_efficiency(exe: &Path, args: &[&str]) -> f64 {
    let (_, alone, _) = run_c(exe, args);
    copies_efficiency(alone, &run_c_copies(exe, args))
}

/// The metric of each successful measured sample of one point, by seq.
/// smtlab's engine gives every point one warm-up (seq 0) in round 0, so
/// seq k is round k of every point of a run, and a failed sample leaves a
/// gap instead of shifting the pairs after it: the key to pair points'
/// samples by round.
pub fn ok_samples_by_seq(store: &Store, point_id: i64) -> BTreeMap<usize, f64> {
    store
        .samples(point_id)
        .unwrap()
        .into_iter()
        .filter(|s| !s.warmup && s.status == SampleStatus::Ok)
        .filter_map(|s| Some((s.seq, s.metric?)))
        .collect()
}

/// A positive count from environment variable `name`, or `default` when it
/// is unset. Anything else is a user's mistake: one line naming the
/// variable and what is valid, exit code 2 (nothing has run yet).
pub fn count_from_env(name: &str, default: usize) -> usize {
    let Ok(v) = std::env::var(name) else {
        return default;
    };
    match v.trim().parse::<usize>() {
        Ok(n) if n > 0 => n,
        _ => {
            eprintln!("{name}={v}: expected a positive integer (default {default})");
            std::process::exit(2);
        }
    }
}
