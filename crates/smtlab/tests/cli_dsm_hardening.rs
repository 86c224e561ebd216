//! The DSM through the binary, as a hostile but ordinary user tried it
//! (issue 29, items 8 to 12): every size `smtlab list` offers runs; a
//! crashed rank's sample quotes its panic and where; a rank left waiting
//! says which rank went silent in one line, exit 1; a rendezvous
//! directory is never made under a missing one and never outlives its
//! job; a flag value given twice is planned once or refused, and a
//! launcher's rank count is named by its variable.

mod support;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use support::{assert_success, assert_usage_error, smtlab};

/// One sample, no warm-up: the sizes here are for a debug build on two
/// CPUs.
const ONE_SAMPLE: [&str; 6] = ["--warmup", "0", "--min-samples", "1", "--max-samples", "1"];

/// A started process, killed and reaped however the test ends.
struct Reaped(Option<Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Reaped {
    fn start(mut cmd: Command) -> Reaped {
        Reaped(Some(cmd.spawn().unwrap()))
    }

    fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(self.0.as_ref().expect("running").id() as i32)
    }

    /// Wait for the process to end, at most `limit`; its output.
    fn finish(mut self, limit: Duration) -> Output {
        let until = Instant::now() + limit;
        while self.0.as_mut().unwrap().try_wait().unwrap().is_none() {
            assert!(Instant::now() < until, "still running after {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

/// `smtlab rank` as rank `rank` of `size` of an Open MPI job, as `mpirun`
/// would start it (its variables set), with `args` after `rank`.
fn launched_rank(rank: usize, size: usize, tmp: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("smtlab"));
    for v in ["PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"] {
        cmd.env_remove(v);
    }
    cmd.env("OMPI_COMM_WORLD_RANK", rank.to_string())
        .env("OMPI_COMM_WORLD_SIZE", size.to_string())
        .env("OMPI_COMM_WORLD_LOCAL_SIZE", size.to_string())
        .env("TMPDIR", tmp)
        .arg("rank")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The rendezvous directories under `dir`.
fn rendezvous_dirs(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("smtlab-rendezvous-"))
        .collect()
}

/// Wait until `done` holds, at most `limit`.
fn wait_for(what: &str, limit: Duration, done: impl Fn() -> bool) {
    let until = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < until, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ----- item 8: every listed size runs -----------------------------------

/// A fixed 64 MiB region made every rank panic ("the DSM region (64 MiB)
/// is full") from SOR n=2895 on, though `list` offers n up to 4096: the
/// region is now sized from the application's allocations. The smallest
/// size that failed, one iteration (the plan-level sizes up to the
/// largest are `smtlab-dsm`'s `the_largest_listed_sizes_...`).
#[test]
fn a_sor_grid_beyond_the_old_64_mib_region_runs_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("big.db").display().to_string();
    let mut args = vec!["run", "-w", "sor", "--comm", "thr2", "-n", "2"];
    args.extend(["--param", "n=2895", "--param", "iterations=1"]);
    args.extend(ONE_SAMPLE);
    args.extend(["--json", "--db", &db]);
    let doc = support::json(&args);
    let p = &doc["points"][0];
    assert_eq!(p["samples"], 1, "{}", p["failures"]);
    assert_eq!(p["extras"]["verified"], 1.0, "{p}");
}

/// What `list` says a DSM parameter takes is what a run accepts: each
/// bound is planned, one past it is refused naming the parameter. (Two
/// bounds depend on another parameter, as `list` says: LU's block must
/// divide n, TSP's depth is at most cities - 2; those get a partner that
/// fits every n and every cities.)
#[test]
fn list_and_the_validator_agree_on_every_dsm_parameter() {
    let list = support::json(&["list", "--json"]);
    let apps = list["dsm_applications"].as_array().unwrap();
    assert_eq!(apps.len(), 3);
    for app in apps {
        let name = app["name"].as_str().unwrap();
        for p in app["params"].as_array().unwrap() {
            let param = p["name"].as_str().unwrap();
            let (min, max) = (p["min"].as_u64().unwrap(), p["max"].as_u64().unwrap());
            let partner: &[&str] = match (name, param) {
                ("lu", "n") => &["--param", "block=4"],
                ("tsp", "cities") => &["--param", "depth=1"],
                _ => &[],
            };
            let args = |value: &str| -> Vec<String> {
                ["run", "-w", name, "-n", "2", "--dry-run", "--param"]
                    .iter()
                    .map(|a| a.to_string())
                    .chain([format!("{param}={value}")])
                    .chain(partner.iter().map(|a| a.to_string()))
                    .collect()
            };
            for ok in [min, max] {
                let out = smtlab().args(args(&ok.to_string())).output().unwrap();
                assert_success(&out, &format!("{name} {param}={ok}"));
            }
            let past = [
                (max as u128 + 1).to_string(),
                min.checked_sub(1).map_or("-1".into(), |v| v.to_string()),
            ];
            for bad in past {
                let all = args(&bad);
                let all: Vec<&str> = all.iter().map(String::as_str).collect();
                assert_usage_error(&all, &format!("--param {param}={bad}"));
            }
        }
    }
}

// ----- item 9: a crashed rank's reason ------------------------------------

/// A rank that panics: its sample's reason is the panic's message and its
/// place (FILE:LINE:COL), not the note on backtraces or the backtrace
/// that follow it, in `show` and in the report's files.
#[test]
fn a_crashed_ranks_panic_and_where_it_was_are_its_samples_reason() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db").display().to_string();
    let mut args = vec!["run", "-w", "sor", "--comm", "thr2", "-n", "2"];
    args.extend(["--param", "n=64"]);
    args.extend(ONE_SAMPLE);
    args.extend(["--json", "--db", &db]);
    // The panic's report then ends in a backtrace, longer than what is
    // kept of a rank's stderr.
    let out = smtlab()
        .args(&args)
        .env("SMTLAB_RANK_TEST_PANIC", "1")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = support::json(&["show", "latest", "--db", &db, "--json"]);
    let failures = shown["points"][0]["failures"].to_string();
    let panic_at = "panicked at crates/smtlab/src/commands/rank_worker.rs:";
    let message = "rank 1 panics as SMTLAB_RANK_TEST_PANIC asks";
    assert!(failures.contains("rank 1 (pid "), "{failures}");
    assert!(failures.contains("exited with status 101: "), "{failures}");
    assert!(failures.contains(panic_at), "{failures}");
    assert!(failures.contains(message), "{failures}");
    assert!(!failures.contains("RUST_BACKTRACE"), "{failures}");
    // The same in the table `show` prints.
    let text = smtlab()
        .args(["show", "latest", "--db", &db])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(panic_at) && text.contains(message), "{text}");

    let report = dir.path().join("report");
    let out = smtlab()
        .args(["report", "latest", "--db", &db, "-o"])
        .arg(&report)
        .output()
        .unwrap();
    assert_success(&out, "report");
    for file in ["summary.md", "samples.csv"] {
        let body = std::fs::read_to_string(report.join(file)).unwrap();
        assert!(
            body.contains(panic_at) && body.contains(message),
            "{file}: {body}"
        );
    }
}

// ----- item 10: a rank left waiting ---------------------------------------

/// Rank 1 killed mid-run: rank 0, left waiting, gives up after
/// `--stall-timeout` with one line naming rank 1 and what it waited for,
/// exit 1, no panic and no backtrace (it used to panic after 120 s, exit
/// 101, with a backtrace; inside a page fault, a panic aborted). Under
/// `sigio` the wait may be in the fault handler.
#[test]
fn a_rank_left_waiting_names_the_silent_rank_and_exits_1() {
    for comm in ["thr2", "sigio"] {
        let tmp = tempfile::tempdir().unwrap();
        let rv = tmp.path().join("rv");
        let rv_flag = format!("dir:{}", rv.display());
        let db = tmp.path().join("stall.db").display().to_string();
        let args = [
            "-w",
            "sor",
            "--comm",
            comm,
            "--param",
            "n=256",
            "--param",
            "iterations=10000",
            "--rendezvous",
            &rv_flag,
            "--db",
            &db,
            "--stall-timeout",
            "2s",
        ];
        let start = |rank| {
            let mut cmd = launched_rank(rank, 2, tmp.path(), &args);
            cmd.env("RUST_BACKTRACE", "1");
            Reaped::start(cmd)
        };
        // Rank 0 first, waiting at the rendezvous for rank 1; once rank 1
        // has come, rank 0 removes the rendezvous past the first barrier.
        let rank0 = start(0);
        wait_for("rank 0's address", Duration::from_secs(20), || {
            rv.join("rank-0").exists()
        });
        let rank1 = start(1);
        wait_for("the first barrier", Duration::from_secs(20), || {
            !rv.exists()
        });
        std::thread::sleep(Duration::from_millis(200));
        kill(rank1.pid(), Signal::SIGKILL).unwrap();
        let t0 = Instant::now();
        let out = rank0.finish(Duration::from_secs(30));
        let took = t0.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{comm}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{comm}: {err}");
        assert!(
            err.starts_with("smtlab: rank 0: no reply from rank 1 for 2 s while waiting for "),
            "{comm}: {err}"
        );
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{comm}: {err}"
        );
        assert!(
            took < Duration::from_secs(10),
            "{comm}: gave up after {took:?}"
        );
        assert!(!rv.exists(), "{comm}");
    }
}

