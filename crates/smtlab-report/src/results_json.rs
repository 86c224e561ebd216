//! `results.json` (`schema: smtlab.report/1`): the per-point summaries, the
//! analysis, the study's tables and verdicts and the charts' files, for
//! scripts.

use std::path::Path;

use serde::Serialize;

use smtlab_analyse::analysis::Analysis;
use smtlab_analyse::summary::PointSummary;
use smtlab_types::{RunRecord, Table};

use crate::error::ReportError;
use crate::writer::{write_file, Rendered, Writer};

/// The `schema` field of `results.json`; bump on incompatible changes.
pub const RESULTS_SCHEMA: &str = "smtlab.report/1";

/// The `results.json` writer.
pub(crate) struct ResultsFile;

impl Writer for ResultsFile {
    fn file(&self) -> &'static str {
        "results.json"
    }

    fn write(&self, r: &Rendered, path: &Path) -> Result<(), ReportError> {
        let json = results_json(r);
        let text = serde_json::to_string_pretty(&json).map_err(|source| ReportError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        write_file(path, text.as_bytes())
    }
}

#[derive(Serialize)]
struct ChartJson<'a> {
    name: &'a str,
    program: &'a str,
    title: &'a str,
    caption: &'a str,
    svg: String,
    png: String,
}

#[derive(Serialize)]
struct ResultsJson<'a> {
    schema: &'static str,
    title: &'a str,
    run: &'a RunRecord,
    verdicts: &'a [String],
    limits: &'a [String],
    tables: &'a [Table],
    points: Vec<&'a PointSummary>,
    analysis: &'a Analysis,
    charts: Vec<ChartJson<'a>>,
    notes: &'a [String],
    /// The pairs study's analysis (absent for other runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pairs: Option<&'a smtlab_analyse::pairs::PairsAnalysis>,
}

fn results_json<'a>(r: &'a Rendered) -> ResultsJson<'a> {
    let (input, drawn, notes) = (r.input, &r.charts, &r.notes);
    ResultsJson {
        schema: RESULTS_SCHEMA,
        title: &input.title,
        run: input.run,
        verdicts: input.verdicts,
        limits: input.limits,
        tables: input.tables,
        points: input.points.iter().map(|p| &p.summary).collect(),
        analysis: input.analysis,
        charts: drawn
            .iter()
            .map(|c| ChartJson {
                name: &c.spec.name,
                program: &c.spec.program,
                title: &c.spec.title,
                caption: &c.spec.caption,
                svg: format!("charts/{}.svg", c.spec.name),
                png: format!("charts/{}.png", c.spec.name),
            })
            .collect(),
        notes,
        pairs: input.pairs,
    }
}
