//! Why a report could not be written ([`ReportError`]); each names the
//! file at fault. Why a chart could not be drawn ([`DrawError`]). Uses no
//! other module of this crate.

use std::io;
use std::path::PathBuf;

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

/// Why a chart could not be drawn. plotters' errors are generic over the
/// drawing backend (SVG string, bitmap file), so what they say is kept as
/// text rather than as one type per backend.
#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    #[error("the embedded DejaVu Sans font did not load")]
    Font,
    #[error("embedded font: {0}")]
    InvalidFont(#[from] ab_glyph::InvalidFont),
    #[error("{0}")]
    Backend(String),
}
