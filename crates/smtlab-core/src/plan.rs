//! Plans: a `run` command line or a study expanded into the full list of
//! measurement points (program x model x placement x N x allocator) before
//! anything runs, so a dry run can print it and a resumed run can rebuild it.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How workers are organised into processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Model {
    /// One process running N threads.
    Thread,
    /// N single-threaded processes.
    Process,
    /// P processes of T threads each.
    Hybrid { processes: usize, threads: usize },
}

impl Model {
    /// (processes, threads per process) for N workers.
    pub fn shape(self, workers: usize) -> (usize, usize) {
        match self {
            Model::Thread => (1, workers),
            Model::Process => (workers, 1),
            Model::Hybrid { processes, threads } => (processes, threads),
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Model::Thread => f.write_str("thread"),
            Model::Process => f.write_str("process"),
            Model::Hybrid { processes, threads } => write!(f, "hybrid:{processes}x{threads}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--model `{text}`: {reason}")]
pub struct ModelError {
    pub text: String,
    pub reason: String,
}

impl FromStr for Model {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| ModelError {
            text: s.to_string(),
            reason: reason.to_string(),
        };
        match s.trim() {
            "thread" | "threads" => Ok(Model::Thread),
            "process" | "processes" => Ok(Model::Process),
            other => {
                let Some(shape) = other.strip_prefix("hybrid:") else {
                    return Err(err(
                        "expected thread, process or hybrid:PxT (e.g. hybrid:2x4)",
                    ));
                };
                let (p, t) = shape
                    .split_once('x')
                    .ok_or_else(|| err("expected hybrid:PxT, e.g. hybrid:2x4"))?;
                let num = |v: &str| v.parse::<usize>().ok().filter(|n| *n > 0);
                match (num(p), num(t)) {
                    (Some(processes), Some(threads)) => Ok(Model::Hybrid { processes, threads }),
                    _ => Err(err("P and T in hybrid:PxT must be positive integers")),
                }
            }
        }
    }
}

/// How worker processes are started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Spawn {
    /// exec of smtlab's hidden worker subcommand: a fresh address space per
    /// process, like N JVMs.
    #[default]
    Exec,
    /// fork of the parent after set-up: prefork-style, pages shared
    /// copy-on-write.
    Fork,
}

/// When a sample ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Mode {
    /// Run for this long; the metric is operations per second.
    FixedTime { seconds: f64 },
    /// Do this much work in total; the metric is the wall time to finish.
    FixedWork { work: u64 },
}

/// What runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Program {
    /// A built-in workload with its parameters (`--param k=v`).
    Builtin {
        workload: String,
        params: BTreeMap<String, String>,
    },
    /// A user command template with `{threads}` (or `{n}`), `{rank}`, `{cpus}` placeholders.
    Command { template: String },
}

impl Program {
    /// Short name for tables: the workload name or the command's first word.
    pub fn label(&self) -> String {
        match self {
            Program::Builtin { workload, params } => {
                // A parameter that changes what is measured (not just its
                // size) names a different program: `allocprobe migrate=1`
                // must not merge with pinned allocprobe in an analysis.
                let mut s = workload.clone();
                for key in VARIANT_PARAMS {
                    if let Some(v) = params.get(*key).filter(|v| v.as_str() != "0") {
                        s.push_str(&format!(" {key}={v}"));
                    }
                }
                s
            }
            Program::Command { template } => template
                .split_whitespace()
                .next()
                .unwrap_or("cmd")
                .to_string(),
        }
    }
}

/// Workload parameters that change what is measured rather than its size;
/// [`Program::label`] shows them when set.
pub const VARIANT_PARAMS: &[&str] = &["migrate"];

/// The primary metric of a point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metric {
    /// `ops_per_s`, `wall_time`, or the name given to `--metric NAME=REGEX`.
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
}

/// One configuration to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Position in the plan (stable across a resume).
    pub index: usize,
    pub program: Program,
    pub model: Model,
    pub spawn: Spawn,
    /// The placement policy as written (`compact`, `scatter`, `S0:0-3`, ...).
    pub placement: String,
    /// Total workers N (threads x processes).
    pub workers: usize,
    /// `cpus[i]`: worker i's PU; `None` when not pinned.
    pub cpus: Option<Vec<u32>>,
    pub oversubscription: f64,
    /// `glibc` (no preload), `jemalloc`, ..., or a library path.
    pub alloc: String,
    pub mode: Mode,
    pub metric: Metric,
}

/// `--metric NAME=REGEX`: a number a user command prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSpec {
    pub name: String,
    pub regex: String,
    pub unit: String,
    pub higher_is_better: bool,
}

