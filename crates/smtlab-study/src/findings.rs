//! A study's findings: its own tables (the pinning table, the
//! oversubscription table, the allocator table) and verdict sentences, from
//! the analysed points of a measured run.

use std::collections::BTreeMap;

use serde::Serialize;

use smtlab_analyse::analysis::recommend::MEASURE_LONGER;
use smtlab_analyse::analysis::smt::{gain_ci_text, gain_counts_text};
use smtlab_analyse::analysis::{
    verdict, Analysis, PointData, Series, SiblingYield, SmtYield, UslFit,
};
use smtlab_analyse::units::table_value;
use smtlab_topology::Topology;
use smtlab_types::extras::allocprobe;
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
                    f.verdicts.push(sibling_sentence(y, s));
                }
            }
        }
        StudyKind::Cores => {
            for s in &analysis.series {
                if let Some(v) = cores_speedup_sentence(s, points) {
                    f.verdicts.push(v);
                }
                if let Some(u) = &s.usl {
                    f.verdicts.push(usl_sentence(s, u));
                }
            }
        }
        StudyKind::Pinning => pinning(points, sh, seed, &mut f),
        StudyKind::Oversub => oversub(points, sh, seed, &mut f),
        StudyKind::Alloc => {
            alloc(points, seed, &mut f);
            f.verdicts
                .extend(crate::alloc_fastest::fastest_verdicts(points, seed));
        }
        // The pair matrix and pairings need every sample, not the points'
        // summaries: `report_run` adds them; so does the communication
        // study, which counts every sample that did not verify, and the
        // chat study, whose intervals need each sample's costs per message
        // (`chat_findings::chat_study`).
        StudyKind::Pairs | StudyKind::Comm | StudyKind::Chat => {}
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

/// What the k-th sibling of a core added, with the 95% intervals of the
/// gain and of the throughput relative to one thread, or the sample counts
/// that were too few for them.
fn sibling_sentence(y: &SmtYield, s: &SiblingYield) -> String {
    let who = format!(
        "{} ({} model): sibling {} of core {}",
        y.key.program, y.key.model, s.siblings, y.core
    );
    let did = if s.gain < 0.0 {
        format!(
            "lowered the core's throughput by {:.1}% of one thread's",
            -s.gain * 100.0
        )
    } else {
        format!("added {:.1}% of one thread's throughput", s.gain * 100.0)
    };
    let relative = format!("{:.2}x one thread with {} siblings", s.relative, s.siblings);
    if let Some(g) = s.gain_ci95 {
        let no_change = if g.0 <= 0.0 && 0.0 <= g.1 {
            ": no significant change"
        } else {
            ""
        };
        let relative_ci = s
            .relative_ci95
            .map(|(lo, hi)| format!(" (95% CI {lo:.2}–{hi:.2}x)"))
            .unwrap_or_default();
        return format!(
            "{who} {did} ({}{no_change}); {relative}{relative_ci}.",
            gain_ci_text(g)
        );
    }
    // The gain rests on the points at 1, k − 1 and k threads.
    let k = s.siblings;
    let fewest = y
        .siblings
        .iter()
        .filter(|e| e.siblings == 1 || e.siblings + 1 == k || e.siblings == k)
        .map(|e| e.samples)
        .min()
        .unwrap_or(0);
    if fewest < 3 {
        format!(
            "{who} {did} by the medians ({relative}), but there were too few samples ({}) \
             to judge: a 95% interval needs at least 3 at each; {MEASURE_LONGER}.",
            gain_counts_text(&y.siblings, k)
        )
    } else {
        format!(
            "{who} {did} by the medians ({relative}); no 95% interval: some resamples have \
             no positive throughput."
        )
    }
}

