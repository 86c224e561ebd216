//! `study`, `report` and `compare` end to end: plans for machines this one
//! is not (dry runs), the honest no-SMT limits, real studies with small
//! problem sizes whose verdicts must agree with their own tables, and the
//! report's files.

mod support;

#[path = "../../smtlab-report/tests/support/chromium.rs"]
mod chromium;

use std::path::Path;

use serde_json::Value;
use support::{assert_success, assert_usage_error, json, skip, smtlab};

fn this_machine_has_smt() -> bool {
    json(&["topology", "--json"])["smt_active"]
        .as_bool()
        .unwrap_or(false)
}

#[test]
fn pinning_plan_for_a_t2_lays_out_both_placements() {
    let doc = json(&[
        "study",
        "pinning",
        "--synthetic",
        "core:8 pu:8",
        "--dry-run",
        "--json",
        "-w",
        "spin",
    ]);
    assert_eq!(doc["study"], "pinning");
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{doc:#}");
    let cpus = |placement: &str| -> Vec<u64> {
        let p = points
            .iter()
            .find(|p| p["placement"] == placement)
            .unwrap_or_else(|| panic!("no {placement} point in {doc:#}"));
        assert_eq!(p["workers"], 8);
        p["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect()
    };
    // Synthetic PUs are numbered core by core: core 0 holds PUs 0-7.
    assert_eq!(cpus("compact"), (0..8).collect::<Vec<_>>());
    assert_eq!(cpus("core"), (0..8).map(|c| c * 8).collect::<Vec<_>>());
    assert_eq!(doc["limits"].as_array().map(|l| l.len()), Some(0));
}

#[test]
fn plans_for_a_power7_sized_machine_in_text() {
    let out = smtlab()
        .args([
            "study",
            "cores",
            "--synthetic",
            "package:4 core:8 pu:8",
            "--dry-run",
            "-w",
            "jbb",
            "--model",
            "thread",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("6 points:"), "{text}");
    // N = 32: one PU per core on all 32 cores, the first PU of each.
    assert!(text.contains("0,8,16,24"), "{text}");
}

#[test]
fn pinning_plan_from_a_real_power7_dump() {
    // 256 PUs: 8 NUMA nodes x 8 cores x SMT4 (hwloc's 256ppc-8n8s4t).
    let tmp = tempfile::tempdir().unwrap();
    let root = support::dump("256ppc-8n8s4t", tmp.path());
    let doc = json(&[
        "study",
        "pinning",
        "--fsroot",
        root.to_str().unwrap(),
        "--dry-run",
        "--json",
        "-w",
        "jbb",
    ]);
    let cpus: Vec<(String, Value)> = doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["placement"].as_str().unwrap().to_string(),
                p["cpus"].clone(),
            )
        })
        .collect();
    assert_eq!(
        cpus,
        vec![
            ("compact".to_string(), serde_json::json!([0, 1, 2, 3])),
            ("core".to_string(), serde_json::json!([0, 4, 8, 12])),
        ]
    );
    let smt = json(&[
        "study",
        "smt",
        "--fsroot",
        root.to_str().unwrap(),
        "--dry-run",
        "--json",
        "-w",
        "jbb",
    ]);
    assert_eq!(
        smt["points"].as_array().unwrap().len(),
        8,
        "1-4 threads x 2 models"
    );
    assert_eq!(smt["limits"].as_array().map(|l| l.len()), Some(0));
}

#[test]
fn without_smt_the_smt_and_pinning_studies_say_so() {
    for study in ["smt", "pinning"] {
        let doc = json(&[
            "study",
            study,
            "--synthetic",
            "core:2 pu:1",
            "--dry-run",
            "--json",
        ]);
        let limits = doc["limits"].as_array().unwrap();
        assert_eq!(limits.len(), 1, "{doc:#}");
        let l = limits[0].as_str().unwrap();
        assert!(
            l.contains("no SMT") && l.contains("2 or more PUs per core"),
            "{l}"
        );
    }
    if this_machine_has_smt() {
        skip("this machine has SMT: its live smt plan has no limit to check");
        return;
    }
    let doc = json(&["study", "smt", "--dry-run", "--json", "-w", "spin"]);
    assert!(doc["limits"][0].as_str().unwrap().contains("no SMT"));
}

#[test]
fn bad_study_input_is_one_line_exit_2() {
    assert_usage_error(&["study", "smtt", "--dry-run"], "study `smtt`");
    assert_usage_error(
        &["study", "models", "-w", "nope", "--dry-run"],
        "--workload nope",
    );
    assert_usage_error(
        &["study", "models", "--synthetic", "core:2 pu:2"],
        "--dry-run",
    );
    assert_usage_error(
        &["study", "cores", "-n", "64", "--dry-run", "-w", "spin"],
        "64 workers",
    );
    // A parameter value of the wrong type is refused at plan time.
    assert_usage_error(
        &[
            "study",
            "models",
            "-w",
            "jbb",
            "--param",
            "customers=x",
            "--dry-run",
        ],
        "--param customers=x",
    );
    assert_usage_error(
        &["run", "-w", "stream", "--param", "size=lots", "--dry-run"],
        "--param size=lots",
    );
}

