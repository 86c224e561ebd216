//! SMT yield: what each extra hardware thread of one core adds.
//!
//! Read only from series that stay on one core (`smt:K`, or `compact` with
//! N up to the core's size): every measured point of the series must be
//! pinned, and all its workers on PUs of the same core. Only then is the
//! difference between k and k−1 workers the k-th *sibling*, rather than a
//! second core or an unpinned scheduler's choice. A point with more workers
//! than the core has PUs (the placement wrapped around, oversubscribing) is
//! not a sibling count and is skipped.
//!
//! On a machine without SMT there are no siblings, and nothing is produced:
//! a yield is never estimated from other data.

use std::collections::BTreeMap;

use super::results::{SiblingYield, SmtYield};
use super::scaling::{group, median_of, throughput};
use crate::summary::PointData;
use smtlab_stats as stats;
use smtlab_topology::Topology;
use smtlab_types::Metric;

/// The SMT yields of every qualifying series, ordered by series key.
/// A series qualifies with results at k = 1 and k = 2 siblings; the entries
/// run k = 1, 2, ... up to the first k not measured.
///
/// Each `relative` and `gain` has a bootstrap 95% interval
/// ([`stats::medians_ci`], seeded by `seed`): the points involved are
/// resampled independently and the quantity recomputed from their
/// medians, as throughputs (1 / time for a time metric, applied to the
/// medians so the estimate is exactly the one stated). Fewer than 3
/// samples at any k involved: no interval, and the counts say why.
pub fn smt_yields(points: &[PointData], topo: &Topology, seed: u64) -> Vec<SmtYield> {
    if !topo.smt_active() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (key, members) in group(points) {
        let measured: Vec<&PointData> = members
            .into_iter()
            .filter(|p| median_of(p).is_some())
            .collect();
        let Some(core) = one_core(&measured, topo) else {
            continue;
        };
        let size = topo.cores[core].cpus.len();
        // k -> (X(k), the point), from the first point (lowest plan index)
        // of each k.
        let mut by_k: BTreeMap<usize, (f64, &PointData)> = BTreeMap::new();
        for p in &measured {
            let point = &p.summary.point;
            let Some(cpus) = &point.cpus else { continue };
            let mut distinct = cpus.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let k = point.workers;
            if k == 0 || k > size || cpus.len() != k || distinct.len() != k {
                continue;
            }
            let x = median_of(p).and_then(|m| throughput(&point.metric, m));
            if let Some(x) = x {
                by_k.entry(k).or_insert((x, *p));
            }
        }
        let Some(&(x1, p1)) = by_k.get(&1) else {
            continue;
        };
        let metric = &p1.summary.point.metric;
        let mut siblings = Vec::new();
        let mut prev = (x1, p1);
        for k in 1.. {
            let Some(&(x, p)) = by_k.get(&k) else { break };
            let samples = finite_count(&p.values);
            siblings.push(if k == 1 {
                // 1 and 0 by definition, not estimates; still no interval
                // below 3 samples, as everywhere else.
                let exact = samples >= 3;
                SiblingYield {
                    siblings: 1,
                    relative: 1.0,
                    gain: 0.0,
                    relative_ci95: exact.then_some((1.0, 1.0)),
                    gain_ci95: exact.then_some((0.0, 0.0)),
                    samples,
                }
            } else {
                SiblingYield {
                    siblings: k,
                    relative: x / x1,
                    gain: (x - prev.0) / x1,
                    relative_ci95: interval(metric, &[p1, p], |x| x[1] / x[0], seed),
                    gain_ci95: interval(metric, &[p1, prev.1, p], |x| (x[2] - x[1]) / x[0], seed),
                    samples,
                }
            });
            prev = (x, p);
        }
        if siblings.len() >= 2 {
            out.push(SmtYield {
                key,
                core,
                siblings,
            });
        }
    }
    out
}

