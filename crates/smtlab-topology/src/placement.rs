//! Placements: (topology, policy, number of workers) → the ordered list of
//! PUs worker 0, 1, ... are pinned to, plus how oversubscribed that is.
//!
//! Owns the placement policies and their meaning; CPU expression syntax
//! belongs to [`crate::cpu_expr`], the policies' syntax to `smtlab_types::policy`,
//! pinning itself to `smtlab-execute`.
//! Only online PUs this process may use ("usable" PUs) are ever placed on.
//!
//! | policy | order | answers |
//! |---|---|---|
//! | `compact` | every PU of a core, then the next core (logical order) | SMT scalability |
//! | `scatter` | one PU per core spread over packages, NUMA nodes and caches; second PUs only after every core has one | core scalability |
//! | `core` | the first PU of each core, cores in logical order; never two workers per core | one thread per core |
//! | `smt:K` | only the PUs of logical core K | "N threads on one core" |
//! | `none` | no pinning | the scheduler's choice |
//! | anything else | a CPU expression, in the order written | explicit lists |
//!
//! When there are more workers than PUs in the order, workers wrap around
//! (`cpus[i] = order[i % len]`) and the placement reports the
//! oversubscription factor, since the pinning experiments measure exactly
//! that (software threads outnumbering hardware threads).

use std::collections::{HashMap, HashSet};

use serde::Serialize;

pub use smtlab_types::policy::{Policy, PolicyError};

use crate::cpu_expr::{self, CpuExprError};
use crate::machine::Topology;
use crate::raw::CacheType;

/// Where `n` workers go.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Placement {
    pub policy: Policy,
    /// `cpus[i]` is worker i's PU (OS index); `None` for [`Policy::None`].
    pub cpus: Option<Vec<u32>>,
    pub n: usize,
    /// Distinct PUs the workers use (for `none`: the most the scheduler can
    /// use, `min(n, usable PUs)`).
    pub distinct_pus: usize,
    /// `n / distinct_pus`: 1.0 when every worker has its own PU, more when
    /// workers share PUs.
    pub oversubscription: f64,
    /// One sentence for the user when something is not one worker per PU.
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error("placement `{policy}`: the number of workers must be at least 1")]
    ZeroWorkers { policy: String },
    #[error(
        "placement `core`: {n} workers but this machine has only {cores} usable cores \
         and `core` puts one worker per core; use `scatter` to continue on SMT siblings, \
         or `compact`"
    )]
    TooManyForCore { n: usize, cores: usize },
    #[error("placement `smt:{core}`: no core {core}; this machine has cores 0-{last}", last = .cores - 1)]
    NoSuchCore { core: usize, cores: usize },
    #[error(
        "placement `smt:{core}`: core {core} has no usable PUs (offline or outside the \
         allowed CPUs); usable cores are {usable}"
    )]
    UnusableCore { core: usize, usable: String },
    #[error(
        "placement `{policy}`: no usable PUs (every PU is offline or outside the allowed CPUs)"
    )]
    NoUsablePus { policy: String },
    #[error(transparent)]
    Expr(#[from] CpuExprError),
}

/// Place `n` workers on `topo` under `policy`.
pub fn place(topo: &Topology, policy: &Policy, n: usize) -> Result<Placement, PlacementError> {
    if n == 0 {
        return Err(PlacementError::ZeroWorkers {
            policy: policy.to_string(),
        });
    }
    let cores = usable_cores(topo);
    let total: usize = cores.iter().map(|(_, pus)| pus.len()).sum();
    if total == 0 && !matches!(policy, Policy::Expr(_)) {
        return Err(PlacementError::NoUsablePus {
            policy: policy.to_string(),
        });
    }
    let order: Vec<u32> = match policy {
        Policy::None => {
            let distinct = n.min(total);
            let oversubscription = n as f64 / distinct as f64;
            let note = (n > total).then(|| {
                format!(
                    "{n} unpinned workers on {total} usable PUs: {oversubscription:.2} \
                     workers per PU, so they share PUs (oversubscribed)"
                )
            });
            return Ok(Placement {
                policy: policy.clone(),
                cpus: None,
                n,
                distinct_pus: distinct,
                oversubscription,
                note,
            });
        }
        Policy::Compact => cores.iter().flat_map(|(_, pus)| pus.clone()).collect(),
        Policy::Scatter => scatter_order(topo, &cores),
        Policy::Core => {
            if n > cores.len() {
                return Err(PlacementError::TooManyForCore {
                    n,
                    cores: cores.len(),
                });
            }
            cores.iter().map(|(_, pus)| pus[0]).collect()
        }
        Policy::Smt(k) => {
            if *k >= topo.cores.len() {
                return Err(PlacementError::NoSuchCore {
                    core: *k,
                    cores: topo.cores.len(),
                });
            }
            match cores.iter().find(|(id, _)| id == k) {
                Some((_, pus)) => pus.clone(),
                None => {
                    return Err(PlacementError::UnusableCore {
                        core: *k,
                        usable: id_ranges(cores.iter().map(|(id, _)| *id)),
                    })
                }
            }
        }
        Policy::Expr(e) => cpu_expr::parse(e, topo)?,
    };
    Ok(finish(policy, order, n))
}

