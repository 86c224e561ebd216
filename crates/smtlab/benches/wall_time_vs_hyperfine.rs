//! Benchmark: smtlab's wall time for a fixed-work command against
//! hyperfine's, measured side by side (`cargo bench --bench
//! wall_time_vs_hyperfine`). Not a test: it prints the ratio of medians per
//! command, and the machine it ran on, and writes them to
//! `target/bench-results/wall_time_vs_hyperfine.json`. The target is a ratio
//! within 2% of 1.
//!
//! Both tools run the same process tree, `sh -c LOOP`: hyperfine with
//! `--shell=none` (so it neither adds nor subtracts a shell of its own),
//! smtlab with `--cmd LOOP` (which it runs as `sh -c LOOP`) unpinned
//! (`--placement none`, as hyperfine does not pin). The two alternate
//! (A B A B A B) so slow drift of the machine affects both alike.

mod common;

use std::path::PathBuf;
use std::process::Command;

const ROUNDS: usize = 3;
const RUNS: usize = 20;

fn hyperfine(script: &str, out: &PathBuf) -> Vec<f64> {
    let status = Command::new("hyperfine")
        .args([
            "--shell=none",
            "--warmup",
            "3",
            "--runs",
            &RUNS.to_string(),
            "--style",
            "none",
        ])
        .arg("--export-json")
        .arg(out)
        .arg(format!("sh -c '{script}'"))
        .status()
        .expect("hyperfine runs");
    assert!(status.success(), "hyperfine failed");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    doc["results"][0]["times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect()
}

fn smtlab(script: &str, db: &PathBuf) -> Vec<f64> {
    let _ = std::fs::remove_file(db);
    let (runs, db) = (RUNS.to_string(), db.display().to_string());
    common::smtlab_json([
        "run",
        "--cmd",
        script,
        "--placement",
        "none",
        "--no-counters",
        "--warmup",
        "3",
        "--min-samples",
        &runs,
        "--max-samples",
        &runs,
        "--db",
        &db,
        "--json",
    ]);
    // Every sample, from the store, not just the summary.
    let doc = common::smtlab_json(["show", "latest", "--json", "--db", &db]);
    let p = &doc["points"][0];
    assert_eq!(p["samples"], RUNS, "{p}");
    vec![p["median"].as_f64().unwrap()]
}

fn main() {
    if Command::new("hyperfine").arg("--version").output().is_err() {
        println!("skipped: hyperfine is not installed (Debian package hyperfine)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scripts = [
        (
            "shell loop, ~30 ms",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
        ),
        (
            "shell loop, ~300 ms",
            "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
        ),
    ];
    let machine = common::machine();
    println!("machine: {machine}");
    println!(
        "{:<22} {:>14} {:>14} {:>9}",
        "command", "hyperfine", "smtlab", "ratio"
    );
    let mut rows = Vec::new();
    for (label, script) in scripts {
        let (mut h, mut s) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            h.push(common::median(hyperfine(
                script,
                &dir.path().join("h.json"),
            )));
            s.extend(smtlab(script, &dir.path().join("s.db")));
        }
        let (hm, sm) = (common::median(h), common::median(s));
        let ratio = sm / hm;
        println!(
            "{label:<22} {:>11.2} ms {:>11.2} ms {:>9.4}{}",
            hm * 1e3,
            sm * 1e3,
            ratio,
            if (ratio - 1.0).abs() <= 0.02 {
                ""
            } else {
                "  (outside 2%)"
            }
        );
        rows.push(serde_json::json!({
            "command": script, "hyperfine_median_s": hm, "smtlab_median_s": sm, "ratio": ratio,
        }));
    }
    common::write_results(
        "wall_time_vs_hyperfine",
        &serde_json::json!({"machine": machine, "rows": rows}),
    );
}
