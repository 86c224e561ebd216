//! The store, merge and fleets against a hostile but ordinary user (issue
//! 29, items 15-21): reading never creates or changes a file (an empty
//! file is not a store; no `-wal`/`-shm` left beside a store read or
//! merged); a run being measured is not resumed by a second process, and
//! a killed one's is taken over by exactly one; a host whose runs all
//! failed is listed with why; a store with damaged pages is refused by
//! `merge` naming it, leaving no output; a host name that would break a
//! table is refused, and `{host}` keeps letters and never makes two hosts
//! share a file; `merge` expands `{host}` as `--db` does.

mod support;

use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{assert_success, json, smtlab};

/// Every variable a launcher sets that `{rank}` or the one-task-per-host
/// check reads: the tests themselves may run under a launcher.
const LAUNCHER_VARS: [&str; 8] = [
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMI_RANK",
    "MPI_LOCALNRANKS",
    "SLURM_PROCID",
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_NTASKS_PER_NODE",
];

/// smtlab as host `host`, without a launcher's variables.
fn as_host(host: &str) -> assert_cmd::Command {
    let mut c = smtlab();
    for v in LAUNCHER_VARS {
        c.env_remove(v);
    }
    c.env("SMTLAB_HOSTNAME", host);
    c
}

/// A short run of spin into `db` (a `--db` text) as `host`: one point,
/// two samples of 100 ms; `extra` arguments after.
fn run_as(host: &str, db: &str, extra: &[&str]) -> Output {
    as_host(host)
        .args([
            "run",
            "-w",
            "spin",
            "--threads",
            "1",
            "--duration",
            "100ms",
            "--warmup",
            "0",
            "--min-samples",
            "2",
            "--max-samples",
            "2",
            "--no-counters",
            "--json",
            "--db",
            db,
        ])
        .args(extra)
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file of `dir` with its bytes, by name (directories by name,
/// without content).
fn files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = if e.file_type().unwrap().is_dir() {
                Vec::new()
            } else {
                std::fs::read(e.path()).unwrap()
            };
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect()
}

fn names(dir: &Path) -> Vec<String> {
    files_of(dir).into_keys().collect()
}

/// A command's exit code and its stderr, which must be one line without a
/// panic when the code is 2.
fn refused(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// The reading commands on `db`, reports written to `reports`.
fn readers(db: &str, reports: &Path) -> Vec<Vec<String>> {
    let r = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let rep = reports.join("r").display().to_string();
    let fleet = reports.join("f").display().to_string();
    vec![
        r(&["show", "latest", "--db", db]),
        r(&["runs", "--db", db]),
        r(&["compare", "1", "1", "--db", db]),
        r(&["compare", "--by", "host", "--db", db]),
        r(&["report", "latest", "--db", db, "-o", &rep]),
        r(&["report", "--fleet", "--db", db, "-o", &fleet]),
    ]
}

// ----- 15: reading writes nothing ------------------------------------------

#[test]
fn read_only_commands_refuse_an_empty_file_as_no_store_and_leave_it_empty() {
    let dir = tempfile::tempdir().unwrap();
    let reports = tempfile::tempdir().unwrap();
    let empty = dir.path().join("e.db");
    std::fs::write(&empty, b"").unwrap();
    for args in readers(s(&empty), reports.path()) {
        let out = smtlab().args(&args).output().unwrap();
        let err = refused(&out);
        assert!(
            err.contains(&format!(
                "{}: not an smtlab database (it is empty: 0 bytes)",
                empty.display()
            )),
            "{args:?}: {err}"
        );
        assert_eq!(names(dir.path()), ["e.db"], "{args:?}");
        assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "{args:?}");
    }
    // A missing store is said to be missing, and not made.
    let missing = dir.path().join("missing.db");
    for args in readers(s(&missing), reports.path()) {
        let out = smtlab().args(&args).output().unwrap();
        let err = refused(&out);
        assert!(err.contains("no such database"), "{args:?}: {err}");
        assert_eq!(names(dir.path()), ["e.db"], "{args:?}");
    }
    // merge says the same of it.
    let out = smtlab()
        .args(["merge", s(&empty), "-o"])
        .arg(reports.path().join("m.db"))
        .output()
        .unwrap();
    assert!(refused(&out).contains("(it is empty: 0 bytes)"));
}

// ----- 16: the directories of the stores read stay as they were -----------

#[test]
fn reading_comparing_and_merging_leave_the_stores_directories_as_they_were() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let work = tempfile::tempdir().unwrap();
    let (a, b) = (da.path().join("alpha.db"), db.path().join("beta.db"));
    assert_success(&run_as("alpha", s(&a), &[]), "alpha");
    assert_success(&run_as("beta", s(&b), &[]), "beta");
    let before = (files_of(da.path()), files_of(db.path()));
    assert_eq!(before.0.keys().collect::<Vec<_>>(), ["alpha.db"]);

    for args in readers(s(&a), work.path()) {
        // compare --by host of one host's store is refused; the others
        // succeed. Either way the store is read.
        let out = smtlab().args(&args).output().unwrap();
        assert!(matches!(out.status.code(), Some(0 | 2)), "{args:?}");
        assert_eq!(files_of(da.path()), before.0, "{args:?}");
    }
    let fleet = work.path().join("fleet.db");
    let out = smtlab()
        .args(["merge", s(&a), s(&b), "-o", s(&fleet)])
        .output()
        .unwrap();
    assert_success(&out, "merge");
    let out = smtlab()
        .args(["merge", s(&a), s(&b), "-o", s(&fleet)])
        .output()
        .unwrap();
    assert_success(&out, "merge again");
    assert_eq!((files_of(da.path()), files_of(db.path())), before);
    // The output alone, whole: nothing beside it.
    let left: Vec<String> = names(work.path())
        .into_iter()
        .filter(|n| n.starts_with("fleet"))
        .collect();
    assert_eq!(left, ["fleet.db"]);
    let out = smtlab()
        .args(["compare", "--by", "host", "--db", s(&fleet)])
        .output()
        .unwrap();
    assert_success(&out, "compare --by host");
    let left: Vec<String> = names(work.path())
        .into_iter()
        .filter(|n| n.starts_with("fleet"))
        .collect();
    assert_eq!(left, ["fleet.db"]);
}

