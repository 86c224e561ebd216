//! The report writer: a measured, analysed run as files a person (and a
//! script) can read.
//!
//! [`write_report`] writes into one directory:
//! * `report.html`: one self-contained page (inline CSS and SVG charts,
//!   nothing fetched: a Content-Security-Policy forbids it), so it can be
//!   mailed or archived as one file and still read in ten years;
//! * `charts/NAME.svg` and `charts/NAME.png`: every chart, for slides and
//!   papers;
//! * `summary.md`: the verdicts and tables, for issues and chat;
//! * `samples.csv`: every stored sample, one row each (tidy), for pandas or
//!   R — the raw data, so a reader can check any claim of the report;
//! * `results.json`: the per-point reports and the analysis, for scripts.
//!
//! Everything from data is escaped where it is written (HTML by minijinja's
//! auto-escaping, SVG by plotters, CSV by the `csv` crate, Markdown here),
//! because program labels and command lines are user input.
//!
//! The report consumes `smtlab_analyse::analysis`'s types; it computes no
//! statistics of its own except per-sample context-switch rates for a chart.

mod charts;
mod draw;
mod text;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;

use smtlab_analyse::analysis::{Analysis, PointData, SmtAdvice};
use smtlab_analyse::summary::PointSummary;
use smtlab_types::Sample;
use smtlab_types::{Mode, Point, Program};
use smtlab_types::{RunRecord, Table};

/// The `schema` field of `results.json`; bump on incompatible changes.
pub const RESULTS_SCHEMA: &str = "smtlab.report/1";

/// The HTML template, embedded so the binary needs no data files.
const TEMPLATE: &str = include_str!("template.html");

/// Everything a report shows. Borrowed: the caller owns the run's data.
pub struct ReportInput<'a> {
    /// e.g. "smtlab study models — run 3".
    pub title: String,
    pub run: &'a RunRecord,
    /// Every point, plan order.
    pub points: &'a [PointData],
    /// Every stored sample of every point (warm-ups and failures too), for
    /// `samples.csv`.
    pub samples: &'a [(Point, Vec<Sample>)],
    pub analysis: &'a Analysis,
    pub tables: &'a [Table],
    /// "Honest limits": what this machine cannot show.
    pub limits: &'a [String],
    /// The verdict sentences, printed first.
    pub verdicts: &'a [String],
    /// Notes for the Notes section (e.g. a study's). The analysis' notes
    /// and the charts left out are added by the writer; a note given twice
    /// is printed once.
    pub notes: &'a [String],
}

/// What [`write_report`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportFiles {
    pub dir: PathBuf,
    pub html: PathBuf,
    /// `charts/NAME.svg` and `charts/NAME.png` of every chart.
    pub charts: Vec<PathBuf>,
    /// `summary.md`, `samples.csv`, `results.json`.
    pub others: Vec<PathBuf>,
}

/// Why a report could not be written; each names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("report: cannot create directory {}: {source}", path.display())]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("report: cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("report: cannot write {}: {source}", path.display())]
    Csv { path: PathBuf, source: csv::Error },
    #[error("report: cannot write {}: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("report: cannot draw chart {}: {message}", path.display())]
    Chart { path: PathBuf, message: String },
    #[error("report: cannot render {}: {source}", path.display())]
    Template {
        path: PathBuf,
        source: minijinja::Error,
    },
}

