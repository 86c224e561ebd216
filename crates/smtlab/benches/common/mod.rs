//! Helpers shared by the benchmark binaries (`mod common;` in each): the
//! median, the machine description every result carries, the core-to-core
//! round trip that tells a VM's state, and writing a result to
//! `target/bench-results/NAME.json`.

#![allow(dead_code)] // each bench uses a subset

use std::path::{Path, PathBuf};
use std::process::Command;

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
