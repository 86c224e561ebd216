//! Benchmark: the compute workloads `parfib`, `sumeuler` and `mandel` against
//! plain C `-O2` implementations of the same algorithms (`benches/c/*.c`),
//! run side by side (`cargo bench -p smtlab --bench compute_vs_c`). Not a
//! test: it prints, per workload, the C time, smtlab's median wall time with
//! one thread and their ratio (target <= 1.10), and the parallel efficiency
//! T(1) / (2 T(2)) with two workers as threads and as processes (target >=
//! 0.97), with the machine it ran on, and writes them to
//! `target/bench-results/compute_vs_c.json`.
//!
//! The C programs time their computation alone (CLOCK_MONOTONIC around it),
//! as smtlab's wall time covers the measured window alone. C and smtlab
//! alternate (C smtlab C smtlab) so slow drift of a shared machine affects
//! both alike; smtlab's own runs interleave its four points.
//!
//! **The machine's ceiling** ("C 2 copies"): each C run alone on CPU 0 is
//! followed by two copies of the same C program at once, one on CPU 0 and
//! one on CPU 1, sharing nothing. Their efficiency, the mean over the two
//! copies of (time alone / time as a copy), is what any two-worker version
//! of that code can reach on this machine: below 1 when one busy CPU slows
//! the other (shared caches, power, a VM's host). smtlab's efficiency is
//! printed beside it.

mod common;

use std::path::Path;

const ROUNDS: usize = 2;
const C_RUNS: usize = 3;

/// One smtlab run of `workload` at 1 and 2 workers as threads and as
/// processes: (model, workers, median wall time, CPU time per sample).
fn run_smtlab(workload: &str, db: &Path) -> Vec<(String, u64, f64, f64)> {
    let _ = std::fs::remove_file(db);
    let db = db.display().to_string();
    let doc = common::smtlab_json([
        "run",
        "-w",
        workload,
        "--threads",
        "1,2",
        "--model",
        "thread,process",
        "--placement",
        "compact",
        "--warmup",
        "1",
        "--min-samples",
        "5",
        "--no-counters",
        "--json",
        "--db",
        &db,
    ]);
    doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p["failed"], 0, "failed samples (wrong result?): {p}");
            (
                p["model"].as_str().unwrap().to_string(),
                p["threads"].as_u64().unwrap(),
                p["median"].as_f64().unwrap(),
                p["user_s"].as_f64().unwrap_or(f64::NAN) + p["sys_s"].as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let machine = common::machine();
    println!("machine: {machine}");
    println!(
        "{:<9} {:>10} {:>10} {:>7}  {:>9} {:>11} {:>11} {:>10}",
        "workload", "C", "smtlab", "ratio", "cpu ratio", "eff thread", "eff process", "C 2 copies"
    );
    let mut rows = Vec::new();
    for (name, args) in common::C_REFERENCES {
        let exe = common::compile_c(dir.path(), name);
        let (mut c, mut c_cpu, mut points) = (Vec::new(), Vec::new(), Vec::new());
        // Per pair: time alone / time as one of two copies, per copy.
        let mut ceiling = Vec::new();
        let mut c_result = String::new();
        for _ in 0..ROUNDS {
            for _ in 0..C_RUNS {
                let (r, s, cpu) = common::run_c(&exe, args);
                c_result = r;
                c.push(s);
                c_cpu.push(cpu);
                ceiling.push(common::copies_efficiency(
                    s,
                    &common::run_c_copies(&exe, args),
                ));
            }
            points.extend(run_smtlab(name, &dir.path().join("s.db")));
        }
        let t = |model: &str, n: u64| {
            common::median(
                points
                    .iter()
                    .filter(|p| p.0 == model && p.1 == n)
                    .map(|p| p.2)
                    .collect(),
            )
        };
        let cm = common::median(c);
        let s1 = t("thread", 1);
        // CPU time (user + system) of one thread: a check on the wall-time
        // ratio when other programs share the machine.
        let (c_cpu, s1_cpu) = (
            common::median(c_cpu),
            common::median(
                points
                    .iter()
                    .filter(|p| p.0 == "thread" && p.1 == 1)
                    .map(|p| p.3)
                    .collect(),
            ),
        );
        let ratio = s1 / cm;
        let eff_t = t("thread", 1) / (2.0 * t("thread", 2));
        let eff_p = t("process", 1) / (2.0 * t("process", 2));
        let ceiling = common::median(ceiling);
        println!(
            "{name:<9} {:>8.3} s {:>8.3} s {:>7.3}{} {:>9.3} {:>11.3}{} {:>11.3}{} {:>10.3}",
            cm,
            s1,
            ratio,
            if ratio <= 1.10 { " " } else { "!" },
            s1_cpu / c_cpu,
            eff_t,
            if eff_t >= 0.97 { " " } else { "!" },
            eff_p,
            if eff_p >= 0.97 { " " } else { "!" },
            ceiling,
        );
        rows.push(serde_json::json!({
            "workload": name, "c_args": args, "c_result": c_result, "c_median_s": cm,
            "smtlab_thread1_median_s": s1, "ratio": ratio,
            "c_cpu_s": c_cpu, "smtlab_thread1_cpu_s": s1_cpu, "cpu_ratio": s1_cpu / c_cpu,
            "thread2_median_s": t("thread", 2), "process1_median_s": t("process", 1),
            "process2_median_s": t("process", 2),
            "efficiency_thread": eff_t, "efficiency_process": eff_p,
            "c_two_copies_efficiency": ceiling,
        }));
    }
    println!(
        "targets: ratio <= 1.10, efficiency >= 0.97 (! marks a miss); cpu ratio: CPU time, \
         smtlab / C, which other programs on the machine disturb less; C 2 copies: the \
         machine's ceiling for this code (two C copies on CPUs 0 and 1, each against a run alone)"
    );
    common::write_results(
        "compute_vs_c",
        &serde_json::json!({
            "machine": machine,
            "targets": {"ratio_max": 1.10, "efficiency_min": 0.97},
            "rows": rows,
        }),
    );
}
