//! `smtlab study pairs`: the plan for machines this one is not (dry runs on
//! synthetic SMT machines), the sharing level said when there is no SMT,
//! bad input, and a short real run on this machine through to the matrix
//! and the report.

mod support;

use support::{assert_success, assert_usage_error, json, smtlab};

use std::path::Path;

/// `--cmd pN='true'` for N programs: names for a plan, nothing to run.
fn commands(n: usize) -> Vec<String> {
    (0..n)
        .flat_map(|i| ["--cmd".to_string(), format!("p{i}=true")])
        .collect()
}

#[test]
fn twenty_six_programs_on_a_64_pu_smt_machine_run_32_pairs_at_once_on_siblings() {
    let mut args: Vec<String> = [
        "study",
        "pairs",
        "--synthetic",
        "package:2 core:16 pu:2",
        "--dry-run",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(commands(26));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = smtlab().args(&a).output().unwrap();
    assert_success(&out, "study pairs --dry-run");
    let text = String::from_utf8_lossy(&out.stdout);
    // 26 alone + 351 pairs = 377 co-runs, 32 at once: 12 waves.
    assert!(text.contains("377 co-runs in 12 wave(s)"), "{text}");
    assert!(text.contains("p0 + p1 on PUs 54+55"), "{text}");
    assert!(
        text.contains("Pairs run on the two SMT siblings of a core"),
        "{text}"
    );
    assert!(text.contains("time: "), "{text}");
    // Siblings: every pair's two PUs are 2k and 2k+1 on this machine.
    for line in text.lines().filter(|l| l.starts_with("wave")) {
        for run in line.split("; ").filter(|r| r.contains(" on PUs ")) {
            let pus = run.rsplit(' ').next().unwrap();
            let (a, b) = pus.split_once('+').unwrap();
            let (a, b): (u32, u32) = (a.parse().unwrap(), b.parse().unwrap());
            assert_eq!((a / 2, a % 2, b), (b / 2, 0, a + 1), "{run}");
        }
    }
    // The JSON plan holds the same points.
    args.push("--json".into());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let doc = json(&a);
    assert_eq!(doc["points"].as_array().unwrap().len(), 12);
}

#[test]
fn without_smt_the_study_says_which_sharing_it_uses() {
    let out = smtlab()
        .args([
            "study",
            "pairs",
            "--synthetic",
            "package:1 l3:1 core:4 pu:1",
            "--dry-run",
        ])
        .args(commands(3))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("no SMT"), "{text}");
    assert!(text.contains("--share cache"), "{text}");
    assert!(text.contains("2 co-runs go at once"), "{text}");
    assert_usage_error(
        &[
            "study",
            "pairs",
            "--synthetic",
            "core:4 pu:1",
            "--share",
            "smt",
            "--dry-run",
            "-w",
            "spin",
        ],
        "--share smt: no core has two usable PUs",
    );
    assert_usage_error(
        &["study", "pairs", "--share", "core", "--dry-run"],
        "--share core: expected smt, cache or package",
    );
}

#[test]
fn bad_pairs_input_is_one_line_and_exit_2() {
    assert_usage_error(
        &["study", "pairs", "--cmd", "true", "--dry-run"],
        "study pairs names each command: --cmd NAME='TEMPLATE'",
    );
    assert_usage_error(
        &[
            "study",
            "pairs",
            "--cmd",
            "a=true",
            "--cmd",
            "a=false",
            "--dry-run",
        ],
        "two programs are named \"a\"",
    );
    assert_usage_error(
        &["study", "models", "--window", "1s", "--dry-run"],
        "apply to `study pairs`",
    );
    assert_usage_error(
        &["run", "--cmd", "true", "--cmd", "false", "--dry-run"],
        "--cmd given 2 times",
    );
    assert_usage_error(
        &["run", "-w", "spin", "--cmd", "true", "--dry-run"],
        "cannot be used with",
    );
}

#[test]
fn a_short_study_on_this_machine_measures_the_matrix_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db").display().to_string();
    let out_dir = dir.path().join("report");
    let out = smtlab()
        .args([
            "study",
            "pairs",
            "-w",
            "spin",
            "--cmd",
            "nap=sleep 0.02",
            "--duration",
            "50ms",
            "--window",
            "200ms",
            "--warmup",
            "0",
            "--min-samples",
            "3",
            "--max-samples",
            "3",
            "--no-counters",
            "--trials",
            "20000",
            "--db",
            &db,
            "-o",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // 2 alone + 3 pairs, one at a time on a 2-core machine.
    let runs = json(&["runs", "--json", "--db", &db]);
    assert_eq!(runs[0]["points"], 5);
    assert_eq!(runs[0]["failed_samples"], 0);
    let matrix = std::fs::read_to_string(out_dir.join("matrix.csv")).unwrap();
    let rows: Vec<&str> = matrix.lines().collect();
    assert_eq!(rows.len(), 3, "{matrix}");
    assert!(
        rows[0].contains("spin") && rows[0].contains("nap"),
        "{matrix}"
    );
    // Each WS is a positive number near 2 (a sleeping partner costs
    // little) and the matrix is symmetric.
    let cell =
        |r: usize, c: usize| -> f64 { rows[r].split(',').nth(c).unwrap().trim().parse().unwrap() };
    for r in 1..=2 {
        for c in 1..=2 {
            assert!(cell(r, c) > 0.5 && cell(r, c) < 3.0, "{matrix}");
            assert_eq!(cell(r, c), cell(c, r));
        }
    }
    assert!(stdout.contains("best"), "{stdout}");
    assert!(Path::new(&out_dir.join("report.html")).exists());
}
