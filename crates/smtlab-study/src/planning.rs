//! Planning a study: which programs, models, placements, N, allocators and
//! sampling answer its question on this machine, and the sentences saying
//! what the machine cannot show. The result is an ordinary [`RunSpec`]
//! (stored with the run, so `report` and `--resume` rebuild it) and its
//! points. Nothing here invents a number: where the hardware lacks SMT or
//! cores, the study says so and plans only what exists.

use std::collections::BTreeMap;

use smtlab_allocators::{self as allocator, Allocator, AllocatorError};
use smtlab_plan::{expand, PlanError, TypedPrograms};
use smtlab_topology::placement::place;
use smtlab_topology::Topology;
use smtlab_types::{
    Comm, MetricSpec, Mode, Model, Point, PolicySpec, Program, RunSpec, Spawn, StudyKind, StudyMeta,
};

use crate::comm_plan::CommPlanError;
use crate::error::{NginxMissing, NgircdMissing};
use crate::pairs_plan::{plan_pairs, PairProgram, PairsPlanError, Share};
pub use crate::shape::ladder;
use crate::shape::{no_smt_sentence, shape, Shape};

/// What the command line fixed for a study; `None` (or no programs) leaves
/// it to the study. Every value is typed and checked already: the study
/// only fills in what is missing.
#[derive(Debug, Clone, Default)]
pub struct StudyRequest {
    /// Empty: the study's own workloads ([`default_programs`]).
    pub programs: Vec<Program>,
    /// `--metric` of a `--cmd`.
    pub metric: Option<MetricSpec>,
    pub models: Option<Vec<Model>>,
    pub threads: Option<Vec<usize>>,
    /// The allocators to compare, found (`--alloc`). Default: glibc; for the
    /// alloc study every one installed.
    pub allocators: Option<Vec<Allocator>>,
    /// `--duration`/`--work`; default: each workload's own (the alloc
    /// study: 0.5 s of fixed time).
    pub mode: Option<Mode>,
    pub sampling: SamplingRequest,
    pub seed: u64,
    pub counters: bool,
    /// What only the pairs study takes.
    pub pairs: PairsRequest,
    /// `--connections`: the chat study's sweep (default
    /// [`crate::chat_plan::CONNECTIONS`]).
    pub connections: Option<Vec<usize>>,
    /// `--comm`: the communication study's mechanisms (default: all five).
    pub comms: Option<Vec<Comm>>,
}

/// The pairs study's own flags.
#[derive(Debug, Clone, Default)]
pub struct PairsRequest {
    /// The name of each of `StudyRequest::programs` (`--cmd NAME=...`, or
    /// the workload); empty: each program's label.
    pub names: Vec<String>,
    /// `--share`; `None`: the closest sharing the machine has.
    pub share: Option<Share>,
    /// `--at-once`; `None`: every slot of the machine.
    pub at_once: Option<usize>,
    /// `--window`; `None`: [`PAIRS_WINDOW_S`].
    pub window_s: Option<f64>,
}

/// The co-running window of the pairs study, unless `--window`: long
/// enough for a few samples of each default program.
pub const PAIRS_WINDOW_S: f64 = 1.0;

/// Why a study cannot be planned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StudyPlanError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Pairs(#[from] PairsPlanError),
    #[error(transparent)]
    Comm(#[from] CommPlanError),
}

/// The sampling flags as given; `None` takes the study's default
/// ([`Sampling::defaults`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SamplingRequest {
    pub warmup: Option<usize>,
    pub min_samples: Option<usize>,
    pub max_samples: Option<usize>,
    pub precision: Option<f64>,
    pub max_time_s: Option<f64>,
    pub timeout_s: Option<f64>,
}

/// How a study samples each point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub warmup: usize,
    pub min_samples: usize,
    pub max_samples: usize,
    pub precision: f64,
    pub max_time_s: f64,
}

