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