/// The bootstrap 95% interval of `f` of the points' throughputs; `None`
/// below 3 samples at any point or with an infinite end.
fn interval(
    metric: &Metric,
    points: &[&PointData],
    f: impl Fn(&[f64]) -> f64,
    seed: u64,
) -> Option<(f64, f64)> {
    let values: Vec<&[f64]> = points.iter().map(|p| p.values.as_slice()).collect();
    let of_medians = |m: &[f64]| {
        let x: Option<Vec<f64>> = m.iter().map(|&m| throughput(metric, m)).collect();
        // A resample without a positive throughput has no ratio: NaN makes
        // the whole interval undefined rather than quietly bounded.
        x.map_or(f64::NAN, |x| f(&x))
    };
    stats::medians_ci(&values, of_medians, seed)
        .map(|(_, ci)| ci)
        .filter(|(lo, hi)| lo.is_finite() && hi.is_finite())
}

pub(crate) fn finite_count(values: &[f64]) -> usize {
    values.iter().filter(|v| v.is_finite()).count()
}

/// A gain's 95% interval as the sentences of the analysis and the studies
/// state it: `95% CI 15.1–19.4%` when both ends are at or above zero,
/// `95% CI −3.0% to +1.0%` (signed) otherwise.
pub fn gain_ci_text((lo, hi): (f64, f64)) -> String {
    if lo >= 0.0 {
        format!("95% CI {:.1}–{:.1}%", lo * 100.0, hi * 100.0)
    } else {
        format!(
            "95% CI {} to {}",
            super::verdict::signed_pct(lo),
            super::verdict::signed_pct(hi)
        )
    }
}

/// The sample counts the k-th sibling's gain rests on, as a sentence
/// states them: `n = 1 with 1 thread, 2 with 2` (the counts at 1, k − 1
/// and k threads, each once). `siblings` are a yield's entries, the k-th
/// among them.
pub fn gain_counts_text(siblings: &[SiblingYield], k: usize) -> String {
    let mut ks = vec![1, k.saturating_sub(1).max(1), k];
    ks.dedup();
    let parts: Vec<String> = ks
        .iter()
        .enumerate()
        .map(|(i, &j)| {
            let n = siblings
                .iter()
                .find(|s| s.siblings == j)
                .map_or(0, |s| s.samples);
            let threads = if j == 1 { "thread" } else { "threads" };
            if i == 0 {
                format!("{n} with {j} {threads}")
            } else {
                format!("{n} with {j}")
            }
        })
        .collect();
    format!("n = {}", parts.join(", "))
}

