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
    f.tables.push(matrix_table(&measured));
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
    // The verdict's gain gets its interval from replicates of the whole
    // matrix (or says which co-runs had too few samples for one).
    m.resampling = measured.resampling.clone();
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

/// What a cell of the matrix table says where the cell has a WS but no
/// interval.
const TOO_FEW_CELL: &str = "too few samples";

/// The pair matrix as a table: each WS with its 95% interval in brackets,
/// or `[too few samples]` where the co-run or a program alone had fewer
/// than 3 successful samples (the note says so then), `—` where a co-run
/// has no value.
fn matrix_table(measured: &MeasuredMatrix) -> Table {
    let n = measured.names.len();
    let mut rows = Vec::new();
    let mut bare = false;
    for i in 0..n {
        let mut row = vec![measured.names[i].clone()];
        for j in 0..n {
            row.push(match (measured.ws[i][j], measured.ci[i][j]) {
                (Some(v), Some((lo, hi))) => format!("{v:.3} [{lo:.3}–{hi:.3}]"),
                (Some(v), None) => {
                    bare = true;
                    format!("{v:.3} [{TOO_FEW_CELL}]")
                }
                (None, _) => "—".into(),
            });
        }
        rows.push(row);
    }
    let mut columns = vec!["WS(i,j)".to_string()];
    columns.extend(measured.names.iter().cloned());
    let mut note = "WS(i,j) = rate_i(with j) / rate_i(alone) + rate_j(with i) / rate_j(alone): \
                    1.00 is no gain over running them one after the other, 2.00 no \
                    interference; 95% bootstrap interval in brackets"
        .to_string();
    if bare {
        note.push_str(&format!(
            ", or [{TOO_FEW_CELL}] where the pair co-running or either program alone had \
             fewer than 3 successful samples, too few for an interval"
        ));
    }
    note.push('.');
    Table {
        title: "Pair matrix: weighted speedup of each pair co-running".into(),
        columns,
        rows,
        note: Some(note),
    }
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
    use smtlab_types::{
        CoPart, Metric, Mode, Model, Point, Program, ResourceUsage, Sample, SampleStatus, Spawn,
    };

    fn part(name: &str) -> CoPart {
        CoPart {
            name: name.into(),
            slot: 0,
            program: Box::new(Program::Builtin {
                workload: "spin".into(),
                params: Default::default(),
            }),
            mode: Mode::FixedTime { seconds: 0.1 },
        }
    }

    fn co_run(index: usize, names: &[&str]) -> Point {
        Point {
            index,
            workers: names.len(),
            cpus: Some((0..names.len() as u32).collect()),
            program: Program::CoRun {
                parts: names.iter().map(|n| part(n)).collect(),
            },
            model: Model::Thread,
            spawn: Spawn::Exec,
            placement: "pairs:smt".into(),
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: Mode::FixedTime { seconds: 1.0 },
            metric: Metric {
                name: "rate".into(),
                unit: "1/s".into(),
                higher_is_better: true,
            },
        }
    }

    /// `n` samples of the parts' `rates`, spread by ±2%.
    fn samples(rates: &[f64], n: usize) -> Vec<Sample> {
        (0..n)
            .map(|i| {
                let u = 0.02 * (2.0 * i as f64 / (n - 1).max(1) as f64 - 1.0);
                Sample {
                    seq: i,
                    warmup: false,
                    status: SampleStatus::Ok,
                    reason: None,
                    started_at: 0.0,
                    wall_s: 1.0,
                    ops: None,
                    metric: Some(rates[0]),
                    usage: ResourceUsage::default(),
                    counters: Vec::new(),
                    workers: Vec::new(),
                    extras: rates
                        .iter()
                        .enumerate()
                        .map(|(k, r)| (format!("rate.{k}"), r * (1.0 + u * (k as f64 + 1.0))))
                        .collect(),
                }
            })
            .collect()
    }

    /// examples/pairs-4.csv measured: a, b, c, d each 100/s alone, and
    /// each pair at the rates that give its WS, `n` samples a co-run (`few`
    /// of them for a+b).
    fn pairs_four(n: usize, few: usize) -> RunData {
        let names = ["a", "b", "c", "d"];
        let ws = [
            [1.0, 1.5, 1.2, 1.1],
            [1.5, 1.0, 1.1, 1.3],
            [1.2, 1.1, 1.0, 1.4],
            [1.1, 1.3, 1.4, 1.0],
        ];
        let mut samples_of = Vec::new();
        for (i, name) in names.iter().enumerate() {
            samples_of.push((co_run(i, &[name]), samples(&[100.0], n)));
        }
        for i in 0..4 {
            for j in i..4 {
                let rate = 50.0 * ws[i][j];
                let count = if (i, j) == (0, 1) { few } else { n };
                let point = co_run(samples_of.len(), &[names[i], names[j]]);
                samples_of.push((point, samples(&[rate, rate], count)));
            }
        }
        RunData {
            points: Vec::new(),
            samples: samples_of,
        }
    }

    #[test]
    fn the_pairs_verdict_gives_the_gain_its_interval() {
        let dir = tempfile::tempdir().unwrap();
        let p = pairs_findings(&pairs_four(5, 5), 1, 20_000, dir.path()).unwrap();
        let verdict = &p.findings.verdicts[0];
        // The best schedule 45%, the random median 25%.
        assert!(
            verdict.starts_with("An ideal scheduler gains 20.0 percentage points (95% CI "),
            "{verdict}"
        );
        assert!(verdict.ends_with("Best pairs: a+b, c+d."), "{verdict}");
        let gain = &p.analysis.as_ref().unwrap().gain;
        let [lo, hi] = gain.ci95.unwrap();
        assert!(lo <= 0.2 && 0.2 <= hi && hi - lo < 0.1, "{gain:?}");
        // Every cell has its interval, and the note says nothing more.
        let t = &p.findings.tables[0];
        assert!(t
            .rows
            .iter()
            .flatten()
            .skip(1)
            .all(|c| !c.contains("too few")));
        assert!(
            t.note
                .as_deref()
                .unwrap()
                .ends_with("95% bootstrap interval in brackets."),
            "{:?}",
            t.note
        );
    }

    #[test]
    fn cells_and_a_gain_without_an_interval_say_there_were_too_few_samples() {
        let dir = tempfile::tempdir().unwrap();
        let p = pairs_findings(&pairs_four(5, 2), 1, 20_000, dir.path()).unwrap();
        let verdict = &p.findings.verdicts[0];
        assert!(
            verdict.starts_with(
                "An ideal scheduler gains 20.0 percentage points (too few samples for a 95% \
                 interval: a+b had fewer than 3 successful samples) over the median random \
                 pairing (best 45.0%"
            ),
            "{verdict}"
        );
        let t = &p.findings.tables[0];
        // a's row: a+a with its interval, a+b without.
        assert!(t.rows[0][1].starts_with("1.000 ["), "{:?}", t.rows[0]);
        assert!(!t.rows[0][1].contains("too few"), "{:?}", t.rows[0]);
        assert_eq!(t.rows[0][2], "1.500 [too few samples]");
        assert_eq!(t.rows[1][1], "1.500 [too few samples]");
        let note = t.note.as_deref().unwrap();
        assert!(
            note.ends_with(
                "95% bootstrap interval in brackets, or [too few samples] where the pair \
                 co-running or either program alone had fewer than 3 successful samples, too \
                 few for an interval."
            ),
            "{note}"
        );
    }

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
