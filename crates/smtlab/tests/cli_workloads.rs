//! Every built-in workload runs as threads and as processes, at 1 and 2
//! workers, verifies its result and is stored; a corrupted result fails the
//! sample with a clear reason instead of reporting a speed. Sizes are
//! shrunk with `--param` so the whole file runs in seconds.

mod support;

use support::json;

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
    let doc = json(&bad);
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
