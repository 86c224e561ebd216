//! The HTML report in a real browser: headless Chromium loads a report
//! written from synthetic data, and the test checks that the page loads,
//! logs nothing to the console (no script error, no Content-Security-Policy
//! violation, which is what any attempt to fetch something would cause), and
//! lays out every chart figure, the placement map among them (the data's
//! machine has two packages, two NUMA nodes and SMT).
//!
//! Skipped, with a line on stderr, where Chromium is not installed.
//!
//! And how the browser is run, with `sh` in its place: whatever it leaves
//! running is killed with its process group, on a timeout too.

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::chromium;

use smtlab_analyse::analysis::{
    Analysis, PointData, Recommendation, ScalingPoint, Series, SeriesKey, SmtAdvice, Verdict,
};
use smtlab_report::{write_report, ReportInput};
use smtlab_types::{
    CounterScope, CounterStatus, CounterValue, ResourceUsage, Sample, SampleStatus,
};
use smtlab_types::{HostFacts, RunRecord, RunStatus, Table};
use smtlab_types::{Metric, Mode, Model, Point, Program, Spawn};

/// Say why a test is skipped, straight to stderr (the harness swallows
/// `eprintln!` of passing tests, and a skip must show in CI's log).
fn skip(reason: &str) {
    let _ = std::io::stderr().write_all(format!("skipped: {reason}\n").as_bytes());
}

fn metric() -> Metric {
    Metric {
        name: "ops_per_s".into(),
        unit: "ops/s".into(),
        higher_is_better: true,
    }
}

fn sample(seq: usize, value: f64) -> Sample {
    Sample {
        seq,
        warmup: seq == 0,
        status: SampleStatus::Ok,
        reason: None,
        started_at: 1.7e9,
        wall_s: 1.0,
        ops: Some(value as u64),
        metric: Some(value),
        usage: ResourceUsage {
            voluntary_cs: Some(10),
            involuntary_cs: Some(3),
            ..ResourceUsage::default()
        },
        counters: ["cycles", "instructions"]
            .iter()
            .map(|name| CounterValue {
                name: name.to_string(),
                scope: CounterScope::User,
                status: CounterStatus::Ok,
                raw: Some(1_000_000),
                value: Some(if *name == "cycles" { 1.5e6 } else { 1e6 }),
                fraction_running: Some(1.0),
                reason: None,
            })
            .collect(),
        workers: Vec::new(),
        extras: Default::default(),
    }
}

/// 2 packages (one NUMA node each) x 2 cores x 2 PUs, stored as the CLI
/// stores a run's machine.
fn machine() -> serde_json::Value {
    let t = smtlab_topology::synthetic::parse("package:2 numa:1 core:2 pu:2").unwrap();
    serde_json::to_value(&t).unwrap()
}

struct Data {
    run: RunRecord,
    points: Vec<PointData>,
    samples: Vec<(Point, Vec<Sample>)>,
    analysis: Analysis,
}

fn data() -> Data {
    let mut points = Vec::new();
    let mut samples = Vec::new();
    let mut series = Vec::new();
    let mut verdicts = Vec::new();
    for (m, model) in [(Model::Thread, "thread"), (Model::Process, "process")] {
        let mut spts = Vec::new();
        for n in [1usize, 2] {
            let index = points.len();
            let point = Point {
                index,
                program: Program::Builtin {
                    workload: "<b>kv</b>".into(),
                    params: BTreeMap::new(),
                },
                model: m,
                spawn: Spawn::Exec,
                placement: "scatter".into(),
                workers: n,
                // Where scatter puts them on `machine()`: one PU per core,
                // the second on the other package.
                cpus: Some([0, 4][..n].to_vec()),
                oversubscription: 1.0,
                alloc: "glibc".into(),
                mode: Mode::FixedTime { seconds: 1.0 },
                metric: metric(),
            };
            let base = 1000.0 * n as f64;
            let s: Vec<Sample> = (0..6).map(|q| sample(q, base + q as f64 * 7.0)).collect();
            let report =
                smtlab_analyse::summary::summarize_point(index as i64 + 1, point.clone(), &s, 1);
            let values = s.iter().skip(1).filter_map(|x| x.metric).collect();
            spts.push(ScalingPoint {
                workers: n,
                point_index: index,
                median: base,
                ci95: Some((base * 0.99, base * 1.01)),
                speedup: Some(n as f64 * 0.95),
                speedup_ci95: None,
                efficiency: Some(0.95),
            });
            points.push(PointData {
                summary: report,
                values,
            });
            samples.push((point, s));
            if m == Model::Thread {
                verdicts.push(Verdict {
                    subject: format!("<b>kv</b> at {n} threads (scatter)"),
                    a: "the multi-thread model".into(),
                    b: "the multi-process model".into(),
                    metric: metric(),
                    median_a: base,
                    median_b: base,
                    speed_ratio: 1.02,
                    ci95: Some((1.0, 1.04)),
                    significant: false,
                    sentence: "No difference shown.".into(),
                });
            }
        }
        series.push(Series {
            key: SeriesKey {
                program: "<b>kv</b>".into(),
                alloc: "glibc".into(),
                model: model.into(),
                placement: "scatter".into(),
            },
            metric: metric(),
            points: spts,
            usl: None,
        });
    }
    let analysis = Analysis {
        series,
        smt_yields: Vec::new(),
        model_verdicts: verdicts,
        recommendations: vec![Recommendation {
            program: "<b>kv</b>".into(),
            alloc: "glibc".into(),
            model: "thread".into(),
            placement: "scatter".into(),
            workers: 2,
            median: 2000.0,
            metric: metric(),
            smt: SmtAdvice::Unknown {
                reason: "no SMT".into(),
            },
            sentence: "Use threads.".into(),
        }],
        notes: Vec::new(),
    };
    let run = RunRecord {
        id: 1,
        started_at: 1.7e9,
        finished_at: None,
        status: RunStatus::Complete,
        command_line: vec!["smtlab".into(), "run".into()],
        version: "0.1.0".into(),
        git_commit: None,
        seed: 1,
        config_json: serde_json::json!({}),
        host: HostFacts {
            topology: machine(),
            smt_active: true,
            ..HostFacts::default()
        },
    };
    Data {
        run,
        points,
        samples,
        analysis,
    }
}

