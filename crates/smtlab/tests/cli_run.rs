//! `smtlab run`, `runs`, `show`: sweeps, the store, failures, Ctrl-C,
//! kill -9 and resume. Each test has its own temporary store.

mod support;

use support::{assert_success, assert_usage_error, json, json_exit, smtlab, wait_gone};

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn exe() -> PathBuf {
    assert_cmd::cargo::cargo_bin("smtlab")
}

fn db(dir: &tempfile::TempDir) -> String {
    dir.path().join("t.db").display().to_string()
}

fn points(doc: &Value) -> &Vec<Value> {
    doc["points"].as_array().unwrap()
}

/// Samples committed so far (from `smtlab runs --json`).
fn committed(db: &str) -> u64 {
    let out = smtlab()
        .args(["runs", "--json", "--db", db])
        .output()
        .unwrap();
    if !out.status.success() {
        return 0;
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v.as_array()
        .and_then(|a| a.first())
        .and_then(|r| r["samples"].as_u64())
        .unwrap_or(0)
}

fn wait_for_samples(db: &str, n: u64, child: &mut std::process::Child) {
    let until = Instant::now() + Duration::from_secs(60);
    while committed(db) < n {
        assert!(Instant::now() < until, "no {n} samples within 60 s");
        assert!(child.try_wait().unwrap().is_none(), "smtlab ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn two_cpus() -> bool {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        support::skip(&format!("needs 2 CPUs, this machine gives {n}"));
    }
    n >= 2
}

/// Every counter either has a value or says why not; never a silent zero.
fn check_counters(point: &Value) {
    for c in point["counters"].as_array().unwrap() {
        match c["status"].as_str().unwrap() {
            "ok" => assert!(c["median"].is_number(), "ok counter without a value: {c}"),
            _ => assert!(
                c["median"].is_null() && c["reason"].is_string(),
                "counter without a value must say why: {c}"
            ),
        }
    }
    let sw = point["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "page-faults")
        .expect("software counters are always planned");
    assert!(
        sw["status"] == "ok" || sw["reason"].is_string(),
        "page-faults: {sw}"
    );
}

#[test]
fn spin_sweep_over_models_placements_and_threads_stores_every_sample() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir);
    let doc = json(&[
        "run",
        "-w",
        "spin",
        "--model",
        "thread,process",
        "--placement",
        "compact,scatter",
        "--threads",
        "1,2",
        "--duration",
        "60ms",
        "--warmup",
        "1",
        "--min-samples",
        "3",
        "--max-samples",
        "3",
        "--seed",
        "11",
        "--json",
        "--db",
        &db,
    ]);
    assert_eq!(doc["schema"], "smtlab.run/1");
    assert_eq!(doc["status"], "complete");
    let pts = points(&doc);
    assert_eq!(pts.len(), 8);
    for p in pts {
        assert_eq!(p["samples"], 3, "{p}");
        assert_eq!(p["warmups"], 1);
        assert_eq!(p["failed"], 0, "{p}");
        assert_eq!(p["unit"], "ops/s");
        let median = p["median"].as_f64().unwrap();
        let ci = p["ci95"].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() <= median && median <= ci[1].as_f64().unwrap());
        let n = p["threads"].as_u64().unwrap() as usize;
        let ops = p["worker_ops"].as_array().unwrap();
        assert_eq!(ops.len(), n, "per-worker operations are kept");
        assert!(ops.iter().all(|o| o.as_f64().unwrap() > 0.0));
        assert!(p["user_s"].as_f64().unwrap() > 0.0);
        check_counters(p);
    }
    // The store has it all: runs lists it, show reports the same numbers.
    let runs = json(&["runs", "--json", "--db", &db]);
    assert_eq!(runs[0]["samples"], 8 * 4);
    assert_eq!(runs[0]["status"], "complete");
    let shown = json(&["show", "1", "--json", "--db", &db]);
    for (a, b) in points(&shown).iter().zip(pts) {
        assert_eq!(a["median"], b["median"]);
    }
    assert_eq!(shown["run"]["seed"], 11);
    let text = String::from_utf8(
        smtlab()
            .args(["show", "--db", &db])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(
        text.contains("run 1 (complete): 8 points, 24 measured samples, 0 failed"),
        "{text}"
    );
    // The host line reads the stored facts: SMT as the topology had it.
    let smt = if shown["run"]["host"]["smt_active"] == true {
        "SMT on"
    } else {
        "SMT off"
    };
    let host = text
        .lines()
        .find(|l| l.trim_start().starts_with("host "))
        .unwrap();
    assert!(host.contains(smt) && !host.contains('?'), "{host}");
}

/// clap's help renderer turns a literal `{n}` into a line break, which once
/// cut the `--cmd` help and the examples in half; they use `{threads}`.
#[test]
fn help_shows_the_placeholders_and_examples_intact() {
    for (cmd, wanted) in [
        (
            "run",
            &[
                "--cmd 'stress-ng --cpu {threads} -t 2' --model thread --threads 1,2",
                "--cmd './bench -j {threads}' --metric",
                "{threads} (threads of this process",
            ][..],
        ),
        ("study", &["{threads} (threads of this process"][..]),
    ] {
        let out = smtlab().args([cmd, "--help"]).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        for w in wanted {
            // clap may wrap the option's help; compare with single spaces.
            let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(w), "smtlab {cmd} --help lacks {w:?}:\n{help}");
        }
    }
}

