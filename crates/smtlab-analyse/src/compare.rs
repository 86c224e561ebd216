//! `compare`: the matching points of two runs side by side, with the speed
//! ratio and its 95% CI — for baselines and regressions ([`compare_runs`]);
//! and of one run per host, each host's median beside the first host's,
//! with the facts of the machines that differ ([`compare_hosts`]).
//!
//! Points match when they ran the same program (name and parameters), model,
//! placement, N, allocator and metric; the CPUs may differ (another machine).

use serde::Serialize;

use crate::analysis::{verdict, PointData, Verdict};
use crate::host_facts::{compare_facts, FactComparison};
use smtlab_types::{HostFacts, Metric, Point};

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

/// Compare run A against run B: a ratio > 1 means A was faster. `place`
/// opens each verdict's sentence: [`verdict::ON_THIS_MACHINE`] for two runs
/// of one host, something like "Across hosts alpha and beta," for two
/// machines.
pub fn compare_runs(
    place: &str,
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
                verdict: verdict::compare_at(place, pa, pb, a_label, b_label, &shown, seed),
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

/// One host's run, for [`compare_hosts`].
pub struct HostRun<'a> {
    /// The host's name as its run recorded it.
    pub host: String,
    pub run_id: i64,
    pub facts: &'a HostFacts,
    pub points: &'a [PointData],
}

/// Runs of several hosts side by side.
#[derive(Debug, Clone, Serialize)]
pub struct HostComparison {
    /// The hosts in the order given; the first is the reference of the
    /// ratios.
    pub hosts: Vec<HostColumn>,
    /// Points measured on two hosts or more, in the order first measured.
    pub points: Vec<HostPoint>,
    /// Points only one host measured.
    pub unmatched: Vec<UnmatchedPoint>,
    /// The facts of the machines that differ.
    pub facts: FactComparison,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostColumn {
    pub host: String,
    pub run_id: i64,
}

/// One matched point across hosts.
#[derive(Debug, Clone, Serialize)]
pub struct HostPoint {
    /// What the point is, e.g. `spin thread compact N=2 glibc`.
    pub key: String,
    pub metric: Metric,
    /// Per host (in the order of [`HostComparison::hosts`]); `None` where
    /// that host did not measure the point.
    pub values: Vec<Option<HostValue>>,
}

/// One host's measurement of a matched point.
#[derive(Debug, Clone, Serialize)]
pub struct HostValue {
    /// The median and its bootstrap 95% CI; `None` without a successful
    /// sample.
    pub median: Option<f64>,
    pub ci95: Option<(f64, f64)>,
    /// Successful measured samples.
    pub samples: usize,
    /// How many times faster this host was than the first host (throughput
    /// ratio, or the first host's time over this one's), with its 95% CI;
    /// `None` for the first host, and where either side has no result.
    pub vs_first: Option<Ratio>,
}

/// A speed ratio and its bootstrap 95% CI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    /// > 1: faster than the reference.
    pub speed_ratio: f64,
    pub ci95: Option<(f64, f64)>,
    /// The CI excludes 1.
    pub significant: bool,
}

