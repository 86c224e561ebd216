//! A table of text cells: what a study adds to its report (e.g. the
//! pinning table), written by every report format.

use serde::Serialize;

/// A study-specific table (e.g. the pinning table: program / runtime on one
/// core / runtime across cores / speedup).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub note: Option<String>,
}
