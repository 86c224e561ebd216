//! Report tests on synthetic data: the analysis is built by hand (not by
//! the analysis functions), so these test only the writer.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::*;
use smtlab_analyse::analysis::{
    Analysis, PointData, Recommendation, ScalingPoint, Series, SeriesKey, SiblingYield, SmtAdvice,
    SmtYield, UslFit, Verdict,
};
use smtlab_types::{
    CounterScope, CounterStatus, CounterValue, ResourceUsage, Sample, SampleStatus,
};
use smtlab_types::{HostFacts, RunRecord, RunStatus, Table};
use smtlab_types::{Metric, Mode, Model, Point, Program, Spawn};

fn metric(throughput: bool) -> Metric {
    if throughput {
        Metric {
            name: "ops_per_s".into(),
            unit: "ops/s".into(),
            higher_is_better: true,
        }
    } else {
        Metric {
            name: "wall_time".into(),
            unit: "s".into(),
            higher_is_better: false,
        }
    }
}

fn point(
    index: usize,
    program: &str,
    model: Model,
    placement: &str,
    n: usize,
    throughput: bool,
) -> Point {
    Point {
        index,
        program: Program::Builtin {
            workload: program.into(),
            params: BTreeMap::new(),
        },
        model,
        spawn: Spawn::Exec,
        placement: placement.into(),
        workers: n,
        cpus: (placement != "none").then(|| (0..n as u32).collect()),
        oversubscription: 1.0,
        alloc: "glibc".into(),
        mode: if throughput {
            Mode::FixedTime { seconds: 1.0 }
        } else {
            Mode::FixedWork { work: 8 }
        },
        metric: metric(throughput),
    }
}

fn counter(name: &str, scope: CounterScope, value: Option<f64>) -> CounterValue {
    CounterValue {
        name: name.into(),
        scope,
        status: if value.is_some() {
            CounterStatus::Ok
        } else {
            CounterStatus::Unsupported
        },
        raw: value.map(|v| v as u64),
        value,
        fraction_running: value.map(|_| 1.0),
        reason: value.is_none().then(|| "no PMU: ENOENT".to_string()),
    }
}

fn sample(seq: usize, warmup: bool, status: SampleStatus, value: Option<f64>, hw: bool) -> Sample {
    let ops = 1000 + 10 * seq as u64;
    let mut counters = vec![counter(
        "context-switches",
        CounterScope::All,
        Some(5.0 + seq as f64),
    )];
    if hw {
        counters.push(counter(
            "cycles",
            CounterScope::User,
            Some(3.0e9 + seq as f64),
        ));
        counters.push(counter("instructions", CounterScope::User, Some(2.0e9)));
        counters.push(counter("LLC-load-misses", CounterScope::User, Some(4.0e6)));
    } else {
        counters.push(counter("cycles", CounterScope::User, None));
    }
    Sample {
        seq,
        warmup,
        status,
        reason: (status != SampleStatus::Ok).then(|| "worker 1 exited 3, \"oops\", a,b".into()),
        started_at: 1.7e9 + seq as f64,
        wall_s: 1.0 + 0.01 * seq as f64,
        ops: Some(ops),
        metric: value,
        usage: ResourceUsage {
            user_s: Some(0.9),
            sys_s: Some(0.05),
            voluntary_cs: Some(3 + seq as u64),
            involuntary_cs: Some(2),
            minor_faults: Some(100),
            major_faults: None,
            migrations: Some(1),
            peak_rss_kb: Some(4096),
            pss_kb: None,
            anon_huge_kb: None,
        },
        counters,
        workers: Vec::new(),
        extras: Default::default(),
    }
}

/// Owns everything a [`ReportInput`] borrows.
pub(crate) struct Fixture {
    pub run: RunRecord,
    pub points: Vec<PointData>,
    pub samples: Vec<(Point, Vec<Sample>)>,
    pub analysis: Analysis,
    pub tables: Vec<Table>,
    pub limits: Vec<String>,
    pub verdicts: Vec<String>,
    pub notes: Vec<String>,
}

