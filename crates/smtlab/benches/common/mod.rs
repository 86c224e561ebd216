//! Helpers shared by the benchmark binaries (`mod common;` in each): the
//! median, the machine description every result carries, and writing a
//! result to `target/bench-results/NAME.json`.

#![allow(dead_code)] // each bench uses a subset

use std::path::PathBuf;

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
