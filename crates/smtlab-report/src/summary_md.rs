//! `summary.md`: the verdicts, recommendations, limits and tables, for
//! issues and chat. Everything from data is escaped here (program labels
//! and command lines are user input).

use std::fmt::Write as _;
use std::path::Path;

use crate::error::ReportError;
use crate::format::{machine_facts, point_rows, provenance, smt_text};
use crate::input::ReportInput;
use crate::writer::{write_file, Rendered, Writer};

/// The `summary.md` writer.
pub(crate) struct SummaryMarkdown;

impl Writer for SummaryMarkdown {
    fn file(&self) -> &'static str {
        "summary.md"
    }

    fn write(&self, r: &Rendered, path: &Path) -> Result<(), ReportError> {
        write_file(path, markdown(r.input, &r.notes).as_bytes())
    }
}

/// A Markdown table cell: pipes escaped, line breaks flattened, and
/// angle brackets escaped so renderers that allow HTML show them as text.
pub(crate) fn md_cell(s: &str) -> String {
    md_text(s).replace('|', "\\|")
}

pub(crate) fn md_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

pub(crate) fn md_table(out: &mut String, columns: &[String], rows: &[Vec<String>]) {
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

pub(crate) fn md_list(out: &mut String, heading: &str, items: &[String]) {
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