impl Fixture {
    pub fn input(&self) -> ReportInput<'_> {
        ReportInput {
            title: "smtlab study models — run 3".into(),
            run: &self.run,
            points: &self.points,
            samples: &self.samples,
            analysis: &self.analysis,
            tables: &self.tables,
            limits: &self.limits,
            verdicts: &self.verdicts,
            notes: &self.notes,
            pairs: None,
        }
    }
}

fn key(program: &str, model: &str, placement: &str) -> SeriesKey {
    SeriesKey {
        program: program.into(),
        alloc: "glibc".into(),
        model: model.into(),
        placement: placement.into(),
    }
}

/// Two programs (one with a hostile label), thread and process models at
/// N = 1, 2, 4, a throughput and a time metric, hardware counters for one
/// program only, a failed sample and a warm-up per point.
// A fixture spelled out value by value, read top to bottom: splitting it
// would scatter one run's data over several functions.
#[allow(clippy::too_many_lines)]
pub(crate) fn fixture() -> Fixture {
    let hostile = "<script>alert(1)</script>";
    let mut points = Vec::new();
    let mut samples = Vec::new();
    let mut series = Vec::new();
    let mut idx = 0;
    for (program, throughput, hw) in [("jbb", true, true), (hostile, false, false)] {
        for (model, mname) in [(Model::Thread, "thread"), (Model::Process, "process")] {
            let mut spts = Vec::new();
            for n in [1usize, 2, 4] {
                let p = point(idx, program, model, "compact", n, throughput);
                let base = if throughput {
                    1000.0 * n as f64 * if model == Model::Thread { 1.05 } else { 1.0 }
                } else {
                    8.0 / n as f64
                };
                let mut s = vec![sample(0, true, SampleStatus::Ok, Some(base), hw)];
                for seq in 1..=5 {
                    let v = base * (1.0 + 0.01 * (seq as f64 - 3.0));
                    s.push(sample(seq, false, SampleStatus::Ok, Some(v), hw));
                }
                s.push(sample(6, false, SampleStatus::Failed, None, hw));
                let report =
                    smtlab_analyse::summary::summarize_point(idx as i64 + 1, p.clone(), &s, 7);
                let values = s
                    .iter()
                    .filter(|x| !x.warmup && x.status == SampleStatus::Ok)
                    .filter_map(|x| x.metric)
                    .collect();
                let median = report
                    .summary
                    .as_ref()
                    .map(|m| m.median)
                    .unwrap_or(f64::NAN);
                spts.push(ScalingPoint {
                    workers: n,
                    point_index: idx,
                    median,
                    ci95: report.summary.as_ref().and_then(|m| m.ci95),
                    speedup: Some(n as f64 * 0.9),
                    speedup_ci95: Some((n as f64 * 0.85, n as f64 * 0.95)),
                    efficiency: Some(0.9),
                });
                points.push(PointData {
                    summary: report,
                    values,
                });
                samples.push((p, s));
                idx += 1;
            }
            series.push(Series {
                key: key(program, mname, "compact"),
                metric: metric(throughput),
                points: spts,
                usl: Some(UslFit {
                    lambda: 1000.0,
                    sigma: 0.02,
                    kappa: 0.001,
                    peak_n: Some(31.0),
                    r_squared: 0.99,
                    points: 4,
                    describes_data: true,
                    lambda_ci95: Some((990.0, 1010.0)),
                    sigma_ci95: Some((0.01, 0.03)),
                    kappa_ci95: Some((0.0005, 0.0015)),
                    peak_n_ci95: Some((25.0, 40.0)),
                    min_samples: 5,
                }),
            });
        }
    }
    let verdict = |program: &str, n: usize, ratio: f64, significant: bool| Verdict {
        subject: format!("{program} at {n} threads (compact)"),
        a: "the multi-thread model".into(),
        b: "the multi-process model".into(),
        metric: metric(true),
        median_a: 1050.0,
        median_b: 1000.0,
        speed_ratio: ratio,
        ci95: Some((ratio - 0.02, ratio + 0.02)),
        significant,
        sentence: format!("On this machine threads were {ratio}× as fast for {program}."),
    };
    let analysis = Analysis {
        series,
        smt_yields: vec![SmtYield {
            key: key("jbb", "thread", "compact"),
            core: 0,
            siblings: vec![
                SiblingYield {
                    siblings: 1,
                    relative: 1.0,
                    gain: 0.0,
                    relative_ci95: Some((1.0, 1.0)),
                    gain_ci95: Some((0.0, 0.0)),
                    samples: 5,
                },
                SiblingYield {
                    siblings: 2,
                    relative: 1.2,
                    gain: 0.2,
                    relative_ci95: Some((1.15, 1.25)),
                    gain_ci95: Some((0.15, 0.25)),
                    samples: 5,
                },
            ],
        }],
        model_verdicts: vec![
            verdict("jbb", 1, 1.05, true),
            verdict("jbb", 2, 1.01, false),
            verdict("jbb", 4, 0.97, true),
            verdict(hostile, 2, 1.0, false),
        ],
        recommendations: vec![Recommendation {
            program: "jbb".into(),
            alloc: "glibc".into(),
            model: "thread".into(),
            placement: "compact".into(),
            workers: 4,
            median: 4200.0,
            metric: metric(true),
            smt: SmtAdvice::Unknown {
                reason: "this machine has no SMT".into(),
            },
            sentence: "Run jbb as 4 threads, compact.".into(),
        }],
        notes: vec!["No SMT yield: this machine has no SMT.".into()],
    };
    let topo = smtlab_topology::synthetic::parse("package:1 core:2 pu:1").unwrap();
    let run = RunRecord {
        id: 3,
        started_at: 1.7e9,
        finished_at: Some(1.7e9 + 60.0),
        status: RunStatus::Complete,
        command_line: vec![
            "smtlab".into(),
            "study".into(),
            "models".into(),
            "--label".into(),
            "it's <b>".into(),
        ],
        version: "0.1.0".into(),
        git_commit: Some("abc123".into()),
        seed: 7,
        config_json: serde_json::json!({"seed": 7}),
        host: HostFacts {
            hostname: Some("box".into()),
            kernel: Some("6.1.0".into()),
            cpu_model: Some("Test CPU @ 2GHz".into()),
            topology: serde_json::to_value(&topo).unwrap(),
            smt_active: false,
            governor: Some("performance".into()),
            thp: Some("madvise".into()),
            perf_event_paranoid: Some(2),
            load_avg: Some([0.1, 0.2, 0.3]),
            shared_host: None,
            emulated: None,
        },
    };
    Fixture {
        run,
        points,
        samples,
        analysis,
        tables: vec![Table {
            title: "Pinning".into(),
            columns: vec!["program".into(), "one core".into(), "speedup | x".into()],
            rows: vec![vec!["jbb".into(), "1.0 s".into(), "1.9".into()]],
            note: Some("A note & more.".into()),
        }],
        limits: vec!["This machine has no SMT: SMT yield cannot be measured.".into()],
        verdicts: vec!["Threads were 5% faster than processes for jbb at N = 1.".into()],
        notes: vec![
            "A study note.".into(),
            // Also an analysis note: printed once.
            "No SMT yield: this machine has no SMT.".into(),
        ],
    }
}

