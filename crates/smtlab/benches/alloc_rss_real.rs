//! Benchmark: the peak RSS of real programs under smtalloc against glibc's
//! malloc, side by side (`cargo bench -p smtlab --bench alloc_rss_real`).
//! Goal: at most 1.2x glibc's peak RSS per program.
//!
//! Each program (python3, gcc, git, sqlite3, sort) runs alternately without
//! and with `LD_PRELOAD=libsmtalloc.so`, `ALLOC_RSS_ROUNDS` times (default
//! 5); a program's peak RSS is `wait4`'s `ru_maxrss` of the process (the
//! largest of the program and its children). The medians and their ratio
//! are printed per program with the geometric mean; programs not installed
//! are skipped with the reason. Results go to
//! `target/bench-results/alloc_rss_real.json`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const GOAL: f64 = 1.2;

/// A program and how to run it: (name, shell command). Inputs are made in
/// `dir` first.
fn programs(dir: &Path) -> Vec<(&'static str, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/c/mandel.c");
    let lines = dir.join("lines.txt");
    let text: String = (0..200_000u64)
        .map(|i| format!("{:016x} line {i}\n", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .collect();
    std::fs::write(&lines, text).unwrap();
    let sql = dir.join("load.sql");
    let mut script = String::from("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT);\nBEGIN;\n");
    for i in 0..20_000 {
        script.push_str(&format!("INSERT INTO t VALUES ({i}, 'value {i}');\n"));
    }
    script.push_str("COMMIT;\nSELECT count(*), sum(length(v)) FROM t WHERE k % 7 = 3;\n");
    std::fs::write(&sql, script).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    vec![
        (
            "python3",
            "python3 -c 'import json, re, collections; d = {i: str(i) * 3 for i in range(200000)}; print(len(json.dumps(d)))'".to_string(),
        ),
        (
            "gcc",
            format!("gcc -O2 -c {} -o {}", src.display(), dir.join("m.o").display()),
        ),
        (
            "git",
            format!("git -C {} log --stat -200", repo.display()),
        ),
        (
            "sqlite3",
            format!("sqlite3 {} < {}", dir.join("t.db").display(), sql.display()),
        ),
        ("sort", format!("sort {}", lines.display())),
    ]
}

/// Peak RSS (KiB) of `sh -c cmd`, with `lib` preloaded or not.
fn peak_rss_kib(cmd: &str, lib: Option<&Path>, dir: &Path) -> Option<f64> {
    // A fresh database each time: sqlite3 must do the same work.
    let _ = std::fs::remove_file(dir.join("t.db"));
    let mut c = Command::new("sh");
    c.args(["-c", cmd])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(l) = lib {
        c.env("LD_PRELOAD", l);
    }
    let child = c.spawn().ok()?;
    // wait4 by pid for the child's resource usage; dropping the handle
    // neither waits nor kills.
    let (end, usage) = smtlab_sys::wait4(child.id() as i32).ok()?;
    matches!(end, smtlab_sys::ChildEnd::Exited(0)).then_some(usage.ru_maxrss as f64)
}

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_smtlab");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(&cargo)
        .args(["build", "--release", "-p", "smtalloc-preload"])
        .status()
        .unwrap();
    assert!(st.success(), "building libsmtalloc.so");
    let lib: PathBuf = Path::new(bin).with_file_name("libsmtalloc.so");
    assert!(lib.is_file(), "{} was not built", lib.display());
    let rounds = common::count_from_env("ALLOC_RSS_ROUNDS", 5);
    let dir = tempfile::tempdir().unwrap();
    println!("alloc_rss_real: peak RSS of real programs, smtalloc vs glibc ({rounds} rounds, alternating)");
    println!("machine: {}", common::machine());
    println!(
        "{:<9} {:>12} {:>12} {:>7}  goal <= {GOAL}",
        "program", "glibc KiB", "smtalloc KiB", "ratio"
    );
    let mut rows = Vec::new();
    let mut ratios = Vec::new();
    for (name, cmd) in programs(dir.path()) {
        if !installed(name) {
            println!("{name:<9} skipped: {name} is not installed (scripts/setup.sh installs it)");
            continue;
        }
        let mut glibc = Vec::new();
        let mut smt = Vec::new();
        for _ in 0..rounds {
            glibc.extend(peak_rss_kib(&cmd, None, dir.path()));
            smt.extend(peak_rss_kib(&cmd, Some(&lib), dir.path()));
        }
        if glibc.is_empty() || smt.is_empty() {
            println!("{name:<9} skipped: `{cmd}` did not run");
            continue;
        }
        let (g, s) = (common::median(glibc), common::median(smt));
        let ratio = s / g;
        ratios.push(ratio);
        let verdict = if ratio <= GOAL { "PASS" } else { "FAIL" };
        println!("{name:<9} {g:>12.0} {s:>12.0} {ratio:>7.3}  {verdict}");
        rows.push(serde_json::json!({
            "program": name, "glibc_kib": g, "smtalloc_kib": s, "ratio": ratio, "pass": ratio <= GOAL
        }));
    }
    let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len().max(1) as f64).exp();
    println!("geometric mean ratio: {geo:.3}");
    common::write_results(
        "alloc_rss_real",
        &serde_json::json!({"machine": common::machine(), "goal": GOAL, "rounds": rounds,
            "programs": rows, "geomean": geo}),
    );
}