impl From<&Verdict> for Ratio {
    fn from(v: &Verdict) -> Ratio {
        Ratio {
            speed_ratio: v.speed_ratio,
            ci95: v.ci95,
            significant: v.significant,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct UnmatchedPoint {
    pub key: String,
    pub host: String,
}

/// Compare the runs of several hosts: each point measured on two hosts or
/// more, every host's median and its ratio to the first host's (> 1: faster
/// than the first host), and which facts of the machines differ.
pub fn compare_hosts(runs: &[HostRun], seed: u64) -> HostComparison {
    // Each host's points by key (the first of a key in plan order), and
    // the keys in the order they were first measured.
    let mut order: Vec<(String, String, Metric)> = Vec::new();
    let mut by_host: Vec<Vec<(String, &PointData)>> = Vec::new();
    for r in runs {
        let mut mine: Vec<(String, &PointData)> = Vec::new();
        for p in r.points {
            let (k, shown) = key(&p.summary.point);
            if mine.iter().any(|(m, _)| *m == k) {
                continue;
            }
            if !order.iter().any(|(o, _, _)| *o == k) {
                order.push((k.clone(), shown, p.summary.point.metric.clone()));
            }
            mine.push((k, p));
        }
        by_host.push(mine);
    }
    let find = |h: usize, k: &str| by_host[h].iter().find(|(m, _)| m == k).map(|(_, p)| *p);
    let mut points = Vec::new();
    let mut unmatched = Vec::new();
    for (k, shown, metric) in order {
        let found: Vec<Option<&PointData>> = (0..runs.len()).map(|h| find(h, &k)).collect();
        if found.iter().flatten().count() < 2 {
            if let Some(h) = found.iter().position(Option::is_some) {
                unmatched.push(UnmatchedPoint {
                    key: shown,
                    host: runs[h].host.clone(),
                });
            }
            continue;
        }
        let first = found[0];
        let values = found
            .iter()
            .enumerate()
            .map(|(h, p)| {
                let p = (*p)?;
                let s = p.summary.summary.as_ref();
                let vs_first = match (h, first) {
                    (0, _) | (_, None) => None,
                    (_, Some(f)) => {
                        verdict::compare(p, f, &runs[h].host, &runs[0].host, &shown, seed)
                            .as_ref()
                            .map(Ratio::from)
                    }
                };
                Some(HostValue {
                    median: s.map(|s| s.median),
                    ci95: s.and_then(|s| s.ci95),
                    samples: p.summary.samples,
                    vs_first,
                })
            })
            .collect();
        points.push(HostPoint {
            key: shown,
            metric,
            values,
        });
    }
    let named: Vec<(String, &HostFacts)> = runs.iter().map(|r| (r.host.clone(), r.facts)).collect();
    HostComparison {
        hosts: runs
            .iter()
            .map(|r| HostColumn {
                host: r.host.clone(),
                run_id: r.run_id,
            })
            .collect(),
        points,
        unmatched,
        facts: compare_facts(&named),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{data, noisy, ops, point};
    use smtlab_topology::synthetic;
    use smtlab_types::Model;

    fn facts(topo: &str, smt: bool, kernel: &str) -> HostFacts {
        HostFacts {
            kernel: Some(kernel.into()),
            cpu_model: Some("EPYC".into()),
            topology: serde_json::to_value(synthetic::parse(topo).unwrap()).unwrap(),
            smt_active: smt,
            ..HostFacts::default()
        }
    }

    #[test]
    fn hosts_are_matched_point_by_point_and_their_facts_compared() {
        let run = |x1: f64, x2: f64, seed: u64| {
            vec![
                data(
                    point(0, "spin", Model::Thread, "compact", 1, ops()),
                    &noisy(x1, 0.002, 10, seed),
                ),
                data(
                    point(1, "spin", Model::Thread, "compact", 2, ops()),
                    &noisy(x2, 0.002, 10, seed + 1),
                ),
            ]
        };
        let a = run(1000.0, 2000.0, 1);
        // beta: its second sibling is worth less than alpha's second core.
        let b = run(1000.0, 1300.0, 3);
        let mut c = run(900.0, 1800.0, 5);
        c.truncate(1);
        c.push(data(
            point(1, "spin", Model::Process, "compact", 2, ops()),
            &noisy(1800.0, 0.002, 10, 7),
        ));
        let (fa, fb, fc) = (
            facts("core:2", false, "6.1.0"),
            facts("core:1 pu:2", true, "6.8.0"),
            facts("core:2", false, "6.1.0"),
        );
        let host = |name: &str, id, facts, points| HostRun {
            host: name.into(),
            run_id: id,
            facts,
            points,
        };
        let cmp = compare_hosts(
            &[
                host("alpha", 1, &fa, &a),
                host("beta", 2, &fb, &b),
                host("gamma", 3, &fc, &c),
            ],
            11,
        );
        let keys: Vec<&str> = cmp.points.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "spin thread compact N=1 glibc",
                "spin thread compact N=2 glibc"
            ]
        );
        let n2 = &cmp.points[1];
        assert!(n2.values[0].as_ref().unwrap().vs_first.is_none());
        let beta = n2.values[1].as_ref().unwrap().vs_first.clone().unwrap();
        assert!((beta.speed_ratio - 0.65).abs() < 0.01, "{beta:?}");
        assert!(beta.significant);
        assert!(n2.values[2].is_none(), "gamma did not measure it");
        let n1 = &cmp.points[0];
        let gamma = n1.values[2].as_ref().unwrap().vs_first.clone().unwrap();
        assert!((gamma.speed_ratio - 0.9).abs() < 0.01, "{gamma:?}");
        assert_eq!(cmp.unmatched.len(), 1);
        assert_eq!(cmp.unmatched[0].host, "gamma");
        assert_eq!(cmp.unmatched[0].key, "spin process compact N=2 glibc");

        let facts: Vec<&str> = cmp
            .facts
            .differences
            .iter()
            .map(|d| d.fact.as_str())
            .collect();
        assert_eq!(facts, ["SMT", "kernel", "topology"]);
        assert_eq!(cmp.facts.differences[0].values, ["off", "on", "off"]);
        assert!(cmp
            .facts
            .sentence
            .contains("SMT (alpha off, beta on, gamma off)"));
        assert!(cmp
            .facts
            .sentence
            .contains("kernel (alpha 6.1.0, beta 6.8.0, gamma 6.1.0)"));
    }
}
