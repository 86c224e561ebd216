//! `smtlab pairs MATRIX.csv`: the hand-checkable 4x4 example
//! (`examples/pairs-4.csv`), the JSON shape scripts rely on, the text,
//! bad matrices refused in one line naming the file, and `-o DIR`.

mod support;

use support::{assert_usage_error, json, smtlab};

use std::path::Path;

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/pairs-4.csv")
        .display()
        .to_string()
}

fn f64_at(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn the_four_program_example_gives_the_optimum_a_person_checks_by_hand() {
    // Four programs have three schedules:
    //   a+b (1.5) with c+d (1.4): mean WS 1.45, speedup 45%, the best;
    //   a+c (1.2) with b+d (1.3): 1.25, 25%;
    //   a+d (1.1) with b+c (1.1): 1.10, 10%, the worst.
    let doc = json(&["pairs", &example(), "--json", "--trials", "100000"]);
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for k in ["programs", "matrix", "best", "worst", "random"] {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
    assert_eq!(doc["programs"], serde_json::json!(["a", "b", "c", "d"]));
    assert_eq!(
        doc["matrix"],
        serde_json::json!([
            [1.0, 1.5, 1.2, 1.1],
            [1.5, 1.0, 1.1, 1.3],
            [1.2, 1.1, 1.0, 1.4],
            [1.1, 1.3, 1.4, 1.0]
        ])
    );
    assert_eq!(doc["best"]["pairs"], serde_json::json!([[0, 1], [2, 3]]));
    assert!((f64_at(&doc["best"]["speedup"]) - 0.45).abs() < 1e-9);
    assert_eq!(doc["worst"]["pairs"], serde_json::json!([[0, 3], [1, 2]]));
    assert!((f64_at(&doc["worst"]["speedup"]) - 0.10).abs() < 1e-9);
    let r = &doc["random"];
    assert_eq!(r["trials"], 100_000);
    // Each of the three schedules a third of the time: mean 80/3 %, and
    // the percentiles are the schedules themselves.
    assert!((f64_at(&r["mean"]) - 0.8 / 3.0).abs() < 0.005, "{r}");
    for (k, want) in [
        ("min", 0.10),
        ("p05", 0.10),
        ("p50", 0.25),
        ("p95", 0.45),
        ("max", 0.45),
    ] {
        assert!((f64_at(&r[k]) - want).abs() < 1e-5, "{k}: {r}");
    }
    assert_eq!(doc["rerandomization"][6]["periods"], 64);
    let verdict = doc["verdict"].as_str().unwrap();
    // A matrix from a file has no samples: its gain has no interval, and
    // the verdict says so where it states the gain.
    assert!(
        verdict.starts_with(
            "An ideal scheduler gains 20.0 percentage points (no 95% interval: the matrix was \
             given without samples) over the median random pairing (best 45.0%, random mean 26."
        ),
        "{verdict}"
    );
    assert_eq!(doc["gain"]["ci95"], serde_json::Value::Null);
    assert_eq!(doc["gain"]["interval"]["kind"], "no_samples");
    assert!(
        (f64_at(&doc["gain"]["value"]) - 0.20).abs() < 1e-5,
        "{}",
        doc["gain"]
    );
    assert!(verdict.ends_with("Best pairs: a+b, c+d."), "{verdict}");
    // The same seed, the same numbers; another seed, other draws.
    let again = json(&["pairs", &example(), "--json", "--trials", "100000"]);
    assert_eq!(again, doc);
    let other = json(&[
        "pairs",
        &example(),
        "--json",
        "--trials",
        "100000",
        "--seed",
        "2",
    ]);
    assert_ne!(other["random"]["mean"], doc["random"]["mean"]);
    assert_eq!(other["best"], doc["best"]);
}

#[test]
fn the_text_shows_the_matrix_the_schedules_and_the_verdict() {
    let out = smtlab()
        .args(["pairs", &example(), "--trials", "20000"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "  a  1.00  1.50  1.20  1.10\n",
        "Best schedule: speedup 45.0%: a+b, c+d\n",
        "Worst schedule: speedup 10.0%: a+d, b+c\n",
        "Random schedules (20000): mean 26.",
        "periods    mean      5%     50%     95%",
        "Verdict: An ideal scheduler gains 20.0 percentage points (no 95% interval: the matrix \
         was given without samples) over the median random pairing",
    ] {
        assert!(text.contains(want), "{want:?} in\n{text}");
    }
}

#[test]
fn an_odd_count_leaves_one_program_alone() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("three.csv");
    std::fs::write(&f, ",x,y,z\nx,1,1.6,1.2\ny,1.6,1,1.1\nz,1.2,1.1,1\n").unwrap();
    let doc = json(&["pairs", f.to_str().unwrap(), "--json", "--trials", "1000"]);
    // x+y (1.6) with z alone (1): mean 1.3.
    assert_eq!(doc["best"]["pairs"], serde_json::json!([[0, 1], [2, 2]]));
    assert!((f64_at(&doc["best"]["speedup"]) - 0.3).abs() < 1e-9);
    // y+z (1.1) with x alone: 1.05.
    assert_eq!(doc["worst"]["pairs"], serde_json::json!([[0, 0], [1, 2]]));
}

#[test]
fn bad_matrices_are_one_line_naming_the_file_and_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        (",a,b\na,1,2\n", "not square: 1 rows for the 2 programs"),
        (",a,b\na,1,2\nb,2\n", "not square: row 2 (b) has 1 values"),
        (
            ",a,b\na,1,2\nb,3,1\n",
            "not symmetric: (a, b) = 2 but (b, a) = 3",
        ),
        (
            ",a,b\na,1,x\nb,x,1\n",
            "cell (a, b) = \"x\" is not a number",
        ),
        (",a,b\na,1,-1\nb,-1,1\n", "cell (a, b) = -1 is negative"),
        ("", "the matrix is empty"),
    ] {
        let f = dir.path().join("m.csv");
        std::fs::write(&f, text).unwrap();
        let p = f.display().to_string();
        assert_usage_error(&["pairs", &p, "--trials", "10"], needle);
        assert_usage_error(&["pairs", &p, "--trials", "10"], &format!("{p}: "));
    }
    assert_usage_error(
        &["pairs", "/nonexistent/m.csv"],
        "/nonexistent/m.csv: cannot read it",
    );
    assert_usage_error(&["pairs", &example(), "--trials", "0"], "--trials");
    // -o naming a file, not a directory.
    assert_usage_error(&["pairs", &example(), "-o", &example()], "not a directory");
}

