//! What a hostile but ordinary user broke (issue 15), each case checked
//! from the outside: results that must not be silently wrong, exit codes,
//! flags a resumed run would ignore, sizes without bounds, signals, and
//! output checked before measuring. Each test has its own temporary store.

mod support;

use support::{assert_success, assert_usage_error, json, skip, smtlab};

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

/// The one point of run 1 in `db`, as `show --json` gives it.
fn only_point(db: &str) -> Value {
    let doc = json(&["show", "1", "--json", "--db", db]);
    doc["points"][0].clone()
}

fn failures(point: &Value) -> String {
    point["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// One sample, no warm-up: the quickest run that still measures.
const ONE: [&str; 6] = ["--warmup", "0", "--min-samples", "1", "--max-samples", "1"];

#[test]
fn an_alloc_file_that_is_not_a_library_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notalib.so");
    std::fs::write(&text, "not an ELF file\n").unwrap();
    let t = text.display().to_string();
    assert_usage_error(
        &["run", "-w", "spin", "--alloc", &t, "--db", &db(&dir)],
        "not loadable with LD_PRELOAD (file too short)",
    );
    // An executable is an ELF file, but not one the loader can preload.
    let exe_copy = dir.path().join("program.so");
    std::fs::copy("/bin/true", &exe_copy).unwrap();
    assert_usage_error(
        &[
            "run",
            "-w",
            "spin",
            "--alloc",
            exe_copy.to_str().unwrap(),
            "--dry-run",
        ],
        "--alloc ",
    );
    assert!(!Path::new(&db(&dir)).exists(), "nothing was stored");
    // A real shared library passes (libm is in every glibc system).
    let libm = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/lib/aarch64-linux-gnu/libm.so.6",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists());
    match libm {
        Some(lib) => {
            smtlab()
                .args(["run", "-w", "spin", "--alloc", lib, "--dry-run"])
                .assert()
                .success();
        }
        None => skip("no libm.so.6 at a known path to preload"),
    }
}

#[test]
fn a_metric_that_is_not_a_finite_number_fails_its_sample() {
    let dir = tempfile::tempdir().unwrap();
    let d = db(&dir);
    let out = smtlab()
        .args([
            "run",
            "--cmd",
            "echo t=NaN",
            "--metric",
            "t=t=(\\S+)",
            "--db",
            &d,
        ])
        .args(ONE)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "no point has a result");
    let p = only_point(&d);
    assert_eq!(p["samples"], 0);
    assert!(p["failed"].as_u64().unwrap() >= 1);
    assert!(
        failures(&p)
            .contains("captured `NaN` in the output of rank 0, which is not a finite number"),
        "{}",
        failures(&p)
    );
    // Beyond f64: parsed as infinity, refused the same way.
    let d2 = dir.path().join("big.db").display().to_string();
    smtlab()
        .args([
            "run",
            "--cmd",
            "echo t=1e400",
            "--metric",
            "t=t=(\\S+)",
            "--db",
            &d2,
        ])
        .args(ONE)
        .assert()
        .code(3);
    assert!(failures(&only_point(&d2)).contains("`1e400`"));
}

#[test]
fn a_window_too_short_for_one_operation_is_not_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let d = db(&dir);
    smtlab()
        .args([
            "run",
            "-w",
            "spin",
            "--duration",
            "1ns",
            "--no-counters",
            "--db",
            &d,
        ])
        .args(ONE)
        .assert()
        .code(3);
    let p = only_point(&d);
    assert_eq!(p["samples"], 0);
    assert!(
        failures(&p).contains("no operation completed in the measured window"),
        "{}",
        failures(&p)
    );
}

#[test]
fn a_run_exits_3_when_a_point_has_no_result_and_0_when_all_have() {
    let dir = tempfile::tempdir().unwrap();
    let d = db(&dir);
    let out = smtlab()
        .args(["run", "--cmd", "smtlab-no-such-program-x", "--db", &d])
        .args(ONE)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("1 of 1 points have no successful sample (point 0)"),
        "{err}"
    );
    smtlab()
        .args(["run", "--cmd", "true", "--db", &d])
        .args(ONE)
        .assert()
        .success();
}

