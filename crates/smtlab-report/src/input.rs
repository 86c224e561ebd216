//! What a report shows ([`ReportInput`]), borrowed from the caller. Uses
//! no other module of this crate.

use smtlab_analyse::analysis::{Analysis, PointData};
use smtlab_analyse::pairs::PairsAnalysis;
use smtlab_types::{Point, RunRecord, Sample, Table};

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
    /// The pairs study's analysis of its matrix (`None` for other runs):
    /// its charts, a heatmap of the matrix and the analysis in the JSON.
    pub pairs: Option<&'a PairsAnalysis>,
}