impl Sampling {
    /// A study's defaults: one warm-up, 5 to 10 samples to a 2% CI within
    /// 15 s per point; the tour, which must fit in about a minute on 2
    /// cores, at most 7 samples to 3% within 6 s.
    pub fn defaults(kind: StudyKind) -> Sampling {
        let tour = kind == StudyKind::Tour;
        if kind == StudyKind::Web {
            // A sample is a server's lifetime with a 1 s window of load:
            // a few give each point its interval; the default sweep on a
            // 2-core machine (five points) takes about a minute.
            return Sampling {
                warmup: 1,
                min_samples: 5,
                max_samples: 8,
                precision: 0.03,
                max_time_s: 12.0,
            };
        }
        if kind == StudyKind::Chat {
            // A sample is a server's lifetime: every client registers and
            // joins, then the messages; a fresh server each time, so no
            // warm-up. Three give each point an interval; 10,000 clients
            // take up to half a minute to set up.
            return Sampling {
                warmup: 0,
                min_samples: 3,
                max_samples: 5,
                precision: 0.05,
                max_time_s: 60.0,
            };
        }
        if kind == StudyKind::Comm {
            // A sample starts N rank processes, solves one problem (a few
            // tenths of a second at the study's sizes) and checks it
            // against a sequential run, about 0.3 s in all: one warm-up
            // (the binary and its pages cached), then 3 to 12 samples to a
            // 3% interval (a sample varies by 5-15% here), at most 8 s a
            // point, so 60 points take 4 to 8 minutes on two CPUs.
            return Sampling {
                warmup: 1,
                min_samples: 3,
                max_samples: 12,
                precision: 0.03,
                max_time_s: 8.0,
            };
        }
        if kind == StudyKind::Pairs {
            // A sample is a whole window of co-running: a few of them give
            // the matrix its intervals within minutes.
            return Sampling {
                warmup: 1,
                min_samples: 3,
                max_samples: 5,
                precision: 0.03,
                max_time_s: 30.0,
            };
        }
        Sampling {
            warmup: 1,
            min_samples: 5,
            max_samples: if tour { 7 } else { 10 },
            precision: if tour { 0.03 } else { 0.02 },
            max_time_s: if tour { 6.0 } else { 15.0 },
        }
    }

    /// The defaults of `kind` where `given` says nothing. A default maximum
    /// below a given minimum is raised to it (the user asked for that many);
    /// a given maximum below the minimum is the user's mistake, refused when
    /// the plan is expanded.
    pub fn resolve(kind: StudyKind, given: &SamplingRequest) -> Sampling {
        let d = Sampling::defaults(kind);
        let min_samples = given.min_samples.unwrap_or(d.min_samples);
        Sampling {
            warmup: given.warmup.unwrap_or(d.warmup),
            min_samples,
            max_samples: given
                .max_samples
                .unwrap_or_else(|| d.max_samples.max(min_samples)),
            precision: given.precision.unwrap_or(d.precision),
            max_time_s: given.max_time_s.unwrap_or(d.max_time_s),
        }
    }
}

/// A study planned for a machine: the run specification (carrying the
/// study's [`StudyMeta`]), its points, and the allocators it measures,
/// found.
#[derive(Debug, Clone)]
pub struct StudyPlan {
    pub spec: RunSpec,
    pub points: Vec<Point>,
    pub allocators: Vec<Allocator>,
    /// Every program's parameters, parsed and checked once, which the
    /// samples run with.
    pub programs: TypedPrograms,
}

/// The allocation benchmarks of the alloc study (besides jbb).
pub const ALLOC_BENCHMARKS: [&str; 5] = [
    "larson",
    "xmalloc",
    "cache_scratch",
    "cache_thrash",
    "mstress",
];