#[test]
fn warm_ups_spend_the_time_budget_and_a_short_point_says_why_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = db(&dir);
    let out = smtlab()
        .args([
            "run",
            "-w",
            "spin",
            "--duration",
            "200ms",
            "--warmup",
            "6",
            "--min-samples",
            "5",
            "--max-time",
            "500ms",
            "--no-counters",
            "--db",
            &d,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let p = only_point(&d);
    // The budget ends the warm-ups long before six of 200 ms each.
    assert!(p["warmups"].as_u64().unwrap() < 6, "{p}");
    assert_eq!(p["samples"], 1);
    assert!(
        stderr.contains("1 of --min-samples 5 samples measured when its --max-time 0.5 s ran out"),
        "{stderr}"
    );
    assert!(
        stdout.contains(
            "point 0: 1 of --min-samples 5 samples measured: its --max-time 0.5 s ran out"
        ),
        "{stdout}"
    );
    assert!(
        p["shortfall"]
            .as_str()
            .unwrap()
            .contains("raise --max-time"),
        "{p}"
    );
    let report = dir.path().join("r");
    smtlab()
        .args(["report", "1", "--db", &d, "-o", report.to_str().unwrap()])
        .assert()
        .success();
    for f in ["summary.md", "report.html", "results.json"] {
        let text = std::fs::read_to_string(report.join(f)).unwrap();
        assert!(text.contains("Point 0: 1 of --min-samples 5"), "{f}");
    }
}

#[test]
fn the_timeout_covers_a_workloads_set_up() {
    let dir = tempfile::tempdir().unwrap();
    let d = db(&dir);
    let t0 = Instant::now();
    // 512 MiB of pointer-chase permutation takes seconds to build.
    smtlab()
        .args([
            "run",
            "-w",
            "latency",
            "--param",
            "size=512MiB",
            "--duration",
            "100ms",
            "--timeout",
            "300ms",
            "--no-counters",
            "--db",
            &d,
        ])
        .args(ONE)
        .assert()
        .code(3);
    let p = only_point(&d);
    assert!(
        failures(&p).contains("timeout: workers did not finish setting up within --timeout 0.3 s"),
        "{}",
        failures(&p)
    );
    assert!(t0.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_resumed_run_refuses_flags_that_would_change_its_plan() {
    for flag in [
        &["-w", "spin"][..],
        &["--threads", "2"],
        &["--min-samples", "3"],
        &["--max-time", "1s"],
        &["--alloc", "glibc"],
        &["--cmd", "true"],
    ] {
        let mut args = vec!["run", "--resume", "1", "--db", "/nonexistent/x.db"];
        args.extend_from_slice(flag);
        assert_usage_error(&args, "cannot be used with");
    }
}

#[test]
fn unknown_cmd_placeholders_are_refused_and_shell_braces_pass() {
    assert_usage_error(
        &["run", "--cmd", "echo {foo}", "--dry-run"],
        "--cmd: unknown placeholder {foo}",
    );
    assert_usage_error(
        &["study", "--cmd", "run -t {thread}", "--dry-run"],
        "unknown placeholder {thread}",
    );
    smtlab()
        .args([
            "run",
            "--cmd",
            "echo ${HOME} {n} {a,b} | awk '{print $1}'",
            "--dry-run",
        ])
        .assert()
        .success();
}

#[test]
fn the_process_limit_fails_samples_instead_of_panicking() {
    let Some(work) = unprivileged_copy() else {
        return;
    };
    let (dir, bin) = work;
    for model in ["process", "thread"] {
        let d = dir.path().join(format!("{model}.db"));
        let mut cmd = limited(&bin, 6);
        cmd.args([
            "run",
            "-w",
            "spin",
            "--model",
            model,
            "--threads",
            "2",
            "--duration",
            "50ms",
        ])
        .args(ONE)
        .args(["--no-counters", "--db"])
        .arg(&d);
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{model}: {err}");
        assert!(matches!(out.status.code(), Some(0 | 3)), "{model}: {err}");
        // Whatever happened, the run ended and was recorded as such.
        let runs = json(&["runs", "--json", "--db", d.to_str().unwrap()]);
        let status = runs[0]["status"].as_str().unwrap_or("?").to_string();
        assert_eq!(status, "complete", "{model}: {runs}");
        if out.status.code() == Some(3) {
            let p = only_point(d.to_str().unwrap());
            assert!(
                failures(&p).contains("Resource temporarily unavailable"),
                "{model}: {}",
                failures(&p)
            );
        }
    }
}

/// A copy of smtlab that user `nobody` can run, in a directory it can
/// write, when this test runs as root (RLIMIT_NPROC does not bind root);
/// or `None`, with the reason printed.
fn unprivileged_copy() -> Option<(tempfile::TempDir, PathBuf)> {
    if !nix::unistd::Uid::effective().is_root() {
        skip("needs root, to run smtlab as `nobody` under a process limit");
        return None;
    }
    if StdCommand::new("setpriv")
        .arg("--version")
        .output()
        .is_err()
    {
        skip("setpriv (util-linux) is not installed");
        return None;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = dir.path().join("smtlab");
    std::fs::copy(exe(), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some((dir, bin))
}

/// `bin` as user nobody with at most `nproc` processes and threads.
fn limited(bin: &Path, nproc: u32) -> StdCommand {
    let mut c = StdCommand::new("setpriv");
    c.args([
        "--reuid",
        "65534",
        "--regid",
        "65534",
        "--clear-groups",
        "prlimit",
    ])
    .arg(format!("--nproc={nproc}"))
    .arg(bin)
    .env("RUST_BACKTRACE", "0");
    c
}

#[test]
fn sizes_and_durations_without_bounds_are_refused_at_the_edge() {
    let dir = tempfile::tempdir().unwrap();
    let d = db(&dir);
    let huge = "18446744073709551615";
    let secs = format!("{huge}s");
    for (args, needle) in [
        (
            vec!["run", "-w", "spin", "--duration", &secs, "--db", &d],
            "--duration",
        ),
        (
            vec!["run", "-w", "spin", "--timeout", &secs, "--db", &d],
            "--timeout",
        ),
        (
            vec!["run", "-w", "spin", "--max-time", &secs, "--db", &d],
            "--max-time",
        ),
        (
            vec!["study", "--max-time", &secs, "--db", &d],
            "at most 30 days",
        ),
        (
            vec!["run", "-w", "spin", "--work", huge, "--db", &d],
            "--work",
        ),
        (vec!["place", "-n", "4294967296"], "at most 65535 workers"),
        (
            vec![
                "run",
                "-w",
                "spin",
                "--model",
                "hybrid:65535x65535",
                "--dry-run",
            ],
            "at most 65535 workers",
        ),
        (
            vec!["run", "-w", "spin", "--threads", "1-65535", "--dry-run"],
            "at most 10000000",
        ),
    ] {
        let t0 = Instant::now();
        assert_usage_error(&args, needle);
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{args:?} took {:?}",
            t0.elapsed()
        );
    }
    // Refused before a run was created: the store was never made.
    assert!(!Path::new(&d).exists());
}

/// Start a 3-second one-sample run with `mark` in its environment, wait
/// for its worker, and return the child.
fn start_run(db: &str, mark: &str, model: &str) -> std::process::Child {
    let child = StdCommand::new(exe())
        .args([
            "run",
            "-w",
            "spin",
            "--model",
            model,
            "--duration",
            "3s",
            "--no-counters",
            "--db",
            db,
        ])
        .args(ONE)
        .env("SMTLAB_TEST_MARK", mark)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while workers_with_mark(mark).is_empty() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Worker processes (`smtlab __worker`) whose environment carries `mark`.
fn workers_with_mark(mark: &str) -> Vec<i32> {
    let needle = format!("SMTLAB_TEST_MARK={mark}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes())
                && cmd.split(|b| *b == 0).any(|a| a == b"__worker")
        })
        .collect()
}

#[test]
fn sigterm_exits_143_and_a_killed_worker_is_named_by_its_signal() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let dir = tempfile::tempdir().unwrap();
    let d = db(&dir);
    let mark = format!("term-{}", std::process::id());
    let child = start_run(&d, &mark, "thread");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(workers_with_mark(&mark).is_empty(), "no worker is left");

    let d2 = dir.path().join("k.db").display().to_string();
    let mark = format!("kill-{}", std::process::id());
    let child = start_run(&d2, &mark, "process");
    let workers = workers_with_mark(&mark);
    assert!(!workers.is_empty());
    kill(Pid::from_raw(workers[0]), Signal::SIGKILL).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 3)));
    let p = only_point(&d2);
    assert!(
        failures(&p).contains("killed by signal SIGKILL"),
        "{}",
        failures(&p)
    );
}