/// Write the report of `input` into `dir` (created if missing; files of an
/// earlier report there are replaced).
pub fn write_report(input: &ReportInput, dir: &Path) -> Result<ReportFiles, ReportError> {
    let chart_dir = dir.join("charts");
    fs::create_dir_all(&chart_dir).map_err(|source| ReportError::CreateDir {
        path: chart_dir.clone(),
        source,
    })?;

    let (specs, chart_notes) = charts::build(input);
    let mut drawn = Vec::new();
    let mut chart_files = Vec::new();
    for spec in specs {
        let svg_path = chart_dir.join(format!("{}.svg", spec.name));
        let png_path = chart_dir.join(format!("{}.png", spec.name));
        let svg = draw::render_svg(&spec.plot).map_err(|message| ReportError::Chart {
            path: svg_path.clone(),
            message,
        })?;
        write_file(&svg_path, svg.as_bytes())?;
        draw::render_png(&spec.plot, &png_path).map_err(|message| ReportError::Chart {
            path: png_path.clone(),
            message,
        })?;
        chart_files.push(svg_path);
        chart_files.push(png_path);
        drawn.push(DrawnChart { spec, svg });
    }

    let mut notes: Vec<String> = Vec::new();
    for n in input
        .notes
        .iter()
        .chain(&input.analysis.notes)
        .chain(&chart_notes)
    {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }

    let csv_path = dir.join("samples.csv");
    write_csv(input, &csv_path)?;

    let json_path = dir.join("results.json");
    let json = results_json(input, &drawn, &notes);
    let text = serde_json::to_string_pretty(&json).map_err(|source| ReportError::Json {
        path: json_path.clone(),
        source,
    })?;
    write_file(&json_path, text.as_bytes())?;

    let md_path = dir.join("summary.md");
    write_file(&md_path, markdown(input, &notes).as_bytes())?;

    let html_path = dir.join("report.html");
    let html = html(input, &drawn, &notes).map_err(|source| ReportError::Template {
        path: html_path.clone(),
        source,
    })?;
    write_file(&html_path, html.as_bytes())?;

    Ok(ReportFiles {
        dir: dir.to_path_buf(),
        html: html_path,
        charts: chart_files,
        others: vec![md_path, csv_path, json_path],
    })
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    fs::write(path, bytes).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

struct DrawnChart {
    spec: charts::ChartSpec,
    svg: String,
}

// ---------------------------------------------------------------------------
// Formatting shared by the HTML and the Markdown.

/// A number for a table: at most 4 significant digits, scientific outside
/// 0.001..1e6, `n/a` when not finite.
pub(crate) fn num(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{x:.3e}");
    }
    let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.decimals$}");
    // 0.9700 → 0.97: trailing zeros suggest a precision no one measured.
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn ci_text(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!("{} – {}", num(lo), num(hi)),
        None => "—".into(),
    }
}

fn unix_time(t: f64) -> String {
    if !(0.0..1e11).contains(&t) {
        return "unknown".into();
    }
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs_f64(t)).to_string()
}

/// The command line as a shell would take it back.
fn shell_line(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let safe = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if safe {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn program_spec(p: &Program) -> String {
    match p {
        Program::Builtin { workload, params } => {
            let mut s = workload.clone();
            for (k, v) in params {
                write!(s, " {k}={v}").ok();
            }
            s
        }
        Program::Command { template } => template.clone(),
    }
}

fn cpus_spaced(p: &Point) -> String {
    match &p.cpus {
        Some(c) => c
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        None => String::new(),
    }
}

fn metric_text(p: &Point) -> String {
    if p.metric.unit.is_empty() {
        p.metric.name.clone()
    } else {
        format!("{} ({})", p.metric.name, p.metric.unit)
    }
}

/// Facts about the machine, as (name, value) pairs; absent facts omitted.
fn machine_facts(run: &RunRecord) -> Vec<(String, String)> {
    let h = &run.host;
    let mut out = Vec::new();
    let mut add = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push((k.to_string(), v));
        }
    };
    add("host", h.hostname.clone());
    add("CPU", h.cpu_model.clone());
    let topo = serde_json::from_value::<smtlab_topology::Topology>(h.topology.clone())
        .ok()
        .map(|t| smtlab_topology::summary_line(&t));
    add("topology", topo);
    add(
        "SMT active",
        Some(if h.smt_active { "yes" } else { "no" }.into()),
    );
    add("kernel", h.kernel.clone());
    add("frequency governor", h.governor.clone());
    add("transparent huge pages", h.thp.clone());
    add(
        "perf_event_paranoid",
        h.perf_event_paranoid.map(|v| v.to_string()),
    );
    add(
        "load average before the run",
        h.load_avg
            .map(|l| format!("{:.2} {:.2} {:.2} (1, 5, 15 min)", l[0], l[1], l[2])),
    );
    out
}

