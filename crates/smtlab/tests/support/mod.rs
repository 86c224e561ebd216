//! Helpers shared by the CLI integration tests (each test binary uses a
//! subset of them).
#![allow(dead_code)]

pub mod guest;
pub mod serve;
pub mod slurm;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

/// Say why a test is skipped. Written straight to the process's stderr,
/// because the test harness swallows `eprintln!` of passing tests and a skip
/// must be visible in CI's log.
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("?");
    let _ = std::io::stderr().write_all(format!("skipped: {name}: {reason}\n").as_bytes());
}

/// The smtlab binary under test.
pub fn smtlab() -> Command {
    Command::cargo_bin("smtlab").unwrap()
}

/// Insist that a finished command succeeded; on failure the message names
/// `what` and shows the command's exit status, stdout and stderr.
#[track_caller]
pub fn assert_success(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run smtlab, insist on success, and parse its stdout as JSON.
pub fn json(args: &[&str]) -> Value {
    let out = smtlab().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Run smtlab, insist on exit code `code` (3: a point has no successful
/// sample), and parse its stdout as JSON.
pub fn json_exit(args: &[&str], code: i32) -> Value {
    let out = smtlab().args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A usage error: exit 2, exactly one line on stderr naming `needle`, and
/// never a panic.
pub fn assert_usage_error(args: &[&str], needle: &str) {
    let out = smtlab().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line, got {err}"
    );
    assert!(
        err.contains(needle),
        "{args:?}: `{err}` should name `{needle}`"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// Extract the hwloc dump `name` from `fixtures/sysfs` into `tmp` (an
/// empty directory) and return its root.
pub fn dump(name: &str, tmp: &Path) -> PathBuf {
    let tarball = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(format!("{name}.tar.bz2"));
    let ok = std::process::Command::new("tar")
        .arg("xjf")
        .arg(&tarball)
        .arg("-C")
        .arg(tmp)
        .status()
        .expect("tar runs (scripts/setup.sh installs tar and bzip2)")
        .success();
    assert!(ok, "extract {}", tarball.display());
    // The dump's own directory (not always named like its tarball).
    std::fs::read_dir(tmp)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// Live processes whose environment holds `SMTLAB_TEST_MARK=mark`: a run
/// started with that variable and everything it started.
pub fn processes_with_mark(mark: &str) -> Vec<u32> {
    processes_with_env(&format!("SMTLAB_TEST_MARK={mark}"))
}

/// Live processes (not zombies) whose environment holds `kv`
/// (`NAME=VALUE`).
pub fn processes_with_env(kv: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|b| *b == 0).any(|e| e == kv.as_bytes()))
                .unwrap_or(false)
        })
        .filter(|pid| {
            // A zombie waiting for its (already dead) parent is not running.
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        })
        .collect()
}

/// The marked processes still alive after waiting up to 5 s for them to go.
pub fn wait_gone(mark: &str) -> Vec<u32> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with_mark(mark);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