// ----- 17: one process measures a run --------------------------------------

/// A child killed and reaped when the test ends, whichever way.
struct Reaped(Option<Child>);

impl Reaped {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("not yet waited for")
    }

    /// Its exit and output, once it ends.
    fn output(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `smtlab run` of spin, 40 samples of 50 ms, or its `--resume 1`, into
/// `db` as host alpha, its output piped.
fn spawn_run(db: &Path, resume: bool) -> Reaped {
    let exe = assert_cmd::cargo::cargo_bin("smtlab");
    let mut c = Command::new(exe);
    for v in LAUNCHER_VARS {
        c.env_remove(v);
    }
    c.env("SMTLAB_HOSTNAME", "alpha");
    if resume {
        c.args(["run", "--resume", "1"]);
    } else {
        c.args([
            "run",
            "-w",
            "spin",
            "--threads",
            "1",
            "--duration",
            "50ms",
            "--warmup",
            "0",
            "--min-samples",
            "40",
            "--max-samples",
            "40",
            "--no-counters",
        ]);
    }
    c.args(["--json", "--db"]).arg(db);
    Reaped(Some(
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ))
}

/// The samples of run 1 in `db`, and its status.
fn progress(db: &Path) -> (u64, String) {
    let runs = json(&["runs", "--json", "--db", s(db)]);
    (
        runs[0]["samples"].as_u64().unwrap(),
        runs[0]["status"].as_str().unwrap().to_string(),
    )
}

/// Whether run 1 of `db` has a sample yet (before the run made the store,
/// there is none to read: not yet).
fn has_a_sample(db: &Path) -> bool {
    let out = smtlab()
        .args(["runs", "--json", "--db", s(db)])
        .output()
        .unwrap();
    out.status.success()
        && serde_json::from_slice::<Value>(&out.stdout).unwrap()[0]["samples"]
            .as_u64()
            .is_some_and(|n| n > 0)
}

#[test]
fn a_run_being_measured_is_not_resumed_and_a_killed_ones_is_taken_over_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut first = spawn_run(&db, false);
    let start = Instant::now();
    while !has_a_sample(&db) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the run never wrote"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // While it measures: refused up front, naming it.
    let out = as_host("alpha")
        .args(["run", "--resume", "1", "--db", s(&db)])
        .output()
        .unwrap();
    let err = refused(&out);
    assert!(
        err.contains(&format!(
            "run 1 is being measured by pid {} on host alpha",
            first.child().id()
        )),
        "{err}"
    );
    assert!(!err.contains("already has sample"), "{err}");

    // Killed: its run is taken over, by one of two resumers started
    // together; the other is refused (it found the first, or the run
    // complete).
    first.child().kill().unwrap();
    first.child().wait().unwrap();
    let (k, status) = progress(&db);
    assert!(k < 40, "{k}");
    assert_eq!(status, "running");
    let resumers = [spawn_run(&db, true), spawn_run(&db, true)];
    let outs: Vec<Output> = resumers.into_iter().map(Reaped::output).collect();
    let mut codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
    codes.sort();
    assert_eq!(codes, [Some(0), Some(2)], "{outs:?}");
    for o in &outs {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("already has sample"), "{err}");
        if o.status.code() == Some(2) {
            let err = refused(o);
            assert!(
                err.contains("is being measured by pid") || err.contains("already complete"),
                "{err}"
            );
        }
    }
    // Every sample once: 40 that succeeded (a sample may have failed
    // beside them, measured by one process all the same).
    let runs = json(&["runs", "--json", "--db", s(&db)]);
    let ok = runs[0]["samples"].as_u64().unwrap() - runs[0]["failed_samples"].as_u64().unwrap();
    assert_eq!(
        (ok, runs[0]["status"].as_str()),
        (40, Some("complete")),
        "{runs}"
    );
}