/// The core every worker of every point is pinned on, if there is one such
/// core (`None` for an unpinned point, an unknown PU, or two cores).
fn one_core(points: &[&PointData], topo: &Topology) -> Option<usize> {
    let mut core = None;
    for p in points {
        let cpus = p.summary.point.cpus.as_ref()?;
        if cpus.is_empty() {
            return None;
        }
        for &cpu in cpus {
            let c = topo.pu(cpu)?.core?;
            if *core.get_or_insert(c) != c {
                return None;
            }
        }
    }
    core
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{data, noisy, ops, pinned, point, wall};
    use smtlab_topology::synthetic;
    use smtlab_types::Model;

    /// A series on core 1 of `core:2 pu:4` (PUs 4-7): X(1) = 100, X(2) =
    /// 130, X(3) = 140, X(4) = 142, plus an oversubscribed N = 8.
    fn smt_series() -> Vec<PointData> {
        let xs = [(1, 100.0), (2, 130.0), (3, 140.0), (4, 142.0)];
        let mut pts: Vec<PointData> = xs
            .iter()
            .enumerate()
            .map(|(i, &(n, x))| {
                let cpus: Vec<u32> = (4..4 + n as u32).collect();
                data(
                    pinned(point(i, "jbb", Model::Thread, "smt:1", n, ops()), &cpus),
                    &noisy(x, 0.001, 9, i as u64),
                )
            })
            .collect();
        pts.push(data(
            pinned(
                point(9, "jbb", Model::Thread, "smt:1", 8, ops()),
                &[4, 5, 6, 7, 4, 5, 6, 7],
            ),
            &[50.0; 5],
        ));
        pts
    }

    #[test]
    fn yields_of_each_sibling_on_one_core() {
        let topo = synthetic::parse("core:2 pu:4").unwrap();
        let y = smt_yields(&smt_series(), &topo, 3);
        assert_eq!(y.len(), 1);
        assert_eq!(y[0].core, 1);
        assert_eq!(y[0].key.placement, "smt:1");
        let ks: Vec<usize> = y[0].siblings.iter().map(|s| s.siblings).collect();
        assert_eq!(ks, [1, 2, 3, 4], "the oversubscribed N = 8 is no sibling");
        let close = |a: f64, b: f64| (a - b).abs() < 0.005;
        let s = &y[0].siblings;
        assert_eq!((s[0].relative, s[0].gain), (1.0, 0.0));
        assert!(close(s[1].relative, 1.3) && close(s[1].gain, 0.3), "{s:?}");
        assert!(close(s[2].relative, 1.4) && close(s[2].gain, 0.1), "{s:?}");
        assert!(
            close(s[3].relative, 1.42) && close(s[3].gain, 0.02),
            "{s:?}"
        );
    }

    #[test]
    fn time_metrics_use_throughput() {
        let topo = synthetic::parse("core:2 pu:2").unwrap();
        let pts = vec![
            data(
                pinned(point(0, "p", Model::Process, "smt:0", 1, wall()), &[0]),
                &[10.0; 5],
            ),
            data(
                pinned(point(1, "p", Model::Process, "smt:0", 2, wall()), &[0, 1]),
                &[8.0; 5],
            ),
        ];
        let y = smt_yields(&pts, &topo, 3);
        // A time's throughput is 1 / time: 10 s -> 8 s is 1.25 times.
        assert!((y[0].siblings[1].relative - 1.25).abs() < 1e-12);
        assert!((y[0].siblings[1].gain - 0.25).abs() < 1e-12);
        // Constant samples: every resample gives the same throughputs, so
        // the intervals are the estimates, in throughput terms too.
        let (lo, hi) = y[0].siblings[1].relative_ci95.unwrap();
        assert!((lo - 1.25).abs() < 1e-12 && (hi - 1.25).abs() < 1e-12);
        let (lo, hi) = y[0].siblings[1].gain_ci95.unwrap();
        assert!((lo - 0.25).abs() < 1e-12 && (hi - 0.25).abs() < 1e-12);
        assert_eq!(y[0].siblings[0].relative_ci95, Some((1.0, 1.0)));
        assert_eq!(y[0].siblings[0].gain_ci95, Some((0.0, 0.0)));
        assert_eq!(y[0].siblings[1].samples, 5);
    }

    #[test]
    fn every_relative_and_gain_has_its_interval() {
        let topo = synthetic::parse("core:2 pu:4").unwrap();
        let y = smt_yields(&smt_series(), &topo, 3);
        for s in &y[0].siblings[1..] {
            let (lo, hi) = s.relative_ci95.unwrap();
            assert!(lo <= s.relative && s.relative <= hi, "{s:?}");
            // ±0.1% noise on 9 samples: a narrow interval.
            assert!(hi - lo < 0.01 && hi - lo > 0.0, "{s:?}");
            let (lo, hi) = s.gain_ci95.unwrap();
            assert!(lo <= s.gain && s.gain <= hi, "{s:?}");
            assert!(hi - lo < 0.01, "{s:?}");
            assert_eq!(s.samples, 9);
        }
        // Seeded: the same seed, the same intervals; another, others.
        assert_eq!(y, smt_yields(&smt_series(), &topo, 3));
        assert_ne!(y, smt_yields(&smt_series(), &topo, 4));
    }

    #[test]
    fn too_few_samples_give_no_interval_and_the_counts_say_why() {
        let topo = synthetic::parse("core:1 pu:4").unwrap();
        let mk = |i: usize, n: usize, values: &[f64]| {
            let cpus: Vec<u32> = (0..n as u32).collect();
            data(
                pinned(point(i, "spin", Model::Thread, "smt:0", n, ops()), &cpus),
                values,
            )
        };
        // One sample per point, as in a run cut short.
        let one = vec![mk(0, 1, &[100.0]), mk(1, 2, &[159.2])];
        let y = smt_yields(&one, &topo, 3);
        let s = &y[0].siblings;
        assert!((s[1].gain - 0.592).abs() < 1e-9, "{s:?}");
        assert_eq!((s[0].relative_ci95, s[0].gain_ci95), (None, None));
        assert_eq!((s[1].relative_ci95, s[1].gain_ci95), (None, None));
        assert_eq!((s[0].samples, s[1].samples), (1, 1));
        assert_eq!(gain_counts_text(s, 2), "n = 1 with 1 thread, 1 with 2");

        // The third sibling's gain needs the second's samples too; its
        // relative throughput does not.
        let mixed = vec![
            mk(0, 1, &noisy(100.0, 0.01, 5, 1)),
            mk(1, 2, &[120.0, 121.0]),
            mk(2, 3, &noisy(130.0, 0.01, 5, 2)),
        ];
        let y = smt_yields(&mixed, &topo, 3);
        let s = &y[0].siblings;
        assert!(s[1].relative_ci95.is_none() && s[1].gain_ci95.is_none());
        assert!(s[2].relative_ci95.is_some(), "{s:?}");
        assert!(s[2].gain_ci95.is_none(), "{s:?}");
        assert_eq!(
            gain_counts_text(s, 3),
            "n = 5 with 1 thread, 2 with 2, 5 with 3"
        );
    }

    #[test]
    fn gain_intervals_read_as_percentages() {
        assert_eq!(gain_ci_text((0.151, 0.194)), "95% CI 15.1–19.4%");
        assert_eq!(gain_ci_text((0.0, 0.02)), "95% CI 0.0–2.0%");
        assert_eq!(gain_ci_text((-0.03, 0.01)), "95% CI \u{2212}3.0% to +1.0%");
        assert_eq!(
            gain_ci_text((-0.061, -0.019)),
            "95% CI \u{2212}6.1% to \u{2212}1.9%"
        );
    }

    #[test]
    fn nothing_without_smt_or_off_one_core() {
        // The same cpus on a machine without SMT: PUs 4..7 are four cores.
        let no_smt = synthetic::parse("core:8").unwrap();
        assert!(smt_yields(&smt_series(), &no_smt, 3).is_empty());

        let topo = synthetic::parse("core:2 pu:2").unwrap();
        let mk = |i, n, cpus: Option<&[u32]>| {
            let p = point(i, "jbb", Model::Thread, "compact", n, ops());
            let p = match cpus {
                Some(c) => pinned(p, c),
                None => p,
            };
            data(p, &[100.0 * n as f64; 5])
        };
        // Compact up to N = 4 spans both cores: not an SMT series.
        let compact = vec![
            mk(0, 1, Some(&[0])),
            mk(1, 2, Some(&[0, 1])),
            mk(2, 4, Some(&[0, 1, 2, 3])),
        ];
        assert!(smt_yields(&compact, &topo, 3).is_empty());
        // Compact up to N = 2 stays on core 0: it is one.
        assert_eq!(smt_yields(&compact[..2], &topo, 3).len(), 1);
        // Unpinned: unknown where it ran.
        assert!(smt_yields(&[mk(0, 1, None), mk(1, 2, None)], &topo, 3).is_empty());
        // Only N = 1: no sibling measured.
        assert!(smt_yields(&compact[..1], &topo, 3).is_empty());
        // N = 2 on one PU twice is not two siblings.
        assert!(smt_yields(&[mk(0, 1, Some(&[0])), mk(1, 2, Some(&[0, 0]))], &topo, 3).is_empty());
        // A PU the machine does not have.
        assert!(smt_yields(&[mk(0, 1, Some(&[9])), mk(1, 2, Some(&[9, 8]))], &topo, 3).is_empty());
    }
}
