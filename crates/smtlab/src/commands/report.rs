//! `smtlab report [RUN] [-o DIR]`: analyse a stored run (a study or a plain
//! run) and write its report: report.html with inline SVG charts, every
//! chart as PNG and SVG, summary.md, samples.csv and results.json.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use smtlab_analyse::analysis::{self, Analysis};
use smtlab_analyse::summary::{run_data, RunData};
use smtlab_report::{write_report, ReportFiles, ReportInput};
use smtlab_store::{RunRecord, RunStatus, Store};
use smtlab_study::{self as study, Findings, StudyKind};
use smtlab_topology::Topology;
use smtlab_types::RunSpec;
use smtlab_types::Table;

use super::show::resolve_run;
use crate::exit::usage;
use crate::output;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Run id (see `smtlab runs`), or `latest`
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,
    /// Report directory [default: smtlab-reports/run-RUN]
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// SQLite store
    #[arg(long, value_name = "PATH", default_value = "smtlab.db")]
    pub db: PathBuf,
    /// Print the analysis as JSON instead of text
    #[arg(long)]
    pub json: bool,
}

/// Where a run's report goes unless `-o` says otherwise.
pub fn default_dir(run_id: i64) -> PathBuf {
    PathBuf::from("smtlab-reports").join(format!("run-{run_id}"))
}

/// A run analysed and reported.
pub struct Built {
    pub run: RunRecord,
    pub study: Option<StudyKind>,
    pub data: RunData,
    pub analysis: Analysis,
    pub findings: Findings,
    /// The study's limits (planned and found in the data).
    pub limits: Vec<String>,
    /// Plan notes and analysis notes.
    pub notes: Vec<String>,
    pub files: ReportFiles,
}

/// Analyse run `run_id` and write its report into `dir`.
pub fn build(store: &Store, run_id: i64, dir: &Path) -> anyhow::Result<Built> {
    let run = store.run(run_id).map_err(usage)?;
    let spec: RunSpec = serde_json::from_value(run.config_json.clone())
        .with_context(|| format!("run {run_id}: stored configuration is unreadable"))?;
    let topo: Topology = serde_json::from_value(run.host.topology.clone())
        .with_context(|| format!("run {run_id}: stored topology is unreadable"))?;
    let data = run_data(store, run_id, run.seed)?;
    let analysis = analysis::analyze(&data.points, &topo, run.seed);
    let meta = spec.study.clone();
    let findings = match &meta {
        Some(m) => study::findings(m, &data.points, &analysis, &topo, run.seed),
        None => Findings {
            verdicts: analysis
                .model_verdicts
                .iter()
                .map(|v| v.sentence.clone())
                .collect(),
            ..Findings::default()
        },
    };
    let mut limits: Vec<String> = meta.as_ref().map(|m| m.limits.clone()).unwrap_or_default();
    limits.extend(findings.limits.iter().cloned());
    let mut notes: Vec<String> = meta.as_ref().map(|m| m.notes.clone()).unwrap_or_default();
    notes.extend(analysis.notes.iter().cloned());
    let title = match &meta {
        Some(m) if m.kind == StudyKind::Tour => format!("smtlab tour — run {run_id}"),
        Some(m) => format!("smtlab study {} — run {run_id}", m.kind),
        None => format!("smtlab run {run_id}"),
    };
    let verdicts = findings.verdicts.clone();
    let input = ReportInput {
        title,
        run: &run,
        points: &data.points,
        samples: &data.samples,
        analysis: &analysis,
        tables: &findings.tables,
        limits: &limits,
        verdicts: &verdicts,
        notes: &notes,
    };
    let files = write_report(&input, dir).map_err(|e| anyhow::anyhow!(e))?;
    Ok(Built {
        run,
        study: meta.map(|m| m.kind),
        data,
        analysis,
        findings,
        limits,
        notes,
        files,
    })
}

#[derive(Serialize)]
struct StudyJson<'a> {
    schema: &'static str,
    run_id: i64,
    status: &'static str,
    study: Option<&'static str>,
    verdicts: &'a [String],
    recommendations: Vec<&'a str>,
    limits: &'a [String],
    notes: &'a [String],
    tables: &'a [Table],
    analysis: &'a Analysis,
    report: &'a Path,
    html: &'a Path,
}

/// The JSON document of `study --json` and `report --json`.
pub fn json(run_id: i64, status: RunStatus, b: &Built) -> serde_json::Value {
    serde_json::to_value(StudyJson {
        schema: "smtlab.study/1",
        run_id,
        status: status.as_str(),
        study: b.study.map(|k| k.name()),
        verdicts: &b.findings.verdicts,
        recommendations: b
            .analysis
            .recommendations
            .iter()
            .map(|r| r.sentence.as_str())
            .collect(),
        limits: &b.limits,
        notes: &b.notes,
        tables: &b.findings.tables,
        analysis: &b.analysis,
        report: &b.files.dir,
        html: &b.files.html,
    })
    .unwrap_or(serde_json::Value::Null)
}

/// A table for the terminal, columns padded to their widest cell.
pub fn render_table(t: &Table) -> String {
    let mut widths: Vec<usize> = t.columns.iter().map(|c| c.chars().count()).collect();
    for r in &t.rows {
        for (i, c) in r.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::from(" ");
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            s.push_str(&format!(" {c:<w$}"));
        }
        s.trim_end().to_string() + "\n"
    };
    let mut s = format!("{}\n", t.title);
    s.push_str(&line(&t.columns));
    for r in &t.rows {
        s.push_str(&line(r));
    }
    if let Some(n) = &t.note {
        s.push_str(&format!("  ({n})\n"));
    }
    s
}

/// Tables, verdicts, recommendations, limits, notes and the report's path.
pub fn render_findings(b: &Built) -> String {
    let mut s = String::new();
    for t in &b.findings.tables {
        s.push('\n');
        s.push_str(&render_table(t));
    }
    let section = |s: &mut String, title: &str, items: &[String]| {
        if !items.is_empty() {
            let _ = writeln!(s, "\n{title}:");
            for i in items {
                let _ = writeln!(s, "  * {i}");
            }
        }
    };
    section(&mut s, "Verdicts", &b.findings.verdicts);
    let recs: Vec<String> = b
        .analysis
        .recommendations
        .iter()
        .map(|r| r.sentence.clone())
        .collect();
    section(&mut s, "Recommendations", &recs);
    section(&mut s, "What this machine cannot show", &b.limits);
    section(&mut s, "Notes", &b.notes);
    let _ = writeln!(
        s,
        "\nReport: {} ({} charts as PNG and SVG, summary.md, samples.csv, results.json in {})",
        b.files.html.display(),
        b.files.charts.len() / 2,
        b.files.dir.display()
    );
    s
}

pub fn run(a: ReportArgs) -> anyhow::Result<i32> {
    let store = Store::open_existing(&a.db).map_err(usage)?;
    let run_id = resolve_run(&store, &a.run, &a.db, "RUN")?;
    let dir = a.out.clone().unwrap_or_else(|| default_dir(run_id));
    let b = build(&store, run_id, &dir)?;
    let status = b.run.status;
    if a.json {
        output::print(&(serde_json::to_string_pretty(&json(run_id, status, &b))? + "\n"))?;
        return Ok(0);
    }
    let mut s = format!("{}\n", b.files.dir.display());
    if status != RunStatus::Complete {
        s.push_str(&format!(
            "note: run {run_id} is {}: the report covers the samples measured so far\n",
            status.as_str()
        ));
    }
    s.push_str(&render_findings(&b));
    output::print(&s)?;
    Ok(0)
}
