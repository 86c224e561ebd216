//! Why a report could not be written ([`ReportError`]); each names the
//! file at fault. Uses `draw` (for its error).

use std::io;
use std::path::PathBuf;

use crate::draw::DrawError;

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
