//! Benchmark: smtalloc's goals, measured side by side with the other
//! allocators by smtlab itself (`cargo bench -p smtlab --bench alloc_goals`).
//! Not a test: it prints and writes `target/bench-results/alloc_goals.json`:
//!
//! * throughput on the allocation benchmarks (larson, xmalloc, cache_scratch,
//!   cache_thrash, mstress) at 2 threads, geometric mean: smtalloc against
//!   mimalloc (goal >= 0.9) and glibc (goal >= 1.5);
//! * peak RSS on the same benchmarks against jemalloc (goal <= 1.2);
//! * foreign share with migrating threads (`allocprobe migrate=1`, goal <= 1%);
//! * huge-page coverage of smtalloc's heap at steady state (a C churn
//!   program under `SMTALLOC_STATS=1`, goal >= 90%);
//! * jbb throughput in the thread model against glibc (goal >= 1.0).
//!
//! Allocators are measured in alternating rounds (every allocator once per
//! round) so that drift of the machine affects all of them alike; each
//! number is the median over rounds of each round's median. Rounds: 3, or
//! `ALLOC_GOALS_ROUNDS`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const BENCHMARKS: &str = "larson,xmalloc,cache_scratch,cache_thrash,mstress";
/// Rounds when `ALLOC_GOALS_ROUNDS` is not set: enough for a median that
/// one noisy round cannot move, short enough (~5 min) to run often.
const DEFAULT_ROUNDS: usize = 3;

