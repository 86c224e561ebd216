//! Studies: predefined sweeps that answer one question each, with the
//! machine's honest limits and the study's own tables and verdicts.
//!
//! A study is planned into an ordinary [`RunSpec`] (stored with the run, so
//! `report` and `--resume` rebuild it) plus the sentences saying what this
//! machine cannot show. After measurement, [`findings`] turns the analysed
//! points into the study's tables and verdict sentences. Nothing here
//! invents a number: where the hardware lacks SMT or cores, the study says
//! so and measures only what exists.

use std::collections::BTreeMap;

use serde::Serialize;

use smtlab_analyse::analysis::{verdict, Analysis, PointData};
use smtlab_plan as plan;
use smtlab_topology::placement::{place, PlacementError, Policy};
use smtlab_topology::Topology;
use smtlab_types::{Mode, Model, Point, Program, RunSpec, Table};

pub use smtlab_types::study::{StudyKind, StudyMeta, UnknownStudy, STUDY_NAMES};

/// What the user fixed on the command line; `None` leaves it to the study.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub models: Option<Vec<Model>>,
    pub threads: Option<Vec<usize>>,
    /// `--alloc`: the allocators to compare (the alloc study's default is
    /// every one installed).
    pub allocs: Option<Vec<String>>,
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

/// The machine's usable PUs and cores, and the most PUs on one core.
#[derive(Debug, Clone, Copy)]
struct Shape {
    pus: usize,
    cores: usize,
    pus_per_core: usize,
    packages: usize,
}

fn shape(topo: &Topology) -> Shape {
    let usable = topo.online().intersection(&topo.allowed());
    let cores: Vec<usize> = topo
        .cores
        .iter()
        .map(|c| c.cpus.intersection(&usable).len())
        .filter(|&n| n > 0)
        .collect();
    let packages = topo
        .packages
        .iter()
        .filter(|p| p.cpus.intersects(&usable))
        .count();
    Shape {
        pus: usable.len(),
        cores: cores.len(),
        pus_per_core: cores.iter().copied().max().unwrap_or(1),
        packages: packages.max(1),
    }
}

