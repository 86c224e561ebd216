//! `smtlab pin`: pinning real programs on this machine.
//!
//! Tests that pin to CPU 1 need CPUs 0 and 1 (development machines have
//! exactly those); elsewhere they print why they were skipped and pass.

mod support;

use support::smtlab;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

/// CPUs this process may run on, from /proc/self/status.
fn allowed_cpus() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    let mut out = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().unwrap()..=b.parse().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

/// True if CPUs 0 and 1 are usable; otherwise says why the test is skipped.
fn two_cpus() -> bool {
    let a = allowed_cpus();
    let ok = a.contains(&0) && a.contains(&1);
    if !ok {
        support::skip(&format!(
            "needs 2 online CPUs (0 and 1); allowed here: {a:?}"
        ));
    }
    ok
}

/// The real python3 binary (not a pyenv-style shim script), if any.
fn python() -> Option<PathBuf> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    if out.status.success() && p.is_absolute() {
        Some(p)
    } else {
        support::skip("needs python3");
        None
    }
}

/// Compile a C program into `dir`, or None (with a reason) if there is no
/// working compiler (or no static libc, for `-static`).
fn compile(dir: &Path, name: &str, src: &str, extra: &[&str]) -> Option<PathBuf> {
    let c = dir.join(format!("{name}.c"));
    let exe = dir.join(name);
    std::fs::write(&c, src).unwrap();
    let ok = std::process::Command::new("cc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&exe)
        .arg(&c)
        .args(extra)
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        support::skip(&format!("cannot compile a C program with cc {extra:?}"));
        return None;
    }
    Some(exe)
}

/// Starts N threads that each spin briefly, then joins them.
const THREADS_C: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static void *work(void *a) {
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < 20000000UL; i++) x += i;
    (void)a;
    return 0;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    pthread_t t[64];
    for (int i = 0; i < n; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < n; i++) pthread_join(t[i], 0);
    puts("done");
    return 0;
}
"#;

/// Main thread plus `n` threads, each printing its affinity.
fn threads_py(n: usize) -> String {
    format!(
        r#"
import os, threading, time
def work(i):
    t = time.time()
    while time.time() - t < 0.05:
        pass
    print("thread", i, sorted(os.sched_getaffinity(0)), flush=True)
ts = [threading.Thread(target=work, args=(i,)) for i in range({n})]
for t in ts:
    t.start()
    t.join()
print("main", sorted(os.sched_getaffinity(0)), flush=True)
"#
    )
}