/// The cores study's speedup at the series' largest N, with its 95%
/// interval or what kept it from having one.
fn cores_speedup_sentence(s: &Series, points: &[PointData]) -> Option<String> {
    let last = s.points.last()?;
    let (sp, eff) = (last.speedup?, last.efficiency?);
    let head = format!(
        "{} ({} model): {sp:.2}x the throughput of one core on {} cores",
        s.key.program, s.key.model, last.workers
    );
    if let Some((lo, hi)) = last.speedup_ci95 {
        return Some(format!(
            "{head} (95% CI {lo:.2}–{hi:.2}x), parallel efficiency {eff:.2}."
        ));
    }
    let count = |index: usize| {
        points
            .iter()
            .find(|p| p.summary.point.index == index)
            .map_or(0, |p| p.values.iter().filter(|v| v.is_finite()).count())
    };
    let one = s
        .points
        .iter()
        .find(|p| p.workers == 1)
        .map_or(0, |p| count(p.point_index));
    let n = count(last.point_index);
    Some(if one < 3 || n < 3 {
        format!(
            "{head} by the medians, parallel efficiency {eff:.2}; too few samples (n = {one} \
             on one core, {n} on {} cores) for a 95% interval, so this is no verdict — \
             {MEASURE_LONGER}.",
            last.workers
        )
    } else {
        format!(
            "{head} by the medians, parallel efficiency {eff:.2}; no 95% interval (zeros \
             among the samples leave it unbounded)."
        )
    })
}