/// The JSON of a finished study; its report goes to `dir`.
fn study(args: &[&str], dir: &Path, db: &Path) -> Value {
    let mut all = vec!["study"];
    all.extend_from_slice(args);
    let dir = dir.to_str().unwrap();
    let db = db.to_str().unwrap();
    all.extend_from_slice(&[
        "--json",
        "--no-counters",
        "--warmup",
        "0",
        "--min-samples",
        "4",
        "--max-samples",
        "4",
        "--seed",
        "5",
        "-o",
        dir,
        "--db",
        db,
    ]);
    json(&all)
}

fn medians(doc: &Value) -> Vec<(String, u64, f64)> {
    doc["analysis"]["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            let model = s["key"]["model"].as_str().unwrap().to_string();
            s["points"].as_array().unwrap().iter().map(move |p| {
                (
                    model.clone(),
                    p["workers"].as_u64().unwrap(),
                    p["median"].as_f64().unwrap(),
                )
            })
        })
        .collect()
}

#[test]
fn models_study_verdicts_agree_with_the_table_and_the_report_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("report");
    let doc = study(
        &[
            "models",
            "-w",
            "jbb",
            "--param",
            "items=2000",
            "--param",
            "customers=300",
            "--param",
            "initial_orders=300",
            "--duration",
            "150ms",
        ],
        &dir,
        &tmp.path().join("s.db"),
    );
    assert_eq!(doc["study"], "models");
    let med = medians(&doc);
    let verdicts = doc["analysis"]["model_verdicts"].as_array().unwrap();
    let cpus = json(&["topology", "--json"]);
    let pus = cpus["pus"].as_array().map_or(1, |p| p.len()).max(1) as u64;
    assert_eq!(verdicts.len() as u64, pus.min(16), "{doc:#}");
    for v in verdicts {
        let subject = v["subject"].as_str().unwrap();
        let n: u64 = subject
            .split(" at ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no N in {subject}"));
        let find = |m: &str| {
            med.iter()
                .find(|(mm, w, _)| mm == m && *w == n)
                .map(|x| x.2)
                .unwrap()
        };
        let (thread, process) = (find("thread"), find("process"));
        let ratio = v["speed_ratio"].as_f64().unwrap();
        // Throughput: thread / process.
        assert!((ratio - thread / process).abs() < 1e-9, "{v:#}");
        let sentence = v["sentence"].as_str().unwrap();
        if v["significant"].as_bool().unwrap() {
            let word = if ratio > 1.0 { "faster" } else { "slower" };
            assert!(sentence.contains(word), "{sentence} vs ratio {ratio}");
            let (lo, hi) = (
                v["ci95"][0].as_f64().unwrap(),
                v["ci95"][1].as_f64().unwrap(),
            );
            assert!(lo > 1.0 || hi < 1.0, "significant but CI spans 1: {v:#}");
        } else {
            assert!(sentence.contains("no significant difference"), "{sentence}");
        }
        assert!(doc["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == sentence));
    }
    assert!(!doc["recommendations"].as_array().unwrap().is_empty());
    for f in ["report.html", "summary.md", "samples.csv", "results.json"] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let csv = std::fs::read_to_string(dir.join("samples.csv")).unwrap();
    let samples: u64 = med.len() as u64 * 4;
    assert_eq!(csv.lines().count() as u64, samples + 1, "{csv}");
    opens_in_chromium_with_every_chart(&dir, tmp.path());
}

/// The study's own report loads in headless Chromium with no console
/// message, and every chart written to charts/ is drawn on the page (the
/// browser run as every test runs it: its own process group, its files in
/// `tmp`, nothing of it left afterwards).
fn opens_in_chromium_with_every_chart(dir: &Path, tmp: &Path) {
    let Some(browser) = chromium::chromium() else {
        skip("chromium not installed (apt-get install chromium): report not opened");
        return;
    };
    let figures = chromium::figures_in(dir);
    assert!(
        figures.len() >= 3,
        "runtime, speedup and model charts at least"
    );
    let scratch = tmp.join("chromium");
    std::fs::create_dir_all(&scratch).unwrap();
    chromium::render(
        &browser,
        &dir.join("report.html").canonicalize().unwrap(),
        &scratch,
    )
    .assert_figures_drawn(&figures);
}