/// The default workloads of studies and the tour, sized so the whole tour
/// fits in about a minute on a 2-core machine (each sample 0.2-1 s): jbb
/// (server throughput), parfib (divide and conquer), sumeuler (irregular
/// integer work) and mandel (irregular floating point).
pub fn default_programs(kind: StudyKind) -> Vec<Program> {
    let p = |w: &str, params: &[(&str, &str)]| Program::Builtin {
        workload: w.to_string(),
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    };
    match kind {
        // Oversubscription shows best on a fixed problem whose threads
        // compete for PUs: parfib is the classic.
        StudyKind::Oversub => vec![p("parfib", &[("n", "41")])],
        // Compute-bound and memory-bound programs, sized so one sample
        // (set-up included) takes well under the 1 s window.
        StudyKind::Pairs => vec![
            p("parfib", &[("n", "34")]),
            p(
                "mandel",
                &[("width", "256"), ("height", "256"), ("iters", "500")],
            ),
            p("stream", &[("size", "96MiB")]),
            p("latency", &[("size", "64MiB")]),
        ],
        StudyKind::Alloc => {
            let mut v = vec![p("jbb", &[])];
            v.extend(ALLOC_BENCHMARKS.iter().map(|w| p(w, &[])));
            // What a core-aware allocator is for: the foreign share, with
            // threads pinned and with threads migrating.
            v.push(p("allocprobe", &[]));
            v.push(p("allocprobe", &[("migrate", "1")]));
            v
        }
        _ => vec![
            p("jbb", &[]),
            p("parfib", &[("n", "41")]),
            p("sumeuler", &[("n", "5000")]),
            p(
                "mandel",
                &[("width", "512"), ("height", "512"), ("iters", "1000")],
            ),
        ],
    }
}

/// 1, 2, 4, ... up to `4 * pus` (always including `pus` and `4 * pus`).
pub fn oversub_ladder(pus: usize) -> Vec<usize> {
    let top = 4 * pus.max(1);
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
        .take_while(|&n| n < top)
        .collect();
    v.push(pus.max(1));
    v.push(top);
    v.sort_unstable();
    v.dedup();
    v
}

/// Plan a study on `topo`: the study sets programs, models, placements, N,
/// allocators, mode and sampling wherever `req` leaves them open.
pub fn plan(
    kind: StudyKind,
    topo: &Topology,
    req: StudyRequest,
) -> Result<StudyPlan, StudyPlanError> {
    if kind == StudyKind::Pairs {
        return plan_pairs_study(topo, req);
    }
    if kind == StudyKind::Web {
        return plan_web_study(topo, req);
    }
    if kind == StudyKind::Chat {
        return plan_chat_study(topo, req);
    }
    if kind == StudyKind::Comm {
        return plan_comm_study(topo, req);
    }
    let sh = shape(topo);
    let programs = if req.programs.is_empty() {
        default_programs(kind)
    } else {
        req.programs.clone()
    };
    let mut limits = Vec::new();
    let mut notes = Vec::new();
    let (models, placements, threads) = sweep(kind, topo, sh, &mut limits);
    let allocators = match (kind, req.allocators.clone()) {
        (_, Some(given)) => given,
        (StudyKind::Alloc, None) => installed_allocators(&mut limits),
        (_, None) => glibc_only(),
    };
    let mut mode = req.mode;
    if kind == StudyKind::Alloc && mode.is_none() {
        // Half-second samples keep allocators x models x programs
        // within minutes; every program here runs for a fixed time.
        mode = Some(Mode::FixedTime { seconds: 0.5 });
    }
    let threads = req.threads.clone().unwrap_or(threads);
    if kind == StudyKind::Cores {
        // `core` refuses more workers than cores; a user's --threads beyond
        // that is a mistake worth naming rather than a crash mid-plan.
        if let Some(&n) = threads.iter().find(|&&n| n > sh.cores) {
            return Err(PlanError::MoreWorkersThanCores { n, cores: sh.cores }.into());
        }
    }
    let base = base_spec(kind, &req, &allocators, mode);
    let mut spec = RunSpec {
        programs,
        models: req.models.unwrap_or(models),
        placements: placements
            .iter()
            .map(|p| p.parse().expect("a study's own placements are valid"))
            .collect(),
        threads,
        metric: req.metric,
        ..base
    };
    dedupe_placements(topo, &mut spec, &mut notes, sh)?;
    spec.study = Some(StudyMeta {
        kind,
        limits,
        notes,
    });
    let points = expand(topo, &spec)?;
    Ok(StudyPlan {
        programs: TypedPrograms::of(&points)?,
        spec,
        points,
        allocators,
    })
}