// ----- 18: a host whose runs all failed -----------------------------------

#[test]
fn a_host_whose_runs_all_failed_is_listed_with_why_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("alpha.db"), dir.path().join("beta.db"));
    assert_success(&run_as("alpha", s(&a), &[]), "alpha");
    // Every sample of beta's run fails its check.
    let out = run_as("beta", s(&b), &["--param", "corrupt=1"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let fleet = dir.path().join("fleet.db");
    assert_success(
        &smtlab()
            .args(["merge", s(&a), s(&b), "-o", s(&fleet)])
            .output()
            .unwrap(),
        "merge",
    );

    let out = smtlab()
        .args(["compare", "--by", "host", "--db", s(&fleet)])
        .output()
        .unwrap();
    let err = refused(&out);
    assert!(
        err.contains(
            "holds runs with a result of one host only (alpha), and host beta has no run with a \
             result (run 2 (complete): its "
        ),
        "{err}"
    );
    assert!(
        err.contains(" samples failed: ")
            && err.contains(" wrong result (spin worker 0: checksum "),
        "{err}"
    );

    let report = dir.path().join("report");
    let out = smtlab()
        .args(["report", "--fleet", "--db", s(&fleet), "-o", s(&report)])
        .output()
        .unwrap();
    assert_success(&out, "report --fleet");
    let md = std::fs::read_to_string(report.join("summary.md")).unwrap();
    assert!(
        md.contains("# smtlab fleet: 2 hosts (1 without a result), 1 workload"),
        "{md}"
    );
    assert!(md.contains("| beta (no run with a result) | 2 |"), "{md}");
    assert!(
        md.contains("beta: no run with a result, so no recommendation and no line: run 2"),
        "{md}"
    );
    assert!(!md.contains("The 1 hosts"), "{md}");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("fleet.json")).unwrap()).unwrap();
    assert_eq!(doc["without_result"][0]["host"], "beta");
    assert_eq!(doc["without_result"][0]["runs"], serde_json::json!([2]));
    assert!(doc["without_result"][0]["why"]
        .as_str()
        .unwrap()
        .contains("wrong result"));
    assert_eq!(doc["facts"]["hosts"], serde_json::json!(["alpha", "beta"]));
    let html = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert!(html.contains("<td>beta (no run with a result)</td>"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("beta (no run with a result)"), "{stdout}");
}

