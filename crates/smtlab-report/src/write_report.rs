//! [`write_report`]: the charts drawn once (the placement map first, then
//! the run's own), the notes gathered once, then every writer in a fixed
//! order. Uses every writer, the chart modules, `chart_files`, `input` and
//! `error`.

use std::fs;
use std::path::{Path, PathBuf};

use crate::charts::ChartSpec;
use crate::error::ReportError;
use crate::input::ReportInput;
use crate::writer::{Rendered, Writer};
use crate::{
    chart_files, charts, chat_charts, comm_charts, pairs_charts, placement_charts, report_html,
    results_json, samples_csv, summary_md,
};

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

/// The formats, in the order they are written (after the charts): a
/// failure part-way leaves the files written before it.
const WRITERS: [&dyn Writer; 4] = [
    &samples_csv::SamplesCsv,
    &results_json::ResultsFile,
    &summary_md::SummaryMarkdown,
    &report_html::HtmlPage,
];

/// Write the report of `input` into `dir` (created if missing; files of an
/// earlier report there are replaced).
pub fn write_report(input: &ReportInput, dir: &Path) -> Result<ReportFiles, ReportError> {
    let chart_dir = dir.join("charts");
    fs::create_dir_all(&chart_dir).map_err(|source| ReportError::CreateDir {
        path: chart_dir.clone(),
        source,
    })?;

    // A pairs study's points are co-runs, not a sweep over N: its charts
    // are the pairings'.
    let (mut specs, mut chart_notes) = match input.pairs {
        Some(a) => (pairs_charts::specs(a), Vec::new()),
        // A chat sweep is over connections, not N.
        None if chat_charts::applies(input.points) => {
            (chat_charts::specs(input.points), Vec::new())
        }
        // DSM ranks are drawn per application, a line per mechanism, and
        // their time split; not a series per program label against N.
        None if comm_charts::applies(input.points) => {
            (comm_charts::specs(input.points), Vec::new())
        }
        None => charts::build(input),
    };
    // Where each configuration ran, first, whatever the run: what its
    // placements meant on its machine.
    if let Some(m) = placement_charts::placement_map(input, &mut chart_notes) {
        specs.insert(
            0,
            ChartSpec {
                name: placement_charts::NAME.into(),
                program: placement_charts::GROUP.into(),
                title: m.title,
                caption: m.caption,
                plot: m.plot,
            },
        );
    }
    let (drawn, chart_files) = chart_files::draw_all(specs, &chart_dir)?;

    // A point that fell short of --min-samples says so in every format.
    let short: Vec<String> = input
        .points
        .iter()
        .filter_map(|p| {
            let s = p.summary.shortfall.as_ref()?;
            Some(format!("Point {}: {s}.", p.summary.point.index))
        })
        .collect();
    let mut notes: Vec<String> = Vec::new();
    for n in input
        .notes
        .iter()
        .chain(&input.analysis.notes)
        .chain(&chart_notes)
        .chain(&short)
    {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }

    let rendered = Rendered {
        input,
        charts: drawn,
        notes,
    };
    for w in WRITERS {
        w.write(&rendered, &dir.join(w.file()))?;
    }
    Ok(ReportFiles {
        dir: dir.to_path_buf(),
        html: dir.join(report_html::HtmlPage.file()),
        charts: chart_files,
        others: [
            summary_md::SummaryMarkdown.file(),
            samples_csv::SamplesCsv.file(),
            results_json::ResultsFile.file(),
        ]
        .iter()
        .map(|f| dir.join(f))
        .collect(),
    })
}