/// What a study planned here sweeps on this machine: its models,
/// placements and N; what the machine cannot show goes to `limits`.
fn sweep(
    kind: StudyKind,
    topo: &Topology,
    sh: Shape,
    limits: &mut Vec<String>,
) -> (Vec<Model>, Vec<&'static str>, Vec<usize>) {
    let no_smt = sh.pus_per_core <= 1;
    let both = vec![Model::Thread, Model::Process];
    match kind {
        StudyKind::Tour | StudyKind::Models => {
            if no_smt && kind == StudyKind::Tour {
                limits.push(no_smt_sentence(topo, "whether SMT siblings pay"));
            }
            (both, vec!["compact", "scatter"], ladder(sh.pus))
        }
        StudyKind::Smt => {
            if no_smt {
                limits.push(no_smt_sentence(
                    topo,
                    "SMT scalability (1..k threads on the k PUs of one core)",
                ));
            }
            // compact fills core 0's siblings first, so N <= k stays on it.
            (both, vec!["compact"], (1..=sh.pus_per_core).collect())
        }
        StudyKind::Cores => {
            if sh.cores <= 1 {
                limits.push(
                    "This machine has a single usable core, so core scalability cannot be \
                     measured here: with C cores the study runs one worker per core at N = 1..C."
                        .to_string(),
                );
            }
            (both, vec!["core"], ladder(sh.cores))
        }
        StudyKind::Pinning => pinning_sweep(topo, sh, limits),
        StudyKind::Oversub => (vec![Model::Thread], vec!["none"], oversub_ladder(sh.pus)),
        // Every PU busy: where allocators differ most.
        StudyKind::Alloc => (both, vec!["compact"], vec![sh.pus.max(1)]),
        StudyKind::Pairs | StudyKind::Web | StudyKind::Chat | StudyKind::Comm => {
            unreachable!("the pairs, web, chat and comm studies are planned by their own functions")
        }
    }
}

/// The pinning study's sweep: N threads on one core's siblings, and on N
/// cores where the machine has SMT and enough cores (else said why not).
fn pinning_sweep(
    topo: &Topology,
    sh: Shape,
    limits: &mut Vec<String>,
) -> (Vec<Model>, Vec<&'static str>, Vec<usize>) {
    let no_smt = sh.pus_per_core <= 1;
    if no_smt {
        limits.push(no_smt_sentence(
            topo,
            "the pinning comparison (N threads on one core's siblings vs on N cores)",
        ));
    } else if sh.cores < sh.pus_per_core {
        limits.push(format!(
            "This machine has {} usable cores but {} PUs per core, so {} threads cannot \
             each get a core of their own: the across-cores placement is not measured.",
            sh.cores, sh.pus_per_core, sh.pus_per_core
        ));
    }
    let placements = if no_smt || sh.cores < sh.pus_per_core {
        vec!["compact"]
    } else {
        vec!["compact", "core"]
    };
    (vec![Model::Thread], placements, vec![sh.pus_per_core])
}

/// The alloc study's allocators: every one installed here; those missing
/// are said in `limits`, with how to get each.
fn installed_allocators(limits: &mut Vec<String>) -> Vec<Allocator> {
    let (found, missing) = allocator::installed();
    if !missing.is_empty() {
        let missing: Vec<String> = missing
            .iter()
            .map(|(a, e)| match e {
                AllocatorError::NotBuilt { .. } => format!(
                    "{} (build it: cargo build --release -p {})",
                    a.name, a.package
                ),
                _ => format!("{} (install the Debian package {})", a.name, a.package),
            })
            .collect();
        limits.push(format!(
            "Not installed here, so not measured: {}.",
            missing.join(", ")
        ));
    }
    found
}

/// glibc's allocator alone: every study's default but the alloc study's.
pub(crate) fn glibc_only() -> Vec<Allocator> {
    vec![Allocator {
        name: "glibc".to_string(),
        preload: None,
    }]
}

