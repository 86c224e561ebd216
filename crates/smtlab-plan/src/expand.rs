//! `expand`: a run specification into its points, program x allocator x
//! model x placement x N, with the checks that need the whole
//! specification and the machine ([`PlanError`]). Uses no other module of
//! this crate.

use smtlab_topology::placement::{place, PlacementError};
use smtlab_topology::Topology;
use smtlab_types::{Metric, Mode, Model, Point, Program, RunSpec};
use smtlab_workloads::TimeMetric;

/// Why a run specification cannot be planned on a machine; every message
/// names the flag at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("--placement: {0}")]
    Placement(#[from] PlacementError),
    #[error("--threads: 0 workers; use 1 or more")]
    ZeroWorkers,
    #[error("--min-samples 0: at least 1 sample is needed")]
    ZeroMinSamples,
    #[error("--max-samples {max} is below --min-samples {min}")]
    MaxBelowMin { min: usize, max: usize },
    /// A study that puts one worker per core, given more workers than cores.
    #[error(
        "--threads: {n} workers but the cores study puts one worker per core and this \
         machine has {cores} usable cores; use N <= {cores}"
    )]
    MoreWorkersThanCores { n: usize, cores: usize },
    #[error("--workload {0}: no such workload")]
    NoSuchWorkload(String),
    #[error(
        "--duration: workload `{workload}` solves a fixed problem; measure it with --work N \
         (N instances; default {default_work})"
    )]
    FixedProblem { workload: String, default_work: u64 },
}

/// Expand a run configuration into its points, in a fixed order:
/// program, allocator, model, placement, N. The checks that need the whole
/// specification (sampling bounds, modes the workloads support, placements
/// on this machine) are made here, once, before anything runs.
pub fn expand(topo: &Topology, spec: &RunSpec) -> Result<Vec<Point>, PlanError> {
    if spec.min_samples == 0 {
        return Err(PlanError::ZeroMinSamples);
    }
    if spec.max_samples < spec.min_samples {
        return Err(PlanError::MaxBelowMin {
            min: spec.min_samples,
            max: spec.max_samples,
        });
    }
    let mut points = Vec::new();
    for program in &spec.programs {
        let mode = mode_of(program, spec)?;
        let metric = metric_of(program, spec, mode);
        for alloc in &spec.allocs {
            for &model in &spec.models {
                for placement in &spec.placements {
                    let counts: Vec<usize> = match model {
                        Model::Hybrid { processes, threads } => vec![processes * threads],
                        _ => spec.threads.clone(),
                    };
                    for n in counts {
                        if n == 0 {
                            return Err(PlanError::ZeroWorkers);
                        }
                        let placed = place(topo, &placement.policy, n)?;
                        points.push(Point {
                            index: points.len(),
                            program: program.clone(),
                            model,
                            spawn: spec.spawn,
                            placement: placement.text.clone(),
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
    let info = smtlab_workloads::builtin(workload)
        .ok_or_else(|| PlanError::NoSuchWorkload(workload.clone()))?
        .info();
    match spec.mode {
        None => Ok(info.default_mode),
        Some(Mode::FixedTime { .. }) if !info.fixed_time => Err(PlanError::FixedProblem {
            workload: workload.clone(),
            default_work: match info.default_mode {
                Mode::FixedWork { work } => work,
                Mode::FixedTime { .. } => 1,
            },
        }),
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
            match smtlab_workloads::builtin(workload).map(|w| w.info().time_metric) {
                Some(TimeMetric::Latency { name, unit, .. }) => Metric {
                    name: name.into(),
                    unit: unit.into(),
                    higher_is_better: false,
                },
                Some(TimeMetric::Throughput { name, unit, .. }) => Metric {
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
