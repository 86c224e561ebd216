//! `smtlab pairs MATRIX.csv`: the hand-checkable 4x4 example, the JSON
//! shape scripts rely on, bad matrices refused in one line, and `-o`.

mod support;

use support::{assert_usage_error, json, smtlab};

use std::path::Path;

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/pairs-4.csv")
        .display()
        .to_string()
}

#[test]
fn the_four_program_example_gives_the_optimum_a_person_checks_by_hand() {
    // a+b (1.5) with c+d (1.4): mean 1.45; a+c, b+d: 1.25; a+d, b+c: 1.10.
    let doc = json(&["pairs", &example(), "--json", "--trials", "100000"]);
    assert_eq!(doc["programs"], serde_json::json!(["a", "b", "c", "d"]));
    assert_eq!(doc["matrix"][0][1], 1.5);
    assert_eq!(doc["best"]["pairs"], serde_json::json!([[0, 1], [2, 3]]));
    assert!((doc["best"]["speedup"].as_f64().unwrap() - 0.45).abs() < 1e-9);
    assert_eq!(doc["worst"]["pairs"], serde_json::json!([[0, 3], [1, 2]]));
    assert!((doc["worst"]["speedup"].as_f64().unwrap() - 0.10).abs() < 1e-9);
    let r = &doc["random"];
    assert_eq!(r["trials"], 100_000);
    // Each of the three schedules a third of the time.
    assert!(
        (r["mean"].as_f64().unwrap() - 0.8 / 3.0).abs() < 0.005,
        "{r}"
    );
    assert!((r["min"].as_f64().unwrap() - 0.10).abs() < 1e-9);
    assert!((r["max"].as_f64().unwrap() - 0.45).abs() < 1e-9);
    for k in ["p05", "p50", "p95"] {
        assert!(r[k].is_number(), "{k}");
    }
    // The same seed, the same numbers.
    let again = json(&["pairs", &example(), "--json", "--trials", "100000"]);
    assert_eq!(again, doc);
}

#[test]
fn an_odd_count_leaves_one_program_alone() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("three.csv");
    std::fs::write(&f, ",x,y,z\nx,1,1.6,1.2\ny,1.6,1,1.1\nz,1.2,1.1,1\n").unwrap();
    let doc = json(&["pairs", f.to_str().unwrap(), "--json", "--trials", "1000"]);
    assert_eq!(doc["best"]["pairs"], serde_json::json!([[0, 1], [2, 2]]));
    assert!((doc["best"]["speedup"].as_f64().unwrap() - 0.3).abs() < 1e-9);
}

#[test]
fn bad_matrices_are_one_line_naming_the_file_and_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        (",a,b\na,1,2\n", "not square"),
        (",a,b\na,1,2\nb,3,1\n", "not symmetric"),
        (",a,b\na,1,x\nb,x,1\n", "is not a number"),
        (",a,b\na,1,-1\nb,-1,1\n", "is negative"),
    ] {
        let f = dir.path().join("m.csv");
        std::fs::write(&f, text).unwrap();
        let p = f.display().to_string();
        assert_usage_error(&["pairs", &p, "--trials", "10"], needle);
        assert_usage_error(&["pairs", &p, "--trials", "10"], &p);
    }
    assert_usage_error(&["pairs", "/nonexistent/m.csv"], "cannot read it");
}

#[test]
fn the_report_holds_the_heatmap_the_charts_and_the_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    smtlab()
        .args(["pairs", &example(), "--trials", "20000", "-o"])
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("class=\"heatmap\""));
    assert!(html.contains("<svg"));
    assert!(html.contains("An ideal scheduler gains"));
    for f in [
        "charts/pairings-cdf.svg",
        "charts/pairings-cdf.png",
        "charts/pairings-rerandomized.svg",
        "pairs.json",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let back = std::fs::read_to_string(out.join("matrix.csv")).unwrap();
    assert!(back.starts_with(",a,b,c,d"), "{back}");
}
