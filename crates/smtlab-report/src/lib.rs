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
//! `charts` decides which charts a run gets and describes each as a `plot`;
//! `draw` renders them with plotters, each kind by its own module
//! (`line_chart`, `bar_chart`, `grid_chart`) over the shared `axis`
//! arithmetic, `legend`, `style` and embedded `font` (`text` for crisp PNG
//! text); `chart_files` writes them, `format` holds the formatting the
//! page and the summary share. [`write_report`] computes the shared parts once and runs the
//! writers in a fixed order.
//!
//! A fleet (the merged stores of many hosts) has a report of its own
//! ([`write_fleet_report`]: `fleet_report`, its charts in `fleet_charts`):
//! a chart per workload with a line per host, each host's recommendation,
//! and the facts of the machines that differ.
//!
//! The report consumes `smtlab_analyse`'s types; it computes no statistics
//! of its own except per-sample context-switch rates for a chart. Called by
//! the report pipeline of `smtlab-study`.

mod axis;
mod bar_chart;
mod chart_files;
mod charts;
mod chat_charts;
mod comm_charts;
mod draw;
mod error;
mod fleet_charts;
mod fleet_report;
mod font;
mod format;
mod grid_chart;
mod input;
mod legend;
mod line_chart;
mod pairs_charts;
mod pairs_report;
mod placement_charts;
mod plot;
mod render_check;
mod report_html;
mod results_json;
mod samples_csv;
mod smt_charts;
mod style;
mod summary_md;
mod text;
mod write_report;
mod writer;

#[cfg(test)]
mod tests;

pub use error::{DrawError, ReportError};
pub use fleet_report::{
    default_fleet_dir, fleet_json, fleet_tables, write_fleet_report, FleetFiles, FleetTables,
    FLEET_SCHEMA,
};
pub use input::ReportInput;
pub use pairs_charts::{pairs_html, write_pairs_charts, PairsCharts};
pub use pairs_report::write_pairs_report;
pub use results_json::RESULTS_SCHEMA;
pub use write_report::{write_report, ReportFiles};
