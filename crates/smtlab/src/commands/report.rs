//! `smtlab report [RUN] [-o DIR]`: analyse a stored run (a study or a plain
//! run) and write its report (`smtlab_study::report_run`: report.html with
//! inline SVG charts, every chart as PNG and SVG, summary.md, samples.csv
//! and results.json), then print its findings; `smtlab report --fleet`:
//! the report of every host in a merged store (`smtlab_report::
//! write_fleet_report`).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use smtlab_analyse::fleet::load_fleet;
use smtlab_report::{default_fleet_dir, fleet_json, fleet_tables, write_fleet_report, ReportError};
use smtlab_store::{RunStatus, Store};
use smtlab_study::findings::Findings;
use smtlab_study::report_run::{default_dir, report_run, study_json, ReportRunError, ReportedRun};
use smtlab_types::Table;

use super::show::resolve_run;
use crate::exit::usage;
use crate::flags::{self, RunRef};
use crate::output;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Run id (see `smtlab runs`), or `latest`
    #[arg(value_name = "RUN", default_value = "latest", value_parser = flags::run_ref("RUN"))]
    pub run: RunRef,
    /// Report the fleet instead of a run: a store merged from many hosts
    /// (`smtlab merge`), a chart per workload with a line per host (each
    /// host's latest run of it), each host's recommendation, and the facts
    /// of the machines that differ
    #[arg(long, conflicts_with = "run")]
    pub fleet: bool,
    /// Report directory ({host}, {rank} as in --db) [default:
    /// smtlab-reports/run-RUN; with --fleet, smtlab-reports/fleet]
    #[arg(short = 'o', long, value_name = "DIR", value_parser = flags::report_dir)]
    pub out: Option<PathBuf>,
    /// SQLite store; {host} and {rank} in it are this host's name
    /// (SMTLAB_HOSTNAME replaces it) and the launcher's rank
    /// (`--db /shared/{host}.db`)
    #[arg(long, value_name = "PATH", default_value = "smtlab.db", value_parser = flags::db)]
    pub db: PathBuf,
    /// Print the analysis as JSON instead of text
    #[arg(long)]
    pub json: bool,
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
pub fn render_findings(b: &ReportedRun) -> String {
    render_findings_of(b, &b.findings)
}

/// [`render_findings`] with the study's tables and verdicts given apart
/// (a caller that has already printed some of them leaves them out).
pub fn render_findings_of(b: &ReportedRun, findings: &Findings) -> String {
    let mut s = String::new();
    for t in &findings.tables {
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
    section(&mut s, "Verdicts", &findings.verdicts);
    let recs: Vec<String> = b
        .analysis
        .recommendations
        .iter()
        .map(|r| r.sentence.clone())
        .collect();
    section(&mut s, "Recommendations", &recs);
    section(&mut s, "What this machine cannot show", &b.limits);
    section(&mut s, "Notes", &b.notes);
    s.push_str(&closing_line(
        &b.files.html,
        b.files.charts.len(),
        "summary.md, samples.csv, results.json",
        &b.files.dir,
    ));
    s
}

/// A report's last line: its page, its charts (`files` of them, each as
/// PNG and SVG), the other files it wrote (`others`), its directory.
fn closing_line(html: &Path, files: usize, others: &str, dir: &Path) -> String {
    let charts = (files / 2) as u64;
    format!(
        "\nReport: {} ({charts} chart{} as PNG and SVG, {others} in {})\n",
        html.display(),
        output::plural(charts),
        dir.display()
    )
}

pub fn run(a: ReportArgs) -> anyhow::Result<i32> {
    if a.fleet {
        return fleet(&a);
    }
    let store = Store::open_read_only(&a.db).map_err(usage)?;
    let run_id = resolve_run(&store, a.run, &a.db, "RUN")?;
    let dir = a.out.clone().unwrap_or_else(|| default_dir(run_id));
    let record = store.run(run_id).map_err(usage)?;
    let b = report_run(&store, record, &dir, smtlab_analyse::pairs::DEFAULT_TRIALS).map_err(
        |e| match e {
            ReportRunError::Report(r) => unwritable(a.out.is_some(), &dir, r),
            other => other.into(),
        },
    )?;
    let status = b.run.status;
    if a.json {
        output::print(&(serde_json::to_string_pretty(&study_json(run_id, status, &b))? + "\n"))?;
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

/// A report directory that cannot be made or written: the user's to fix
/// (exit 2), naming `-o` when it was given; anything else stays an error.
fn unwritable(given: bool, dir: &Path, e: ReportError) -> anyhow::Error {
    match e {
        ReportError::CreateDir { .. } | ReportError::Write { .. } if given => {
            usage(format!("-o {}: {e}", dir.display()))
        }
        ReportError::CreateDir { .. } | ReportError::Write { .. } => usage(format!(
            "{e}; give a directory that can be written with -o DIR"
        )),
        other => other.into(),
    }
}

/// `report --fleet`: load every host's latest run of each workload, write
/// the fleet's report, print its tables.
fn fleet(a: &ReportArgs) -> anyhow::Result<i32> {
    let store = Store::open_read_only(&a.db).map_err(usage)?;
    let fleet = load_fleet(&store)?;
    if fleet.hosts.is_empty() {
        // Say why, host by host, as the report would have: a fleet that
        // failed everywhere is what its user most needs explained.
        let why: Vec<String> = fleet
            .without_result
            .iter()
            .map(|w| format!("{}: {}", w.host, w.why))
            .collect();
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" ({})", why.join("; "))
        };
        return Err(usage(format!(
            "--fleet: {} holds no run with a result{why}",
            a.db.display()
        )));
    }
    let dir = a.out.clone().unwrap_or_else(default_fleet_dir);
    let files =
        write_fleet_report(&fleet, &dir).map_err(|e| unwritable(a.out.is_some(), &dir, e))?;
    if a.json {
        let mut doc = fleet_json(&fleet);
        doc["report"] = serde_json::to_value(&files.dir)?;
        doc["html"] = serde_json::to_value(&files.html)?;
        output::print(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
        return Ok(0);
    }
    let t = fleet_tables(&fleet);
    let mut s = format!("{}\n\n", files.dir.display());
    s.push_str(&render_table(&t.hosts));
    let _ = writeln!(s, "\nMachines: {}", fleet.facts.sentence);
    if let Some(d) = &t.differences {
        s.push_str(&render_table(d));
    }
    s.push('\n');
    s.push_str(&render_table(&t.recommendations));
    if !fleet.notes.is_empty() {
        let _ = writeln!(s, "\nNotes:");
        for n in &fleet.notes {
            let _ = writeln!(s, "  * {n}");
        }
    }
    s.push_str(&closing_line(
        &files.html,
        files.charts.len(),
        "summary.md, fleet.json",
        &files.dir,
    ));
    output::print(&s)?;
    Ok(0)
}
