//! Benchmark: parallel efficiency at 2 workers of the study workloads, in
//! the thread and the process model, measured by smtlab itself
//! (`cargo bench -p smtlab --bench parallel_efficiency`). Not a test: it
//! prints, per workload and model, the metric at 1 and 2 workers and the
//! efficiency (target >= 0.97 on a 2-core machine), with the machine it ran
//! on, and writes `target/bench-results/parallel_efficiency.json`.
//!
//! Efficiency is speedup / workers: throughput(2) / (2 throughput(1)) for
//! fixed-time workloads, time(1) / (2 time(2)) for fixed-work ones (both
//! solve the same problem). The 1- and 2-worker points of one model are
//! measured in one run, interleaved, so drift affects both alike.

mod common;

use std::process::Command;

const WORKLOADS: [&str; 4] = ["jbb", "parfib", "sumeuler", "mandel"];

fn main() {
    let bin = env!("CARGO_BIN_EXE_smtlab");
    let dir = tempfile::tempdir().unwrap();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        println!("skipped: needs 2 CPUs, this machine has {cpus}");
        return;
    }
    let list = Command::new(bin).args(["list", "--json"]).output().unwrap();
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let known: Vec<String> = list["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect();
    let machine = common::machine();
    println!("machine: {machine}");
    println!(
        "{:<10} {:<8} {:>14} {:>14} {:>11}",
        "workload", "model", "1 worker", "2 workers", "efficiency"
    );
    let mut rows = Vec::new();
    for w in WORKLOADS {
        if !known.iter().any(|k| k == w) {
            println!("{w:<10} skipped: not a built-in workload in this build");
            continue;
        }
        for model in ["thread", "process"] {
            let db = dir.path().join(format!("{w}-{model}.db"));
            let out = Command::new(bin)
                .args(["run", "-w", w, "--model", model, "--threads", "1,2"])
                .args([
                    "--placement",
                    "compact",
                    "--warmup",
                    "1",
                    "--min-samples",
                    "5",
                ])
                .args(["--max-samples", "15", "--json", "--db"])
                .arg(&db)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let pts = doc["points"].as_array().unwrap();
            let m = |n: u64| {
                pts.iter()
                    .find(|p| p["threads"] == n)
                    .and_then(|p| p["median"].as_f64())
                    .expect("median")
            };
            let (one, two) = (m(1), m(2));
            let higher = pts[0]["higher_is_better"].as_bool().unwrap();
            let eff = if higher {
                two / (2.0 * one)
            } else {
                one / (2.0 * two)
            };
            let unit = pts[0]["unit"].as_str().unwrap();
            println!(
                "{w:<10} {model:<8} {:>10.4} {unit:<3} {:>10.4} {unit:<3} {:>11.3}{}",
                one,
                two,
                eff,
                if eff >= 0.97 { "" } else { "  (below 0.97)" }
            );
            rows.push(serde_json::json!({
                "workload": w, "model": model, "one": one, "two": two, "unit": unit, "efficiency": eff,
            }));
        }
    }
    common::write_results(
        "parallel_efficiency",
        &serde_json::json!({"machine": machine, "rows": rows}),
    );
}
