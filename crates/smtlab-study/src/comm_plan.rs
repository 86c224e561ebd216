//! The communication study's plan (`smtlab study comm`): the software-DSM
//! study of Hu, Shi and Zhang ("Communication with Threads in Software
//! DSMs", on JIAJIA). Each application (SOR, LU, TSP) runs as N ranks,
//! processes sharing memory through the DSM over UDP, once per mechanism by
//! which a rank notices the others' requests (`sigio`, `thr1`, `thr2`,
//! `thr3`, `poll`), at every N of a ladder, in two layouts: one rank per CPU
//! (`per_node=1`: a rank has a processor to itself, like the paper's
//! processes on single-processor nodes) and two ranks sharing a node's two
//! CPUs (`per_node=2`: the paper's dual-processor nodes with two processes
//! each). A node is one core's two SMT siblings on a machine with SMT, two
//! adjacent cores without.
//!
//! Problem sizes are the study's own, smaller than the applications'
//! defaults, so that one sample takes a few tenths of a second and the
//! default study (5 mechanisms x 3 applications x 4 layouts = 60 points on
//! two CPUs) fits in about ten minutes. What the machine cannot show (no
//! spare processor for a rank, ranks sharing CPUs at N above the CPUs) is
//! said in the plan, before anything runs.

use std::collections::BTreeMap;

use smtlab_plan::{plan, PlanError, TypedPrograms};
use smtlab_topology::Topology;
use smtlab_types::{Comm, Model, Point, Program, RunSpec, StudyKind, StudyMeta};

/// The applications of the study, in its order (the DSM's own list).
pub const COMM_APPS: [&str; 3] = ["sor", "lu", "tsp"];

/// Ranks per node of the two layouts: one rank per CPU, two ranks sharing
/// a node's two CPUs.
pub const LAYOUTS: [usize; 2] = [1, 2];

/// The most ranks of one run, as the DSM allows (`smtlab_dsm::MAX_RANKS`;
/// `plan::expand` refuses more): the ladder stops there on a larger
/// machine.
pub const MAX_RANKS: usize = 64;

/// The study's problem size of `app`: small enough that a sample (ranks
/// started, the parallel section, the sequential check at rank 0) takes a
/// few tenths of a second in a release build on two CPUs; the
/// applications' defaults take several times that. Measured on the 2-vCPU
/// development VM, 2 ranks, the parallel section: SOR 0.13-0.19 s, LU
/// 0.07 s at n=512 (so 640), TSP 0.20-0.28 s; at 4 ranks (sharing the two
/// CPUs) 0.15-0.38 s; a whole sample (processes started, the sequential
/// check) about 0.3 s.
pub fn study_sizes(app: &str) -> &'static [(&'static str, &'static str)] {
    match app {
        "sor" => &[("n", "512"), ("iterations", "20")],
        "lu" => &[("n", "640"), ("block", "32")],
        "tsp" => &[("cities", "12")],
        _ => &[],
    }
}

/// The parameters each application takes, so that a `--param` goes to the
/// applications it means something to (`n` to SOR and LU, `cities` to
/// TSP); the values are checked by `smtlab_plan::plan` with each rank count.
const APP_PARAMS: [(&str, &[&str]); 3] = [
    ("sor", &["n", "iterations"]),
    ("lu", &["n", "block", "seed"]),
    ("tsp", &["cities", "seed", "depth"]),
];

/// The DSM's own parameters that the study passes to every application
/// (`per_node` is the study's layout axis, not a choice).
const DSM_PARAMS: [&str; 1] = ["loss"];

/// What the user asked of the communication study (all optional).
#[derive(Debug, Clone, Default)]
pub struct CommAsk {
    /// `-w`: some of [`COMM_APPS`]; `None`: all three.
    pub apps: Option<Vec<String>>,
    /// `--comm`; `None`: every mechanism.
    pub comms: Option<Vec<Comm>>,
    /// `--threads`: the rank counts, each even; `None`: [`rank_ladder`].
    pub threads: Option<Vec<usize>>,
    /// `--param`, each given to the applications that take it.
    pub given: BTreeMap<String, String>,
}