fn provenance(run: &RunRecord) -> Vec<(String, String)> {
    vec![
        ("run".into(), run.id.to_string()),
        ("status".into(), run.status.to_string()),
        ("command line".into(), shell_line(&run.command_line)),
        ("smtlab version".into(), run.version.clone()),
        (
            "git commit".into(),
            run.git_commit.clone().unwrap_or_else(|| "unknown".into()),
        ),
        ("seed".into(), run.seed.to_string()),
        ("started".into(), unix_time(run.started_at)),
        (
            "finished".into(),
            run.finished_at
                .map(unix_time)
                .unwrap_or_else(|| "not finished".into()),
        ),
    ]
}

/// One row of the per-point table.
#[derive(Debug, Clone, Serialize)]
struct PointRow {
    index: usize,
    program: String,
    alloc: String,
    model: String,
    placement: String,
    workers: usize,
    cpus: String,
    metric: String,
    median: String,
    ci: String,
    rel: String,
    samples: usize,
    warmups: usize,
    failed: usize,
    failures: String,
    cpi: String,
}

fn point_rows(points: &[PointData]) -> Vec<PointRow> {
    points
        .iter()
        .map(|p| {
            let r: &PointSummary = &p.report;
            let pt = &r.point;
            PointRow {
                index: pt.index,
                program: pt.program.label(),
                alloc: pt.alloc.clone(),
                model: pt.model.to_string(),
                placement: pt.placement.clone(),
                workers: pt.workers,
                cpus: match &pt.cpus {
                    Some(_) => cpus_spaced(pt),
                    None => "unpinned".into(),
                },
                metric: metric_text(pt),
                median: r
                    .summary
                    .as_ref()
                    .map(|s| num(s.median))
                    .unwrap_or_else(|| "—".into()),
                ci: ci_text(r.summary.as_ref().and_then(|s| s.ci95)),
                rel: r
                    .summary
                    .as_ref()
                    .and_then(|s| s.ci_half_width_rel)
                    .filter(|v| v.is_finite())
                    .map(|v| format!("±{:.1}%", v * 100.0))
                    .unwrap_or_else(|| "—".into()),
                samples: r.samples,
                warmups: r.warmups,
                failed: r.failed,
                failures: r.failures.join("; "),
                cpi: r.derived.cpi.map(num).unwrap_or_default(),
            }
        })
        .collect()
}

fn smt_text(a: &SmtAdvice) -> String {
    match a {
        SmtAdvice::Pays { gain } => format!(
            "SMT pays: the second sibling added {:.0}% of a lone thread",
            gain * 100.0
        ),
        SmtAdvice::DoesNotPay { gain } => format!(
            "SMT does not pay: the second sibling added {:.0}% of a lone thread",
            gain * 100.0
        ),
        SmtAdvice::Unknown { reason } => format!("SMT: not known ({reason})"),
    }
}

// ---------------------------------------------------------------------------
// samples.csv