#[test]
fn user_command_sweep_fills_placeholders_per_model() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir);
    // Each process prints its thread count twice, as {threads} and as its
    // short form {n} ("11" for 1, "22" for 2); summed over processes it is
    // 11 x N in both models (1 process x N threads, or N processes x 1).
    let doc = json(&[
        "run",
        "--cmd",
        "echo threads={threads}{n} rank={rank} cpus={cpus}",
        "--metric",
        "n=threads=([0-9]+)",
        "--model",
        "thread,process",
        "--placement",
        "compact,scatter",
        "--threads",
        "1,2",
        "--warmup",
        "0",
        "--min-samples",
        "3",
        "--max-samples",
        "3",
        "--json",
        "--db",
        &db,
    ]);
    let pts = points(&doc);
    assert_eq!(pts.len(), 8);
    for p in pts {
        assert_eq!(p["failed"], 0, "{p}");
        let threads = p["threads"].as_f64().unwrap();
        assert_eq!(p["median"].as_f64(), Some(11.0 * threads), "{p}");
        check_counters(p);
    }
    // Without --metric the metric is the wall time.
    let doc = json(&[
        "run",
        "--cmd",
        "sleep 0.05",
        "--warmup",
        "0",
        "--min-samples",
        "3",
        "--max-samples",
        "3",
        "--json",
        "--db",
        &db,
    ]);
    let p = &points(&doc)[0];
    assert_eq!(p["unit"], "s");
    let m = p["median"].as_f64().unwrap();
    assert!((0.05..0.5).contains(&m), "sleep 0.05 took {m} s");
}

/// The points of several allocators are measured in one interleaved
/// sweep (not one allocator after the other), and each sample runs with
/// its own point's allocator preloaded.
#[test]
fn allocators_are_interleaved_and_each_point_gets_its_own_preload() {
    if smtlab_allocators::find_allocator("jemalloc").is_err() {
        support::skip("jemalloc not installed (apt-get install libjemalloc2)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir);
    let log = dir.path().join("order.log");
    // Each sample logs which allocator it had (j or g) and reports it as
    // its metric (2 or 1).
    let cmd = format!(
        "case \"$LD_PRELOAD\" in *jemalloc*) a=j v=2;; *) a=g v=1;; esac; \
         echo $a >> {}; echo v=$v",
        log.display()
    );
    let doc = json(&[
        "run",
        "--cmd",
        &cmd,
        "--metric",
        "v=v=([0-9]+)",
        "--alloc",
        "glibc,jemalloc",
        "--warmup",
        "1",
        "--min-samples",
        "3",
        "--max-samples",
        "3",
        "--json",
        "--db",
        &db,
    ]);
    for p in points(&doc) {
        let want = if p["alloc"] == "jemalloc" { 2.0 } else { 1.0 };
        assert_eq!(p["median"].as_f64(), Some(want), "{p}");
    }
    let order: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(order.len(), 8, "{order:?}");
    // Every round (warm-ups, then each measured round) holds one sample
    // of each allocator.
    for round in order.chunks(2) {
        assert_ne!(round[0], round[1], "not interleaved: {order:?}");
    }
}

#[test]
fn crashes_timeouts_and_wrong_results_fail_samples_and_the_sweep_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir);
    let doc = json_exit(
        &[
            "run",
            "--cmd",
            "kill -SEGV $$",
            "--warmup",
            "0",
            "--min-samples",
            "1",
            "--max-samples",
            "1",
            "--json",
            "--db",
            &db,
        ],
        3,
    );
    let p = &points(&doc)[0];
    assert_eq!(p["samples"], 0);
    assert!(p["failed"].as_u64().unwrap() >= 1);
    let f = p["failures"][0].as_str().unwrap();
    assert!(f.starts_with("crashed:") && f.contains("SIGSEGV"), "{f}");

    let doc = json_exit(
        &[
            "run",
            "--cmd",
            "sleep 5",
            "--timeout",
            "300ms",
            "--warmup",
            "0",
            "--min-samples",
            "1",
            "--max-samples",
            "1",
            "--json",
            "--db",
            &db,
        ],
        3,
    );
    let f = points(&doc)[0]["failures"][0].as_str().unwrap().to_string();
    assert!(f.starts_with("timeout:") && f.contains("--timeout"), "{f}");

    // A corrupted checksum fails the sample instead of reporting a speed;
    // the other point of the same sweep is measured.
    let doc = json_exit(
        &[
            "run",
            "-w",
            "spin",
            "--param",
            "corrupt=1",
            "--threads",
            "1",
            "--duration",
            "50ms",
            "--warmup",
            "0",
            "--min-samples",
            "1",
            "--max-samples",
            "1",
            "--json",
            "--db",
            &db,
        ],
        3,
    );
    let p = &points(&doc)[0];
    assert!(p["median"].is_null());
    let f = p["failures"][0].as_str().unwrap();
    assert!(
        f.starts_with("wrong_result:") && f.contains("checksum"),
        "{f}"
    );

    let doc = json_exit(
        &[
            "run",
            "--cmd",
            "test {n} -ne 2",
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
        ],
        3,
    );
    let pts = points(&doc);
    assert_eq!(pts[0]["failed"], 0, "N=1 succeeds");
    assert_eq!(pts[0]["samples"], 2);
    let f = pts[1]["failures"][0].as_str().unwrap();
    assert!(
        f.starts_with("failed:") && f.contains("exited with code 1"),
        "{f}"
    );
}