// ----- item 11: the rendezvous directory ----------------------------------

/// `--rendezvous dir:/nonexistent/x` made the whole path: a directory
/// whose parent is missing is refused, one line, exit 2, nothing made.
#[test]
fn a_rendezvous_under_a_missing_directory_is_refused_not_made() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let flag = format!("dir:{}", missing.join("x").display());
    let db = tmp.path().join("x.db").display().to_string();
    for rank in [0, 1] {
        let args = [
            "-w",
            "sor",
            "--comm",
            "thr2",
            "--rendezvous",
            &flag,
            "--db",
            &db,
        ];
        let out = launched_rank(rank, 2, tmp.path(), &args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!(
                "--rendezvous {flag}: the directory {} does not exist",
                missing.display()
            )),
            "{err}"
        );
        assert!(!missing.exists());
    }
}

/// Ranks that fail, or are stopped, leave no rendezvous directory: rank 1
/// of a job whose rank 0 never comes, stopped by SIGTERM (as `mpirun`
/// stops the others when one fails), removes its own; what a rank killed
/// outright left (a file of a dead process of this host) is removed by
/// the next job, which leaves nothing of its own.
#[test]
fn a_stopped_or_killed_jobs_rendezvous_does_not_outlive_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db").display().to_string();
    let args = [
        "-w", "sor", "--comm", "thr2", "--param", "n=64", "--db", &db,
    ];
    let mut cmd = launched_rank(1, 2, tmp.path(), &args);
    cmd.env("OMPI_MCA_ess_base_jobid", "7001");
    let rank1 = Reaped::start(cmd);
    let dir = tmp.path().join("smtlab-rendezvous-openmpi-7001-2");
    wait_for("rank 1's address", Duration::from_secs(20), || {
        dir.join("rank-1").exists()
    });
    kill(rank1.pid(), Signal::SIGTERM).unwrap();
    let out = rank1.finish(Duration::from_secs(10));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 15), "{err}");
    assert_eq!(err.trim_end(), "smtlab: rank 1: stopped by SIGTERM");
    assert!(!dir.exists(), "{:?}", rendezvous_dirs(tmp.path()));

    // A job whose ranks were killed outright: rank 0's file, its process
    // gone (a pid above the kernel's largest).
    let killed = tmp.path().join("smtlab-rendezvous-openmpi-7002-2");
    std::fs::create_dir(&killed).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let dead: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse::<u64>()
        .unwrap()
        + 1;
    std::fs::write(
        killed.join("rank-0"),
        format!("2 127.0.0.1:9 {} {dead}\n", host.trim()),
    )
    .unwrap();
    // The next job, run to its end.
    let ranks: Vec<Reaped> = (0..2)
        .map(|r| {
            let mut cmd = launched_rank(r, 2, tmp.path(), &args);
            cmd.env("OMPI_MCA_ess_base_jobid", "7003");
            Reaped::start(cmd)
        })
        .collect();
    for (r, rank) in ranks.into_iter().enumerate() {
        let out = rank.finish(Duration::from_secs(60));
        assert_success(&out, &format!("rank {r}"));
    }
    assert_eq!(rendezvous_dirs(tmp.path()), Vec::<String>::new());
}

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The case under the real launcher: rank 0 refuses its store,
/// `mpirun` aborts the job, SIGTERM to rank 1 (waiting at the
/// rendezvous), which leaves it: nothing under TMPDIR.
#[test]
fn a_failed_mpirun_job_leaves_no_rendezvous_directory() {
    if !has("mpirun") {
        support::skip("mpirun is not installed (openmpi-bin; scripts/setup.sh installs it)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut mpirun = Command::new("mpirun");
    if nix::unistd::geteuid().is_root() {
        mpirun.arg("--allow-run-as-root");
    }
    // Rank 0's store is in a directory that is not there.
    let db = tmp.path().join("gone/x.db").display().to_string();
    let out = mpirun
        .env("TMPDIR", tmp.path())
        .args(["--oversubscribe", "-np", "2"])
        .arg(assert_cmd::cargo::cargo_bin("smtlab"))
        .args(["rank", "-w", "sor", "--comm", "thr2", "--db", &db])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("--db"), "{err}");
    assert_eq!(rendezvous_dirs(tmp.path()), Vec::<String>::new(), "{err}");
}

// ----- item 12: flags given twice, the launcher's count -------------------

/// `--comm thr2,thr2` planned two identical points: one, in the order
/// given, as `-n 2,2` is one count.
#[test]
fn a_mechanism_given_twice_is_one_point() {
    let doc = support::json(&[
        "run",
        "-w",
        "sor",
        "--comm",
        "thr2,poll,thr2",
        "-n",
        "2",
        "--dry-run",
        "--json",
    ]);
    let comms: Vec<&str> = doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["program"]["comm"].as_str().unwrap())
        .collect();
    assert_eq!(comms, ["thr2", "poll"]);
}

