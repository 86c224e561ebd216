//! The report of a stored run, study or plain run alike: load it from the
//! store → analyse its points → the study's findings → write the report
//! files. `smtlab study` calls it when its measurement ends, `smtlab
//! report` for any stored run.

use std::path::{Path, PathBuf};

use serde::Serialize;

use smtlab_analyse::analysis::{self, Analysis};
use smtlab_analyse::summary::{run_data, RunData};
use smtlab_report::{write_report, ReportError, ReportFiles, ReportInput};
use smtlab_store::{Store, StoreError};
use smtlab_topology::Topology;
use smtlab_types::{RunRecord, RunSpec, RunStatus, StudyKind, Table};

use crate::findings::{findings, Findings};

/// The `schema` field of the JSON document of `study --json` and
/// `report --json`.
pub const STUDY_SCHEMA: &str = "smtlab.study/1";

/// Why a stored run could not be reported.
#[derive(Debug, thiserror::Error)]
pub enum ReportRunError {
    #[error("run {run_id}: stored configuration is unreadable")]
    Config {
        run_id: i64,
        #[source]
        source: serde_json::Error,
    },
    #[error("run {run_id}: stored topology is unreadable")]
    Topology {
        run_id: i64,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Report(#[from] ReportError),
}

/// A run analysed and reported.
pub struct ReportedRun {
    pub run: RunRecord,
    pub study: Option<StudyKind>,
    pub data: RunData,
    pub analysis: Analysis,
    pub findings: Findings,
    /// The study's limits (planned and found in the data).
    pub limits: Vec<String>,
    /// Plan notes and analysis notes.
    pub notes: Vec<String>,
    pub files: ReportFiles,
}

/// Where a run's report goes unless `-o` says otherwise.
pub fn default_dir(run_id: i64) -> PathBuf {
    PathBuf::from("smtlab-reports").join(format!("run-{run_id}"))
}

/// Analyse `run` (read from `store`) and write its report into `dir`.
pub fn report_run(
    store: &Store,
    run: RunRecord,
    dir: &Path,
) -> Result<ReportedRun, ReportRunError> {
    let run_id = run.id;
    let spec: RunSpec = serde_json::from_value(run.config_json.clone())
        .map_err(|source| ReportRunError::Config { run_id, source })?;
    let topo: Topology = serde_json::from_value(run.host.topology.clone())
        .map_err(|source| ReportRunError::Topology { run_id, source })?;
    let data = run_data(store, run_id, run.seed)?;
    let analysis = analysis::analyze(&data.points, &topo, run.seed);
    let meta = spec.study.clone();
    let findings = match &meta {
        Some(m) => findings(m, &data.points, &analysis, &topo, run.seed),
        None => Findings {
            verdicts: analysis
                .model_verdicts
                .iter()
                .map(|v| v.sentence.clone())
                .collect(),
            ..Findings::default()
        },
    };
    let mut limits: Vec<String> = meta.as_ref().map(|m| m.limits.clone()).unwrap_or_default();
    limits.extend(findings.limits.iter().cloned());
    let mut notes: Vec<String> = meta.as_ref().map(|m| m.notes.clone()).unwrap_or_default();
    notes.extend(analysis.notes.iter().cloned());
    let title = match &meta {
        Some(m) if m.kind == StudyKind::Tour => format!("smtlab tour — run {run_id}"),
        Some(m) => format!("smtlab study {} — run {run_id}", m.kind),
        None => format!("smtlab run {run_id}"),
    };
    let input = ReportInput {
        title,
        run: &run,
        points: &data.points,
        samples: &data.samples,
        analysis: &analysis,
        tables: &findings.tables,
        limits: &limits,
        verdicts: &findings.verdicts,
        notes: &notes,
    };
    let files = write_report(&input, dir)?;
    Ok(ReportedRun {
        run,
        study: meta.map(|m| m.kind),
        data,
        analysis,
        findings,
        limits,
        notes,
        files,
    })
}

#[derive(Serialize)]
struct StudyJson<'a> {
    schema: &'static str,
    run_id: i64,
    status: &'static str,
    study: Option<&'static str>,
    verdicts: &'a [String],
    recommendations: Vec<&'a str>,
    limits: &'a [String],
    notes: &'a [String],
    tables: &'a [Table],
    analysis: &'a Analysis,
    report: &'a Path,
    html: &'a Path,
}

/// The JSON document of `study --json` and `report --json`.
pub fn study_json(run_id: i64, status: RunStatus, r: &ReportedRun) -> serde_json::Value {
    serde_json::to_value(StudyJson {
        schema: STUDY_SCHEMA,
        run_id,
        status: status.as_str(),
        study: r.study.map(|k| k.name()),
        verdicts: &r.findings.verdicts,
        recommendations: r
            .analysis
            .recommendations
            .iter()
            .map(|x| x.sentence.as_str())
            .collect(),
        limits: &r.limits,
        notes: &r.notes,
        tables: &r.findings.tables,
        analysis: &r.analysis,
        report: &r.files.dir,
        html: &r.files.html,
    })
    .unwrap_or(serde_json::Value::Null)
}
