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

use super::scaling::{group, median_of, throughput};
use super::{PointData, SiblingYield, SmtYield};
use smtlab_topology::Topology;

/// The SMT yields of every qualifying series, ordered by series key.
/// A series qualifies with results at k = 1 and k = 2 siblings; the entries
/// run k = 1, 2, ... up to the first k not measured.
pub fn smt_yields(points: &[PointData], topo: &Topology) -> Vec<SmtYield> {
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
        // k -> X(k), from the first point (lowest plan index) of each k.
        let mut by_k: BTreeMap<usize, f64> = BTreeMap::new();
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
                by_k.entry(k).or_insert(x);
            }
        }
        let Some(&x1) = by_k.get(&1) else { continue };
        let mut siblings = Vec::new();
        let mut prev = x1;
        for k in 1.. {
            let Some(&x) = by_k.get(&k) else { break };
            siblings.push(SiblingYield {
                siblings: k,
                relative: x / x1,
                gain: if k == 1 { 0.0 } else { (x - prev) / x1 },
            });
            prev = x;
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
        let y = smt_yields(&smt_series(), &topo);
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
        let y = smt_yields(&pts, &topo);
        // A time's throughput is 1 / time: 10 s -> 8 s is 1.25 times.
        assert!((y[0].siblings[1].relative - 1.25).abs() < 1e-12);
        assert!((y[0].siblings[1].gain - 0.25).abs() < 1e-12);
    }

    #[test]
    fn nothing_without_smt_or_off_one_core() {
        // The same cpus on a machine without SMT: PUs 4..7 are four cores.
        let no_smt = synthetic::parse("core:8").unwrap();
        assert!(smt_yields(&smt_series(), &no_smt).is_empty());

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
        assert!(smt_yields(&compact, &topo).is_empty());
        // Compact up to N = 2 stays on core 0: it is one.
        assert_eq!(smt_yields(&compact[..2], &topo).len(), 1);
        // Unpinned: unknown where it ran.
        assert!(smt_yields(&[mk(0, 1, None), mk(1, 2, None)], &topo).is_empty());
        // Only N = 1: no sibling measured.
        assert!(smt_yields(&compact[..1], &topo).is_empty());
        // N = 2 on one PU twice is not two siblings.
        assert!(smt_yields(&[mk(0, 1, Some(&[0])), mk(1, 2, Some(&[0, 0]))], &topo).is_empty());
        // A PU the machine does not have.
        assert!(smt_yields(&[mk(0, 1, Some(&[9])), mk(1, 2, Some(&[9, 8]))], &topo).is_empty());
    }
}
