//! Plans: a run specification (a `run` command line or a study) expanded
//! into the full list of measurement points (program x allocator x model x
//! placement x N) before anything runs, so a dry run can print it and a
//! resumed run can rebuild it.
//!
//! The second stage of the pipeline: it uses the topology (placements), the
//! workloads' descriptions (default mode and metric) and the record types;
//! it runs nothing. Also owns the [`allocator`] table, since which
//! allocators a run can use is decided when it is planned.

pub mod allocator;

use smtlab_topology::placement::{place, PlacementError, Policy};
use smtlab_topology::Topology;
use smtlab_types::{Metric, Mode, Model, Point, Program, RunSpec};
use smtlab_workloads::TimeMetric;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("--placement: {0}")]
    Placement(#[from] PlacementError),
    #[error("--model {model}: {reason}")]
    Model { model: String, reason: String },
    #[error("--threads: {0}")]
    Threads(String),
    #[error("{0}")]
    Mode(String),
}

/// Expand a run configuration into its points, in a fixed order:
/// program, allocator, model, placement, N.
pub fn expand(topo: &Topology, spec: &RunSpec) -> Result<Vec<Point>, PlanError> {
    let mut points = Vec::new();
    for program in &spec.programs {
        let mode = mode_of(program, spec)?;
        let metric = metric_of(program, spec, mode);
        for alloc in &spec.allocs {
            for &model in &spec.models {
                for placement in &spec.placements {
                    let policy: Policy = placement.parse().map_err(PlacementError::from)?;
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
    let info = smtlab_workloads::builtin(workload)
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