/// Wrap or truncate `order` to `n` workers and describe the result.
fn finish(policy: &Policy, order: Vec<u32>, n: usize) -> Placement {
    let len = order.len();
    let cpus: Vec<u32> = (0..n).map(|i| order[i % len]).collect();
    let distinct = cpus.iter().collect::<HashSet<_>>().len();
    let oversubscription = n as f64 / distinct as f64;
    let note = if n > len {
        Some(format!(
            "{n} workers on {distinct} PUs: the {len}-PU order wraps around, \
             {oversubscription:.2} workers per PU (oversubscribed)"
        ))
    } else if distinct < n {
        Some(format!(
            "the expression names some CPUs more than once: {n} workers on {distinct} PUs, \
             {oversubscription:.2} workers per PU"
        ))
    } else if matches!(policy, Policy::Expr(_)) && len > n {
        Some(format!(
            "the expression lists {len} CPUs; only the first {n} are used"
        ))
    } else {
        None
    };
    Placement {
        policy: policy.clone(),
        cpus: Some(cpus),
        n,
        distinct_pus: distinct,
        oversubscription,
        note,
    }
}

/// Every core with at least one usable PU, in logical order, with its usable
/// PUs by OS index.
fn usable_cores(topo: &Topology) -> Vec<(usize, Vec<u32>)> {
    topo.cores
        .iter()
        .map(|c| {
            let pus: Vec<u32> = topo
                .core_pus(c.id)
                .into_iter()
                .filter(|&p| topo.pu(p).is_some_and(|pu| pu.online && pu.allowed))
                .collect();
            (c.id, pus)
        })
        .filter(|(_, pus)| !pus.is_empty())
        .collect()
}

/// `0-3,5`: a compact rendering of ascending ids.
fn id_ranges(ids: impl Iterator<Item = usize>) -> String {
    ids.filter_map(|i| u32::try_from(i).ok())
        .collect::<smtlab_types::cpuset::CpuSet>()
        .to_list()
}

/// Scatter: order the cores so that consecutive picks land as far apart as
/// the machine allows, then take first PUs of all cores, then second PUs.
///
/// Cores are spread hierarchically: across the outer level (packages, or
/// NUMA nodes when packages sit inside NUMA nodes, as on POWER7 where every
/// core is its own package), then the inner one, then across caches from the
/// largest level down (so Bulldozer modules sharing an L2 each get a worker
/// before any gets two). At every level groups take turns, in the logical
/// order of their first core.
fn scatter_order(topo: &Topology, cores: &[(usize, Vec<u32>)]) -> Vec<u32> {
    let first = |c: &(usize, Vec<u32>)| c.1[0];
    let package = |c: &(usize, Vec<u32>)| Some(topo.cores[c.0].package);
    let numa = |c: &(usize, Vec<u32>)| topo.pu(first(c)).and_then(|p| p.numa);

    // Packages inside NUMA nodes: each package's usable cores share one node.
    let mut node_of_package = HashMap::new();
    let packages_in_nodes = cores
        .iter()
        .all(|c| *node_of_package.entry(package(c)).or_insert(numa(c)) == numa(c));

    let mut keys: Vec<Vec<Option<usize>>> = Vec::new();
    let (outer, inner): (Vec<_>, Vec<_>) = cores.iter().map(|c| (package(c), numa(c))).unzip();
    if packages_in_nodes {
        keys.push(inner);
        keys.push(outer);
    } else {
        keys.push(outer);
        keys.push(inner);
    }
    let mut levels: Vec<u8> = topo
        .caches
        .iter()
        .filter(|c| c.cache_type != CacheType::Instruction)
        .map(|c| c.level)
        .collect();
    levels.sort_unstable_by(|a, b| b.cmp(a));
    levels.dedup();
    for level in levels {
        // The first data or unified cache of this level holding each PU,
        // found in one pass over the caches (searching them for every core
        // took minutes on 65536 cores with a cache each).
        let mut cache_of_pu: HashMap<u32, usize> = HashMap::new();
        for (i, k) in topo.caches.iter().enumerate() {
            if k.level == level && k.cache_type != CacheType::Instruction {
                for pu in k.cpus.iter() {
                    cache_of_pu.entry(pu).or_insert(i);
                }
            }
        }
        keys.push(
            cores
                .iter()
                .map(|c| cache_of_pu.get(&first(c)).copied())
                .collect(),
        );
    }

    let positions: Vec<usize> = (0..cores.len()).collect();
    let core_order = spread(&positions, &keys);
    let rounds = cores.iter().map(|c| c.1.len()).max().unwrap_or(0);
    (0..rounds)
        .flat_map(|r| {
            core_order
                .iter()
                .filter_map(move |&i| cores[i].1.get(r).copied())
        })
        .collect()
}

