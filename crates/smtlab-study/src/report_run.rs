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
use smtlab_types::{HostFacts, RunRecord, RunSpec, RunStatus, StudyKind, Table};

use crate::comm_findings::comm;
use crate::findings::{findings, Findings};
use crate::pairs_matrix::{measured_matrix, MeasuredMatrix};
use smtlab_analyse::pairs::{self, Matrix, MatrixError, PairsAnalysis};

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
    #[error("the measured pair matrix: {0}")]
    Matrix(#[source] MatrixError),
    #[error("writing {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
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
    /// The pairs study's matrix and pairings (`None` for other runs).
    pub pairs: Option<PairsReport>,
}

/// A pairs study's results: the measured matrix, its analysis (when every
/// cell was measured), the findings made of them, and the CSV written.
#[derive(Debug, Clone)]
pub struct PairsReport {
    pub matrix: MeasuredMatrix,
    pub analysis: Option<PairsAnalysis>,
    pub findings: Findings,
    pub csv: Option<PathBuf>,
}

/// The pairs study's findings: the matrix (as a table and as
/// `matrix.csv` in `dir`, which `smtlab pairs` reads back), the analysis of
/// its pairings and the verdict; or, when a cell has no value, which.
fn pairs_findings(
    data: &RunData,
    seed: u64,
    trials: u64,
    dir: &Path,
) -> Result<PairsReport, ReportRunError> {
    let measured = measured_matrix(&data.samples, seed);
    let mut f = Findings::default();
    let n = measured.names.len();
    let mut rows = Vec::new();
    for i in 0..n {
        let mut row = vec![measured.names[i].clone()];
        for j in 0..n {
            row.push(match (measured.ws[i][j], measured.ci[i][j]) {
                (Some(v), Some((lo, hi))) => format!("{v:.3} [{lo:.3}–{hi:.3}]"),
                (Some(v), None) => format!("{v:.3}"),
                (None, _) => "—".into(),
            });
        }
        rows.push(row);
    }
    let mut columns = vec!["WS(i,j)".to_string()];
    columns.extend(measured.names.iter().cloned());
    f.tables.push(Table {
        title: "Pair matrix: weighted speedup of each pair co-running".into(),
        columns,
        rows,
        note: Some(
            "WS(i,j) = rate_i(with j) / rate_i(alone) + rate_j(with i) / rate_j(alone): 1.00 is \
             no gain over running them one after the other, 2.00 no interference; 95% bootstrap \
             interval in brackets."
                .into(),
        ),
    });
    f.limits.extend(measured.baseline_limits());
    let missing = measured.missing();
    if !missing.is_empty() {
        f.limits.push(format!(
            "No pairing analysis: {} had no successful sample (see the failures), so the matrix \
             is incomplete.",
            missing.join(", ")
        ));
        return Ok(PairsReport {
            matrix: measured,
            analysis: None,
            findings: f,
            csv: None,
        });
    }
    let ws: Vec<Vec<f64>> = measured
        .ws
        .iter()
        .map(|r| r.iter().map(|v| v.unwrap_or(0.0)).collect())
        .collect();
    let mut m = Matrix::new(measured.names.clone(), ws).map_err(ReportRunError::Matrix)?;
    m.ci = Some(measured.ci.clone());
    let a = pairs::analyse(&m, trials, seed);
    f.verdicts.push(a.verdict.clone());
    std::fs::create_dir_all(dir).map_err(|source| ReportRunError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let csv = dir.join("matrix.csv");
    std::fs::write(&csv, m.to_csv()).map_err(|source| ReportRunError::Write {
        path: csv.clone(),
        source,
    })?;
    Ok(PairsReport {
        matrix: measured,
        analysis: Some(a),
        findings: f,
        csv: Some(csv),
    })
}

/// Where a run's report goes unless `-o` says otherwise.
pub fn default_dir(run_id: i64) -> PathBuf {
    PathBuf::from("smtlab-reports").join(format!("run-{run_id}"))
}

/// Analyse `run` (read from `store`) and write its report into `dir`; a
/// pairs study's pairings are drawn from `pairs_trials` random schedules.
pub fn report_run(
    store: &Store,
    run: RunRecord,
    dir: &Path,
    pairs_trials: u64,
) -> Result<ReportedRun, ReportRunError> {
    let run_id = run.id;
    let spec: RunSpec = serde_json::from_value(run.config_json.clone())
        .map_err(|source| ReportRunError::Config { run_id, source })?;
    let topo: Topology = serde_json::from_value(run.host.topology.clone())
        .map_err(|source| ReportRunError::Topology { run_id, source })?;
    let data = run_data(store, run_id, run.seed)?;
    let meta = spec.study.clone();
    let is_pairs = meta.as_ref().is_some_and(|m| m.kind == StudyKind::Pairs);
    let is_comm = meta.as_ref().is_some_and(|m| m.kind == StudyKind::Comm);
    // A pairs study's points are co-runs, not a sweep: the scaling
    // analysis has nothing to say about them; its pairings do. A comm
    // study's rank count is how a problem is divided, not a worker count to
    // recommend: its findings compare the mechanisms at each count instead.
    let analysis = if is_pairs || is_comm {
        Analysis {
            series: Vec::new(),
            smt_yields: Vec::new(),
            model_verdicts: Vec::new(),
            recommendations: Vec::new(),
            notes: Vec::new(),
        }
    } else {
        analysis::analyze(&data.points, &topo, run.seed)
    };
    let pairs = if is_pairs {
        Some(pairs_findings(&data, run.seed, pairs_trials, dir)?)
    } else {
        None
    };
    let findings = match (&meta, &pairs) {
        (Some(_), Some(p)) => p.findings.clone(),
        (Some(m), None) if m.kind == StudyKind::Comm => comm(&data, run.seed),
        // The chat study's intervals need each sample's costs per message.
        (Some(m), None) if m.kind == StudyKind::Chat => {
            let mut w = crate::web_findings::WebFindings::default();
            crate::chat_findings::chat_study(&data, run.seed, &mut w);
            Findings {
                tables: w.tables,
                verdicts: w.verdicts,
                limits: w.limits,
            }
        }
        (Some(m), None) => findings(m, &data.points, &analysis, &topo, run.seed),
        (None, _) => Findings {
            verdicts: analysis
                .model_verdicts
                .iter()
                .map(|v| v.sentence.clone())
                .collect(),
            ..Findings::default()
        },
    };
    let mut limits: Vec<String> = meta.as_ref().map(|m| m.limits.clone()).unwrap_or_default();
    limits.extend(emulation_limit(&run.host));
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
        pairs: pairs.as_ref().and_then(|p| p.analysis.as_ref()),
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
        pairs,
    })
}