#[test]
fn the_report_holds_the_heatmap_the_charts_the_json_and_the_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let run = smtlab()
        .args(["pairs", &example(), "--trials", "20000", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success());
    let text = String::from_utf8(run.stdout).unwrap();
    assert!(
        text.ends_with(&format!("Report: {}\n", out.join("report.html").display())),
        "{text}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("class=\"heatmap\""));
    assert_eq!(html.matches("<svg").count(), 3, "heatmap, CDF, band");
    assert!(html.contains("An ideal scheduler gains 20.0 percentage points"));
    for f in [
        "charts/pairings-heatmap.svg",
        "charts/pairings-heatmap.png",
        "charts/pairings-cdf.svg",
        "charts/pairings-cdf.png",
        "charts/pairings-rerandomized.svg",
        "charts/pairings-rerandomized.png",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // pairs.json is what --json prints for the same seed and trials.
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("pairs.json")).unwrap()).unwrap();
    assert_eq!(
        written,
        json(&["pairs", &example(), "--json", "--trials", "20000"])
    );
    // matrix.csv reads back as the same matrix.
    let back = out.join("matrix.csv");
    let again = json(&[
        "pairs",
        back.to_str().unwrap(),
        "--json",
        "--trials",
        "20000",
    ]);
    assert_eq!(again["matrix"], written["matrix"]);
    assert_eq!(again["programs"], written["programs"]);
}

/// A matrix of `n` programs `p0..` with WS from 0.8 to 2.0, seeded.
fn random_matrix(n: usize, seed: u64) -> String {
    // Each cell a hash of its (unordered) pair: symmetric by construction.
    let ws = |i: usize, j: usize| {
        let mut x = (i.min(j) * n + i.max(j)) as u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for _ in 0..3 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        0.8 + (x % 1201) as f64 / 1000.0
    };
    let names: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    let mut text = format!(",{}\n", names.join(","));
    for (i, name) in names.iter().enumerate() {
        let cells: Vec<String> = (0..n).map(|j| ws(i, j).to_string()).collect();
        text += &format!("{name},{}\n", cells.join(","));
    }
    text
}