#[test]
fn writes_every_file() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let files = write_report(&f.input(), &out).unwrap();
    assert_eq!(files.dir, out);
    assert!(files.html.is_file());
    for p in files.charts.iter().chain(&files.others) {
        assert!(p.is_file(), "{} missing", p.display());
    }
    let names: Vec<String> = files
        .charts
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "runtime-jbb.svg",
        "runtime-jbb.png",
        "speedup-jbb.svg",
        "models-jbb.svg",
        "cpi-jbb.png",
        "mpki-jbb.svg",
        "cswitch-jbb.svg",
        "runtime-script-alert-1-script.svg",
        "models-script-alert-1-script.png",
    ] {
        assert!(
            names.contains(&expected.to_string()),
            "{expected} not in {names:?}"
        );
    }
    // No hardware counters for the second program: its CPI chart is left
    // out, and a note says so.
    assert!(!names.iter().any(|n| n.starts_with("cpi-script")));
    let html = fs::read_to_string(&files.html).unwrap();
    assert!(
        html.contains("No CPI chart for &lt;script&gt;"),
        "note missing"
    );
}

#[test]
fn csv_has_one_row_per_sample() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let files = write_report(&f.input(), dir.path()).unwrap();
    let mut r = csv::Reader::from_path(dir.path().join("samples.csv")).unwrap();
    let header = r.headers().unwrap().clone();
    for col in [
        "run_id",
        "point_index",
        "cpus",
        "metric",
        "voluntary_cs",
        "cycles_user",
        "context-switches_all",
    ] {
        assert!(header.iter().any(|h| h == col), "no column {col}");
    }
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    let expected: usize = f.samples.iter().map(|(_, s)| s.len()).sum();
    assert_eq!(rows.len(), expected);
    assert!(rows.iter().all(|row| row.len() == header.len()));
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    // Quoting survives commas and quotes; absent counters are empty cells.
    let failed = rows.iter().find(|r| &r[col("status")] == "failed").unwrap();
    assert_eq!(&failed[col("reason")], "worker 1 exited 3, \"oops\", a,b");
    assert_eq!(&failed[col("metric")], "");
    assert!(rows.iter().any(|r| r[col("cycles_user")].is_empty()));
    assert!(rows
        .iter()
        .any(|r| r[col("cycles_user")].parse::<f64>().is_ok()));
    assert_eq!(&rows[0][col("cpus")], "0");
    assert_eq!(&rows[0][col("warmup")], "true");
    assert!(files.others.iter().any(|p| p.ends_with("samples.csv")));
}

