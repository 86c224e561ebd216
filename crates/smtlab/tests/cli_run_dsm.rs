//! The DSM study's runs through the binary (issue 19, items 4 and 5):
//! `run -w sor|lu|tsp --comm ...` gives one verified, stored point per
//! mechanism, the ranks started here as processes; `smtlab rank` under
//! Debian's `mpirun` gives the same result as the local launch and stores
//! it; bad input is one line, exit 2, and runs nothing.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{assert_success, assert_usage_error, smtlab};

const MECHANISMS: [&str; 5] = ["sigio", "thr1", "thr2", "thr3", "poll"];

/// `smtlab run` of one DSM application with every mechanism, one sample
/// per point (sizes small enough for a debug build on two CPUs).
fn run_every_mechanism(app: &str, params: &[&str], ranks: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dsm.db").display().to_string();
    let mut args = vec!["run", "-w", app, "--comm", "sigio,thr1,thr2,thr3,poll"];
    args.extend(["-n", ranks, "--json", "--db", &db]);
    args.extend(["--warmup", "0", "--min-samples", "1", "--max-samples", "1"]);
    for p in params {
        args.extend(["--param", p]);
    }
    let run = support::json(&args);
    // What the store holds, read back, is what the run printed.
    let stored = support::json(&["show", "latest", "--db", &db, "--json"]);
    assert_eq!(stored["points"], run["points"]);
    run
}

/// Every mechanism's point measured once, verified, as processes.
fn assert_verified_per_mechanism(doc: &Value, app: &str, ranks: u64) {
    assert_eq!(doc["status"], "complete", "{doc}");
    let points = doc["points"].as_array().unwrap();
    let labels: Vec<&str> = points
        .iter()
        .map(|p| p["workload"].as_str().unwrap())
        .collect();
    let want: Vec<String> = MECHANISMS.iter().map(|m| format!("{app} {m}")).collect();
    assert_eq!(labels, want);
    for p in points {
        let what = p["workload"].as_str().unwrap();
        assert_eq!(p["samples"], 1, "{what}: {}", p["failures"]);
        assert_eq!(p["failed"], 0, "{what}: {}", p["failures"]);
        // No --model: a DSM application runs as processes, one per rank.
        assert_eq!(p["model"], "process", "{what}");
        assert_eq!(p["threads"], ranks, "{what}");
        assert_eq!(
            (&p["metric"], &p["unit"]),
            (&"wall_time".into(), &"s".into())
        );
        assert!(p["median"].as_f64().unwrap() > 0.0, "{what}: {p}");
        let x = &p["extras"];
        assert_eq!(x["verified"], 1.0, "{what}: {x}");
        assert!(x["messages"].as_f64().unwrap() > 0.0, "{what}: {x}");
        assert!(x["barriers"].as_f64().unwrap() > 0.0, "{what}: {x}");
        assert_eq!(
            p["worker_ops"].as_array().map(Vec::len),
            Some(ranks as usize)
        );
    }
    // One input, one answer, whichever way the ranks heard each other.
    let sums: Vec<f64> = points
        .iter()
        .map(|p| p["extras"]["checksum"].as_f64().unwrap())
        .collect();
    assert!(sums.iter().all(|s| *s == sums[0]), "{sums:?}");
}

#[test]
fn sor_gives_a_verified_point_per_mechanism() {
    let doc = run_every_mechanism("sor", &["n=64", "iterations=20"], "2");
    assert_verified_per_mechanism(&doc, "sor", 2);
}

#[test]
fn lu_gives_a_verified_point_per_mechanism() {
    let doc = run_every_mechanism("lu", &["n=64", "block=16"], "2");
    assert_verified_per_mechanism(&doc, "lu", 2);
}

#[test]
fn tsp_gives_a_verified_point_per_mechanism() {
    let doc = run_every_mechanism("tsp", &["cities=8"], "2");
    assert_verified_per_mechanism(&doc, "tsp", 2);
    for p in doc["points"].as_array().unwrap() {
        // The queue and the bound are behind locks.
        assert!(p["extras"]["locks"].as_f64().unwrap() > 0.0, "{p}");
    }
}

#[test]
fn bad_dsm_input_is_one_line_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("never.db").display().to_string();
    let cases: [(&[&str], &str); 8] = [
        (&["-w", "sor", "--comm", "signal"], "--comm `signal`"),
        (
            &["-w", "spin", "--comm", "thr2"],
            "--comm: only the DSM applications",
        ),
        (&["-w", "sor", "--model", "thread"], "--model thread"),
        (&["-w", "sor", "-n", "1"], "--threads 1"),
        (
            &["-w", "sor", "-n", "2", "--param", "loss=2"],
            "--param loss=2",
        ),
        (
            &["-w", "sor", "-n", "2", "--param", "per_node=3"],
            "--param per_node=3",
        ),
        (
            &["-w", "sor", "-n", "3", "--param", "per_node=2"],
            "--threads 3",
        ),
        (&["-w", "sor", "-n", "2", "--duration", "1s"], "--duration"),
    ];
    for (args, needle) in cases {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        all.extend(["--db", &db]);
        assert_usage_error(&all, needle);
        assert!(!Path::new(&db).exists(), "{args:?} made the store");
    }
}

