//! A study's findings: its own tables (the pinning table, the
//! oversubscription table, the allocator table) and verdict sentences, from
//! the analysed points of a measured run.

use std::collections::BTreeMap;

use serde::Serialize;

use smtlab_analyse::analysis::{verdict, Analysis, PointData};
use smtlab_analyse::units::table_value;
use smtlab_topology::Topology;
use smtlab_types::{Mode, StudyKind, StudyMeta, Table};

use crate::planning::ALLOC_BENCHMARKS;
use crate::shape::{shape, Shape};

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
        // The pair matrix and pairings need every sample, not the points'
        // summaries: `report_run` adds them; so does the communication
        // study, which counts every sample that did not verify.
        StudyKind::Pairs | StudyKind::Comm => {}
        StudyKind::Chat => {
            let mut w = crate::web_findings::WebFindings::default();
            crate::chat_findings::chat(points, seed, &mut w);
            f.tables.extend(w.tables);
            f.verdicts.extend(w.verdicts);
            f.limits.extend(w.limits);
        }
        StudyKind::Web => {
            let mut w = crate::web_findings::WebFindings::default();
            crate::web_findings::web(points, topo, seed, &mut w);
            f.tables.extend(w.tables);
            f.verdicts.extend(w.verdicts);
            f.limits.extend(w.limits);
        }
    }
    f
}

fn value_text(v: f64, unit: &str) -> String {
    table_value(v, unit)
}

fn three_digits(v: f64) -> String {
    table_value(v, "")
}

/// The pinning table: program / runtime on one core / runtime across cores /
/// speedup, and a verdict per program.
fn pinning(points: &[PointData], sh: Shape, seed: u64, f: &mut Findings) {
    let mut rows = Vec::new();
    let mut programs: Vec<String> = points
        .iter()
        .map(|p| p.summary.point.program.label())
        .collect();
    programs.dedup();
    for prog in programs {
        let find = |placement: &str| {
            points.iter().find(|p| {
                p.summary.point.program.label() == prog
                    && p.summary.point.placement == placement
                    && p.summary.summary.is_some()
            })
        };
        let one = find("compact");
        let across = find("core");
        let text = |p: Option<&PointData>| {
            p.and_then(|p| {
                let s = p.summary.summary.as_ref()?;
                Some(value_text(s.median, &p.summary.point.metric.unit))
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
        let r = &p.summary;
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
                (Some(u), Some(sy)) => table_value(u + sy, "s"),
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
        .filter(|p| p.summary.point.workers == sh.pus.max(1))
    {
        let prog = base.summary.point.program.label();
        for p in points.iter().filter(|p| {
            p.summary.point.program.label() == prog && p.summary.point.workers > sh.pus.max(1)
        }) {
            if let Some(v) = verdict::compare(
                p,
                base,
                &format!("{} threads", p.summary.point.workers),
                &format!("{} threads (one per PU)", base.summary.point.workers),
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
        let r = &p.summary;
        let pt = &r.point;
        let prog = pt.program.label();
        let glibc = points.iter().find(|q| {
            let qp = &q.summary.point;
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