/// `--param n=5000 --param n=16` ran n=16, unchecked 5000 dropped (the
/// reverse order was refused): a parameter given twice is refused in
/// either order, for a DSM application, another workload and a
/// launcher's rank.
#[test]
fn a_parameter_given_twice_is_refused_whatever_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("never.db").display().to_string();
    for (first, second) in [("5000", "16"), ("16", "5000"), ("16", "16")] {
        let (a, b) = (format!("n={first}"), format!("n={second}"));
        assert_usage_error(
            &[
                "run", "-w", "sor", "-n", "2", "--param", &a, "--param", &b, "--db", &db,
            ],
            &format!("--param n given twice (n={first}, n={second})"),
        );
    }
    assert_usage_error(
        &[
            "run", "-w", "spin", "--param", "x=1", "--param", "x=2", "--db", &db,
        ],
        "--param x given twice",
    );
    assert!(!Path::new(&db).exists());
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "-w", "sor", "--comm", "thr2", "--param", "n=64", "--param", "n=5000",
    ];
    let out = launched_rank(0, 2, tmp.path(), &args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--param n given twice (n=64, n=5000)"),
        "{err}"
    );
}

/// `smtlab rank` with `OMPI_COMM_WORLD_SIZE=99999999999` said
/// "--threads 99999999999", a flag never given: the variable is named.
#[test]
fn a_launchers_rank_count_is_named_by_its_variable() {
    let tmp = tempfile::tempdir().unwrap();
    for (size, said) in [
        (
            "99999999999",
            "OMPI_COMM_WORLD_SIZE=99999999999: at most 64 ranks",
        ),
        (
            "1",
            "OMPI_COMM_WORLD_SIZE=1: a DSM application needs at least 2 ranks",
        ),
    ] {
        let mut cmd = launched_rank(0, 2, tmp.path(), &["-w", "sor", "--comm", "thr2"]);
        let out = cmd.env("OMPI_COMM_WORLD_SIZE", size).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end(), format!("smtlab: {said}"));
    }
}