/// Every variable a launcher sets that `smtlab rank` reads.
const LAUNCHER_VARS: [&str; 7] = [
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_JOB_ID",
];

#[test]
fn rank_without_a_launcher_says_how_to_run_it() {
    let mut cmd = smtlab();
    for v in LAUNCHER_VARS {
        cmd.env_remove(v);
    }
    let out = cmd
        .args([
            "rank",
            "-w",
            "sor",
            "--comm",
            "thr2",
            "--db",
            "/nonexistent/x.db",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("mpirun") && err.contains("smtlab run"),
        "{err}"
    );
    // A launcher's variable that is not a number is named.
    let out = smtlab()
        .env("OMPI_COMM_WORLD_RANK", "one")
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .args(["rank", "-w", "sor", "--comm", "thr2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("OMPI_COMM_WORLD_RANK=one"), "{err}");
    // A launcher without a job id needs a rendezvous.
    let out = smtlab()
        .env("PMI_RANK", "0")
        .env("PMI_SIZE", "2")
        .env_remove("PMI_JOBID")
        .env_remove("OMPI_COMM_WORLD_RANK")
        .env_remove("OMPI_COMM_WORLD_SIZE")
        .args(["rank", "-w", "sor", "--comm", "thr2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("smtlab: --rendezvous: PMI"), "{err}");
}

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn mpirun_ranks_give_the_local_launchs_result_and_store_it() {
    if !has("mpirun") {
        support::skip("mpirun is not installed (openmpi-bin; scripts/setup.sh installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mpi.db").display().to_string();
    let exe = assert_cmd::cargo::cargo_bin("smtlab");
    let mut mpirun = Command::new("mpirun");
    // Open MPI refuses root unless told; the tests may run as root.
    if smtlab_uid() == 0 {
        mpirun.arg("--allow-run-as-root");
    }
    let out = mpirun
        .args(["--oversubscribe", "-np", "4"])
        .arg(&exe)
        .args(["rank", "-w", "sor", "--comm", "thr2", "--param", "n=64"])
        .args(["--param", "iterations=20", "--db", &db, "--json"])
        .output()
        .unwrap();
    assert_success(&out, "mpirun -np 4 smtlab rank");
    // Only rank 0 prints.
    let rank0: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rank0["launcher"], "Open MPI");
    assert_eq!(rank0["status"], "ok", "{rank0}");
    let report = &rank0["report"];
    assert_eq!(report["verified"], true);
    assert_eq!(report["ranks"], 4);
    assert_eq!(report["per_rank"].as_array().unwrap().len(), 4);

    // Stored as `run` stores a one-point run.
    let stored = support::json(&["show", "latest", "--db", &db, "--json"]);
    let p = &stored["points"][0];
    assert_eq!(stored["points"].as_array().unwrap().len(), 1);
    assert_eq!(p["workload"], "sor thr2");
    assert_eq!((&p["model"], &p["threads"]), (&"process".into(), &4.into()));
    assert_eq!(p["placement"], "none");
    assert_eq!(p["samples"], 1, "{}", p["failures"]);
    assert_eq!(p["extras"]["checksum"], report["checksum"]);
    // Rank 0 records the run at the job's end, dated from its start: the
    // run took at least the job's parallel section.
    let took = stored["run"]["finished_at"].as_f64().unwrap()
        - stored["run"]["started_at"].as_f64().unwrap();
    let wall = report["wall_s"].as_f64().unwrap();
    assert!(took >= wall, "the run took {took} s, its section {wall} s");

    // The same input launched here: the same answer.
    let local_db = dir.path().join("local.db").display().to_string();
    let local = support::json(&[
        "run",
        "-w",
        "sor",
        "--comm",
        "thr2",
        "-n",
        "4",
        "--param",
        "n=64",
        "--param",
        "iterations=20",
        "--warmup",
        "0",
        "--min-samples",
        "1",
        "--max-samples",
        "1",
        "--json",
        "--db",
        &local_db,
    ]);
    let lp = &local["points"][0];
    assert_eq!(lp["samples"], 1, "{}", lp["failures"]);
    assert_eq!(lp["extras"]["checksum"], report["checksum"]);
    // Nothing left in the temp dir by the job's rendezvous.
    let job = rank0["job"].as_str().unwrap();
    let leftover = std::env::temp_dir().join(format!("smtlab-rendezvous-openmpi-{job}-4"));
    assert!(!leftover.exists(), "{}", leftover.display());
}

fn smtlab_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}