/// Why the communication study cannot be planned as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CommPlanError {
    #[error(
        "--threads {n}: `study comm` runs every rank count both with one rank per CPU and with \
         two ranks sharing a node, so each count must be even (2, 4, 8, ...)"
    )]
    OddRanks { n: usize },
    #[error("-w {0}: `study comm` measures the DSM applications sor, lu and tsp")]
    NotAnApp(String),
    #[error(
        "--param per_node: `study comm` measures both layouts itself (per_node=1 and \
         per_node=2); drop it, or use `smtlab run -w APP --param per_node=K`"
    )]
    PerNode,
    #[error(
        "--param {key}: none of the study's applications ({apps}) takes it; sor takes n, \
         iterations; lu n, block, seed; tsp cities, seed, depth; every one loss"
    )]
    UnknownParam { key: String, apps: String },
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// The default rank counts on a machine with `cpus` usable CPUs: 2, 4, 8,
/// ... up to the CPUs (at least 2 and 4, the acceptance's pair, even on a
/// machine with fewer CPUs: ranks then share them, and the plan says so),
/// with the CPU count itself when it is even and not a power of two; never
/// past [`MAX_RANKS`].
pub fn rank_ladder(cpus: usize) -> Vec<usize> {
    let top = cpus.clamp(4, MAX_RANKS);
    let mut v: Vec<usize> = std::iter::successors(Some(2usize), |n| n.checked_mul(2))
        .take_while(|&n| n <= top)
        .collect();
    if top % 2 == 0 && !v.contains(&top) {
        v.push(top);
    }
    v
}

/// `one rank per CPU`, `two ranks per node`.
pub fn layout_name(per_node: usize) -> &'static str {
    if per_node == 2 {
        "two ranks per node"
    } else {
        "one rank per CPU"
    }
}

/// The ranks per node of a DSM point (its `per_node` parameter; 1 when
/// absent).
pub fn per_node_of(p: &Point) -> usize {
    match &p.program {
        Program::Ranks { params, .. } => params
            .get("per_node")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1),
        _ => 1,
    }
}

/// Whether `app` takes the parameter `key`: its own, or the DSM's.
fn takes(app: &str, key: &str) -> bool {
    DSM_PARAMS.contains(&key)
        || APP_PARAMS
            .iter()
            .any(|(a, keys)| *a == app && keys.contains(&key))
}

/// The parameters `app` runs with in the study: its study size, with the
/// user's `--param`s that it takes in their place or beside them.
fn app_params(app: &str, given: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut params: BTreeMap<String, String> = study_sizes(app)
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for (k, v) in given {
        if takes(app, k) {
            params.insert(k.clone(), v.clone());
        }
    }
    params
}