/// 1..=max when small; beyond 16 a ladder of powers of two plus `max`, so a
/// 256-PU machine is covered in 10 steps instead of 256.
pub fn ladder(max: usize) -> Vec<usize> {
    if max <= 16 {
        return (1..=max.max(1)).collect();
    }
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
        .take_while(|&n| n < max)
        .collect();
    v.push(max);
    v
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

/// Plan a study on `topo`: `base` carries the programs (empty: the study's
/// defaults) and the sampling settings; the study sets models, placements
/// and N unless `over` fixes them. The returned spec carries the study's
/// [`StudyMeta`].
pub fn plan(
    kind: StudyKind,
    topo: &Topology,
    mut base: RunSpec,
    over: &Overrides,
) -> Result<(RunSpec, Vec<Point>), plan::PlanError> {
    let sh = shape(topo);
    if base.programs.is_empty() {
        base.programs = default_programs(kind);
    }
    let mut limits = Vec::new();
    let mut notes = Vec::new();
    let no_smt = sh.pus_per_core <= 1;
    let both = vec![Model::Thread, Model::Process];
    let (models, placements, threads): (Vec<Model>, Vec<&str>, Vec<usize>) = match kind {
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
        StudyKind::Pinning => {
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
        StudyKind::Oversub => (vec![Model::Thread], vec!["none"], oversub_ladder(sh.pus)),
        // Every PU busy: where allocators differ most.
        StudyKind::Alloc => (both, vec!["compact"], vec![sh.pus.max(1)]),
    };
    if kind == StudyKind::Alloc {
        match &over.allocs {
            Some(a) => base.allocs = a.clone(),
            None => {
                base.allocs = Vec::new();
                let mut missing = Vec::new();
                for a in smtlab_plan::allocator::ALLOCATORS {
                    match smtlab_plan::allocator::find_allocator(a.name) {
                        Ok(_) => base.allocs.push(a.name.to_string()),
                        Err(smtlab_plan::allocator::AllocatorError::NotBuilt { .. }) => missing
                            .push(format!(
                                "{} (build it: cargo build --release -p {})",
                                a.name, a.package
                            )),
                        Err(_) => missing.push(format!(
                            "{} (install the Debian package {})",
                            a.name, a.package
                        )),
                    }
                }
                if !missing.is_empty() {
                    limits.push(format!(
                        "Not installed here, so not measured: {}.",
                        missing.join(", ")
                    ));
                }
            }
        }
        if base.mode.is_none() {
            // Half-second samples keep allocators x models x programs
            // within minutes; every program here runs for a fixed time.
            base.mode = Some(Mode::FixedTime { seconds: 0.5 });
        }
    }
    base.models = over.models.clone().unwrap_or(models);
    base.threads = over.threads.clone().unwrap_or(threads);
    base.placements = placements.iter().map(|s| s.to_string()).collect();
    if kind == StudyKind::Cores {
        // `core` refuses more workers than cores; a user's --threads beyond
        // that is a mistake worth naming rather than a crash mid-plan.
        if let Some(&n) = base.threads.iter().find(|&&n| n > sh.cores) {
            return Err(plan::PlanError::Threads(format!(
                "{n} workers but the cores study puts one worker per core and this machine \
                 has {} usable cores; use N <= {}",
                sh.cores, sh.cores
            )));
        }
    }
    dedupe_placements(topo, &mut base, &mut notes, sh)?;
    base.study = Some(StudyMeta {
        kind,
        limits,
        notes,
    });
    let points = plan::expand(topo, &base)?;
    Ok((base, points))
}

/// The no-SMT sentence: what is missing, and what hardware would show it.
fn no_smt_sentence(topo: &Topology, what: &str) -> String {
    let cores = topo.cores.len();
    format!(
        "This machine has no SMT ({cores} core{}, one PU per core), so {what} cannot be measured \
         here; on a machine with 2 or more PUs per core (e.g. Intel Hyper-Threading, AMD SMT, \
         POWER SMT4/SMT8) this study would put threads on one core's siblings and show what \
         each extra sibling adds. What can be measured here was run.",
        if cores == 1 { "" } else { "s" }
    )
}

/// Drop a placement that picks exactly the same CPUs as an earlier one at
/// every N: measuring it twice would cost time and suggest a difference
/// that cannot exist.
fn dedupe_placements(
    topo: &Topology,
    spec: &mut RunSpec,
    notes: &mut Vec<String>,
    sh: Shape,
) -> Result<(), plan::PlanError> {
    let mut kept: Vec<(String, Vec<Option<Vec<u32>>>)> = Vec::new();
    for name in spec.placements.clone() {
        let policy: Policy = name.parse().map_err(PlacementError::from)?;
        let mut cpus = Vec::new();
        for &n in &spec.threads {
            cpus.push(place(topo, &policy, n)?.cpus);
        }
        if let Some((first, _)) = kept.iter().find(|(_, c)| *c == cpus) {
            notes.push(format!(
                "{name} picks the same CPUs as {first} at every N on this machine ({} package{}, \
                 {} cores, {} PU{} per core), so only {first} was measured.",
                sh.packages,
                if sh.packages == 1 { "" } else { "s" },
                sh.cores,
                sh.pus_per_core,
                if sh.pus_per_core == 1 { "" } else { "s" },
            ));
            continue;
        }
        kept.push((name, cpus));
    }
    spec.placements = kept.into_iter().map(|(n, _)| n).collect();
    Ok(())
}

/// A study's tables and verdict sentences, from its analysed points.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Findings {
    pub tables: Vec<Table>,
    /// Verdict sentences, most important first.
    pub verdicts: Vec<String>,
    /// Limits discovered from the data (e.g. counters this machine lacks).
    pub limits: Vec<String>,
}

/// The study-specific part of the analysis.
pub fn findings(
    study: &StudyMeta,
    points: &[PointData],
    analysis: &Analysis,
    topo: &Topology,
    seed: u64,
) -> Findings {
    let mut f = Findings::default();
    let sh = shape(topo);
    match study.kind {
        StudyKind::Tour | StudyKind::Models => {
            f.verdicts
                .extend(analysis.model_verdicts.iter().map(|v| v.sentence.clone()));
        }
        StudyKind::Smt => {
            for y in &analysis.smt_yields {
                for s in y.siblings.iter().filter(|s| s.siblings > 1) {
                    f.verdicts.push(format!(
                        "{} ({} model): sibling {} of core {} added {:.1}% of one thread's \
                         throughput ({:.2}x one thread with {} siblings).",
                        y.key.program,
                        y.key.model,
                        s.siblings,
                        y.core,
                        s.gain * 100.0,
                        s.relative,
                        s.siblings
                    ));
                }
            }
        }
        StudyKind::Cores => {
            for s in &analysis.series {
                if let Some(last) = s.points.last() {
                    if let (Some(sp), Some(eff)) = (last.speedup, last.efficiency) {
                        let ci = last
                            .speedup_ci95
                            .map(|(lo, hi)| format!(" (95% CI {lo:.2}–{hi:.2}x)"))
                            .unwrap_or_default();
                        f.verdicts.push(format!(
                            "{} ({} model): {:.2}x the throughput of one core on {} cores{ci}, \
                             parallel efficiency {:.2}.",
                            s.key.program, s.key.model, sp, last.workers, eff
                        ));
                    }
                }
                if let Some(u) = &s.usl {
                    let peak = match u.peak_n {
                        Some(p) => format!("predicted peak near N = {p:.0} (a prediction from the fit, not a measurement)"),
                        None => "no predicted peak (no coherency cost: throughput levels off)".to_string(),
                    };
                    f.verdicts.push(format!(
                        "{} ({} model): USL fit over {} points: contention σ = {:.4}, coherency \
                         κ = {:.5}, R² = {:.3}; {peak}.",
                        s.key.program, s.key.model, u.points, u.sigma, u.kappa, u.r_squared
                    ));
                }
            }
        }
        StudyKind::Pinning => pinning(points, sh, seed, &mut f),
        StudyKind::Oversub => oversub(points, sh, seed, &mut f),
        StudyKind::Alloc => alloc(points, seed, &mut f),
    }
    f
}

fn value_text(v: f64, unit: &str) -> String {
    smtlab_analyse::units::table_value(v, unit)
}

fn three_digits(v: f64) -> String {
    smtlab_analyse::units::table_value(v, "")
}

/// The pinning table: program / runtime on one core / runtime across cores /
/// speedup, and a verdict per program.
fn pinning(points: &[PointData], sh: Shape, seed: u64, f: &mut Findings) {
    let mut rows = Vec::new();
    let mut programs: Vec<String> = points
        .iter()
        .map(|p| p.report.point.program.label())
        .collect();
    programs.dedup();
    for prog in programs {
        let find = |placement: &str| {
            points.iter().find(|p| {
                p.report.point.program.label() == prog
                    && p.report.point.placement == placement
                    && p.report.summary.is_some()
            })
        };
        let one = find("compact");
        let across = find("core");
        let text = |p: Option<&PointData>| {
            p.and_then(|p| {
                let s = p.report.summary.as_ref()?;
                Some(value_text(s.median, &p.report.point.metric.unit))
            })
            .unwrap_or_else(|| "not measured".to_string())
        };
        let mut speedup = "-".to_string();
        if let (Some(a), Some(b)) = (across, one) {
            if let Some(v) = verdict::compare(
                a,
                b,
                &format!("{} threads on {} cores", sh.pus_per_core, sh.pus_per_core),
                &format!("{} threads on one core's siblings", sh.pus_per_core),
                &prog,
                seed,
            ) {
                speedup = match v.ci95 {
                    Some((lo, hi)) => format!("{:.2}x [{lo:.2}, {hi:.2}]", v.speed_ratio),
                    None => format!("{:.2}x", v.speed_ratio),
                };
                f.verdicts.push(v.sentence);
            }
        }
        rows.push(vec![prog.clone(), text(one), text(across), speedup]);
    }
    f.tables.push(Table {
        title: format!(
            "Pinning: {n} threads on one core's PUs vs on the first PU of {n} cores",
            n = sh.pus_per_core
        ),
        columns: vec![
            "program".into(),
            "runtime on one core".into(),
            "runtime across cores".into(),
            "speedup".into(),
        ],
        rows,
        note: Some(
            "speedup = how many times faster across cores than on one core (95% CI); for \
             throughput metrics the cells hold throughput"
                .into(),
        ),
    });
}

/// The oversubscription table: runtime, CPU time, context switches and
/// instructions per run against N, and each N > PUs against N = PUs.
fn oversub(points: &[PointData], sh: Shape, seed: u64, f: &mut Findings) {
    let mut rows = Vec::new();
    let mut any_instructions = false;
    let mut instructions_reason = None;
    for p in points {
        let r = &p.report;
        let Some(s) = &r.summary else {
            rows.push(vec![
                r.point.program.label(),
                r.point.workers.to_string(),
                format!("{:.2}", r.point.workers as f64 / sh.pus.max(1) as f64),
                "failed".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        };
        let runs = match r.point.mode {
            Mode::FixedWork { work } => work.max(1) as f64,
            Mode::FixedTime { .. } => 1.0,
        };
        let instr = r
            .counters
            .iter()
            .filter(|c| c.name == "instructions")
            .map(|c| {
                if c.median.is_none() && instructions_reason.is_none() {
                    instructions_reason = c.reason.clone();
                }
                c.median
            })
            .collect::<Option<Vec<f64>>>()
            .filter(|v| !v.is_empty())
            .map(|v| v.iter().sum::<f64>());
        any_instructions |= instr.is_some();
        let cs = |v: Option<f64>| v.map_or("-".to_string(), three_digits);
        rows.push(vec![
            r.point.program.label(),
            r.point.workers.to_string(),
            format!("{:.2}", r.point.workers as f64 / sh.pus.max(1) as f64),
            value_text(s.median, &r.point.metric.unit),
            match (r.user_s, r.sys_s) {
                (Some(u), Some(sy)) => smtlab_analyse::units::table_value(u + sy, "s"),
                _ => "-".into(),
            },
            cs(r.voluntary_cs),
            cs(r.involuntary_cs),
            instr.map_or("-".to_string(), |i| three_digits(i / runs)),
        ]);
    }
    if !any_instructions {
        f.limits.push(format!(
            "Instructions per run are not shown: this machine's hardware counters could not \
             count them ({}).",
            instructions_reason.unwrap_or_else(|| "counters were off (--no-counters)".into())
        ));
    }
    f.tables.push(Table {
        title: format!("Oversubscription: software threads on {} PUs", sh.pus),
        columns: vec![
            "program".into(),
            "threads".into(),
            "threads per PU".into(),
            "runtime".into(),
            "CPU time".into(),
            "voluntary cs".into(),
            "involuntary cs".into(),
            "instructions per run".into(),
        ],
        rows,
        note: Some(
            "medians over samples; CPU time = user + system; cs = context switches per sample"
                .into(),
        ),
    });
    // Each oversubscribed N against N = PUs, per program.
    for base in points
        .iter()
        .filter(|p| p.report.point.workers == sh.pus.max(1))
    {
        let prog = base.report.point.program.label();
        for p in points.iter().filter(|p| {
            p.report.point.program.label() == prog && p.report.point.workers > sh.pus.max(1)
        }) {
            if let Some(v) = verdict::compare(
                p,
                base,
                &format!("{} threads", p.report.point.workers),
                &format!("{} threads (one per PU)", base.report.point.workers),
                &prog,
                seed,
            ) {
                f.verdicts.push(v.sentence);
            }
        }
    }
}

/// The allocator table (throughput and its ratio to glibc, memory, huge
/// pages, foreign share, dTLB misses) and a verdict per allocator against
/// glibc, plus the geometric mean over the allocation benchmarks.
fn alloc(points: &[PointData], seed: u64, f: &mut Findings) {
    let mut rows = Vec::new();
    // (alloc, model) -> ratios to glibc on the allocation benchmarks.
    let mut ratios: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut any_dtlb = false;
    for p in points {
        let r = &p.report;
        let pt = &r.point;
        let prog = pt.program.label();
        let glibc = points.iter().find(|q| {
            let qp = &q.report.point;
            qp.alloc == "glibc"
                && qp.program == pt.program
                && qp.model == pt.model
                && qp.workers == pt.workers
                && qp.placement == pt.placement
        });
        let mut vs = "-".to_string();
        if let (Some(g), true) = (glibc, pt.alloc != "glibc") {
            if let Some(v) = verdict::compare(
                p,
                g,
                &pt.alloc,
                "glibc",
                &format!("{prog} in the {} model at N = {}", pt.model, pt.workers),
                seed,
            ) {
                vs = match v.ci95 {
                    Some((lo, hi)) => format!("{:.2}x [{lo:.2}, {hi:.2}]", v.speed_ratio),
                    None => format!("{:.2}x", v.speed_ratio),
                };
                if ALLOC_BENCHMARKS.contains(&prog.as_str()) {
                    ratios
                        .entry((pt.alloc.clone(), pt.model.to_string()))
                        .or_default()
                        .push(v.speed_ratio);
                }
                f.verdicts.push(v.sentence);
            }
        }
        let dtlb = r
            .counters
            .iter()
            .filter(|c| c.name == "dTLB-load-misses")
            .map(|c| c.median)
            .collect::<Option<Vec<f64>>>()
            .filter(|v| !v.is_empty())
            .map(|v| v.iter().sum::<f64>());
        any_dtlb |= dtlb.is_some();
        let ops = r.worker_ops.iter().sum::<f64>();
        let kb = |v: Option<f64>| v.map_or("-".to_string(), |k| value_text(k * 1024.0, "B"));
        rows.push(vec![
            prog,
            pt.model.to_string(),
            pt.alloc.clone(),
            r.summary.as_ref().map_or("failed".to_string(), |s| {
                value_text(s.median, &pt.metric.unit)
            }),
            vs,
            kb(r.peak_rss_kb),
            kb(r.anon_huge_kb),
            r.extras
                .get("foreign_share")
                .map_or("-".to_string(), |s| format!("{:.2}%", s * 100.0)),
            match dtlb {
                Some(d) if ops > 0.0 => format!("{:.3}", d / ops),
                _ => "-".to_string(),
            },
        ]);
    }
    if !any_dtlb {
        f.limits.push(
            "dTLB misses are not shown: this machine's PMU could not count dTLB-load-misses \
             (or counters were off)."
                .to_string(),
        );
    }
    f.tables.push(Table {
        title: "Allocators".to_string(),
        columns: [
            "program",
            "model",
            "allocator",
            "throughput",
            "vs glibc (95% CI)",
            "peak RSS",
            "AnonHugePages",
            "foreign share",
            "dTLB misses/op",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: Some(
            "medians over samples; foreign share = live objects whose 2 MiB frame is mostly \
             used by another core (allocprobe only); RSS and huge pages summed over processes"
                .to_string(),
        ),
    });
    for ((alloc, model), r) in &ratios {
        if r.is_empty() {
            continue;
        }
        let geo = (r.iter().map(|x| x.ln()).sum::<f64>() / r.len() as f64).exp();
        f.verdicts.push(format!(
            "Geometric mean over {} allocation benchmarks in the {model} model: {alloc} ran at \
             {geo:.2}x glibc's throughput.",
            r.len()
        ));
    }
}

#[cfg(test)]
mod tests;
