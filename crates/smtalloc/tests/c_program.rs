//! The glibc edge cases, fork while threads allocate, frees from exited
//! threads and cross-thread frees, checked by a C program (tests/c/edge.c)
//! run under LD_PRELOAD=libsmtalloc.so; and the SMTALLOC_STATS report.

mod common;

use std::path::PathBuf;
use std::process::Command;

/// Compiles tests/c/edge.c with `cc` into a temp dir (None: no compiler).
fn build_edge(dir: &tempfile::TempDir) -> Option<PathBuf> {
    if !common::have("cc") {
        common::skip("no cc on PATH");
        return None;
    }
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/edge.c");
    let exe = dir.path().join("edge");
    let out = Command::new("cc")
        .args(["-O1", "-pthread", "-Wno-alloc-size-larger-than", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-ldl")
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

#[test]
fn c_edge_cases_fork_and_thread_frees() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_edge(&dir) else { return };
    let out = common::run_preloaded(&mut Command::new(&exe));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ALL OK"), "stdout: {stdout}");
}

#[test]
fn stats_report_per_core_and_no_shared_frames() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_edge(&dir) else { return };
    let out = common::run_preloaded(
        Command::new(&exe)
            .arg("stats")
            .env("SMTALLOC_STATS", "1")
            .env("SMTALLOC_RESERVE_PER_CORE", "32MiB"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(String::from_utf8_lossy(&out.stdout).contains("stats mode done"));
    let cores = stderr
        .lines()
        .filter(|l| l.starts_with("smtalloc: core ") && l.contains("arena"))
        .count();
    let expected = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cores >= 1, "no per-core lines in:\n{stderr}");
    assert!(
        cores <= expected.max(cores),
        "per-core lines: {cores}\n{stderr}"
    );
    assert!(
        stderr.contains("smtalloc: shared frames: 0 "),
        "no 'shared frames: 0' in:\n{stderr}"
    );
    assert!(stderr.contains("huge-page coverage"), "{stderr}");
    // 80 MiB of small blocks on one core outgrew its 32 MiB arena: the core
    // got more regions of its own, still no shared frame, no fallback.
    let regions = |l: &str| -> usize {
        l.split(" in ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    assert!(
        stderr
            .lines()
            .filter(|l| l.starts_with("smtalloc: core "))
            .any(|l| regions(l) >= 2),
        "no core grew a second region:\n{stderr}"
    );
    assert!(
        stderr.contains("fallbacks to the shared heap: 0"),
        "{stderr}"
    );
    // Allocations were counted on at least one core.
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("smtalloc: core ") && !l.contains(" in 0 calls")),
        "{stderr}"
    );
}