/// `smtlab run ... --json` for one allocator: the points' JSON.
fn run(bin: &str, db: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let _ = std::fs::remove_file(db);
    let out = Command::new(bin)
        .arg("run")
        .args(args)
        .args([
            "--model",
            "thread",
            "-n",
            "2",
            "--duration",
            "500ms",
            "--warmup",
            "1",
            "--min-samples",
            "3",
            "--max-samples",
            "3",
            "--no-counters",
            "--json",
            "--db",
        ])
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["points"].as_array().unwrap().clone()
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_smtlab");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // smtlab finds libsmtalloc.so next to itself: build it in this profile.
    let st = Command::new(&cargo)
        .args(["build", "--release", "-p", "smtalloc-preload"])
        .status()
        .unwrap();
    assert!(st.success(), "building libsmtalloc.so");
    let lib = Path::new(bin).with_file_name("libsmtalloc.so");
    assert!(lib.is_file(), "{} was not built", lib.display());

    let allocs: Vec<&str> = ["glibc", "mimalloc", "jemalloc", "tcmalloc", "smtalloc"]
        .into_iter()
        .filter(|a| {
            let ok = smtlab_core::doctor::find_allocator(a).is_ok() || *a == "smtalloc";
            if !ok {
                println!("{a}: not installed, skipped");
            }
            ok
        })
        .collect();
    let rounds: usize = match std::env::var("ALLOC_GOALS_ROUNDS") {
        Ok(v) => v
            .parse()
            .ok()
            .filter(|&r| r > 0)
            .expect("ALLOC_GOALS_ROUNDS: expected a positive integer"),
        Err(_) => DEFAULT_ROUNDS,
    };
    let machine = common::machine();
    println!("machine: {machine}");
    let dir = tempfile::tempdir().unwrap();
    // (alloc, workload) -> per-round medians of throughput and peak RSS.
    let mut tput: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut rss: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut foreign: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for round in 0..rounds {
        for a in &allocs {
            let db = dir.path().join(format!("{a}.db"));
            for p in run(bin, &db, &["-w", BENCHMARKS, "--alloc", a]) {
                let w = p["workload"].as_str().unwrap().to_string();
                tput.entry((a.to_string(), w.clone()))
                    .or_default()
                    .push(p["median"].as_f64().unwrap());
                if let Some(r) = p["peak_rss_kb"].as_f64() {
                    rss.entry((a.to_string(), w)).or_default().push(r);
                }
            }
            for p in run(bin, &db, &["-w", "jbb", "--alloc", a, "--param", "seed=1"]) {
                tput.entry((a.to_string(), "jbb".into()))
                    .or_default()
                    .push(p["median"].as_f64().unwrap());
            }
            for p in run(
                bin,
                &db,
                &["-w", "allocprobe", "--param", "migrate=1", "--alloc", a],
            ) {
                if let Some(s) = p["extras"]["foreign_share"].as_f64() {
                    foreign.entry(a.to_string()).or_default().push(s);
                }
            }
        }
        println!("round {} of {rounds} done", round + 1);
    }
    let med = |m: &BTreeMap<(String, String), Vec<f64>>, a: &str, w: &str| {
        m.get(&(a.to_string(), w.to_string()))
            .map(|v| common::median(v.clone()))
    };
    println!(
        "\n{:<14} {}",
        "workload",
        allocs
            .iter()
            .map(|a| format!("{a:>12}"))
            .collect::<String>()
    );
    let mut workloads: Vec<&str> = BENCHMARKS.split(',').collect();
    workloads.push("jbb");
    for w in &workloads {
        let cells: String = allocs
            .iter()
            .map(|a| format!("{:>12.4e}", med(&tput, a, w).unwrap_or(f64::NAN)))
            .collect();
        println!("{w:<14} {cells}");
    }
    let ratio_over = |m: &BTreeMap<(String, String), Vec<f64>>, a: &str, b: &str| {
        let r: Vec<f64> = BENCHMARKS
            .split(',')
            .filter_map(|w| Some(med(m, a, w)? / med(m, b, w)?))
            .collect();
        (!r.is_empty()).then(|| geomean(&r))
    };
    let mut goals = serde_json::Map::new();
    let mut goal = |name: &str, value: Option<f64>, ok: fn(f64) -> bool, target: &str| {
        let shown = value.map_or("not measured".to_string(), |v| format!("{v:.3}"));
        let verdict = match value {
            Some(v) if ok(v) => "met",
            Some(_) => "MISSED",
            None => "not measured",
        };
        println!("{name:<52} {shown:>12}  target {target:<8} {verdict}");
        goals.insert(
            name.to_string(),
            serde_json::json!({"value": value, "target": target, "verdict": verdict}),
        );
    };
    println!();
    goal(
        "throughput smtalloc / mimalloc (geomean, 2 threads)",
        ratio_over(&tput, "smtalloc", "mimalloc"),
        |v| v >= 0.9,
        ">= 0.9",
    );
    goal(
        "throughput smtalloc / glibc (geomean, 2 threads)",
        ratio_over(&tput, "smtalloc", "glibc"),
        |v| v >= 1.5,
        ">= 1.5",
    );
    goal(
        "peak RSS smtalloc / jemalloc (geomean)",
        ratio_over(&rss, "smtalloc", "jemalloc"),
        |v| v <= 1.2,
        "<= 1.2",
    );
    goal(
        "foreign share, smtalloc, migrating threads",
        foreign.get("smtalloc").map(|v| common::median(v.clone())),
        |v| v <= 0.01,
        "<= 0.01",
    );
    for (a, v) in &foreign {
        println!(
            "  foreign share with migrating threads, {a}: {:.4}",
            common::median(v.clone())
        );
    }
    let coverage = huge_page_coverage(&lib, dir.path());
    goal(
        "huge-page coverage of smtalloc's heap (steady state)",
        coverage,
        |v| v >= 0.9,
        ">= 0.9",
    );
    goal(
        "jbb thread model, smtalloc / glibc",
        med(&tput, "smtalloc", "jbb")
            .zip(med(&tput, "glibc", "jbb"))
            .map(|(a, b)| a / b),
        |v| v >= 1.0,
        ">= 1.0",
    );
    let rows: Vec<serde_json::Value> = tput
        .iter()
        .map(|((a, w), v)| {
            serde_json::json!({"alloc": a, "workload": w, "throughput": common::median(v.clone()),
                "peak_rss_kb": med(&rss, a, w)})
        })
        .collect();
    common::write_results(
        "alloc_goals",
        &serde_json::json!({"machine": machine, "rounds": rounds, "rows": rows, "goals": goals}),
    );
}

/// The share of smtalloc's arena RSS in huge pages after a 2-thread churn
/// (its own `SMTALLOC_STATS=1` line: "arenas huge-page coverage: X MiB of
/// Y MiB rss").
fn huge_page_coverage(lib: &Path, dir: &Path) -> Option<f64> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/c/alloc_churn.c");
    let exe = dir.join("alloc_churn");
    let st = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .ok()?;
    if !st.success() {
        return None;
    }
    let out = Command::new(&exe)
        .arg("2")
        .env("LD_PRELOAD", lib)
        .env("SMTALLOC_STATS", "1")
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .rev()
        .find(|l| l.contains("arenas huge-page coverage:"))?;
    let nums: Vec<f64> = line
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|t| t.parse().ok())
        .collect();
    // "X MiB of Y MiB rss (Z%)"
    (nums.len() >= 2 && nums[1] > 0.0).then(|| nums[0] / nums[1])
}