/// The fixed columns of `samples.csv`; counters follow as `NAME_SCOPE`.
const CSV_COLUMNS: [&str; 31] = [
    "run_id",
    "point_index",
    "program",
    "program_spec",
    "alloc",
    "model",
    "spawn",
    "placement",
    "workers",
    "processes",
    "threads_per_process",
    "cpus",
    "mode",
    "seq",
    "warmup",
    "status",
    "reason",
    "started_at",
    "metric_name",
    "metric_unit",
    "metric",
    "wall_s",
    "ops",
    "user_s",
    "sys_s",
    "voluntary_cs",
    "involuntary_cs",
    "minor_faults",
    "major_faults",
    "peak_rss_kb",
    "pss_kb",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// A float for the CSV: shortest round-trip form, empty when not finite
/// (pandas reads an empty cell as NaN).
fn float(v: f64) -> String {
    if v.is_finite() {
        v.to_string()
    } else {
        String::new()
    }
}

fn write_csv(input: &ReportInput, path: &Path) -> Result<(), ReportError> {
    let err = |source: csv::Error| ReportError::Csv {
        path: path.to_path_buf(),
        source,
    };
    // Every counter seen in any sample gets a column, in a stable order.
    let counters: BTreeSet<(String, &'static str)> = input
        .samples
        .iter()
        .flat_map(|(_, s)| s.iter())
        .flat_map(|s| s.counters.iter())
        .map(|c| (c.name.clone(), c.scope.as_str()))
        .collect();
    let mut w = csv::Writer::from_path(path).map_err(err)?;
    let mut header: Vec<String> = CSV_COLUMNS.iter().map(|c| c.to_string()).collect();
    header.extend(counters.iter().map(|(n, s)| format!("{n}_{s}")));
    w.write_record(&header).map_err(err)?;
    for (point, samples) in input.samples {
        let (procs, threads) = point.model.shape(point.workers);
        let mode = match point.mode {
            Mode::FixedTime { seconds } => format!("fixed_time:{seconds}s"),
            Mode::FixedWork { work } => format!("fixed_work:{work}"),
        };
        let spawn = serde_json::to_value(point.spawn)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        for s in samples {
            let u = &s.usage;
            let mut row: Vec<String> = vec![
                input.run.id.to_string(),
                point.index.to_string(),
                point.program.label(),
                program_spec(&point.program),
                point.alloc.clone(),
                point.model.to_string(),
                spawn.clone(),
                point.placement.clone(),
                point.workers.to_string(),
                procs.to_string(),
                threads.to_string(),
                cpus_spaced(point),
                mode.clone(),
                s.seq.to_string(),
                s.warmup.to_string(),
                s.status.as_str().to_string(),
                s.reason.clone().unwrap_or_default(),
                float(s.started_at),
                point.metric.name.clone(),
                point.metric.unit.clone(),
                s.metric.map(float).unwrap_or_default(),
                float(s.wall_s),
                opt(s.ops),
                u.user_s.map(float).unwrap_or_default(),
                u.sys_s.map(float).unwrap_or_default(),
                opt(u.voluntary_cs),
                opt(u.involuntary_cs),
                opt(u.minor_faults),
                opt(u.major_faults),
                opt(u.peak_rss_kb),
                opt(u.pss_kb),
            ];
            for (name, scope) in &counters {
                let v = s
                    .counters
                    .iter()
                    .find(|c| &c.name == name && c.scope.as_str() == *scope)
                    .and_then(|c| c.value)
                    .map(float)
                    .unwrap_or_default();
                row.push(v);
            }
            w.write_record(&row).map_err(err)?;
        }
    }
    w.flush().map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

// ---------------------------------------------------------------------------
// results.json

#[derive(Serialize)]
struct ChartJson<'a> {
    name: &'a str,
    program: &'a str,
    title: &'a str,
    caption: &'a str,
    svg: String,
    png: String,
}

#[derive(Serialize)]
struct ResultsJson<'a> {
    schema: &'static str,
    title: &'a str,
    run: &'a RunRecord,
    verdicts: &'a [String],
    limits: &'a [String],
    tables: &'a [Table],
    points: Vec<&'a PointSummary>,
    analysis: &'a Analysis,
    charts: Vec<ChartJson<'a>>,
    notes: &'a [String],
}

fn results_json<'a>(
    input: &'a ReportInput,
    drawn: &'a [DrawnChart],
    notes: &'a [String],
) -> ResultsJson<'a> {
    ResultsJson {
        schema: RESULTS_SCHEMA,
        title: &input.title,
        run: input.run,
        verdicts: input.verdicts,
        limits: input.limits,
        tables: input.tables,
        points: input.points.iter().map(|p| &p.report).collect(),
        analysis: input.analysis,
        charts: drawn
            .iter()
            .map(|c| ChartJson {
                name: &c.spec.name,
                program: &c.spec.program,
                title: &c.spec.title,
                caption: &c.spec.caption,
                svg: format!("charts/{}.svg", c.spec.name),
                png: format!("charts/{}.png", c.spec.name),
            })
            .collect(),
        notes,
    }
}

// ---------------------------------------------------------------------------
// summary.md

/// A Markdown table cell: pipes escaped, line breaks flattened, and
/// angle brackets escaped so renderers that allow HTML show them as text.
fn md_cell(s: &str) -> String {
    md_text(s).replace('|', "\\|")
}

fn md_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