#[test]
fn json_parses_with_schema() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    write_report(&f.input(), dir.path()).unwrap();
    let text = fs::read_to_string(dir.path().join("results.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], RESULTS_SCHEMA);
    assert_eq!(v["points"].as_array().unwrap().len(), f.points.len());
    assert_eq!(v["run"]["id"], 3);
    assert!(v["analysis"]["model_verdicts"].is_array());
    assert!(!v["charts"].as_array().unwrap().is_empty());
    assert_eq!(v["tables"][0]["title"], "Pinning");
}

#[test]
fn html_is_self_contained_and_escaped() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let files = write_report(&f.input(), dir.path()).unwrap();
    let html = fs::read_to_string(&files.html).unwrap();
    let svgs = files
        .charts
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "svg"));
    for svg in svgs {
        let id = format!("id=\"fig-{}\"", svg.file_stem().unwrap().to_string_lossy());
        assert!(html.contains(&id), "{id} missing");
    }
    assert_eq!(
        html.matches("<figure class=\"chart\"").count(),
        files.charts.len() / 2
    );
    assert!(html.matches("<svg").count() >= files.charts.len() / 2);
    for bad in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "href='http",
        "https://",
        "http://",
    ] {
        assert!(!html.contains(bad), "found {bad}");
    }
    // The hostile label is text everywhere: one <script> element (ours).
    assert_eq!(html.matches("<script").count(), 1);
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<b>"));
    for section in [
        "Verdicts",
        "Recommendations",
        "Honest limits",
        "Pinning",
        "Per-point results",
        "Notes",
        "How it was made",
    ] {
        assert!(html.contains(section), "no section {section}");
    }
    assert!(html.contains("Test CPU @ 2GHz"));
    assert!(html.contains("1 package, 2 cores"), "no topology summary");
    assert!(html.contains("abc123"));
    assert!(html.contains("A study note."));
    assert_eq!(
        html.matches("No SMT yield: this machine has no SMT.")
            .count(),
        1
    );
}

#[test]
fn pngs_are_png() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let files = write_report(&f.input(), dir.path()).unwrap();
    let pngs: Vec<_> = files
        .charts
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    assert!(!pngs.is_empty());
    for p in pngs {
        let bytes = fs::read(p).unwrap();
        assert!(bytes.len() > 1000, "{} too small", p.display());
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", p.display());
    }
}

#[test]
fn markdown_escapes_tables() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    write_report(&f.input(), dir.path()).unwrap();
    let md = fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(md.starts_with("# smtlab study models"));
    assert!(md.contains("speedup \\| x"));
    assert!(md.contains("&lt;script&gt;"));
    assert!(!md.contains("<script>"));
}