/// The specification every study starts from: its allocators, `mode`,
/// sampling (the study's defaults where the user gave none), timeout,
/// seed and counters; programs, models, placements, N and the metric left
/// empty for the study to set.
pub(crate) fn base_spec(
    kind: StudyKind,
    req: &StudyRequest,
    allocators: &[Allocator],
    mode: Option<Mode>,
) -> RunSpec {
    let sampling = Sampling::resolve(kind, &req.sampling);
    RunSpec {
        programs: Vec::new(),
        comms: Vec::new(),
        models: Vec::new(),
        placements: Vec::new(),
        threads: Vec::new(),
        allocs: allocators.iter().map(|a| a.name.clone()).collect(),
        spawn: Spawn::Exec,
        mode,
        metric: None,
        warmup: sampling.warmup,
        min_samples: sampling.min_samples,
        max_samples: sampling.max_samples,
        precision: sampling.precision,
        max_time_s: sampling.max_time_s,
        timeout_s: req.sampling.timeout_s,
        seed: req.seed,
        counters: req.counters,
        study: None,
    }
}

/// The allocators (glibc unless given) and the specification every study
/// planned by its own module starts from: its sampling, mode, seed and
/// counters; programs, models, placements and N left to that module.
fn server_study_base(kind: StudyKind, req: &StudyRequest) -> (Vec<Allocator>, RunSpec) {
    let allocators = req.allocators.clone().unwrap_or_else(glibc_only);
    let base = base_spec(kind, req, &allocators, req.mode);
    (allocators, base)
}

/// The web study's plan: the sampling, allocators and the rest of the
/// specification as every study has them; servers, models, placements and
/// N from [`web_plan`](crate::web_plan).
fn plan_web_study(topo: &Topology, req: StudyRequest) -> Result<StudyPlan, StudyPlanError> {
    let nginx = NginxMissing::here();
    let (allocators, mut base) = server_study_base(StudyKind::Web, &req);
    base.programs = req.programs.clone();
    let (spec, points) = crate::web_plan::plan_web(topo, base, req.models, req.threads, nginx)?;
    Ok(StudyPlan {
        programs: TypedPrograms::of(&points)?,
        spec,
        points,
        allocators,
    })
}

fn plan_chat_study(topo: &Topology, req: StudyRequest) -> Result<StudyPlan, StudyPlanError> {
    let ngircd = NgircdMissing::here();
    let (allocators, base) = server_study_base(StudyKind::Chat, &req);
    // The user's --param and --client-cpus, on every server of the sweep.
    let (given, given_cpus) = req
        .programs
        .iter()
        .find_map(|p| match p {
            Program::Server {
                params,
                client_cpus,
                ..
            } => Some((params.clone(), client_cpus.clone())),
            _ => None,
        })
        .unwrap_or_default();
    let ask = crate::chat_plan::ChatAsk {
        given,
        given_cpus,
        models: req.models,
        threads: req.threads,
        connections: req.connections,
    };
    let (spec, points) =
        crate::chat_plan::plan_chat(topo, base, ask, ngircd, crate::chat_plan::Limits::here())?;
    Ok(StudyPlan {
        programs: TypedPrograms::of(&points)?,
        spec,
        points,
        allocators,
    })
}

/// The communication study's plan: the sampling and the rest of the
/// specification as every study has them; applications, mechanisms, rank
/// counts and layouts from [`comm_plan`](crate::comm_plan).
fn plan_comm_study(topo: &Topology, req: StudyRequest) -> Result<StudyPlan, StudyPlanError> {
    let (allocators, base) = server_study_base(StudyKind::Comm, &req);
    // The applications named with -w, and the user's --param (the same on
    // each of them); none: the study's three with its own sizes.
    let mut apps = Vec::new();
    let mut given = BTreeMap::new();
    for p in &req.programs {
        match p {
            Program::Builtin { workload, params } => {
                apps.push(workload.clone());
                given = params.clone();
            }
            other => return Err(CommPlanError::NotAnApp(other.label()).into()),
        }
    }
    let ask = crate::comm_plan::CommAsk {
        apps: (!apps.is_empty()).then_some(apps),
        comms: req.comms,
        threads: req.threads,
        given,
    };
    // Planned with their parameters: a study's DSM parameters are
    // refused in its own words.
    let (spec, points, programs) = crate::comm_plan::plan_comm(topo, base, ask)?;
    Ok(StudyPlan {
        spec,
        points,
        allocators,
        programs,
    })
}