/// What a run on emulated CPUs cannot show: anything about speed.
fn emulation_limit(host: &HostFacts) -> Option<String> {
    host.emulated.as_ref().map(|why| {
        format!(
            "This machine's CPUs are emulated ({why}): the kernel's topology (packages, cores, \
             SMT siblings, NUMA nodes) is real to smtlab, so placements and pinning ran as on \
             hardware, but the virtual CPUs take turns on the host's threads and no sibling \
             shares anything physical: no timing, speedup, SMT yield or verdict measured here \
             says anything about real hardware."
        )
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
    /// The pairs study's analysis (`programs`, `matrix`, `best`, `worst`,
    /// `random`, ...), as `smtlab pairs --json` prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pairs: Option<&'a PairsAnalysis>,
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
        pairs: r.pairs.as_ref().and_then(|p| p.analysis.as_ref()),
    })
    .unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emulated_cpus_are_a_limit_with_their_evidence() {
        assert_eq!(emulation_limit(&HostFacts::default()), None);
        let host = HostFacts {
            emulated: Some("QEMU TCG (CPU model \"QEMU TCG CPU version 2.5+\")".into()),
            ..HostFacts::default()
        };
        let limit = emulation_limit(&host).unwrap();
        assert!(
            limit.starts_with("This machine's CPUs are emulated (QEMU TCG (CPU model")
                && limit.contains("says anything about real hardware"),
            "{limit}"
        );
    }
}