/// Plan the communication study; `base` holds sampling, allocators, seed
/// and counters.
pub fn plan_comm(
    topo: &Topology,
    base: RunSpec,
    ask: CommAsk,
) -> Result<(RunSpec, Vec<Point>, TypedPrograms), CommPlanError> {
    let CommAsk {
        apps,
        comms,
        threads,
        given,
    } = ask;
    let apps = apps.unwrap_or_else(|| COMM_APPS.map(String::from).to_vec());
    if let Some(bad) = apps.iter().find(|a| !COMM_APPS.contains(&a.as_str())) {
        return Err(CommPlanError::NotAnApp(bad.clone()));
    }
    if given.contains_key("per_node") {
        return Err(CommPlanError::PerNode);
    }
    // Each key to the applications that take it; one that none of the
    // study's applications takes is a mistake, not something to ignore.
    if let Some(key) = given
        .keys()
        .find(|k| !apps.iter().any(|a| takes(a, k.as_str())))
    {
        return Err(CommPlanError::UnknownParam {
            key: key.clone(),
            apps: apps.join(", "),
        });
    }
    let usable = topo.online().intersection(&topo.allowed()).len();
    let ladder = match threads {
        Some(t) => {
            if let Some(&n) = t.iter().find(|&&n| n % 2 != 0) {
                return Err(CommPlanError::OddRanks { n });
            }
            t
        }
        None => rank_ladder(usable),
    };
    let comms = comms.unwrap_or_else(|| Comm::ALL.to_vec());
    let program = |app: &str, per_node: usize| {
        let mut params = app_params(app, &given);
        params.insert("per_node".into(), per_node.to_string());
        Program::Builtin {
            workload: app.to_string(),
            params,
        }
    };
    let nodes = NodeLayout::of(topo);
    let spec = RunSpec {
        programs: Vec::new(),
        comms: comms.clone(),
        models: vec![Model::Process],
        placements: Vec::new(),
        threads: Vec::new(),
        ..base
    };
    // One rank per CPU: spread one per core, across packages first, as
    // far apart as the machine allows (`scatter`). Two ranks per node:
    // node k is core k's two SMT siblings where the machine has them (two
    // ranks on one core), else two adjacent cores, 2k and 2k+1 (`core`),
    // as a dual-processor node's two processors are close; where there
    // are fewer nodes than the ranks need, `scatter` (the ranks share CPUs
    // anyway).
    let fits = |n: usize| n <= 2 * nodes.nodes;
    let by_node: Vec<usize> = ladder.iter().copied().filter(|&n| fits(n)).collect();
    let beyond: Vec<usize> = ladder.iter().copied().filter(|&n| !fits(n)).collect();
    let parts: [(usize, &str, &[usize]); 3] = [
        (1, "scatter", &ladder),
        (2, &nodes.placement, &by_node),
        (2, "scatter", &beyond),
    ];
    let mut points = Vec::new();
    let mut programs = TypedPrograms::default();
    let mut placements: Vec<String> = Vec::new();
    for (per_node, placement, threads) in parts {
        if threads.is_empty() {
            continue;
        }
        let part = RunSpec {
            programs: apps.iter().map(|a| program(a, per_node)).collect(),
            placements: vec![placement.parse().expect("a study's own placement is valid")],
            threads: threads.to_vec(),
            ..spec.clone()
        };
        let planned = plan(topo, &part)?;
        points.extend(planned.points);
        programs.extend(planned.programs);
        if !placements.iter().any(|p| p == placement) {
            placements.push(placement.to_string());
        }
    }
    // The plan's order: application, layout, mechanism, ranks.
    let app_index = |p: &Point| match &p.program {
        Program::Ranks { app, .. } => apps.iter().position(|a| a == app).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let comm_index = |p: &Point| match &p.program {
        Program::Ranks { comm, .. } => comms.iter().position(|c| c == comm).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    points.sort_by_key(|p| (app_index(p), per_node_of(p), comm_index(p), p.workers));
    for (i, p) in points.iter_mut().enumerate() {
        p.index = i;
    }
    let (limits, notes) = sentences(usable, &nodes, &ladder, &apps, &given);
    let spec = RunSpec {
        programs: apps
            .iter()
            .flat_map(|a| LAYOUTS.map(|k| program(a, k)))
            .collect(),
        placements: placements
            .iter()
            .map(|p| p.parse().expect("a study's own placement is valid"))
            .collect(),
        threads: ladder,
        study: Some(StudyMeta {
            kind: StudyKind::Comm,
            limits,
            notes,
        }),
        ..spec
    };
    Ok((spec, points, programs))
}

/// How two ranks per node find their node's two CPUs on a machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLayout {
    /// The placement whose CPUs 2k and 2k+1 are node k's.
    pub placement: String,
    /// Nodes the machine has (ranks beyond twice this share CPUs, and are
    /// placed by `scatter`).
    pub nodes: usize,
    /// Node k is the first two usable PUs (SMT siblings) of the k-th core
    /// that has two; `false`: cores 2k and 2k+1.
    pub siblings: bool,
    /// The first node's CPUs, for the plan's note.
    pub first: Vec<u32>,
    /// Usable cores left out of the nodes (one usable PU, beside cores
    /// with two).
    pub left_out: usize,
}

impl NodeLayout {
    /// A machine with SMT (some usable core has two or more usable PUs):
    /// node k is one core's first two usable PUs, so the two ranks of a
    /// node are siblings — placement `compact` when every usable core has
    /// exactly two, `E:N:2C:2:T` (two of every T) when every one has T,
    /// else the list of those PUs in core order (a core with one usable PU
    /// is left out).
    /// Without SMT: node k is cores 2k and 2k+1 (`core`).
    pub fn of(topo: &Topology) -> NodeLayout {
        let usable = topo.online().intersection(&topo.allowed());
        let cores: Vec<Vec<u32>> = topo
            .cores
            .iter()
            .map(|c| {
                topo.core_pus(c.id)
                    .into_iter()
                    .filter(|p| usable.contains(*p))
                    .collect::<Vec<u32>>()
            })
            .filter(|pus| !pus.is_empty())
            .collect();
        let pairs: Vec<&[u32]> = cores
            .iter()
            .filter(|pus| pus.len() >= 2)
            .map(|pus| &pus[..2])
            .collect();
        if pairs.is_empty() {
            return NodeLayout {
                placement: "core".into(),
                nodes: cores.len() / 2,
                siblings: false,
                first: cores.iter().take(2).map(|pus| pus[0]).collect(),
                left_out: 0,
            };
        }
        let per_core = cores[0].len();
        let placement = if cores.iter().any(|pus| pus.len() != per_core) {
            ordered_list(pairs.iter().flat_map(|p| p.iter().copied()))
        } else if per_core == 2 {
            "compact".to_string()
        } else {
            // Core by core, two PUs, then on to the next core's first.
            format!("E:N:{}:2:{per_core}", 2 * pairs.len())
        };
        NodeLayout {
            placement,
            nodes: pairs.len(),
            siblings: true,
            first: pairs[0].to_vec(),
            left_out: cores.len() - pairs.len(),
        }
    }
}

/// A physical CPU list in the order given (`0-1,4-5`; `0,32,1,33`): runs
/// of consecutive ascending CPUs as ranges, nothing reordered.
fn ordered_list(cpus: impl Iterator<Item = u32>) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for c in cpus {
        match runs.last_mut() {
            Some((_, last)) if c == *last + 1 => *last = c,
            _ => runs.push((c, c)),
        }
    }
    runs.iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// What the machine cannot show, and the plan's decisions.
fn sentences(
    usable: usize,
    nodes: &NodeLayout,
    ladder: &[usize],
    apps: &[String],
    given: &BTreeMap<String, String>,
) -> (Vec<String>, Vec<String>) {
    let limits = machine_limits(usable, ladder);
    let mut notes = Vec::new();
    if ladder.last().is_some_and(|&n| n == MAX_RANKS) && usable > MAX_RANKS {
        notes.push(format!(
            "The ladder stops at {MAX_RANKS} ranks, the most one DSM run has; this machine has \
             {usable} usable CPUs."
        ));
    }
    notes.push(layouts_note(nodes, ladder));
    notes.push(
        "The ranks are processes on this machine exchanging UDP datagrams over loopback: a \
         message costs microseconds, where the paper's switched Ethernet took a hundred or more, \
         so communication is a smaller part of each run than in the paper."
            .to_string(),
    );
    notes.push(sizes_note(apps, given));
    (limits, notes)
}

/// `""` for one, `"s"` for any other count.
fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// What no layout can show, and what this machine's CPUs cannot: ranks
/// sharing CPUs above them, and no room for the paper's 8 to 16 processors.
fn machine_limits(usable: usize, ladder: &[usize]) -> Vec<String> {
    let mut limits = Vec::new();
    // A rank with a processor to spare (the paper's dual-processor node
    // running one process, its communication thread on the other
    // processor) is not a layout the DSM runs: one rank per CPU gives a
    // rank one CPU, two per node give two ranks two.
    limits.push(
        "No layout gives a rank a processor of its own plus a spare one (the paper's \
         dual-processor node running a single process): with one rank per CPU a rank's \
         communication threads share its CPU with its computation; with two ranks per node \
         they can use the partner's CPU only while the partner waits."
            .to_string(),
    );
    let over: Vec<usize> = ladder.iter().copied().filter(|&n| n > usable).collect();
    if !over.is_empty() {
        let list = over
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(" and ");
        limits.push(format!(
            "This machine has {usable} usable CPU{}: at {list} ranks the ranks share CPUs \
             (oversubscribed; with one rank per CPU ranks r and r+{usable} take turns on one \
             CPU), which is neither of the paper's conditions (a processor per process, a node's \
             processors shared by its two processes): those points are measured and shown, but \
             the paper's findings are not judged on them.",
            plural(usable)
        ));
    }
    if usable <= 2 {
        limits.push(format!(
            "With {usable} usable CPU{} the largest layout without sharing is 2 ranks: the \
             paper's growth of waiting time from 8 to 16 processors needs a machine (or a \
             cluster, with `smtlab rank` under mpirun or srun) of 16 CPUs; `--dry-run \
             --synthetic \"core:16\"` shows that plan.",
            plural(usable)
        ));
    }
    limits
}

/// How the two layouts place their ranks on this machine: one per core
/// by `scatter`; two per node on a core's siblings or two adjacent cores,
/// and by `scatter` at N above twice the nodes.
fn layouts_note(nodes: &NodeLayout, ladder: &[usize]) -> String {
    let fits: Vec<usize> = ladder
        .iter()
        .copied()
        .filter(|&n| n <= 2 * nodes.nodes)
        .collect();
    let beyond: Vec<String> = ladder
        .iter()
        .filter(|&&n| n > 2 * nodes.nodes)
        .map(usize::to_string)
        .collect();
    if fits.is_empty() {
        return "Two ranks per node: node k is CPUs 2k and 2k+1 of the scatter order, both ranks \
                of a node pinned to its two CPUs."
            .to_string();
    }
    let node = node_sentence(nodes);
    let beyond = if beyond.is_empty() {
        String::new()
    } else {
        format!(
            " At {} ranks, more than this machine's {} node{} hold, node k is CPUs 2k and \
             2k+1 of the scatter order.",
            beyond.join(" and "),
            nodes.nodes,
            plural(nodes.nodes)
        )
    };
    format!(
        "One rank per CPU: the ranks spread one per core, across packages first (placement \
         scatter), each pinned to its CPU. Two ranks per node: {node}, both ranks of a node \
         pinned to its two CPUs, the kernel choosing which runs where.{beyond}"
    )
}

/// What a node is on this machine: one core's two SMT siblings (cores
/// with one usable CPU left out), or two adjacent cores without SMT.
fn node_sentence(nodes: &NodeLayout) -> String {
    let cpu_pair = |c: &[u32]| match c {
        [a, b] => format!("CPUs {a} and {b}"),
        _ => "its CPUs".to_string(),
    };
    if nodes.siblings {
        let left_out = match nodes.left_out {
            0 => String::new(),
            1 => "; the core with one usable CPU is left out".to_string(),
            k => format!("; the {k} cores with one usable CPU are left out"),
        };
        format!(
            "node k is the two SMT siblings of core k, two ranks on one core ({} for node \
             0; placement {}{left_out})",
            cpu_pair(&nodes.first),
            nodes.placement
        )
    } else {
        format!(
            "node k is cores 2k and 2k+1 ({} for node 0; placement {}), this machine \
             having no SMT",
            cpu_pair(&nodes.first),
            nodes.placement
        )
    }
}

/// The problem size each application runs at, the user's `--param`s
/// included.
fn sizes_note(apps: &[String], given: &BTreeMap<String, String>) -> String {
    let sizes: Vec<String> = apps
        .iter()
        .map(|a| {
            let kv: Vec<String> = app_params(a, given)
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!("{a} {}", kv.join(" "))
        })
        .collect();
    format!(
        "Problem sizes: {} (smaller than the applications' defaults, so that a sample takes a few \
         tenths of a second; --param changes them). Every result is checked against a \
         sequential run of the same input at rank 0.",
        sizes.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> RunSpec {
        crate::testing::plan_base(3, 5)
    }

    fn layout_of(p: &Point) -> (String, Comm, usize, usize) {
        match &p.program {
            Program::Ranks { app, comm, .. } => (app.clone(), *comm, p.workers, per_node_of(p)),
            other => panic!("not ranks: {other:?}"),
        }
    }

    #[test]
    fn ladders_start_at_two_ranks_and_stop_at_the_cpus() {
        assert_eq!(rank_ladder(1), [2, 4]);
        assert_eq!(rank_ladder(2), [2, 4]);
        assert_eq!(rank_ladder(6), [2, 4, 6]);
        assert_eq!(rank_ladder(16), [2, 4, 8, 16]);
        assert_eq!(rank_ladder(24), [2, 4, 8, 16, 24]);
        assert_eq!(rank_ladder(256), [2, 4, 8, 16, 32, 64]);
    }

    #[test]
    fn two_cpus_plan_sixty_points_and_say_what_they_cannot_show() {
        let topo = smtlab_topology::synthetic::parse("core:2 pu:1").unwrap();
        let (spec, points, _) = plan_comm(&topo, base(), CommAsk::default()).unwrap();
        // 5 mechanisms x 3 applications x (2 and 4 ranks) x (1 and 2 per node).
        assert_eq!(points.len(), 60);
        assert_eq!(spec.threads, [2, 4]);
        for app in COMM_APPS {
            for comm in Comm::ALL {
                for n in [2, 4] {
                    for per_node in LAYOUTS {
                        let key = (app.to_string(), comm, n, per_node);
                        assert!(
                            points.iter().any(|p| layout_of(p) == key),
                            "{key:?} planned"
                        );
                    }
                }
            }
        }
        for p in &points {
            assert_eq!(p.model, Model::Process);
            let by_core = per_node_of(p) == 2 && p.workers == 2;
            assert_eq!(p.placement, if by_core { "core" } else { "scatter" });
            assert_eq!(p.cpus.as_ref().map(Vec::len), Some(p.workers));
            assert_eq!(p.oversubscription > 1.0, p.workers == 4);
        }
        let sor = points
            .iter()
            .find(|p| layout_of(p).0 == "sor")
            .map(|p| p.program.clone());
        match sor {
            Some(Program::Ranks { params, .. }) => {
                assert_eq!(params["n"], "512");
                assert_eq!(params["iterations"], "20");
            }
            other => panic!("{other:?}"),
        }
        let meta = spec.study.unwrap();
        assert_eq!(meta.kind, StudyKind::Comm);
        let limits = meta.limits.join("\n");
        assert!(
            limits.contains("at 4 ranks the ranks share CPUs"),
            "{limits}"
        );
        assert!(limits.contains("spare"), "{limits}");
        assert!(
            meta.notes
                .iter()
                .any(|n| n.contains("sor iterations=20 n=512")),
            "{:?}",
            meta.notes
        );
    }

    #[test]
    fn a_sixteen_cpu_machine_gets_the_papers_eight_and_sixteen_ranks() {
        let topo = smtlab_topology::synthetic::parse("package:2 core:8 pu:1").unwrap();
        let (spec, points, _) = plan_comm(&topo, base(), CommAsk::default()).unwrap();
        assert_eq!(spec.threads, [2, 4, 8, 16]);
        assert!(points
            .iter()
            .any(|p| p.workers == 16 && per_node_of(p) == 2));
        assert!(points.iter().any(|p| p.workers == 8 && per_node_of(p) == 1));
        assert!(points.iter().all(|p| p.oversubscription == 1.0));
        assert_eq!(points.len(), 5 * 3 * 4 * 2);
        assert!(points.iter().enumerate().all(|(i, p)| p.index == i));
        let package = |cpu: u32| topo.pu(cpu).map(|pu| pu.package);
        for p in &points {
            let cpus = p.cpus.clone().unwrap();
            if per_node_of(p) == 2 {
                // A node's two CPUs are two cores of one package.
                assert_eq!(p.placement, "core");
                for node in cpus.chunks(2) {
                    assert_eq!(package(node[0]), package(node[1]), "{cpus:?}");
                    assert_ne!(node[0], node[1]);
                }
            } else {
                // One rank per CPU, spread over both packages.
                assert_eq!(p.placement, "scatter");
                assert_ne!(package(cpus[0]), package(cpus[1]), "{cpus:?}");
            }
        }
        let limits = spec.study.unwrap().limits.join("\n");
        assert!(!limits.contains("share CPUs"), "{limits}");
    }

    /// The per_node=2 points' placements, CPUs by N (one application and
    /// mechanism), and the plan's note on the layouts.
    fn two_per_node(topo: &Topology) -> (Vec<(usize, String, Vec<u32>)>, String) {
        let ask = CommAsk {
            apps: Some(vec!["sor".into()]),
            comms: Some(vec![Comm::Sigio]),
            ..CommAsk::default()
        };
        let (spec, points, _) = plan_comm(topo, base(), ask).unwrap();
        let nodes = points
            .iter()
            .filter(|p| per_node_of(p) == 2)
            .map(|p| (p.workers, p.placement.clone(), p.cpus.clone().unwrap()))
            .collect();
        let note = spec
            .study
            .unwrap()
            .notes
            .into_iter()
            .find(|n| n.contains("Two ranks per node"))
            .expect("a note on the layouts");
        (nodes, note)
    }

    #[test]
    fn with_smt_a_node_is_one_cores_two_siblings() {
        // The emulated guest: 2 packages x 2 cores x 2 SMT threads.
        let topo = smtlab_topology::synthetic::parse("package:2 core:2 pu:2").unwrap();
        let core = |cpu: u32| topo.pu(cpu).and_then(|pu| pu.core);
        let (nodes, note) = two_per_node(&topo);
        assert_eq!(
            nodes,
            vec![
                (2, "compact".to_string(), vec![0, 1]),
                (4, "compact".to_string(), vec![0, 1, 2, 3]),
                (8, "compact".to_string(), (0..8).collect()),
            ]
        );
        for (_, _, cpus) in &nodes {
            for node in cpus.chunks(2) {
                assert_eq!(core(node[0]), core(node[1]), "{cpus:?}: siblings");
                assert_ne!(node[0], node[1]);
            }
        }
        assert!(
            note.contains(
                "node k is the two SMT siblings of core k, two ranks on one core (CPUs 0 and 1 \
                 for node 0; placement compact)"
            ),
            "{note}"
        );
        assert!(!note.contains("cores 2k and 2k+1"), "{note}");
        assert!(!note.contains("scatter order"), "{note}");
        // One rank per CPU is unchanged.
        let (spec, points, _) = plan_comm(&topo, base(), CommAsk::default()).unwrap();
        assert!(points
            .iter()
            .filter(|p| per_node_of(p) == 1)
            .all(|p| p.placement == "scatter"));
        let placements: Vec<String> = spec.placements.iter().map(|p| p.to_string()).collect();
        assert_eq!(placements, ["scatter", "compact"]);

        // SMT4: a node is a core's first two siblings, one node per core;
        // 16 ranks need more nodes than its 4 cores: scatter.
        let topo = smtlab_topology::synthetic::parse("core:4 pu:4").unwrap();
        let (nodes, note) = two_per_node(&topo);
        let list = "E:N:8:2:4".to_string();
        assert_eq!(
            nodes,
            vec![
                (2, list.clone(), vec![0, 1]),
                (4, list.clone(), vec![0, 1, 4, 5]),
                (8, list.clone(), vec![0, 1, 4, 5, 8, 9, 12, 13]),
                (
                    16,
                    "scatter".to_string(),
                    vec![0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15]
                ),
            ]
        );
        assert!(
            note.contains("(CPUs 0 and 1 for node 0; placement E:N:8:2:4)"),
            "{note}"
        );
        assert!(
            note.contains(
                "At 16 ranks, more than this machine's 4 nodes hold, node k is CPUs 2k and \
                 2k+1 of the scatter order."
            ),
            "{note}"
        );

        // A cpuset that leaves some cores one sibling (the guest's 0-2,5):
        // only the core with both is a node.
        let mut topo = smtlab_topology::synthetic::parse("package:2 core:2 pu:2").unwrap();
        for pu in &mut topo.pus {
            pu.allowed = [0, 1, 2, 5].contains(&pu.os_index);
        }
        let (nodes, note) = two_per_node(&topo);
        assert_eq!(nodes[0], (2, "0-1".to_string(), vec![0, 1]));
        assert_eq!(nodes[1].1, "scatter");
        assert!(
            note.contains("the 2 cores with one usable CPU are left out"),
            "{note}"
        );
        assert!(
            note.contains("At 4 ranks, more than this machine's 1 node hold"),
            "{note}"
        );
    }

    #[test]
    fn without_smt_a_node_is_two_adjacent_cores_as_before() {
        // The paper's eight dual-processor nodes.
        let topo = smtlab_topology::synthetic::parse("package:8 core:2").unwrap();
        let package = |cpu: u32| topo.pu(cpu).and_then(|pu| pu.package);
        let (nodes, note) = two_per_node(&topo);
        let ns: Vec<usize> = nodes.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(ns, [2, 4, 8, 16]);
        for (n, placement, cpus) in &nodes {
            assert_eq!(placement, "core");
            assert_eq!(cpus, &(0..*n as u32).collect::<Vec<_>>());
            for node in cpus.chunks(2) {
                assert_eq!(package(node[0]), package(node[1]), "{cpus:?}");
            }
        }
        assert!(
            note.contains(
                "node k is cores 2k and 2k+1 (CPUs 0 and 1 for node 0; placement core), this \
                 machine having no SMT"
            ),
            "{note}"
        );
        assert!(!note.contains("siblings"), "{note}");
        // Two CPUs: the second point has more ranks than nodes.
        let topo = smtlab_topology::synthetic::parse("core:2 pu:1").unwrap();
        let (nodes, note) = two_per_node(&topo);
        assert_eq!(nodes[0], (2, "core".to_string(), vec![0, 1]));
        assert_eq!(nodes[1], (4, "scatter".to_string(), vec![0, 1, 0, 1]));
        assert!(
            note.contains("At 4 ranks, more than this machine's 1 node hold"),
            "{note}"
        );
    }

    #[test]
    fn what_the_user_chooses_and_refuses() {
        let topo = smtlab_topology::synthetic::parse("core:2 pu:1").unwrap();
        let ask = CommAsk {
            apps: Some(vec!["sor".into(), "tsp".into()]),
            comms: Some(vec![Comm::Sigio, Comm::Thr2]),
            threads: Some(vec![2]),
            given: [("n".to_string(), "64".to_string())].into(),
        };
        let (_, points, _) = plan_comm(&topo, base(), ask.clone()).unwrap();
        assert_eq!(points.len(), 2 * 2 * 2);
        for p in &points {
            let Program::Ranks { app, params, .. } = &p.program else {
                panic!("ranks")
            };
            // n is SOR's and LU's, not TSP's.
            assert_eq!(
                params.get("n").map(String::as_str),
                (app == "sor").then_some("64")
            );
        }
        let odd = CommAsk {
            threads: Some(vec![2, 3]),
            ..CommAsk::default()
        };
        let e = plan_comm(&topo, base(), odd).unwrap_err();
        assert_eq!(e, CommPlanError::OddRanks { n: 3 });
        assert!(e.to_string().starts_with("--threads 3: "), "{e}");
        let bad = |given: &[(&str, &str)], apps: Option<Vec<String>>| {
            let ask = CommAsk {
                apps,
                given: given
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..CommAsk::default()
            };
            plan_comm(&topo, base(), ask).unwrap_err().to_string()
        };
        assert!(bad(&[("per_node", "2")], None).starts_with("--param per_node: "));
        let e = bad(&[("cities", "9")], Some(vec!["sor".into()]));
        assert!(
            e.starts_with("--param cities: none of the study's applications (sor)"),
            "{e}"
        );
        let e = bad(&[("n", "7")], None);
        assert!(e.starts_with("--param n=7: "), "{e}");
        let e = plan_comm(
            &topo,
            base(),
            CommAsk {
                apps: Some(vec!["spin".into()]),
                ..CommAsk::default()
            },
        )
        .unwrap_err();
        assert_eq!(e, CommPlanError::NotAnApp("spin".into()));
        for e in [
            CommPlanError::OddRanks { n: 3 },
            CommPlanError::PerNode,
            CommPlanError::NotAnApp("x".into()),
        ] {
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }
}