/// Group `items` by the first key (groups in order of first appearance),
/// spread each group by the remaining keys, then let the groups take turns.
fn spread(items: &[usize], keys: &[Vec<Option<usize>>]) -> Vec<usize> {
    let Some((key, rest)) = keys.split_first() else {
        return items.to_vec();
    };
    // Groups in order of first appearance, found through an index (a search
    // of the groups is quadratic with a group per core).
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of: HashMap<Option<usize>, usize> = HashMap::new();
    for &i in items {
        let g = *group_of.entry(key[i]).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    let spread_groups: Vec<Vec<usize>> = groups.iter().map(|g| spread(g, rest)).collect();
    let longest = spread_groups.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|r| spread_groups.iter().filter_map(move |g| g.get(r).copied()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_expr::fixtures;
    use crate::synthetic;
    use proptest::prelude::*;

    fn syn(spec: &str) -> Topology {
        synthetic::parse(spec).unwrap()
    }

    fn cpus(topo: &Topology, policy: &str, n: usize) -> Vec<u32> {
        place(topo, &policy.parse().unwrap(), n)
            .unwrap()
            .cpus
            .unwrap()
    }

    #[test]
    fn policies_parse_and_print() {
        for text in [
            "compact",
            "scatter",
            "core",
            "smt:3",
            "none",
            "S0:0-1@S1:0-1",
        ] {
            let p: Policy = text.parse().unwrap();
            assert_eq!(p.to_string(), text);
        }
        assert_eq!("core:2".parse::<Policy>().unwrap(), Policy::Smt(2));
        assert_eq!("Compact".parse::<Policy>().unwrap(), Policy::Compact);
        assert_eq!(
            "0,2".parse::<Policy>().unwrap(),
            Policy::Expr("0,2".to_string())
        );
        let e = "smt:x".parse::<Policy>().unwrap_err().to_string();
        assert!(e.starts_with("placement `smt:x`: `x`"), "{e}");
        assert!("smt:".parse::<Policy>().is_err());
        assert!("".parse::<Policy>().is_err());
    }

    #[test]
    fn compact_fills_each_core_first() {
        let t = syn("package:2 core:4 pu:2");
        assert_eq!(cpus(&t, "compact", 5), vec![0, 1, 2, 3, 4]);
        let t = fixtures::get("16em64t-4s2c2t");
        assert_eq!(cpus(t, "compact", 6), vec![0, 8, 4, 12, 1, 9]);
    }

    #[test]
    fn scatter_alternates_packages_then_uses_second_pus() {
        let t = syn("package:2 core:4 pu:2");
        assert_eq!(cpus(&t, "scatter", 4), vec![0, 8, 2, 10]);
        assert_eq!(
            cpus(&t, "scatter", 16),
            vec![0, 8, 2, 10, 4, 12, 6, 14, 1, 9, 3, 11, 5, 13, 7, 15]
        );
        let p = place(&t, &Policy::Scatter, 9).unwrap();
        assert_eq!(p.cpus.unwrap()[8], 1);
        assert_eq!(p.oversubscription, 1.0);
        assert!(p.note.is_none());
    }

    #[test]
    fn scatter_spreads_over_numa_nodes_inside_packages() {
        // Cores 0-1 node 0, 2-3 node 1 (package 0); 4-5 node 2, 6-7 node 3.
        let t = syn("package:2 numa:2 core:2 pu:1");
        assert_eq!(cpus(&t, "scatter", 8), vec![0, 4, 2, 6, 1, 5, 3, 7]);
    }

    #[test]
    fn scatter_spreads_over_numa_nodes_when_packages_are_cores() {
        // POWER7 dump: 64 single-core packages, 8 per NUMA node.
        let t = fixtures::get("256ppc-8n8s4t");
        let first8 = cpus(t, "scatter", 8);
        let nodes: HashSet<_> = first8.iter().map(|&c| t.pu(c).unwrap().numa).collect();
        assert_eq!(nodes.len(), 8, "{first8:?}");
        assert_eq!(first8, vec![0, 32, 64, 96, 128, 160, 192, 224]);
    }

    #[test]
    fn scatter_spreads_over_shared_l2_modules() {
        // Bulldozer: pairs of cores share an L2; 8 cores per NUMA node.
        let t = fixtures::get("64amd64-4s2n4ca2co");
        let order = cpus(t, "scatter", 64);
        let node0: Vec<u32> = order.iter().copied().filter(|&c| c < 8).collect();
        assert_eq!(node0, vec![0, 2, 4, 6, 1, 3, 5, 7]);
    }

    #[test]
    fn core_takes_first_pus_and_refuses_too_many() {
        let t = fixtures::get("16em64t-4s2c2t");
        assert_eq!(cpus(t, "core", 8), vec![0, 4, 1, 5, 2, 6, 3, 7]);
        let e = place(t, &Policy::Core, 9).unwrap_err().to_string();
        assert!(
            e.contains("only 8 usable cores") && e.contains("scatter"),
            "{e}"
        );
    }

    #[test]
    fn smt_puts_everything_on_one_core_and_wraps() {
        let t = syn("core:8 pu:4");
        let p = place(&t, &Policy::Smt(1), 8).unwrap();
        assert_eq!(p.cpus.as_deref(), Some(&[4, 5, 6, 7, 4, 5, 6, 7][..]));
        assert_eq!(p.distinct_pus, 4);
        assert_eq!(p.oversubscription, 2.0);
        let note = p.note.unwrap();
        assert!(note.contains("8 workers on 4 PUs"), "{note}");
        assert!(!note.contains('\n'));
        let e = place(&t, &Policy::Smt(8), 1).unwrap_err().to_string();
        assert_eq!(
            e,
            "placement `smt:8`: no core 8; this machine has cores 0-7"
        );
    }

    #[test]
    fn none_does_not_pin() {
        let t = syn("core:2 pu:2");
        let p = place(&t, &Policy::None, 3).unwrap();
        assert_eq!(p.cpus, None);
        assert_eq!(p.oversubscription, 1.0);
        let p = place(&t, &Policy::None, 8).unwrap();
        assert_eq!(p.oversubscription, 2.0);
        assert!(p.note.is_some());
    }

    #[test]
    fn expressions_are_used_in_order() {
        let t = syn("package:2 core:4 pu:2");
        assert_eq!(cpus(&t, "S1:0-1@S0:0", 3), vec![8, 10, 0]);
        let p = place(&t, &"3,1".parse().unwrap(), 3).unwrap();
        assert_eq!(p.cpus.as_deref(), Some(&[3, 1, 3][..]));
        assert_eq!(p.oversubscription, 1.5);
        let p = place(&t, &"0-7".parse().unwrap(), 2).unwrap();
        assert_eq!(p.cpus.as_deref(), Some(&[0, 1][..]));
        assert!(p.note.unwrap().contains("first 2"));
        let p = place(&t, &"0,0".parse().unwrap(), 2).unwrap();
        assert_eq!(p.distinct_pus, 1);
        assert!(p.note.unwrap().contains("more than once"));
        let e = place(&t, &"S9:0".parse().unwrap(), 1)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("CPU expression `S9:0`: "), "{e}");
    }

    #[test]
    fn zero_workers_is_an_error() {
        let t = syn("core:2");
        for p in ["compact", "scatter", "core", "smt:0", "none", "0"] {
            let e = place(&t, &p.parse().unwrap(), 0).unwrap_err().to_string();
            assert!(e.contains("at least 1"), "{e}");
        }
    }

    #[test]
    fn cpusets_and_offline_pus_are_avoided() {
        let t = fixtures::get("16amd64-8n2c-cpusets");
        let allowed = t.allowed();
        for p in ["compact", "scatter"] {
            let v = cpus(t, p, allowed.len());
            assert_eq!(
                v.iter().copied().collect::<smtlab_types::CpuSet>(),
                allowed,
                "{p}"
            );
        }
        // Core L#6 holds only P#7, which the cpuset excludes.
        let e = place(t, &Policy::Smt(6), 1).unwrap_err().to_string();
        assert!(e.contains("core 6 has no usable PUs"), "{e}");
        let t = fixtures::get("16em64t-4s2c2t-offlines");
        let v = cpus(t, "scatter", 40);
        assert!(v.iter().all(|&c| t.allowed().contains(c)));
    }

    fn spec() -> impl Strategy<Value = String> {
        (1usize..4, 0usize..3, 0usize..3, 1usize..7, 1usize..5).prop_map(|(p, numa, l3, c, t)| {
            let numa = if numa > 0 {
                format!(" numa:{numa}")
            } else {
                String::new()
            };
            let l3 = if l3 > 0 {
                format!(" l3:{l3}")
            } else {
                String::new()
            };
            format!("package:{p}{numa}{l3} core:{c} pu:{t}")
        })
    }

    fn core_of(t: &Topology, cpu: u32) -> usize {
        t.pu(cpu).unwrap().core.unwrap()
    }

    /// Properties every placement must have, on any machine.
    fn check(t: &Topology, n: usize, smt_core: usize) -> Result<(), TestCaseError> {
        let usable = t.allowed();
        let cores = usable_cores(t);
        let total = usable.len();
        let per_core: std::collections::HashMap<usize, usize> =
            cores.iter().map(|(id, pus)| (*id, pus.len())).collect();
        let smt = Policy::Smt(cores[smt_core % cores.len()].0);
        for policy in [Policy::Compact, Policy::Scatter, Policy::Core, smt] {
            let p = match place(t, &policy, n) {
                Ok(p) => p,
                Err(PlacementError::TooManyForCore { cores: c, .. }) => {
                    prop_assert!(policy == Policy::Core && n > c);
                    continue;
                }
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            let v = p.cpus.clone().unwrap();
            prop_assert_eq!(v.len(), n);
            prop_assert!(v.iter().all(|&c| usable.contains(c)), "{policy}: {v:?}");
            // No duplicates before the wrap, and the wrap repeats the order.
            let len = p.distinct_pus;
            prop_assert_eq!(v[..len].iter().collect::<HashSet<_>>().len(), len);
            for i in len..n {
                prop_assert_eq!(v[i], v[i % len]);
            }
            prop_assert!((p.oversubscription - n as f64 / len as f64).abs() < 1e-9);
            prop_assert_eq!(p.note.is_some(), n > len);
            match policy {
                Policy::Compact | Policy::Scatter => prop_assert_eq!(len, n.min(total)),
                Policy::Core => {
                    prop_assert_eq!(len, n);
                    let c: HashSet<_> = v.iter().map(|&c| core_of(t, c)).collect();
                    prop_assert_eq!(c.len(), n);
                }
                Policy::Smt(k) => {
                    prop_assert!(v.iter().all(|&c| core_of(t, c) == k));
                    prop_assert_eq!(len, n.min(per_core[&k]));
                }
                _ => {}
            }
        }

        // Compact over every usable PU: each core's PUs form one run, runs
        // in logical core order.
        let all = place(t, &Policy::Compact, total).unwrap().cpus.unwrap();
        let runs: Vec<usize> =
            all.iter()
                .map(|&c| core_of(t, c))
                .fold(Vec::new(), |mut runs, c| {
                    if runs.last() != Some(&c) {
                        runs.push(c);
                    }
                    runs
                });
        prop_assert_eq!(runs, cores.iter().map(|(id, _)| *id).collect::<Vec<_>>());

        // Scatter over every usable PU: a core gets its (r+1)-th PU only
        // when every core that has one got its r-th.
        let all = place(t, &Policy::Scatter, total).unwrap().cpus.unwrap();
        let mut used: std::collections::HashMap<usize, usize> = Default::default();
        for &c in &all {
            let core = core_of(t, c);
            let r = used.get(&core).copied().unwrap_or(0);
            for (other, &have) in &per_core {
                let u = used.get(other).copied().unwrap_or(0);
                prop_assert!(
                    u >= r || u == have,
                    "core {core} round {r} before core {other}"
                );
            }
            used.insert(core, r + 1);
        }
        // ... and the first round alternates packages: two consecutive picks
        // share a package only when no other package has cores left.
        let pkgs: Vec<usize> = all[..cores.len()]
            .iter()
            .map(|&c| t.pu(c).unwrap().package.unwrap())
            .collect();
        for i in 1..pkgs.len() {
            if pkgs[i] == pkgs[i - 1] {
                prop_assert!(pkgs[i..].iter().all(|&p| p == pkgs[i]), "packages {pkgs:?}");
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn placements_hold_on_synthetic_machines(spec in spec(), n in 1usize..200, k in 0usize..64) {
            check(&syn(&spec), n, k)?;
        }

        #[test]
        fn placements_hold_on_real_machines(f in 0usize..64, n in 1usize..600, k in 0usize..64) {
            let all = fixtures::all();
            let (name, t) = &all[f % all.len()];
            check(t, n, k).map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
        }
    }
}
