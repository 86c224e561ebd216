//! Planning the pairs study: each program alone on one PU, then every
//! unordered pair (a program with a copy of itself included) co-running on
//! two PUs that share a core (SMT siblings) or, where the machine has no
//! SMT, the closest sharing it has (two cores of one cache, else of one
//! package). Where several such PU pairs exist (a 64-PU SMT machine has 32
//! cores), that many co-runs go at once, one per core: a *wave* is one
//! point whose parts run together, and its sample stores each part's rate.

use std::fmt;
use std::str::FromStr;

use smtlab_plan::PlanError;
use smtlab_topology::Topology;
use smtlab_types::{CoPart, Mode, Model, Point, Program, Spawn};

/// What two PUs of a pair share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// The hardware threads of one core.
    Smt,
    /// Two cores under one cache (the smallest level that spans cores).
    Cache,
    /// Two cores of one package.
    Package,
}

impl Share {
    pub const ALL: [Share; 3] = [Share::Smt, Share::Cache, Share::Package];

    pub fn name(self) -> &'static str {
        match self {
            Share::Smt => "smt",
            Share::Cache => "cache",
            Share::Package => "package",
        }
    }
}

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--share` that is not a sharing level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--share {0}: expected smt, cache or package")]
pub struct ShareError(pub String);

impl FromStr for Share {
    type Err = ShareError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Share::ALL
            .into_iter()
            .find(|l| l.name() == s.trim())
            .ok_or_else(|| ShareError(s.to_string()))
    }
}

/// Why the pairs study cannot be planned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PairsPlanError {
    #[error("--share {share}: {why}; this machine has {has}")]
    NoSuchSharing {
        share: Share,
        why: &'static str,
        has: String,
    },
    #[error(
        "the pairs study needs two PUs that share a core, a cache or a package; this machine \
         has one usable PU"
    )]
    OnePu,
    #[error("study pairs: at least one program is needed (-w or --cmd NAME='TEMPLATE')")]
    NoPrograms,
    #[error("study pairs: two programs are named {0:?}; give each --cmd its own NAME")]
    DuplicateName(String),
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// One program of the study, named.
#[derive(Debug, Clone, PartialEq)]
pub struct PairProgram {
    pub name: String,
    pub program: Program,
    /// How one of its samples runs inside the window.
    pub mode: Mode,
}

/// Two PUs sharing a core, cache or package: where one co-run goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub first: u32,
    pub second: u32,
}

/// What runs in a slot: a program alone (on `first`) or a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    Alone(usize),
    Pair(usize, usize),
}

/// The study planned: the sharing level used, the slots, the waves (each
/// a list of (slot, task)) and their points.
#[derive(Debug, Clone)]
pub struct PairsPlan {
    pub share: Share,
    pub slots: Vec<Slot>,
    pub waves: Vec<Vec<(Slot, Task)>>,
    pub points: Vec<Point>,
    /// Sentences for the study's notes: the sharing level and why.
    pub notes: Vec<String>,
    pub limits: Vec<String>,
}

/// The PU pairs of `topo` sharing at `share` (usable PUs only), disjoint.
pub fn slots(topo: &Topology, share: Share) -> Vec<Slot> {
    let usable = topo.online().intersection(&topo.allowed());
    // The first usable PU of each core, in core order.
    let core_pus: Vec<(usize, Vec<u32>)> = topo
        .cores
        .iter()
        .map(|c| (c.package, c.cpus.intersection(&usable).iter().collect()))
        .filter(|(_, pus): &(usize, Vec<u32>)| !pus.is_empty())
        .collect();
    match share {
        Share::Smt => core_pus
            .iter()
            .filter(|(_, pus)| pus.len() >= 2)
            .map(|(_, pus)| Slot {
                first: pus[0],
                second: pus[1],
            })
            .collect(),
        Share::Cache => {
            // The smallest cache level whose instances span two cores.
            let spans = |cache: &smtlab_topology::Cache| {
                core_pus
                    .iter()
                    .filter(|(_, pus)| cache.cpus.contains(pus[0]))
                    .count()
                    >= 2
            };
            let Some(level) = topo
                .caches
                .iter()
                .filter(|c| spans(c))
                .map(|c| c.level)
                .min()
            else {
                return Vec::new();
            };
            let mut out = Vec::new();
            for cache in topo.caches.iter().filter(|c| c.level == level && spans(c)) {
                let firsts: Vec<u32> = core_pus
                    .iter()
                    .map(|(_, pus)| pus[0])
                    .filter(|p| cache.cpus.contains(*p))
                    .collect();
                out.extend(pair_up(&firsts));
            }
            dedupe(out)
        }
        Share::Package => {
            let mut out = Vec::new();
            for pkg in &topo.packages {
                let firsts: Vec<u32> = core_pus
                    .iter()
                    .filter(|(p, _)| *p == pkg.id)
                    .map(|(_, pus)| pus[0])
                    .collect();
                out.extend(pair_up(&firsts));
            }
            out
        }
    }
}

/// Consecutive PUs paired: (a, b), (c, d), ...; an odd last one is left.
fn pair_up(pus: &[u32]) -> Vec<Slot> {
    pus.chunks_exact(2)
        .map(|c| Slot {
            first: c[0],
            second: c[1],
        })
        .collect()
}

/// Slots of unified and split caches of one level can name the same PUs:
/// keep each PU in one slot.
fn dedupe(slots: Vec<Slot>) -> Vec<Slot> {
    let mut used = std::collections::BTreeSet::new();
    slots
        .into_iter()
        .filter(|s| {
            let fresh = !used.contains(&s.first) && !used.contains(&s.second);
            if fresh {
                used.insert(s.first);
                used.insert(s.second);
            }
            fresh
        })
        .collect()
}

/// The sharing level to use: the one asked for, or the closest the
/// machine has (SMT, else a cache, else a package), with the sentence
/// every output repeats.
fn choose(
    topo: &Topology,
    asked: Option<Share>,
) -> Result<(Share, Vec<Slot>, String), PairsPlanError> {
    let has = |s: Share| !slots(topo, s).is_empty();
    let describe = || {
        let usable = topo.online().intersection(&topo.allowed());
        format!(
            "{} usable PU{} on {} core{}{}",
            usable.len(),
            if usable.len() == 1 { "" } else { "s" },
            topo.cores.len(),
            if topo.cores.len() == 1 { "" } else { "s" },
            if has(Share::Smt) {
                ", with SMT"
            } else {
                ", no SMT"
            }
        )
    };
    if let Some(share) = asked {
        let s = slots(topo, share);
        if s.is_empty() {
            return Err(PairsPlanError::NoSuchSharing {
                share,
                why: match share {
                    Share::Smt => "no core has two usable PUs",
                    Share::Cache => "no cache is shared by two usable cores",
                    Share::Package => "no package has two usable cores",
                },
                has: describe(),
            });
        }
        let sentence = match share {
            Share::Smt => "Pairs run on the two SMT siblings of a core (--share smt).".to_string(),
            other => format!(
                "Pairs run on two cores sharing a {} (--share {other}), not on SMT siblings.",
                if other == Share::Cache {
                    "cache"
                } else {
                    "package"
                }
            ),
        };
        return Ok((share, s, sentence));
    }
    for share in Share::ALL {
        let s = slots(topo, share);
        if s.is_empty() {
            continue;
        }
        let sentence =
            match share {
                Share::Smt => "Pairs run on the two SMT siblings of a core.".to_string(),
                other => format!(
                "This machine has no SMT, so pairs run on the closest sharing it has: two cores \
                 sharing a {} (--share {other}), not SMT siblings; the interference measured is \
                 that of the shared {}, not of a shared core.",
                if other == Share::Cache { "cache" } else { "package" },
                if other == Share::Cache { "cache and memory" } else { "package (memory, uncore)" }
            ),
            };
        return Ok((share, s, sentence));
    }
    Err(PairsPlanError::OnePu)
}

/// Plan the pairs study: alone and pair tasks packed into waves of at most
/// `at_once` slots (default: every slot the machine has), each wave a
/// point running for `window_s`.
pub fn plan_pairs(
    topo: &Topology,
    programs: &[PairProgram],
    asked: Option<Share>,
    at_once: Option<usize>,
    window_s: f64,
) -> Result<PairsPlan, PairsPlanError> {
    if programs.is_empty() {
        return Err(PairsPlanError::NoPrograms);
    }
    for (i, p) in programs.iter().enumerate() {
        if programs[..i].iter().any(|q| q.name == p.name) {
            return Err(PairsPlanError::DuplicateName(p.name.clone()));
        }
    }
    let (share, all_slots, sentence) = choose(topo, asked)?;
    let width = at_once.unwrap_or(all_slots.len()).clamp(1, all_slots.len());
    let slots: Vec<Slot> = all_slots[..width].to_vec();
    let n = programs.len();
    let mut tasks: Vec<Task> = (0..n).map(Task::Alone).collect();
    for i in 0..n {
        for j in i..n {
            tasks.push(Task::Pair(i, j));
        }
    }
    let waves: Vec<Vec<(Slot, Task)>> = tasks
        .chunks(width)
        .map(|chunk| slots.iter().copied().zip(chunk.iter().copied()).collect())
        .collect();
    let points = waves
        .iter()
        .enumerate()
        .map(|(index, wave)| wave_point(index, wave, programs, share, window_s))
        .collect();
    let mut notes = vec![sentence];
    if width > 1 {
        notes.push(format!(
            "{width} co-runs go at once, each on its own {} (--at-once 1 measures one at a time).",
            match share {
                Share::Smt => "core",
                Share::Cache => "cache",
                Share::Package => "package",
            }
        ));
    }
    let mut limits = Vec::new();
    if share != Share::Smt {
        let usable = topo.online().intersection(&topo.allowed());
        limits.push(format!(
            "This machine has no SMT ({} usable PUs, one per core), so how programs interfere on \
             the two hardware threads of one core cannot be measured here; on a machine with SMT \
             this study pairs them on siblings. What was measured is interference through the \
             shared {}.",
            usable.len(),
            if share == Share::Cache {
                "cache"
            } else {
                "package"
            }
        ));
    }
    Ok(PairsPlan {
        share,
        slots,
        waves,
        points,
        notes,
        limits,
    })
}

/// The point of one wave: its parts in slot order, each on its PU.
fn wave_point(
    index: usize,
    wave: &[(Slot, Task)],
    programs: &[PairProgram],
    share: Share,
    window_s: f64,
) -> Point {
    let mut parts = Vec::new();
    let mut cpus = Vec::new();
    for (k, (slot, task)) in wave.iter().enumerate() {
        let mut add = |i: usize, cpu: u32| {
            let p = &programs[i];
            parts.push(CoPart {
                name: p.name.clone(),
                slot: k,
                program: Box::new(p.program.clone()),
                mode: p.mode,
            });
            cpus.push(cpu);
        };
        match *task {
            Task::Alone(i) => add(i, slot.first),
            Task::Pair(i, j) => {
                add(i, slot.first);
                add(j, slot.second);
            }
        }
    }
    let program = Program::CoRun { parts };
    let metric = smtlab_plan::program_metric(&program, Mode::FixedTime { seconds: window_s });
    Point {
        index,
        workers: cpus.len(),
        program,
        model: Model::Thread,
        spawn: Spawn::Exec,
        placement: format!("pairs:{share}"),
        cpus: Some(cpus),
        oversubscription: 1.0,
        alloc: "glibc".into(),
        mode: Mode::FixedTime { seconds: window_s },
        metric,
    }
}

/// A wave point's co-runs in words: `parfib + stream on PUs 0+1`,
/// `mandel alone on PU 2`.
pub fn describe_wave(point: &Point) -> Vec<String> {
    let Program::CoRun { parts } = &point.program else {
        return Vec::new();
    };
    let cpu = |k: usize| {
        point
            .cpus
            .as_ref()
            .and_then(|c| c.get(k))
            .map_or("?".to_string(), |c| c.to_string())
    };
    let mut out = Vec::new();
    let mut k = 0;
    while k < parts.len() {
        let together: Vec<usize> = (k..parts.len())
            .take_while(|&m| parts[m].slot == parts[k].slot)
            .collect();
        out.push(match together.as_slice() {
            [one] => format!("{} alone on PU {}", parts[*one].name, cpu(*one)),
            many => format!(
                "{} on PUs {}",
                many.iter()
                    .map(|&m| parts[m].name.as_str())
                    .collect::<Vec<_>>()
                    .join(" + "),
                many.iter().map(|&m| cpu(m)).collect::<Vec<_>>().join("+")
            ),
        });
        k += together.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progs(n: usize) -> Vec<PairProgram> {
        (0..n)
            .map(|i| PairProgram {
                name: format!("p{i}"),
                program: Program::Builtin {
                    workload: "spin".into(),
                    params: Default::default(),
                },
                mode: Mode::FixedTime { seconds: 0.2 },
            })
            .collect()
    }

    fn synthetic(spec: &str) -> Topology {
        smtlab_topology::synthetic::parse(spec).unwrap()
    }

    #[test]
    fn smt_pairs_are_siblings_of_one_core_and_every_core_gets_one() {
        let t = synthetic("package:2 core:16 pu:2");
        let s = slots(&t, Share::Smt);
        assert_eq!(s.len(), 32);
        for slot in &s {
            let core = t
                .cores
                .iter()
                .find(|c| c.cpus.contains(slot.first))
                .unwrap();
            assert!(core.cpus.contains(slot.second), "{slot:?}");
            assert_ne!(slot.first, slot.second);
        }
    }

    #[test]
    fn twenty_six_programs_on_64_pus_go_32_at_once() {
        let t = synthetic("package:2 core:16 pu:2");
        let plan = plan_pairs(&t, &progs(26), None, None, 1.0).unwrap();
        assert_eq!(plan.share, Share::Smt);
        // 26 alone + 351 pairs = 377 co-runs, 32 per wave.
        let runs: usize = plan.waves.iter().map(Vec::len).sum();
        assert_eq!(runs, 26 + 26 * 27 / 2);
        assert_eq!(plan.waves.len(), 377usize.div_ceil(32));
        assert_eq!(plan.points.len(), plan.waves.len());
        // No PU twice in a wave.
        for p in &plan.points {
            let cpus = p.cpus.as_ref().unwrap();
            let set: std::collections::BTreeSet<_> = cpus.iter().collect();
            assert_eq!(set.len(), cpus.len(), "{cpus:?}");
        }
        // Wave 0: the 26 programs alone, then the first 6 pairs.
        let first = plan.points[0].program.label();
        assert!(first.starts_with("p0 | p1 | p2"), "{first}");
        assert!(
            first.ends_with("p25 | p0+p0 | p0+p1 | p0+p2 | p0+p3 | p0+p4 | p0+p5"),
            "{first}"
        );
    }

    #[test]
    fn without_smt_the_closest_sharing_is_used_and_said() {
        // Two cores under one L3, no SMT: like this VM.
        let t = synthetic("package:1 l3:1 core:2 pu:1");
        let plan = plan_pairs(&t, &progs(3), None, None, 1.0).unwrap();
        assert_eq!(plan.share, Share::Cache);
        assert_eq!(
            plan.slots,
            [Slot {
                first: 0,
                second: 1
            }]
        );
        assert!(plan.notes[0].contains("no SMT"), "{:?}", plan.notes);
        assert!(!plan.limits.is_empty());
        let e = plan_pairs(&t, &progs(3), Some(Share::Smt), None, 1.0).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--share smt: no core has two usable PUs"),
            "{e}"
        );
        // No shared cache: the package.
        let t = synthetic("package:1 core:4 pu:1");
        let plan = plan_pairs(&t, &progs(2), None, None, 1.0).unwrap();
        assert_eq!(plan.share, Share::Package);
        assert_eq!(plan.slots.len(), 2);
        let one = synthetic("core:1 pu:1");
        assert_eq!(
            plan_pairs(&one, &progs(2), None, None, 1.0).unwrap_err(),
            PairsPlanError::OnePu
        );
    }

    #[test]
    fn every_program_is_alone_once_and_every_unordered_pair_once() {
        let t = synthetic("package:1 core:2 pu:2");
        let plan = plan_pairs(&t, &progs(4), None, Some(1), 1.0).unwrap();
        let tasks: Vec<Task> = plan.waves.iter().flatten().map(|(_, t)| *t).collect();
        assert_eq!(tasks.len(), 4 + 10);
        for i in 0..4 {
            assert!(tasks.contains(&Task::Alone(i)));
            for j in i..4 {
                assert!(tasks.contains(&Task::Pair(i, j)));
            }
        }
        assert!(plan.waves.iter().all(|w| w.len() == 1));
        assert_eq!(describe_wave(&plan.points[0]), ["p0 alone on PU 0"]);
        assert_eq!(describe_wave(&plan.points[5]), ["p0 + p1 on PUs 0+1"]);
    }
}