#[test]
fn a_study_checks_its_report_directory_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let d = db(&dir);
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let f = file.display().to_string();
    assert_usage_error(&["study", "-o", &f, "--db", &d], "not a directory");
    let below = format!("{f}/sub");
    assert_usage_error(&["study", "-o", &below, "--db", &d], "cannot create it");
    assert!(!Path::new(&d).exists(), "nothing was measured");
}

#[test]
fn runs_creating_one_new_store_at_once_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    // Before: about one run in fifty failed ("database is locked", "it
    // holds other tables", "user_version 3 without application_id").
    for round in 0..20 {
        let d = dir
            .path()
            .join(format!("g{round}.db"))
            .display()
            .to_string();
        let children: Vec<_> = (0..4)
            .map(|_| {
                StdCommand::new(exe())
                    .args([
                        "run",
                        "-w",
                        "spin",
                        "--duration",
                        "20ms",
                        "--no-counters",
                        "--db",
                        &d,
                    ])
                    .args(ONE)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert_success(&out, &format!("round {round}"));
        }
        let runs = json(&["runs", "--json", "--db", &d]);
        assert_eq!(runs.as_array().unwrap().len(), 4, "round {round}");
    }
}

#[test]
fn a_store_that_cannot_be_written_can_still_be_listed() {
    let Some((dir, bin)) = unprivileged_copy() else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let made = dir.path().join("made.db");
    smtlab()
        .args([
            "run",
            "-w",
            "spin",
            "--duration",
            "20ms",
            "--no-counters",
            "--db",
        ])
        .arg(&made)
        .args(ONE)
        .assert()
        .success();
    // Its own directory, which `nobody` may read but not write: no -shm
    // file can be made beside the WAL database, as on a read-only mount.
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::copy(&made, ro.join("s.db")).unwrap();
    std::fs::set_permissions(ro.join("s.db"), std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    for cmd in [&["runs"][..], &["show", "1"]] {
        let out = StdCommand::new("setpriv")
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(&bin)
            .args(cmd)
            .arg("--db")
            .arg(ro.join("s.db"))
            .output()
            .unwrap();
        assert_success(&out, &format!("{cmd:?}"));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("spin"),
            "{cmd:?}"
        );
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
}
