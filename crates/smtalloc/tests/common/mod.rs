//! Shared helpers of the integration tests: find (or build) libsmtalloc.so
//! and run programs under it; the CPUs this process may use, and pinning.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// `target/<profile>/` of this test binary (`target/<profile>/deps/t-HASH`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary in target/<profile>/deps")
        .to_path_buf()
}

/// libsmtalloc.so of this profile, built (or brought up to date) once per
/// test binary with `cargo build -p smtalloc-preload`: `cargo test -p
/// smtalloc` alone does not build the cdylib of the other package.
pub fn preload_lib() -> Result<PathBuf, String> {
    static LIB: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = profile_dir();
        let so = dir.join("libsmtalloc.so");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let target_dir = dir.parent().expect("target dir");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-q", "-p", "smtalloc-preload"])
            .env("CARGO_TARGET_DIR", target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        match cmd.status() {
            Ok(s) if s.success() => {}
            Ok(s) => return Err(format!("cargo build -p smtalloc-preload failed: {s}")),
            Err(e) if so.is_file() => {
                eprintln!("note: cannot run cargo ({e}); using {}", so.display())
            }
            Err(e) => return Err(format!("cannot run cargo: {e}")),
        }
        if so.is_file() {
            Ok(so)
        } else {
            Err(format!("{} not built", so.display()))
        }
    })
    .clone()
}

/// Whether `prog` is on PATH.
pub fn have(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(prog).is_file()))
}

/// Runs `cmd` with libsmtalloc.so preloaded; panics with its output if it
/// fails.
pub fn run_preloaded(cmd: &mut Command) -> Output {
    let lib = preload_lib().expect("libsmtalloc.so");
    // SMTALLOC_STATS=1 proves the preload took effect, and checks the
    // no-shared-frame invariant in every real program run.
    let out = cmd
        .env("LD_PRELOAD", &lib)
        .env("SMTALLOC_STATS", "1")
        .output()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed under LD_PRELOAD: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("smtalloc: shared frames: 0 "),
        "{cmd:?}: no smtalloc stats (preload not in effect?) or shared frames != 0:\n{stderr}"
    );
    assert!(
        !stderr
            .lines()
            .any(|l| l.starts_with("smtalloc: shared frames: ")
                && !l.starts_with("smtalloc: shared frames: 0 ")),
        "{cmd:?}: a 2 MiB frame is shared by two cores' arenas:\n{stderr}"
    );
    out
}

/// Prints the conventional skip line.
pub fn skip(reason: &str) {
    println!("skipped: {reason}");
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    use nix::sched::{sched_getaffinity, CpuSet};
    let set = sched_getaffinity(nix::unistd::Pid::from_raw(0)).expect("sched_getaffinity");
    (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect()
}

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: usize) {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).unwrap();
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).expect("pin");
}
