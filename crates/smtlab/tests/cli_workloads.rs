//! Every built-in workload runs as threads and as processes, at 1 and 2
//! workers, verifies its result and is stored; a corrupted result fails the
//! sample with a clear reason instead of reporting a speed. Sizes are
//! shrunk with `--param` so the whole file runs in seconds.

mod support;

use support::{json, json_exit};

/// Small problem sizes per workload (the defaults take seconds).
fn small(workload: &str) -> Vec<&'static str> {
    match workload {
        "spin" => vec!["--duration", "50ms"],
        "jbb" => vec![
            "--param",
            "items=2000",
            "--param",
            "customers=300",
            "--param",
            "initial_orders=300",
            "--duration",
            "100ms",
        ],
        "stream" => vec!["--param", "size=3MiB", "--duration", "50ms"],
        "latency" => vec!["--param", "size=1MiB", "--duration", "50ms"],
        "parfib" => vec!["--param", "n=27", "--param", "threshold=15"],
        "sumeuler" => vec!["--param", "n=3000", "--param", "chunk=50"],
        "mandel" => vec![
            "--param",
            "width=128",
            "--param",
            "height=96",
            "--param",
            "iters=300",
        ],
        "allocprobe" => vec!["--param", "live=2000", "--duration", "50ms"],
        "larson" => vec![
            "--param",
            "slots=500",
            "--param",
            "rounds=1000",
            "--duration",
            "50ms",
        ],
        "xmalloc" => vec!["--duration", "50ms"],
        "cache_scratch" => vec!["--param", "writes=100", "--duration", "50ms"],
        "cache_thrash" => vec!["--param", "writes=100", "--duration", "50ms"],
        "mstress" => vec!["--param", "batch=200", "--duration", "50ms"],
        other => panic!("no small size for workload {other}: add it to this table"),
    }
}

fn check(workload: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db").display().to_string();
    let mut args = vec![
        "run",
        "-w",
        workload,
        "--model",
        "thread,process",
        "--threads",
        "1,2",
        "--warmup",
        "0",
        "--min-samples",
        "2",
        "--max-samples",
        "2",
        "--json",
        "--db",
        &db,
    ];
    let sizes = small(workload);
    args.extend(sizes.iter().copied());
    let doc = json(&args);
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 4, "{workload}");
    for p in points {
        assert_eq!(p["failed"], 0, "{workload}: {p}");
        assert_eq!(p["samples"], 2, "{workload}: {p}");
        assert!(p["median"].as_f64().unwrap() > 0.0, "{workload}: {p}");
    }
    let shown = json(&["show", "latest", "--json", "--db", &db]);
    assert_eq!(shown["run"]["status"], "complete");

    let mut bad = vec![
        "run",
        "-w",
        workload,
        "--param",
        "corrupt=1",
        "--threads",
        "1",
        "--warmup",
        "0",
        "--min-samples",
        "1",
        "--max-samples",
        "1",
        "--json",
        "--db",
        &db,
    ];
    bad.extend(sizes.iter().copied());
    // Exit 3: the point has no successful sample.
    let doc = json_exit(&bad, 3);
    let p = &doc["points"][0];
    assert!(
        p["median"].is_null(),
        "{workload}: a wrong result reports no speed"
    );
    let f = p["failures"][0].as_str().unwrap_or_default();
    assert!(f.starts_with("wrong_result:"), "{workload}: {f}");
}

#[test]
fn every_builtin_workload_is_covered() {
    let doc = json(&["list", "--json"]);
    for w in doc["workloads"].as_array().unwrap() {
        let name = w["name"].as_str().unwrap();
        let _ = small(name); // panics for a workload this file does not run
        assert!(w["verification"].as_str().unwrap().len() > 10, "{name}");
        assert!(!w["params"].as_array().unwrap().is_empty(), "{name}");
    }
}

#[test]
fn spin_runs_verified() {
    check("spin");
}

#[test]
fn jbb_runs_verified() {
    check("jbb");
}

#[test]
fn stream_runs_verified() {
    check("stream");
}

#[test]
fn latency_runs_verified() {
    check("latency");
}

#[test]
fn parfib_runs_verified() {
    check("parfib");
}

#[test]
fn sumeuler_runs_verified() {
    check("sumeuler");
}

#[test]
fn mandel_runs_verified() {
    check("mandel");
}

#[test]
fn allocprobe_runs_verified() {
    check("allocprobe");
}

#[test]
fn larson_runs_verified() {
    check("larson");
}

#[test]
fn xmalloc_runs_verified() {
    check("xmalloc");
}

#[test]
fn cache_scratch_runs_verified() {
    check("cache_scratch");
}

#[test]
fn cache_thrash_runs_verified() {
    check("cache_thrash");
}

#[test]
fn mstress_runs_verified() {
    check("mstress");
}

/// The alloc probe's extra observations reach `run --json` (summed over
/// processes, medians per point) with the derived foreign share, and are
/// stored: `show` reads the same from the store.
#[test]
fn allocprobe_reports_extras() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db").display().to_string();
    let doc = json(&[
        "run",
        "-w",
        "allocprobe",
        "--model",
        "thread,process",
        "--threads",
        "2",
        "--param",
        "live=3000",
        "--param",
        "migrate=1",
        "--param",
        "migrate_every=200",
        "--duration",
        "100ms",
        "--warmup",
        "0",
        "--min-samples",
        "1",
        "--max-samples",
        "1",
        "--json",
        "--db",
        &db,
    ]);
    for p in doc["points"].as_array().unwrap() {
        let x = &p["extras"];
        // Each worker holds its last `live` allocations, or all of them if
        // it made fewer in the window (a loaded machine): never a guess.
        let live: f64 = p["worker_ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ops| ops.as_f64().unwrap().min(3000.0))
            .sum();
        assert!(live > 0.0, "{p}");
        assert_eq!(x["live_objects"].as_f64(), Some(live), "{p}");
        let foreign = x["foreign_objects"].as_f64().unwrap();
        assert!((0.0..=live).contains(&foreign), "{p}");
        assert!(x["frames"].as_f64().unwrap() >= 1.0, "{p}");
        assert!(x["shared_frames"].as_f64().unwrap() <= x["frames"].as_f64().unwrap());
        let share = x["foreign_share"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{p}");
        assert_eq!(share, foreign / live, "{p}");
    }
    let shown = json(&["show", "latest", "--json", "--db", &db]);
    assert_eq!(shown["points"], doc["points"]);

    // A workload without extras reports an empty object.
    let doc = json(&[
        "run",
        "-w",
        "spin",
        "--threads",
        "1",
        "--duration",
        "20ms",
        "--warmup",
        "0",
        "--min-samples",
        "1",
        "--max-samples",
        "1",
        "--json",
        "--db",
        &db,
    ]);
    assert_eq!(doc["points"][0]["extras"], serde_json::json!({}));
}
