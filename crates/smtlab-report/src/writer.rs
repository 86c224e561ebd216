//! The writers' seam: what every format of the report is given (computed
//! once by `write_report`: the input, the drawn charts, the merged notes)
//! and the one method each implements, in the spirit of hyperfine's
//! `Exporter`. One file per format, named after the file it writes:
//! `samples_csv.rs`, `results_json.rs`, `summary_md.rs`, `report_html.rs`.

use std::fs;
use std::path::Path;

use crate::charts::ChartSpec;
use crate::error::ReportError;
use crate::input::ReportInput;

/// A chart drawn once, for every writer that shows it.
pub(crate) struct DrawnChart {
    pub(crate) spec: ChartSpec,
    /// The SVG text (also written as `charts/NAME.svg`).
    pub(crate) svg: String,
}

/// What every writer is given.
pub(crate) struct Rendered<'a> {
    pub(crate) input: &'a ReportInput<'a>,
    pub(crate) charts: Vec<DrawnChart>,
    /// The caller's notes, the analysis' and the charts', each once.
    pub(crate) notes: Vec<String>,
}

/// One format of the report: one file in the report's directory.
pub(crate) trait Writer {
    /// The file's name in the report's directory.
    fn file(&self) -> &'static str;

    /// Write the file at `path`; an error names it.
    fn write(&self, r: &Rendered, path: &Path) -> Result<(), ReportError>;
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    fs::write(path, bytes).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}