fn start_long_run(db: &str, mark: &str) -> std::process::Child {
    StdCommand::new(exe())
        .args([
            "run",
            "-w",
            "spin",
            "--model",
            "thread,process",
            "--threads",
            "1,2",
            "--duration",
            "150ms",
            "--warmup",
            "0",
            "--min-samples",
            "6",
            "--max-samples",
            "6",
            "--db",
            db,
        ])
        .env("SMTLAB_TEST_MARK", mark)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn kill_9_leaves_no_worker_and_resume_completes_without_duplicates() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir);
    let mark = format!("kill9-{}", std::process::id());
    let mut child = start_long_run(&db, &mark);
    wait_for_samples(&db, 3, &mut child);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let left = wait_gone(&mark);
    assert!(left.is_empty(), "workers left behind: {left:?}");
    let before = committed(&db);
    assert!(
        (3..24).contains(&before),
        "{before} samples before the kill"
    );
    let runs = json(&["runs", "--json", "--db", &db]);
    assert_eq!(runs[0]["status"], "running", "a killed run stays resumable");

    let doc = json(&["run", "--resume", "1", "--json", "--db", &db]);
    assert_eq!(doc["status"], "complete");
    for p in points(&doc) {
        assert_eq!(
            p["samples"], 6,
            "exactly the planned samples, none repeated: {p}"
        );
    }
    // 4 points x 6 samples; the store's unique (point, seq) forbids repeats.
    assert_eq!(committed(&db), 24);
    let out = smtlab()
        .args(["run", "--resume", "1", "--db", &db])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a complete run cannot be resumed"
    );
}

#[test]
fn ctrl_c_stops_cleanly_with_everything_committed() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir);
    let mark = format!("sigint-{}", std::process::id());
    let mut child = start_long_run(&db, &mark);
    wait_for_samples(&db, 2, &mut child);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--resume 1"), "tells how to finish: {err}");
    assert!(wait_gone(&mark).is_empty(), "no child left");
    let runs = json(&["runs", "--json", "--db", &db]);
    assert_eq!(runs[0]["status"], "interrupted");
    let before = runs[0]["samples"].as_u64().unwrap();
    assert!(before >= 2);

    // A dry run of the resume plans it and leaves the store as it was.
    let out = smtlab()
        .args(["run", "--resume", "1", "--dry-run", "--db", &db])
        .output()
        .unwrap();
    assert_success(&out, "run --resume 1 --dry-run");
    let runs = json(&["runs", "--json", "--db", &db]);
    assert_eq!(
        runs[0]["status"], "interrupted",
        "a dry run changed the run"
    );
    assert_eq!(runs[0]["samples"].as_u64().unwrap(), before);

    // Resumed as the second of two Open MPI tasks on this host: the run's
    // facts say its host was shared, as a new run's would.
    let out = smtlab()
        .args(["run", "--resume", "1", "--shared-host", "--db", &db])
        .env("OMPI_COMM_WORLD_RANK", "1")
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .env("OMPI_COMM_WORLD_LOCAL_SIZE", "2")
        .output()
        .unwrap();
    assert_success(&out, "run --resume 1 --shared-host");
    let shown = json(&["show", "1", "--json", "--db", &db]);
    assert_eq!(shown["run"]["status"], "complete");
    assert_eq!(
        shown["run"]["host"]["shared_host"],
        serde_json::json!({"launcher": "Open MPI", "tasks": 2})
    );
}