#[test]
fn implausible_weighted_speedups_are_refused_naming_the_cell_and_the_bound() {
    // Issue 29: a 4x4 matrix of 1e308 printed "speedup inf%", 300-digit
    // numbers and JSON nulls.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("huge.csv");
    let p = f.display().to_string();
    let huge = "1e308";
    let row = |name: &str| format!("{name},{}\n", [huge; 4].join(","));
    std::fs::write(
        &f,
        format!(",a,b,c,d\n{}{}{}{}", row("a"), row("b"), row("c"), row("d")),
    )
    .unwrap();
    assert_usage_error(
        &["pairs", &p, "--trials", "10"],
        &format!(
            "{p}: cell (a, a) = 1e308 is not a plausible weighted speedup: WS(i,j) adds the two \
             programs' speeds beside each other relative to alone, each above 0 and at most \
             about 1 (a program does not run faster beside another), so a WS must be above 0 and \
             at most 4 (twice as fast as alone for both: room for noise and slowed baselines)"
        ),
    );
    assert_usage_error(&["pairs", &p, "--json"], "cell (a, a) = 1e308 is not");
    for (cells, needle) in [
        (
            "1,4.5,4.5,1",
            "cell (a, b) = 4.5 is not a plausible weighted speedup",
        ),
        (
            "100,145,145,100",
            "cell (a, a) = 100 is not a plausible weighted speedup: WS(i,j) adds",
        ),
        (
            "100,145,145,100",
            "if the matrix holds percentages, divide them by 100 (100 is 1)",
        ),
        (
            "1,0,0,1",
            "cell (a, b) = 0 is not a plausible weighted speedup",
        ),
        ("1,-1e308,-1e308,1", "cell (a, b) = -1e308 is negative"),
        ("1,inf,inf,1", "cell (a, b) = inf is not a finite number"),
        ("1,NaN,NaN,1", "cell (a, b) = NaN is not a finite number"),
        ("1,-inf,-inf,1", "cell (a, b) = -inf is not a finite number"),
    ] {
        let c: Vec<&str> = cells.split(',').collect();
        std::fs::write(
            &f,
            format!(",a,b\na,{},{}\nb,{},{}\n", c[0], c[1], c[2], c[3]),
        )
        .unwrap();
        assert_usage_error(&["pairs", &p, "--trials", "10"], needle);
    }
    // The bound itself, and just above 0, are a matrix.
    std::fs::write(&f, ",a,b\na,1,4\nb,4,0.001\n").unwrap();
    let doc = json(&["pairs", &p, "--json", "--trials", "10"]);
    assert_eq!(doc["best"]["speedup"], 3.0);
    for k in ["mean", "min", "max", "p05", "p50", "p95"] {
        assert_eq!(doc["random"][k], 3.0, "{k}: {}", doc["random"]);
    }
}

#[test]
fn without_trials_up_to_500_programs_draw_ten_million() {
    let doc = json(&["pairs", &example(), "--json"]);
    assert_eq!(doc["random"]["trials"], 10_000_000);
    assert!(
        doc["verdict"]
            .as_str()
            .unwrap()
            .contains("10000000 random pairings"),
        "{}",
        doc["verdict"]
    );
}

/// `command` run on a terminal (`script` gives it one); `None`, with the
/// reason printed, where `script` is missing.
fn on_a_terminal(command: &str) -> Option<(String, std::time::Duration)> {
    let t0 = std::time::Instant::now();
    let out = match std::process::Command::new("script")
        .args(["-qefc", command, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: the progress bar on a terminal needs `script` (util-linux): {e}");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{command}: {text}");
    Some((text, t0.elapsed()))
}

#[test]
fn a_long_analysis_shows_a_progress_bar_only_on_a_terminal_and_not_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("m120.csv");
    std::fs::write(&f, random_matrix(120, 7)).unwrap();
    let file = f.to_str().unwrap();
    // Not on a terminal: nothing on stderr, however long it takes. More
    // trials until a run takes over 3 s here (the bar waits 2 s).
    let mut trials = 1;
    loop {
        let t0 = std::time::Instant::now();
        let out = smtlab()
            .args(["pairs", file, "--trials", &trials.to_string()])
            .output()
            .unwrap();
        let took = t0.elapsed();
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{trials} trials");
        if took.as_secs_f64() > 3.0 || trials >= 64_000_000 {
            break;
        }
        trials = (trials * 2).max(2_000_000);
    }
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_smtlab"));
    let cmd = format!("{} pairs {file} --trials {trials}", bin.display());
    let Some((text, took)) = on_a_terminal(&cmd) else {
        return;
    };
    // Around the 2 s mark a run may or may not have drawn its bar yet.
    if took.as_secs_f64() > 2.5 {
        assert!(
            text.contains("% random schedules, ETA"),
            "no bar after {took:?}: {text}"
        );
    } else {
        eprintln!("the run on a terminal took {took:?}: its bar is not checked");
    }
    // The bar is cleared: the analysis follows it.
    assert!(text.contains("Verdict: An ideal scheduler gains"), "{text}");
    // With --json: the JSON alone, no bar, though on a terminal.
    let (text, _) = on_a_terminal(&format!("{cmd} --json")).unwrap();
    assert!(!text.contains("ETA"), "{text}");
    assert!(text.trim_start().starts_with('{'), "{text}");
    // A short analysis on a terminal: no bar flashes by.
    let (text, took) = on_a_terminal(&format!(
        "{} pairs {} --trials 1000",
        bin.display(),
        example()
    ))
    .unwrap();
    if took.as_secs_f64() < 1.5 {
        assert!(!text.contains("ETA"), "{text}");
    } else {
        eprintln!("the short analysis took {took:?} on this machine: its bar is not checked");
    }
}
