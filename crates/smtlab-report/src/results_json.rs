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

/// The `schema` field of `results.json`. Stable, by the rule of smtlab's
/// other JSON documents: fields may be added under this tag (and, as with
/// the `kind`s of `program` that the servers, co-runs and DSM ranks
/// added, new kinds of a tagged value); a rename or removal changes it.
/// The intervals of the analysis (`relative_ci95`, `gain_ci95` and
/// `samples` of an SMT sibling; `describes_data` and the `*_ci95` of a USL
/// fit; `ci95` of SMT advice and its kind `cannot_tell`; a pairs
/// analysis' `gain`) were added under `smtlab.report/1`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_report;
    use smtlab_analyse::analysis::SmtAdvice;

    /// What the intervals added to the document, under the same tag:
    /// nothing renamed or removed, so scripts reading `smtlab.report/1`
    /// still find every field they read.
    #[test]
    fn the_intervals_are_fields_added_under_the_same_schema() {
        let mut f = crate::tests::fixture();
        f.analysis.recommendations[0].smt = SmtAdvice::CannotTell {
            gain: 0.06,
            ci95: None,
            samples: 2,
        };
        let dir = tempfile::tempdir().unwrap();
        write_report(&f.input(), dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema"], RESULTS_SCHEMA);
        assert_eq!(RESULTS_SCHEMA, "smtlab.report/1");
        let a = &v["analysis"];
        assert_eq!(
            a["recommendations"][0]["smt"],
            serde_json::json!({"kind": "cannot_tell", "gain": 0.06, "ci95": null, "samples": 2})
        );
        let sibling = &a["smt_yields"][0]["siblings"][1];
        for (k, want) in [
            ("siblings", serde_json::json!(2)),
            ("relative", serde_json::json!(1.2)),
            ("gain", serde_json::json!(0.2)),
            ("relative_ci95", serde_json::json!([1.15, 1.25])),
            ("gain_ci95", serde_json::json!([0.15, 0.25])),
            ("samples", serde_json::json!(5)),
        ] {
            assert_eq!(sibling[k], want, "{k}");
        }
        let usl = &a["series"][0]["usl"];
        for k in ["lambda", "sigma", "kappa", "peak_n", "r_squared", "points"] {
            assert!(usl[k].is_number(), "{k}: {usl}");
        }
        assert_eq!(usl["describes_data"], true);
        assert_eq!(usl["sigma_ci95"], serde_json::json!([0.01, 0.03]));
    }
}