fn md_table(out: &mut String, columns: &[String], rows: &[Vec<String>]) {
    if columns.is_empty() {
        return;
    }
    let cells = |r: &[String]| {
        let mut cells: Vec<String> = r.iter().map(|c| md_cell(c)).collect();
        cells.resize(columns.len(), String::new());
        format!("| {} |\n", cells.join(" | "))
    };
    out.push_str(&cells(columns));
    out.push_str(&format!("|{}\n", " --- |".repeat(columns.len())));
    for r in rows {
        out.push_str(&cells(r));
    }
    out.push('\n');
}

fn md_list(out: &mut String, heading: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    writeln!(out, "## {heading}\n").ok();
    for i in items {
        writeln!(out, "- {}", md_text(i)).ok();
    }
    out.push('\n');
}

fn markdown(input: &ReportInput, notes: &[String]) -> String {
    let mut out = String::new();
    writeln!(out, "# {}\n", md_text(&input.title)).ok();
    for (k, v) in machine_facts(input.run) {
        writeln!(out, "- **{}**: {}", md_text(&k), md_text(&v)).ok();
    }
    out.push('\n');
    md_list(&mut out, "Verdicts", input.verdicts);
    let recs: Vec<String> = input
        .analysis
        .recommendations
        .iter()
        .map(|r| format!("{} ({})", r.sentence, smt_text(&r.smt)))
        .collect();
    md_list(&mut out, "Recommendations", &recs);
    md_list(&mut out, "Honest limits", input.limits);
    for t in input.tables {
        writeln!(out, "## {}\n", md_text(&t.title)).ok();
        md_table(&mut out, &t.columns, &t.rows);
        if let Some(n) = &t.note {
            writeln!(out, "{}\n", md_text(n)).ok();
        }
    }
    writeln!(out, "## Per-point results\n").ok();
    let columns: Vec<String> = [
        "#",
        "program",
        "alloc",
        "model",
        "placement",
        "N",
        "metric",
        "median",
        "95% CI",
        "±",
        "samples",
        "failed",
        "failures",
    ]
    .iter()
    .map(|c| c.to_string())
    .collect();
    let rows: Vec<Vec<String>> = point_rows(input.points)
        .into_iter()
        .map(|r| {
            vec![
                r.index.to_string(),
                r.program,
                r.alloc,
                r.model,
                r.placement,
                r.workers.to_string(),
                r.metric,
                r.median,
                r.ci,
                r.rel,
                r.samples.to_string(),
                r.failed.to_string(),
                r.failures,
            ]
        })
        .collect();
    md_table(&mut out, &columns, &rows);
    md_list(&mut out, "Notes", notes);
    writeln!(out, "## How it was made\n").ok();
    for (k, v) in provenance(input.run) {
        writeln!(out, "- **{}**: `{}`", md_text(&k), v.replace('`', "'")).ok();
    }
    out.push_str(
        "\nCharts, the full report and the raw samples: `report.html`, `charts/`, \
         `samples.csv`, `results.json`.\n",
    );
    out
}

// ---------------------------------------------------------------------------
// report.html

#[derive(Serialize)]
struct Kv {
    key: String,
    value: String,
}

fn kvs(v: Vec<(String, String)>) -> Vec<Kv> {
    v.into_iter()
        .map(|(key, value)| Kv { key, value })
        .collect()
}

#[derive(Serialize)]
struct ChartView {
    id: String,
    title: String,
    caption: String,
    svg: String,
    svg_file: String,
    png_file: String,
}

#[derive(Serialize)]
struct ChartGroup {
    program: String,
    charts: Vec<ChartView>,
}

#[derive(Serialize)]
struct RecView {
    sentence: String,
    best: String,
    smt: String,
}

#[derive(Serialize)]
struct VerdictView {
    subject: String,
    a: String,
    b: String,
    ratio: String,
    ci: String,
    significant: bool,
    sentence: String,
}

#[derive(Serialize)]
struct SmtView {
    series: String,
    core: usize,
    siblings: String,
}

#[derive(Serialize)]
struct UslView {
    series: String,
    lambda: String,
    sigma: String,
    kappa: String,
    peak: String,
    r_squared: String,
    points: usize,
}