/// The pairs study's plan: its programs (each with its mode: the one asked
/// for, else the workload's own), the co-run waves, and a run
/// specification holding them for `report` and `--resume`.
fn plan_pairs_study(topo: &Topology, req: StudyRequest) -> Result<StudyPlan, StudyPlanError> {
    let programs = if req.programs.is_empty() {
        default_programs(StudyKind::Pairs)
    } else {
        req.programs.clone()
    };
    let mut spec = RunSpec {
        programs: programs.clone(),
        comms: Vec::new(),
        models: vec![Model::Thread],
        placements: vec!["compact"
            .parse()
            .expect("a study's own placements are valid")],
        threads: vec![1],
        allocs: vec!["glibc".into()],
        spawn: Spawn::Exec,
        mode: req.mode,
        metric: None,
        warmup: 0,
        min_samples: 1,
        max_samples: 1,
        precision: 0.02,
        max_time_s: 1.0,
        timeout_s: req.sampling.timeout_s,
        seed: req.seed,
        counters: req.counters,
        study: None,
    };
    // Each program's own mode, as `run` would plan it alone.
    let mut named = Vec::new();
    for (i, program) in programs.iter().enumerate() {
        spec.programs = vec![program.clone()];
        let one = expand(topo, &spec)?;
        let mode = one.first().map_or(Mode::FixedWork { work: 1 }, |p| p.mode);
        named.push(PairProgram {
            name: req
                .pairs
                .names
                .get(i)
                .cloned()
                .unwrap_or_else(|| program.label()),
            program: program.clone(),
            mode,
        });
    }
    let window_s = req.pairs.window_s.unwrap_or(PAIRS_WINDOW_S);
    let pairs = plan_pairs(topo, &named, req.pairs.share, req.pairs.at_once, window_s)?;
    let sampling = Sampling::resolve(StudyKind::Pairs, &req.sampling);
    spec.programs = programs;
    spec.warmup = sampling.warmup;
    spec.min_samples = sampling.min_samples;
    spec.max_samples = sampling.max_samples;
    spec.precision = sampling.precision;
    spec.max_time_s = sampling.max_time_s;
    spec.study = Some(StudyMeta {
        kind: StudyKind::Pairs,
        limits: pairs.limits.clone(),
        notes: pairs.notes.clone(),
    });
    if spec.min_samples == 0 {
        return Err(PlanError::ZeroMinSamples.into());
    }
    if spec.max_samples < spec.min_samples {
        return Err(PlanError::MaxBelowMin {
            min: spec.min_samples,
            max: spec.max_samples,
        }
        .into());
    }
    Ok(StudyPlan {
        programs: TypedPrograms::of(&pairs.points)?,
        spec,
        points: pairs.points,
        allocators: glibc_only(),
    })
}

/// Drop a placement that picks exactly the same CPUs as an earlier one at
/// every N: measuring it twice would cost time and suggest a difference
/// that cannot exist.
fn dedupe_placements(
    topo: &Topology,
    spec: &mut RunSpec,
    notes: &mut Vec<String>,
    sh: Shape,
) -> Result<(), PlanError> {
    let mut kept: Vec<(PolicySpec, Vec<Option<Vec<u32>>>)> = Vec::new();
    for placement in spec.placements.clone() {
        let mut cpus = Vec::new();
        for &n in &spec.threads {
            cpus.push(place(topo, &placement.policy, n)?.cpus);
        }
        if let Some((first, _)) = kept.iter().find(|(_, c)| *c == cpus) {
            notes.push(format!(
                "{placement} picks the same CPUs as {first} at every N on this machine ({} \
                 package{}, {} cores, {} PU{} per core), so only {first} was measured.",
                sh.packages,
                if sh.packages == 1 { "" } else { "s" },
                sh.cores,
                sh.pus_per_core,
                if sh.pus_per_core == 1 { "" } else { "s" },
            ));
            continue;
        }
        kept.push((placement, cpus));
    }
    spec.placements = kept.into_iter().map(|(n, _)| n).collect();
    Ok(())
}
