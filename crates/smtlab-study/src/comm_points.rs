//! What the communication study reads of a DSM point: its application,
//! mechanism, ranks and layout, and the parts of a rank's time (totals,
//! per rank, per sample), for its tables and its verdicts.

use smtlab_analyse::analysis::PointData;
use smtlab_types::extras::dsm;
use smtlab_types::{Comm, Point, Program, Sample};

use crate::comm_plan::{layout_name, per_node_of};
use crate::intervals::{self};

/// The application and mechanism of a DSM point; `None` for any other.
pub(crate) fn ranks_of(p: &PointData) -> Option<(&str, Comm)> {
    match &p.summary.point.program {
        Program::Ranks { app, comm, .. } => Some((app.as_str(), *comm)),
        _ => None,
    }
}

pub(crate) fn comm_of(p: &PointData) -> Comm {
    ranks_of(p).map_or(Comm::Sigio, |(_, c)| c)
}

pub(crate) fn ranks(p: &PointData) -> usize {
    p.summary.point.workers
}

pub(crate) fn per_node(p: &PointData) -> usize {
    per_node_of(&p.summary.point)
}

/// More ranks than CPUs: ranks take turns on a CPU.
pub(crate) fn oversubscribed(p: &PointData) -> bool {
    p.summary.point.oversubscription > 1.0
}

/// A statistic summed over the ranks (median over the samples).
pub(crate) fn total(p: &PointData, key: &str) -> Option<f64> {
    p.summary.extras.get(key).copied()
}

/// A statistic per rank on average: the sum over ranks over the ranks.
pub(crate) fn per_rank(p: &PointData, key: &str) -> Option<f64> {
    total(p, key).map(|v| v / ranks(p).max(1) as f64)
}

/// `SOR`, `LU`, `TSP`: as the paper names them.
pub(crate) fn app_name(app: &str) -> String {
    app.to_uppercase()
}

/// `LU at 2 ranks, one rank per CPU`.
pub(crate) fn subject(app: &str, n: usize, per_node: usize) -> String {
    format!("{} at {n} ranks, {}", app_name(app), layout_name(per_node))
}

/// The parts of a rank's time that can make a difference between two
/// mechanisms: the paper's computation, serving and waiting, and the rest
/// of fault and synchronisation handling (waiting is counted inside both).
pub(crate) const PARTS: [(&str, &str); 4] = [
    ("wait", "waiting time"),
    ("compute", "computation"),
    ("serve", "serving on the computing thread"),
    (
        "handling",
        "fault and synchronisation handling besides waiting",
    ),
];

/// Seconds per rank of `part` (one of [`PARTS`]).
pub(crate) fn part(p: &PointData, part: &str) -> Option<f64> {
    match part {
        "handling" => Some(
            per_rank(p, dsm::FAULT_S).unwrap_or(0.0) + per_rank(p, dsm::SYNC_S).unwrap_or(0.0)
                - per_rank(p, dsm::WAIT_S)?,
        ),
        name => per_rank(p, part_extra(name)?),
    }
}

/// The extra holding the seconds of `part`, for the parts that are one
/// statistic (`handling` is three).
pub(crate) fn part_extra(part: &str) -> Option<&'static str> {
    match part {
        "wait" => Some(dsm::WAIT_S),
        "compute" => Some(dsm::COMPUTE_S),
        "serve" => Some(dsm::SERVE_S),
        _ => None,
    }
}

/// Seconds per rank of `part` in each successful measured sample of `p`.
pub(crate) fn part_values(samples: &[(Point, Vec<Sample>)], p: &PointData, part: &str) -> Vec<f64> {
    let n = ranks(p).max(1) as f64;
    intervals::samples_of(samples, &p.summary.point)
        .iter()
        .filter_map(|s| {
            let x = |k: &str| s.extras.get(k).copied();
            match part {
                "handling" => Some(
                    x(dsm::FAULT_S).unwrap_or(0.0) + x(dsm::SYNC_S).unwrap_or(0.0)
                        - x(dsm::WAIT_S)?,
                ),
                name => x(part_extra(name)?),
            }
        })
        .map(|v| v / n)
        .collect()
}