#[test]
fn empty_and_nan_data_do_not_panic() {
    let mut f = fixture();
    // One point, N = 1 only, every value NaN or missing.
    f.points.truncate(1);
    f.samples.truncate(1);
    if let Some(s) = f.points[0].summary.summary.as_mut() {
        s.median = f64::NAN;
        s.ci95 = Some((f64::NAN, f64::INFINITY));
    }
    f.analysis.series.truncate(1);
    f.analysis.series[0].points.truncate(1);
    f.analysis.series[0].points[0].speedup = Some(f64::NAN);
    f.analysis.model_verdicts = vec![];
    f.analysis.recommendations[0].median = f64::NAN;
    let dir = tempfile::tempdir().unwrap();
    let files = write_report(&f.input(), dir.path()).unwrap();
    let html = fs::read_to_string(&files.html).unwrap();
    assert!(html.contains("No runtime chart for jbb"));
    assert!(html.contains("No speedup chart for jbb"));

    // Nothing at all.
    let empty = Analysis {
        series: vec![],
        smt_yields: vec![],
        model_verdicts: vec![],
        recommendations: vec![],
        notes: vec![],
    };
    let input = ReportInput {
        title: String::new(),
        run: &f.run,
        points: &[],
        samples: &[],
        analysis: &empty,
        tables: &[],
        limits: &[],
        verdicts: &[],
        notes: &[],
        pairs: None,
    };
    let files = write_report(&input, &dir.path().join("empty")).unwrap();
    assert!(files.charts.is_empty());
    let mut r = csv::Reader::from_path(dir.path().join("empty/samples.csv")).unwrap();
    assert_eq!(r.records().count(), 0);
}

#[test]
fn single_n_charts_still_render() {
    let mut f = fixture();
    f.points.retain(|p| p.summary.point.workers == 1);
    f.samples.retain(|(p, _)| p.workers == 1);
    for s in &mut f.analysis.series {
        s.points.truncate(1);
    }
    let dir = tempfile::tempdir().unwrap();
    let files = write_report(&f.input(), dir.path()).unwrap();
    assert!(files.charts.iter().any(|p| p.ends_with("runtime-jbb.svg")));
    assert!(files.charts.iter().any(|p| p.ends_with("speedup-jbb.png")));
}

#[test]
fn errors_name_the_file() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    fs::write(&blocker, "x").unwrap();
    let err = write_report(&f.input(), &blocker.join("sub")).unwrap_err();
    assert!(err.to_string().contains("file/sub"), "{err}");
}

/// Many lines over a wide range of N, long labels: the layout must hold.
fn crowded() -> Fixture {
    let mut f = fixture();
    let mut points = Vec::new();
    let mut samples = Vec::new();
    let mut idx = 0;
    let placements = [
        "compact",
        "scatter",
        "S0:0-3,8-11@numa-interleave",
        "spread",
    ];
    for model in [Model::Thread, Model::Process] {
        for placement in placements {
            for n in [1usize, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64] {
                let p = point(idx, "jbb", model, placement, n, true);
                let base = 1000.0 * (n as f64).powf(0.8) * (1.0 + idx as f64 * 0.003);
                let s: Vec<Sample> = (0..5)
                    .map(|q| {
                        sample(
                            q,
                            q == 0,
                            SampleStatus::Ok,
                            Some(base * (1.0 + 0.002 * q as f64)),
                            true,
                        )
                    })
                    .collect();
                let report =
                    smtlab_analyse::summary::summarize_point(idx as i64 + 1, p.clone(), &s, 7);
                points.push(PointData {
                    summary: report,
                    values: vec![],
                });
                samples.push((p, s));
                idx += 1;
            }
        }
    }
    f.points = points;
    f.samples = samples;
    f.analysis.series.clear();
    f
}

/// Writes the fixture's report to `$SMTLAB_REPORT_PREVIEW` to look at.
#[test]
#[ignore]
fn preview() {
    let dir = std::env::var("SMTLAB_REPORT_PREVIEW").unwrap();
    write_report(&fixture().input(), Path::new(&dir)).unwrap();
    write_report(&crowded().input(), &Path::new(&dir).join("crowded")).unwrap();
}