#[test]
fn oversub_study_table_and_verdicts_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let doc = study(
        &[
            "oversub",
            "-w",
            "parfib",
            "--param",
            "n=30",
            "--param",
            "threshold=18",
        ],
        &tmp.path().join("r"),
        &tmp.path().join("s.db"),
    );
    let table = &doc["tables"][0];
    assert!(table["title"]
        .as_str()
        .unwrap()
        .starts_with("Oversubscription"));
    let rows = table["rows"].as_array().unwrap();
    let threads: Vec<u64> = rows
        .iter()
        .map(|r| r[1].as_str().unwrap().parse().unwrap())
        .collect();
    let pus = json(&["topology", "--json"])["pus"]
        .as_array()
        .map_or(1, |p| p.len()) as u64;
    assert_eq!(threads.last(), Some(&(4 * pus)), "{table:#}");
    let med = medians(&doc);
    let time_at = |n: u64| med.iter().find(|m| m.1 == n).map(|m| m.2).unwrap();
    let verdict_sentences: Vec<&str> = doc["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for n in threads.iter().filter(|&&n| n > pus) {
        let s = verdict_sentences
            .iter()
            .find(|s| {
                s.contains(&format!("{n} threads was"))
                    || s.contains(&format!("between {n} threads"))
            })
            .unwrap_or_else(|| panic!("no verdict for {n} threads in {verdict_sentences:#?}"));
        if s.contains("slower") {
            assert!(time_at(*n) > time_at(pus), "{s}");
        } else if s.contains("faster") {
            assert!(time_at(*n) < time_at(pus), "{s}");
        }
    }
    if !doc["limits"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l.as_str().unwrap().contains("Instructions per run"))
    {
        // --no-counters: the instructions column must say why it is empty.
        panic!("expected the instructions limit with --no-counters: {doc:#}");
    }
}

#[test]
fn report_and_compare_work_on_plain_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let db = db.to_str().unwrap();
    for seed in ["1", "2"] {
        json(&[
            "run",
            "-w",
            "spin",
            "--model",
            "thread,process",
            "-n",
            "1",
            "--duration",
            "60ms",
            "--warmup",
            "0",
            "--min-samples",
            "3",
            "--max-samples",
            "3",
            "--no-counters",
            "--seed",
            seed,
            "--db",
            db,
            "--json",
        ]);
    }
    let dir = tmp.path().join("rep");
    let out = smtlab()
        .args(["report", "1", "--db", db, "-o", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_success(&out, "report 1");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<svg"));
    let cmp = json(&["compare", "2", "1", "--db", db, "--json"]);
    let pts = cmp["comparison"]["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2, "{cmp:#}");
    for p in pts {
        let v = &p["verdict"];
        let r = v["speed_ratio"].as_f64().unwrap();
        let expect = v["median_a"].as_f64().unwrap() / v["median_b"].as_f64().unwrap();
        assert!((r - expect).abs() < 1e-9);
    }
    let text = smtlab()
        .args(["compare", "2", "1", "--db", db])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("A/B speed") && text.contains("spin thread compact N=1"),
        "{text}"
    );
    assert_usage_error(&["compare", "2", "9", "--db", db], "run 9");
    assert_usage_error(&["report", "x", "--db", db], "RUN x");
}

#[test]
fn alloc_study_table_agrees_with_its_verdicts() {
    if smtlab_allocators::find_allocator("mimalloc").is_err() {
        skip("mimalloc not installed (apt-get install libmimalloc2.0)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let doc = study(
        &[
            "alloc",
            "-w",
            "larson,allocprobe",
            "--alloc",
            "glibc,mimalloc",
            "--duration",
            "100ms",
        ],
        &tmp.path().join("r"),
        &tmp.path().join("s.db"),
    );
    let table = doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == "Allocators")
        .unwrap_or_else(|| panic!("no allocator table: {doc:#}"));
    let rows = table["rows"].as_array().unwrap();
    // 2 programs x 2 models x 2 allocators.
    assert_eq!(rows.len(), 8, "{table:#}");
    for r in rows {
        let cell = |i: usize| r[i].as_str().unwrap().to_string();
        let (prog, model, alloc) = (cell(0), cell(1), cell(2));
        if alloc == "glibc" {
            assert_eq!(cell(4), "-");
            continue;
        }
        // The ratio in the table is the verdict's ratio.
        let ratio: f64 = cell(4).split('x').next().unwrap().parse().unwrap();
        let subject = format!("{prog} in the {model} model at N = ");
        let sentence = doc["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .find(|s| s.contains(&subject) && s.contains(&alloc))
            .unwrap_or_else(|| panic!("no verdict for {alloc} {subject}"));
        if sentence.contains("faster") {
            assert!(ratio > 1.0, "{sentence} vs {ratio}");
        } else if sentence.contains("slower") {
            assert!(ratio < 1.0, "{sentence} vs {ratio}");
        }
        if prog == "allocprobe" {
            let share = cell(7);
            assert!(share.ends_with('%'), "foreign share {share}");
        }
    }
}