/// A USL fit as the cores study states it: its parameters with their 95%
/// intervals and its predicted peak, or — when the law does not describe
/// the data — that, and no prediction.
fn usl_sentence(s: &Series, u: &UslFit) -> String {
    let head = format!("{} ({} model)", s.key.program, s.key.model);
    if !u.describes_data {
        let sigma = if (0.0..=1.0).contains(&u.sigma) {
            String::new()
        } else {
            format!(
                ", and its contention σ = {:.2} lies outside [0, 1]",
                u.sigma
            )
        };
        return format!(
            "{head}: the USL does not describe these data (R² = {:.3} over {} points{sigma}): \
             no prediction.",
            u.r_squared, u.points
        );
    }
    let ci = |ci: Option<(f64, f64)>, digits: usize| {
        ci.map(|(lo, hi)| format!(" (95% CI {lo:.digits$}–{hi:.digits$})"))
            .unwrap_or_default()
    };
    let no_intervals = if u.sigma_ci95.is_some() && u.kappa_ci95.is_some() {
        String::new()
    } else if u.min_samples < 3 {
        format!(
            " (too few samples, n = {} at the fewest N, for 95% intervals; {MEASURE_LONGER})",
            u.min_samples
        )
    } else {
        " (no 95% intervals: a refit of the resampled data failed)".to_string()
    };
    let peak = match u.peak_n {
        Some(p) if p < 1.0 => {
            "throughput falls from one worker on (the fitted peak lies below N = 1)".to_string()
        }
        Some(p) => {
            let range = match u.peak_n_ci95 {
                Some((lo, hi)) => format!("95% CI {lo:.0}–{hi:.0}; "),
                None if u.kappa_ci95.is_some() => {
                    "its 95% interval is unbounded above, some resamples level off; ".to_string()
                }
                None => String::new(),
            };
            format!(
                "predicted peak near N = {p:.0} ({range}a prediction from the fit, not a \
                 measurement)"
            )
        }
        None => "no predicted peak (no coherency cost: throughput levels off)".to_string(),
    };
    format!(
        "{head}: USL fit over {} points (R² = {:.3}): contention σ = {:.4}{}, coherency κ = \
         {:.5}{}{no_intervals}; {peak}.",
        u.points,
        u.r_squared,
        u.sigma,
        ci(u.sigma_ci95, 4),
        u.kappa,
        ci(u.kappa_ci95, 5),
    )
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
                .get(allocprobe::FOREIGN_SHARE)
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
mod tests {
    use super::*;
    use crate::testing::{around, data};
    use smtlab_analyse::analysis::analyze;
    use smtlab_topology::synthetic;
    use smtlab_types::Spawn;
    use smtlab_types::{Metric, Model, Point, Program};

    fn point(index: usize, model: Model, placement: &str, cpus: &[u32]) -> Point {
        Point {
            index,
            program: Program::Builtin {
                workload: "spin".into(),
                params: Default::default(),
            },
            model,
            spawn: Spawn::Exec,
            placement: placement.into(),
            workers: cpus.len(),
            cpus: Some(cpus.to_vec()),
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: Mode::FixedTime { seconds: 1.0 },
            metric: Metric {
                name: "ops_per_s".into(),
                unit: "ops/s".into(),
                higher_is_better: true,
            },
        }
    }

    fn verdicts(kind: StudyKind, points: &[PointData], topo: &Topology) -> Vec<String> {
        let meta = StudyMeta {
            kind,
            limits: Vec::new(),
            notes: Vec::new(),
        };
        let analysis = analyze(points, topo, 7);
        findings(&meta, points, &analysis, topo, 7).verdicts
    }

    /// The studies whose findings need every sample get none from the
    /// points alone: `report_run` gives them theirs (the chat study's from
    /// `chat_findings::chat_study`, its intervals from each sample's costs),
    /// so there is no second path that states a change without one.
    #[test]
    fn studies_that_need_every_sample_get_no_findings_from_the_points() {
        let topo = synthetic::parse("core:2").unwrap();
        let pts: Vec<PointData> = [20, 40]
            .into_iter()
            .enumerate()
            .map(|(i, connections)| {
                let mut p = point(i, Model::Event, "compact", &[0]);
                p.program = Program::Server {
                    server: smtlab_types::ServerKind::Chat,
                    params: [("connections".to_string(), connections.to_string())].into(),
                    client_cpus: None,
                };
                data(p, &around(18_000.0, 0.02, 5))
            })
            .collect();
        let analysis = analyze(&pts, &topo, 7);
        for kind in [StudyKind::Chat, StudyKind::Pairs, StudyKind::Comm] {
            let meta = StudyMeta {
                kind,
                limits: Vec::new(),
                notes: Vec::new(),
            };
            let f = findings(&meta, &pts, &analysis, &topo, 7);
            assert!(
                f.tables.is_empty() && f.verdicts.is_empty() && f.limits.is_empty(),
                "{kind}: {f:?}"
            );
        }
    }

    /// The alloc study's verdicts end with each workload's fastest
    /// allocator against smtalloc (`alloc_fastest`), after those against
    /// glibc.
    #[test]
    fn alloc_verdicts_name_each_workloads_fastest_allocator() {
        let topo = synthetic::parse("core:2").unwrap();
        let pts: Vec<PointData> = [
            ("glibc", 10.0e6),
            ("tcmalloc", 32.6e6),
            ("smtalloc", 23.8e6),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, (alloc, x))| {
            let mut p = point(i, Model::Thread, "compact", &[0, 1]);
            p.alloc = alloc.into();
            data(p, &around(x, 0.02, 9))
        })
        .collect();
        let v = verdicts(StudyKind::Alloc, &pts, &topo);
        assert!(
            v.last().unwrap().starts_with(
                "For spin in the thread model at N = 2 the fastest was tcmalloc: smtalloc was \
                 0.73x its throughput (95% CI "
            ),
            "{v:#?}"
        );
    }

    #[test]
    fn smt_verdicts_state_the_interval_or_that_there_are_too_few_samples() {
        let topo = synthetic::parse("core:2 pu:2").unwrap();
        // 10 samples a point: intervals.
        let pts = vec![
            data(
                point(0, Model::Thread, "smt:0", &[0]),
                &around(100.0, 0.01, 10),
            ),
            data(
                point(1, Model::Thread, "smt:0", &[0, 1]),
                &around(117.3, 0.01, 10),
            ),
        ];
        let v = verdicts(StudyKind::Smt, &pts, &topo);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].starts_with(
                "spin (thread model): sibling 2 of core 0 added 17.3% of one thread's \
                 throughput (95% CI "
            ),
            "{v:?}"
        );
        assert!(
            v[0].contains("); 1.17x one thread with 2 siblings (95% CI "),
            "{v:?}"
        );
        // A sibling that took throughput away: said so, interval signed.
        let pts = vec![
            data(
                point(0, Model::Thread, "smt:0", &[0]),
                &around(100.0, 0.01, 10),
            ),
            data(
                point(1, Model::Thread, "smt:0", &[0, 1]),
                &around(96.0, 0.01, 10),
            ),
        ];
        let v = verdicts(StudyKind::Smt, &pts, &topo);
        assert!(
            v[0].starts_with(
                "spin (thread model): sibling 2 of core 0 lowered the core's throughput by \
                 4.0% of one thread's (95% CI \u{2212}"
            ),
            "{v:?}"
        );
        // One sample a point, as in the run cut short: no interval, and
        // the sentence says it cannot judge.
        let pts = vec![
            data(point(0, Model::Thread, "smt:0", &[0]), &[100.0]),
            data(point(1, Model::Thread, "smt:0", &[0, 1]), &[159.2]),
        ];
        let v = verdicts(StudyKind::Smt, &pts, &topo);
        assert_eq!(
            v,
            [
                "spin (thread model): sibling 2 of core 0 added 59.2% of one thread's throughput \
              by the medians (1.59x one thread with 2 siblings), but there were too few \
              samples (n = 1 with 1 thread, 1 with 2) to judge: a 95% interval needs at least \
              3 at each; measure longer: raise --max-time or --min-samples."
            ]
        );
    }

    /// The cores study's points: one PU per core of `core:8`, N = 1, 2, 4,
    /// 8, `n` samples each, throughputs `xs`.
    fn cores(xs: [f64; 4], n: usize) -> Vec<PointData> {
        [1usize, 2, 4, 8]
            .iter()
            .zip(xs)
            .enumerate()
            .map(|(i, (&w, x))| {
                let cpus: Vec<u32> = (0..w as u32).collect();
                data(point(i, Model::Thread, "core", &cpus), &around(x, 0.01, n))
            })
            .collect()
    }

    #[test]
    fn cores_verdicts_give_intervals_of_the_speedup_and_the_usl_parameters() {
        let topo = synthetic::parse("core:8").unwrap();
        let usl = |n: f64| 1000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0));
        let v = verdicts(
            StudyKind::Cores,
            &cores([usl(1.0), usl(2.0), usl(4.0), usl(8.0)], 10),
            &topo,
        );
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(
            v[0].starts_with(
                "spin (thread model): 5.47x the throughput of one core on 8 cores (95% CI "
            ),
            "{v:?}"
        );
        assert!(
            v[1].starts_with("spin (thread model): USL fit over 4 points (R² = 1.000): contention σ = 0.0500 (95% CI "),
            "{v:?}"
        );
        assert!(v[1].contains("coherency κ = 0.00200 (95% CI "), "{v:?}");
        assert!(
            v[1].contains("predicted peak near N = 22 (95% CI "),
            "{v:?}"
        );
        assert!(
            v[1].ends_with("a prediction from the fit, not a measurement)."),
            "{v:?}"
        );
    }

    #[test]
    fn cores_verdicts_with_one_sample_say_there_are_too_few() {
        let topo = synthetic::parse("core:8").unwrap();
        let usl = |n: f64| 1000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0));
        let v = verdicts(
            StudyKind::Cores,
            &cores([usl(1.0), usl(2.0), usl(4.0), usl(8.0)], 1),
            &topo,
        );
        assert_eq!(
            v[0],
            "spin (thread model): 5.47x the throughput of one core on 8 cores by the medians, \
             parallel efficiency 0.68; too few samples (n = 1 on one core, 1 on 8 cores) for a \
             95% interval, so this is no verdict — measure longer: raise --max-time or \
             --min-samples."
        );
        assert!(
            v[1].contains(
                "contention σ = 0.0500, coherency κ = 0.00200 (too few samples, n = 1 at the \
                 fewest N, for 95% intervals; measure longer: raise --max-time or \
                 --min-samples); predicted peak near N = 22 (a prediction"
            ),
            "{v:?}"
        );
    }

    #[test]
    fn a_usl_fit_that_does_not_describe_the_data_predicts_nothing() {
        let topo = synthetic::parse("core:8").unwrap();
        // Throughput that zigzags with N: the guest's "σ = 1.18, R² < 0".
        let v = verdicts(
            StudyKind::Cores,
            &cores([100.0, 95.0, 60.0, 105.0], 5),
            &topo,
        );
        let usl = v
            .iter()
            .find(|s| s.contains("USL"))
            .unwrap_or_else(|| panic!("{v:?}"));
        assert!(
            usl.starts_with("spin (thread model): the USL does not describe these data (R² = -"),
            "{usl}"
        );
        assert!(
            usl.contains("over 4 points, and its contention σ = "),
            "{usl}"
        );
        assert!(
            usl.ends_with("lies outside [0, 1]): no prediction."),
            "{usl}"
        );
        assert!(!usl.contains("peak") && !usl.contains("κ"), "{usl}");
    }
}
