//! `compare`: the matching points of two runs side by side, with the speed
//! ratio and its 95% CI — for baselines and regressions.
//!
//! Points match when they ran the same program (name and parameters), model,
//! placement, N, allocator and metric; the CPUs may differ (another machine).

use serde::Serialize;

use crate::analysis::{verdict, PointData, Verdict};
use smtlab_types::Point;

/// One matched pair.
#[derive(Debug, Clone, Serialize)]
pub struct ComparedPoint {
    /// What the pair is, e.g. `jbb thread compact N=2 glibc`.
    pub key: String,
    pub index_a: usize,
    pub index_b: usize,
    /// `None` when either side has no successful samples.
    pub verdict: Option<Verdict>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub points: Vec<ComparedPoint>,
    /// Keys of points found in only one run.
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
}

/// The identity of a point across runs.
fn key(p: &Point) -> (String, String) {
    let params = match &p.program {
        smtlab_types::Program::Builtin { params, .. } if !params.is_empty() => format!(
            " ({})",
            params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        smtlab_types::Program::Command { template } => format!(" ({template})"),
        _ => String::new(),
    };
    let shown = format!(
        "{} {} {} N={} {}",
        p.program.label(),
        p.model,
        p.placement,
        p.workers,
        p.alloc
    );
    (format!("{shown}{params} [{}]", p.metric.name), shown)
}

/// Compare run A against run B: a ratio > 1 means A was faster.
pub fn compare_runs(
    a: &[PointData],
    b: &[PointData],
    a_label: &str,
    b_label: &str,
    seed: u64,
) -> Comparison {
    let mut out = Comparison {
        a: a_label.to_string(),
        b: b_label.to_string(),
        points: Vec::new(),
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
    };
    for pa in a {
        let (ka, shown) = key(&pa.summary.point);
        match b.iter().find(|pb| key(&pb.summary.point).0 == ka) {
            Some(pb) => out.points.push(ComparedPoint {
                key: shown.clone(),
                index_a: pa.summary.point.index,
                index_b: pb.summary.point.index,
                verdict: verdict::compare(pa, pb, a_label, b_label, &shown, seed),
            }),
            None => out.only_in_a.push(shown),
        }
    }
    for pb in b {
        let (kb, shown) = key(&pb.summary.point);
        if !a.iter().any(|pa| key(&pa.summary.point).0 == kb) {
            out.only_in_b.push(shown);
        }
    }
    out
}
