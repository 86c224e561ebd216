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
//! One file per format, each a `Writer` (`writer.rs`) named after the file it
//! writes (`samples_csv`, `results_json`, `summary_md`, `report_html`);
//! `charts` decides which charts a run gets, `draw` renders them with
//! plotters (an embedded font, `text` for crisp PNG text), `chart_files`
//! writes them, `format` holds the formatting the page and the summary
//! share. [`write_report`] computes the shared parts once and runs the
//! writers in a fixed order.
//!
//! The report consumes `smtlab_analyse`'s types; it computes no statistics
//! of its own except per-sample context-switch rates for a chart. Called by
//! the report pipeline of `smtlab-study`.

mod chart_files;
mod charts;
mod draw;
mod format;
mod report_html;
mod results_json;
mod samples_csv;
mod summary_md;
mod text;
mod writer;

#[cfg(test)]
mod tests;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use smtlab_analyse::analysis::{Analysis, PointData};
use smtlab_types::{Point, RunRecord, Sample, Table};

pub use draw::DrawError;
use writer::{Rendered, Writer};

/// The `schema` field of `results.json`; bump on incompatible changes.
pub const RESULTS_SCHEMA: &str = "smtlab.report/1";

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
    #[error("report: cannot draw chart {}: {error}", path.display())]
    Chart { path: PathBuf, error: DrawError },
    #[error("report: cannot render {}: {source}", path.display())]
    Template {
        path: PathBuf,
        source: minijinja::Error,
    },
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

    let (specs, chart_notes) = charts::build(input);
    let (drawn, chart_files) = chart_files::draw_all(specs, &chart_dir)?;

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