fn read_report(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Threads of the started process, by creation index (-1 = main).
fn own_threads(r: &Value) -> Vec<&Value> {
    let pid = r["pid"].as_i64().unwrap();
    r["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["pid"].as_i64() == Some(pid))
        .collect()
}

fn thread(r: &Value, index: i64) -> &Value {
    own_threads(r)
        .into_iter()
        .find(|t| t["index"].as_i64() == Some(index))
        .unwrap_or_else(|| panic!("no thread with index {index} in {r:#}"))
}

fn stdout_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn pins_main_thread_to_the_only_cpu_and_keeps_stdout_clean() {
    if !two_cpus() {
        return;
    }
    let Some(py) = python() else { return };
    let d = tempfile::tempdir().unwrap();
    let rep = d.path().join("r.json");
    let o = smtlab()
        .args(["pin", "-c", "1", "--report"])
        .arg(&rep)
        .arg("--")
        .arg(&py)
        .args(["-c", "import os; print(os.sched_getaffinity(0))"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr_of(&o));
    assert_eq!(stdout_of(&o), "{1}\n");
    let err = stderr_of(&o);
    assert!(err.contains("pinned to") && err.contains("main"), "{err}");
    let r = read_report(&rep);
    assert_eq!(r["preload_loaded"], true);
    // Python starts no thread of its own.
    assert_eq!(own_threads(&r).len(), 1, "{r:#}");
    let main = thread(&r, -1);
    assert_eq!(main["pinned"], 1);
    assert_eq!(main["last_cpu"], 1);
    assert_eq!(r["mismatches"], 0);
}

#[test]
fn main_thread_on_first_cpu_and_created_thread_on_second() {
    if !two_cpus() {
        return;
    }
    let Some(py) = python() else { return };
    let d = tempfile::tempdir().unwrap();
    let rep = d.path().join("r.json");
    let o = smtlab()
        .args(["pin", "-c", "0,1", "--report"])
        .arg(&rep)
        .arg("--")
        .arg(&py)
        .args(["-c", &threads_py(1)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr_of(&o));
    let out = stdout_of(&o);
    assert!(out.contains("thread 0 [1]"), "{out}");
    assert!(out.contains("main [0]"), "{out}");
    let r = read_report(&rep);
    assert_eq!(own_threads(&r).len(), 2, "{r:#}");
    let main = thread(&r, -1);
    assert_eq!(
        (main["pinned"].clone(), main["last_cpu"].clone()),
        (0.into(), 0.into())
    );
    let t0 = thread(&r, 0);
    assert_eq!(
        (t0["pinned"].clone(), t0["last_cpu"].clone()),
        (1.into(), 1.into())
    );
    assert_eq!(t0["source"], "preload");
    assert_eq!(r["mismatches"], 0);
    // The table on stderr says the same.
    let err = stderr_of(&o);
    assert!(err.lines().any(|l| l.contains(" #0 ")), "{err}");
}

#[test]
fn c_program_threads_go_round_robin_after_main() {
    if !two_cpus() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let Some(exe) = compile(d.path(), "threads", THREADS_C, &[]) else {
        return;
    };
    let rep = d.path().join("r.json");
    let o = smtlab()
        .args(["pin", "-c", "0,1", "--report"])
        .arg(&rep)
        .arg("--")
        .arg(&exe)
        .arg("3")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr_of(&o));
    assert_eq!(stdout_of(&o), "done\n");
    let r = read_report(&rep);
    let got: Vec<(i64, i64, i64)> = own_threads(&r)
        .iter()
        .map(|t| {
            (
                t["index"].as_i64().unwrap(),
                t["pinned"].as_i64().unwrap(),
                t["last_cpu"].as_i64().unwrap(),
            )
        })
        .collect();
    // main -> 0, then 1, 0, 1 (wrap around).
    assert_eq!(got, [(-1, 0, 0), (0, 1, 1), (1, 0, 0), (2, 1, 1)], "{r:#}");
}

#[test]
fn skip_mask_leaves_first_created_thread_on_the_whole_list() {
    if !two_cpus() {
        return;
    }
    let Some(py) = python() else { return };
    let d = tempfile::tempdir().unwrap();
    let rep = d.path().join("r.json");
    let o = smtlab()
        .args(["pin", "-c", "0,1", "--skip", "0x1", "--report"])
        .arg(&rep)
        .arg("--")
        .arg(&py)
        .args(["-c", &threads_py(2)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr_of(&o));
    let out = stdout_of(&o);
    // Skipped: the whole list, not its creator's single CPU 0.
    assert!(out.contains("thread 0 [0, 1]"), "{out}");
    // The skipped thread did not use up CPU 1.
    assert!(out.contains("thread 1 [1]"), "{out}");
    assert!(out.contains("main [0]"), "{out}");
    let r = read_report(&rep);
    let t0 = thread(&r, 0);
    assert_eq!(t0["skipped"], true);
    assert!(t0["pinned"].is_null());
    assert_eq!(t0["allowed"], serde_json::json!([0, 1]));
    assert_eq!(thread(&r, 1)["pinned"], 1);
    assert!(stderr_of(&o).contains("(skip)"));
}

#[test]
fn process_only_gives_every_thread_the_set() {
    if !two_cpus() {
        return;
    }
    let Some(py) = python() else { return };
    let d = tempfile::tempdir().unwrap();
    let rep = d.path().join("r.json");
    let o = smtlab()
        .args(["pin", "-c", "1", "--process-only", "--report"])
        .arg(&rep)
        .arg("--")
        .arg(&py)
        .args(["-c", &threads_py(2)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr_of(&o));
    let out = stdout_of(&o);
    assert_eq!(out.matches("[1]").count(), 3, "{out}");
    let r = read_report(&rep);
    assert_eq!(r["mode"], "process");
    let own = own_threads(&r);
    assert_eq!(own.len(), 3, "{r:#}");
    for t in own {
        assert_eq!(t["allowed"], serde_json::json!([1]), "{t:#}");
        assert_eq!(t["last_cpu"], 1, "{t:#}");
    }
}

#[test]
fn exit_code_is_passed_through() {
    smtlab()
        .args(["pin", "-c", "0", "--", "sh", "-c", "exit 7"])
        .assert()
        .code(7);
}

#[test]
fn killed_by_signal_exits_128_plus_n() {
    let o = smtlab()
        .args(["pin", "-c", "0", "--", "sh", "-c", "kill -TERM $$"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(143));
    assert!(stderr_of(&o).contains("SIGTERM"), "{}", stderr_of(&o));
}

/// One line on stderr, exit 2.
fn assert_usage_error(args: &[&str], must_contain: &[&str]) {
    let o = smtlab().args(args).output().unwrap();
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    for m in must_contain {
        assert!(err.contains(m), "{args:?}: `{m}` not in {err}");
    }
    assert!(o.stdout.is_empty());
}

#[test]
fn bad_cpu_expressions_are_usage_errors_naming_the_flag() {
    assert_usage_error(&["pin", "-c", "0-", "--", "true"], &["-c", "`0-`"]);
    assert_usage_error(&["pin", "-c", "S9:0", "--", "true"], &["-c", "S9"]);
    assert_usage_error(&["pin", "-c", "9999", "--", "true"], &["-c", "9999"]);
}

#[test]
fn bad_skip_mask_is_a_usage_error_naming_the_flag() {
    assert_usage_error(
        &["pin", "-c", "0", "--skip", "0xZ", "--", "true"],
        &["--skip", "0xZ"],
    );
    assert_usage_error(
        &[
            "pin",
            "-c",
            "0",
            "--skip",
            "0x1ffffffffffffffff",
            "--",
            "true",
        ],
        &["--skip", "64"],
    );
}

#[test]
fn missing_command_is_a_usage_error_naming_it() {
    assert_usage_error(
        &["pin", "-c", "0", "--", "smtlab-no-such-command-xyz", "arg"],
        &["smtlab-no-such-command-xyz"],
    );
}

#[test]
fn statically_linked_program_is_confined_and_said_to_be_unpinned() {
    if !two_cpus() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let Some(exe) = compile(d.path(), "static", THREADS_C, &["-static"]) else {
        return;
    };
    let rep = d.path().join("r.json");
    let o = smtlab()
        .args(["pin", "-c", "1,0", "--report"])
        .arg(&rep)
        .arg("--")
        .arg(&exe)
        .arg("1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr_of(&o));
    let err = stderr_of(&o);
    assert!(err.contains("pin library was not loaded"), "{err}");
    let r = read_report(&rep);
    assert_eq!(r["preload_loaded"], false);
    // Still reported from /proc: at least the main thread, after exit.
    let main = thread(&r, -1);
    assert!(main["pinned"].is_null());
    assert!(main["last_cpu"].is_u64(), "{r:#}");
}

#[test]
fn sigterm_to_smtlab_is_forwarded_and_the_report_still_printed() {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("smtlab"))
        .args(["pin", "-c", "0", "--", "sleep", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until smtlab has started `sleep`.
    let start = Instant::now();
    let pid = child.id();
    loop {
        let kids =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        if !kids.trim().is_empty() || start.elapsed() > Duration::from_secs(10) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_eq!(o.status.code(), Some(143), "{}", stderr_of(&o));
    let err = stderr_of(&o);
    assert!(err.contains("killed by SIGTERM"), "{err}");
    assert!(err.contains("pinned to"), "{err}");
}