/// A validated `run` configuration: what to sweep and how to measure. Stored
/// with the run, so `--resume` rebuilds exactly the same plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub programs: Vec<Program>,
    pub models: Vec<Model>,
    pub placements: Vec<String>,
    pub threads: Vec<usize>,
    pub allocs: Vec<String>,
    pub spawn: Spawn,
    /// `None`: each workload's default mode (a command runs to completion).
    pub mode: Option<Mode>,
    pub metric: Option<MetricSpec>,
    pub warmup: usize,
    pub min_samples: usize,
    pub max_samples: usize,
    /// Target relative half-width of the 95% CI of the primary metric.
    pub precision: f64,
    /// Most time to spend on one point, seconds.
    pub max_time_s: f64,
    pub timeout_s: Option<f64>,
    pub seed: u64,
    pub counters: bool,
    /// Set when the run is a study (`smtlab study`): which one, and what
    /// the machine could not show. Absent in plain runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<crate::study::StudyMeta>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("--placement: {0}")]
    Placement(#[from] crate::placement::PlacementError),
    #[error("--model {model}: {reason}")]
    Model { model: String, reason: String },
    #[error("--threads: {0}")]
    Threads(String),
    #[error("{0}")]
    Mode(String),
}

/// Expand a run configuration into its points, in a fixed order:
/// program, allocator, model, placement, N.
pub fn expand(topo: &crate::Topology, spec: &RunSpec) -> Result<Vec<Point>, PlanError> {
    use crate::placement::{place, Policy};
    let mut points = Vec::new();
    for program in &spec.programs {
        let mode = mode_of(program, spec)?;
        let metric = metric_of(program, spec, mode);
        for alloc in &spec.allocs {
            for &model in &spec.models {
                for placement in &spec.placements {
                    let policy: Policy = placement.parse()?;
                    let counts: Vec<usize> = match model {
                        Model::Hybrid { processes, threads } => vec![processes * threads],
                        _ => spec.threads.clone(),
                    };
                    for n in counts {
                        if n == 0 {
                            return Err(PlanError::Threads("0 workers; use 1 or more".into()));
                        }
                        let placed = place(topo, &policy, n)?;
                        points.push(Point {
                            index: points.len(),
                            program: program.clone(),
                            model,
                            spawn: spec.spawn,
                            placement: placement.clone(),
                            workers: n,
                            cpus: placed.cpus,
                            oversubscription: placed.oversubscription,
                            alloc: alloc.clone(),
                            mode,
                            metric: metric.clone(),
                        });
                    }
                }
            }
        }
    }
    Ok(points)
}

/// The mode a program runs in: the one asked for, else the workload's
/// default; a user command runs to completion (one unit of work).
fn mode_of(program: &Program, spec: &RunSpec) -> Result<Mode, PlanError> {
    let Program::Builtin { workload, .. } = program else {
        return Ok(Mode::FixedWork { work: 1 });
    };
    let info = crate::workload::builtin(workload)
        .ok_or_else(|| PlanError::Mode(format!("--workload {workload}: no such workload")))?
        .info();
    match spec.mode {
        None => Ok(info.default_mode),
        Some(Mode::FixedTime { .. }) if !info.fixed_time => Err(PlanError::Mode(format!(
            "--duration: workload `{workload}` solves a fixed problem; measure it with --work N \
             (N instances; default {})",
            match info.default_mode {
                Mode::FixedWork { work } => work,
                Mode::FixedTime { .. } => 1,
            }
        ))),
        Some(m) => Ok(m),
    }
}

fn metric_of(program: &Program, spec: &RunSpec, mode: Mode) -> Metric {
    match (program, &spec.metric, mode) {
        (Program::Command { .. }, Some(m), _) => Metric {
            name: m.name.clone(),
            unit: m.unit.clone(),
            higher_is_better: m.higher_is_better,
        },
        (Program::Builtin { workload, .. }, _, Mode::FixedTime { .. }) => {
            match crate::workload::builtin(workload).map(|w| w.info().time_metric) {
                Some(crate::workload::TimeMetric::Latency { name, unit, .. }) => Metric {
                    name: name.into(),
                    unit: unit.into(),
                    higher_is_better: false,
                },
                Some(crate::workload::TimeMetric::Throughput { name, unit, .. }) => Metric {
                    name: name.into(),
                    unit: unit.into(),
                    higher_is_better: true,
                },
                None => Metric {
                    name: "throughput".into(),
                    unit: "ops/s".into(),
                    higher_is_better: true,
                },
            }
        }
        _ => Metric {
            name: "wall_time".into(),
            unit: "s".into(),
            higher_is_better: false,
        },
    }
}