#[derive(Serialize)]
struct HtmlContext<'a> {
    title: &'a str,
    machine: Vec<Kv>,
    verdicts: &'a [String],
    recommendations: Vec<RecView>,
    limits: &'a [String],
    tables: &'a [Table],
    chart_groups: Vec<ChartGroup>,
    chart_count: usize,
    model_verdicts: Vec<VerdictView>,
    smt: Vec<SmtView>,
    usl: Vec<UslView>,
    points: Vec<PointRow>,
    notes: &'a [String],
    made: Vec<Kv>,
    config_json: String,
}

fn series_name(k: &smtlab_analyse::analysis::SeriesKey) -> String {
    format!(
        "{} / {} / {} / {}",
        k.program, k.alloc, k.model, k.placement
    )
}

/// The SVG as inlined: without the XML namespace attribute, which HTML does
/// not need, so the page holds no URL at all.
fn inline_svg(svg: &str) -> String {
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
}

fn html(
    input: &ReportInput,
    drawn: &[DrawnChart],
    notes: &[String],
) -> Result<String, minijinja::Error> {
    let mut groups: Vec<ChartGroup> = Vec::new();
    for c in drawn {
        let view = ChartView {
            id: format!("fig-{}", c.spec.name),
            title: c.spec.title.clone(),
            caption: c.spec.caption.clone(),
            svg: inline_svg(&c.svg),
            svg_file: format!("charts/{}.svg", c.spec.name),
            png_file: format!("charts/{}.png", c.spec.name),
        };
        match groups.iter_mut().find(|g| g.program == c.spec.program) {
            Some(g) => g.charts.push(view),
            None => groups.push(ChartGroup {
                program: c.spec.program.clone(),
                charts: vec![view],
            }),
        }
    }
    let a = input.analysis;
    let ctx = HtmlContext {
        title: &input.title,
        machine: kvs(machine_facts(input.run)),
        verdicts: input.verdicts,
        recommendations: a
            .recommendations
            .iter()
            .map(|r| RecView {
                sentence: r.sentence.clone(),
                best: format!(
                    "{} ({}): {} / {} at N = {}, median {} {}",
                    r.program,
                    r.alloc,
                    r.model,
                    r.placement,
                    r.workers,
                    num(r.median),
                    r.metric.unit
                ),
                smt: smt_text(&r.smt),
            })
            .collect(),
        limits: input.limits,
        tables: input.tables,
        chart_count: drawn.len(),
        chart_groups: groups,
        model_verdicts: a
            .model_verdicts
            .iter()
            .map(|v| VerdictView {
                subject: v.subject.clone(),
                a: v.a.clone(),
                b: v.b.clone(),
                ratio: format!("{}×", num(v.speed_ratio)),
                ci: ci_text(v.ci95),
                significant: v.significant,
                sentence: v.sentence.clone(),
            })
            .collect(),
        smt: a
            .smt_yields
            .iter()
            .map(|y| SmtView {
                series: series_name(&y.key),
                core: y.core,
                siblings: y
                    .siblings
                    .iter()
                    .map(|s| {
                        format!(
                            "{} on the core: {}× (+{:.0}%)",
                            s.siblings,
                            num(s.relative),
                            s.gain * 100.0
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            })
            .collect(),
        usl: a
            .series
            .iter()
            .filter_map(|s| s.usl.as_ref().map(|u| (s, u)))
            .map(|(s, u)| UslView {
                series: series_name(&s.key),
                lambda: num(u.lambda),
                sigma: num(u.sigma),
                kappa: num(u.kappa),
                peak: u
                    .peak_n
                    .map(|p| format!("N ≈ {} (predicted)", num(p)))
                    .unwrap_or_else(|| "none (levels off)".into()),
                r_squared: num(u.r_squared),
                points: u.points,
            })
            .collect(),
        points: point_rows(input.points),
        notes,
        made: kvs(provenance(input.run)),
        config_json: serde_json::to_string_pretty(&input.run.config_json).unwrap_or_default(),
    };
    let mut env = minijinja::Environment::new();
    // Explicit, not left to the template name: every value is data.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("report.html", TEMPLATE)?;
    env.get_template("report.html")?.render(&ctx)
}