#[test]
fn dry_run_plans_for_a_machine_we_do_not_have() {
    let out = smtlab()
        .args([
            "run",
            "-w",
            "spin",
            "--dry-run",
            "--synthetic",
            "core:8 pu:8",
            "--placement",
            "smt:0,core",
            "--threads",
            "8",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("2 points"), "{text}");
    assert!(text.contains("0,1,2,3,4,5,6,7"), "{text}");
    assert!(text.contains("0,8,16,24,32,40,48,56"), "{text}");
}

#[test]
fn bad_run_input_exits_2_naming_the_fault_and_keeps_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&dir);
    let base = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["run", "-w", "spin", "--db", &db]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let cases: [(&[&str], &str); 9] = [
        (&["--model", "threads,bogus"], "--model `bogus`"),
        (&["--threads", "0"], "--threads"),
        (&["--alloc", "hoard"], "--alloc"),
        (&["--precision", "5"], "--precision 5"),
        (&["--duration", "soon"], "--duration soon"),
        (&["--param", "nope=1"], "--param nope"),
        (&["--placement", "S9:0"], "S9"),
        (&["--spawn", "clone"], "--spawn clone"),
        (&["--synthetic", "core:2"], "--dry-run"),
    ];
    for (extra, needle) in cases {
        let args = base(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_usage_error(&args, needle);
    }
    assert_usage_error(&["run", "-w", "nope", "--db", &db], "--workload nope");
    assert_usage_error(&["run", "--db", &db], "nothing to run");
    // A value of the right type but out of the workload's range is refused
    // when the run is planned, not by every sample (the full table of
    // ranges is tested in smtlab-workloads' `registry` module).
    for (w, param, needle) in [
        ("spin", "corrupt=2", "--param corrupt=2: expected 0 or 1"),
        ("larson", "touch=4", "--param touch=4: expected at least 8"),
        (
            "jbb",
            "max_orders=5",
            "--param max_orders=5: must be at least",
        ),
        ("stream", "size=1000", "--param size=1000"),
    ] {
        assert_usage_error(&["run", "-w", w, "--param", param, "--db", &db], needle);
    }
    // clap's own parse errors come as one line too (no `Usage:` block),
    // keeping what they say is valid; and flags that would be ignored are
    // refused.
    for (args, needle) in [
        (
            &["run", "-w", "spin", "--seed", "x"][..],
            "--seed x: expected a whole number from 0 to",
        ),
        (&["run", "-w", "spin", "--thread", "2"][..], "'--threads'"),
        (
            &["run", "-w", "spin", "--metric-better", "lower"][..],
            "not provided: --metric <NAME=REGEX>",
        ),
        (
            &["run", "-w", "spin", "--metric", "x=(\\d+)"][..],
            "--metric applies to --cmd",
        ),
        (
            &["run", "--cmd", "true", "--metric", "x=("][..],
            "bad regex: unclosed group",
        ),
        (
            &["study", "--param", "n=3"][..],
            "--param n=3: parameters apply to the workloads named with -w",
        ),
        (
            &["run", "-w", "spin", "--threads", "1,100000"][..],
            "--threads 1,100000: 100000 is out of range; expected worker counts",
        ),
        (
            &["run", "-w", "spin", "--threads", "4-2"][..],
            "`4-2` is a descending range",
        ),
        (
            &["run", "-w", "spin", "--threads", "1,,2"][..],
            "an empty item",
        ),
    ] {
        let mut v = args.to_vec();
        v.extend(["--db", &db]);
        assert_usage_error(&v, needle);
    }
    // Nothing was created by refused runs; a missing store is named.
    assert!(!Path::new(&db).exists());
    assert_usage_error(&["runs", "--db", &db], &db);
    let not_db = dir.path().join("notes.txt");
    std::fs::write(&not_db, "not a database\n").unwrap();
    assert_usage_error(
        &["runs", "--db", not_db.to_str().unwrap()],
        "not an smtlab database",
    );
    assert_eq!(
        std::fs::read_to_string(&not_db).unwrap(),
        "not a database\n"
    );
    json(&[
        "run",
        "--cmd",
        "true",
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
    assert_usage_error(&["show", "999", "--db", &db], "no run 999");
    assert_usage_error(&["run", "--resume", "999", "--db", &db], "no run 999");
    assert_eq!(committed(&db), 1, "the stored run is untouched");
}