#[test]
fn report_renders_in_chromium() {
    let Some(browser) = chromium::chromium() else {
        skip("chromium not installed (apt-get install chromium)");
        return;
    };
    let d = data();
    let tables = vec![Table {
        title: "Pinning".into(),
        columns: vec!["program".into(), "speedup".into()],
        rows: vec![vec!["<b>kv</b>".into(), "1.9".into()]],
        note: None,
    }];
    let input = ReportInput {
        title: "smtlab run 1".into(),
        run: &d.run,
        points: &d.points,
        samples: &d.samples,
        analysis: &d.analysis,
        tables: &tables,
        limits: &["No PMU here.".to_string()],
        verdicts: &["Threads and processes were equally fast.".to_string()],
        notes: &["A note.".to_string()],
        pairs: None,
    };
    let tmp = tempfile::tempdir().unwrap();
    let files = write_report(&input, &tmp.path().join("report")).unwrap();
    let figures: Vec<String> = files
        .charts
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .map(|p| format!("fig-{}", p.file_stem().unwrap().to_string_lossy()))
        .collect();
    assert!(figures.len() >= 4, "{figures:?}");
    assert!(
        figures.iter().any(|f| f == "fig-placement-map"),
        "{figures:?}"
    );

    let page = chromium::render(&browser, &files.html, tmp.path());
    assert!(
        page.dom.contains("<h1>smtlab run 1</h1>"),
        "page did not load:\n{}",
        page.log
    );
    // Every console message is a fault: the page logs nothing itself, so
    // this catches script errors and blocked fetches alike.
    page.assert_figures_drawn(&figures);
    let dom = &page.dom;
    // The hostile label stayed text.
    assert!(!dom.contains("<b>kv</b>"));
    // The placement map names the machine's PUs and the rows measured.
    for text in ["node 1 / core 2 / PU 4", "scatter N=2", "package 1"] {
        assert!(dom.contains(text), "{text} not in the page");
    }
}

/// Whether process `pid` (a number as `sh` printed it) still runs: a
/// zombie does not, its new parent reaps it.
fn runs(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, r)| !r.starts_with('Z'))
    })
}

/// The pid `sh` printed first in `out`.
fn printed_pid(out: &Path) -> String {
    let text = std::fs::read_to_string(out).unwrap();
    let pid = text.lines().next().unwrap_or("").trim().to_string();
    assert!(pid.parse::<u32>().is_ok(), "no pid in {text:?}");
    pid
}

#[test]
fn a_process_the_browser_leaves_running_is_killed_with_its_group() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, err) = (tmp.path().join("out"), tmp.path().join("err"));
    // Exits at once, its child (as a renderer would be) still running.
    let mut sh = Command::new("sh");
    sh.args(["-c", "sleep 60 & echo $!"]);
    let ok = chromium::run_with_limit(sh, tmp.path(), &out, &err, Duration::from_secs(20));
    assert!(ok);
    let pid = printed_pid(&out);
    assert!(!runs(&pid), "sleep {pid} outlived the run");
}

#[test]
fn a_browser_past_its_time_limit_is_killed_with_its_children() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, err) = (tmp.path().join("out"), tmp.path().join("err"));
    let mut sh = Command::new("sh");
    sh.args(["-c", "sleep 60 & echo $!; sleep 60"]);
    let t = std::time::Instant::now();
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        chromium::run_with_limit(sh, tmp.path(), &out, &err, Duration::from_secs(1))
    }));
    let message = run.expect_err("a run past its limit panics");
    let message = message.downcast_ref::<String>().map_or("", String::as_str);
    assert!(message.contains("did not finish within 1s"), "{message}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let pid = printed_pid(&out);
    assert!(!runs(&pid), "sleep {pid} outlived the killed run");
}