/// A fleet in which every host failed: nothing to draw, but the refusal
/// says why, host by host.
#[test]
fn a_fleet_whose_hosts_all_failed_says_why_each_has_no_result() {
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("beta.db");
    let out = run_as("beta", s(&b), &["--param", "corrupt=1"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let out = smtlab()
        .args(["report", "--fleet", "--db", s(&b)])
        .arg("-o")
        .arg(dir.path().join("report"))
        .output()
        .unwrap();
    let err = refused(&out);
    assert!(
        err.contains("holds no run with a result (beta: run 1 (complete): its "),
        "{err}"
    );
    assert!(
        err.contains(" wrong result (spin worker 0: checksum "),
        "{err}"
    );
    assert!(!dir.path().join("report").exists());
}

// ----- 19: a store with damaged pages -------------------------------------

#[test]
fn a_merge_of_a_store_with_damaged_pages_names_it_exits_2_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.db");
    assert_success(&run_as("alpha", s(&a), &[]), "alpha");
    let c = dir.path().join("c.db");
    std::fs::copy(&a, &c).unwrap();
    // Pages 4 to 6 (4 KiB each) overwritten: tables' b-tree pages.
    let mut f = std::fs::OpenOptions::new().write(true).open(&c).unwrap();
    f.seek(SeekFrom::Start(3 * 4096)).unwrap();
    f.write_all(&[0xab; 3 * 4096]).unwrap();
    drop(f);
    let before = files_of(dir.path());

    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out.db");
    let o = smtlab()
        .args(["merge", s(&a), s(&c), "-o", s(&out)])
        .output()
        .unwrap();
    let err = refused(&o);
    assert!(
        err.starts_with(&format!("smtlab: {}: its pages are damaged", c.display())),
        "{err}"
    );
    assert!(!err.contains("--db"), "{err}");
    assert_eq!(
        names(out_dir.path()),
        Vec::<String>::new(),
        "no output left"
    );
    assert_eq!(files_of(dir.path()), before, "the inputs as they were");

    // Into an existing output: not a byte changes.
    let o = smtlab()
        .args(["merge", s(&a), "-o", s(&out)])
        .output()
        .unwrap();
    assert_success(&o, "merge a");
    let kept = files_of(out_dir.path());
    let o = smtlab()
        .args(["merge", s(&c), "-o", s(&out)])
        .output()
        .unwrap();
    refused(&o);
    assert_eq!(files_of(out_dir.path()), kept);
}

// ----- 20: host names -------------------------------------------------------

#[test]
fn a_host_name_that_would_break_a_table_is_refused_before_anything_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    for (name, what) in [
        ("evil\nhost", "a line break (U+000A)"),
        ("tab\there", "a tab (U+0009)"),
        ("ab\u{202E}cd", "an invisible formatting character (U+202E)"),
    ] {
        let err = refused(&run_as(name, s(&db), &[]));
        assert!(err.contains("SMTLAB_HOSTNAME \""), "{err}");
        assert!(err.contains(what), "{err}");
        // {host} in --db: refused as the flag's value, naming it too.
        let host_db = dir.path().join("{host}.db");
        let err = refused(&run_as(name, s(&host_db), &[]));
        assert!(err.contains("--db "), "{err}");
        assert!(err.contains("{host}: SMTLAB_HOSTNAME \""), "{err}");
        assert_eq!(names(dir.path()), Vec::<String>::new(), "nothing stored");
    }
}

#[test]
fn host_in_a_path_keeps_letters_of_any_script_and_never_puts_two_hosts_in_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("{host}.db").display().to_string();
    for host in ["nœud 東京", "a b", "a_b", "a/b"] {
        assert_success(&run_as(host, &db, &[]), host);
    }
    assert_eq!(
        names(dir.path()),
        ["a%20b.db", "a%2Fb.db", "a_b.db", "nœud%20東京.db"]
    );
    let runs = json(&[
        "runs",
        "--json",
        "--db",
        s(&dir.path().join("nœud%20東京.db")),
    ]);
    assert_eq!(runs[0]["hostname"], "nœud 東京");
    // Each file holds its own host's run only.
    for (file, host) in [("a%20b.db", "a b"), ("a_b.db", "a_b"), ("a%2Fb.db", "a/b")] {
        let runs = json(&["runs", "--json", "--db", s(&dir.path().join(file))]);
        assert_eq!(runs.as_array().unwrap().len(), 1, "{file}");
        assert_eq!(runs[0]["hostname"], host, "{file}");
    }
}

// ----- 21: merge -o {host} ------------------------------------------------

#[test]
fn merge_fills_in_host_in_its_inputs_and_output_as_db_does() {
    let local = tempfile::tempdir().unwrap();
    let shared = tempfile::tempdir().unwrap();
    let db = local.path().join("{host}.db").display().to_string();
    assert_success(&run_as("alpha", &db, &[]), "alpha");
    let out = shared.path().join("out_{host}.db").display().to_string();
    let o = as_host("alpha")
        .args(["merge", &db, "-o", &out])
        .output()
        .unwrap();
    assert_success(&o, "merge {host}");
    assert_eq!(names(shared.path()), ["out_alpha.db"]);
    let runs = json(&[
        "runs",
        "--json",
        "--db",
        s(&shared.path().join("out_alpha.db")),
    ]);
    assert_eq!(runs[0]["hostname"], "alpha");
    // Refused as --db refuses: an unknown placeholder, named with its flag.
    let typo = shared.path().join("out_{hots}.db").display().to_string();
    let o = as_host("alpha")
        .args(["merge", &db, "-o", &typo])
        .output()
        .unwrap();
    let err = refused(&o);
    assert!(err.contains("-o "), "{err}");
    assert!(err.contains("unknown placeholder {hots}"), "{err}");
    assert_eq!(names(shared.path()), ["out_alpha.db"]);
}
