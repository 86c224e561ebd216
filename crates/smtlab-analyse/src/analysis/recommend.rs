//! Recommendations: what to run, per program and allocator, and whether
//! SMT pays for it.
//!
//! The recommended point is the best measured one (highest median of a
//! higher-is-better metric, lowest otherwise) *unless* a point with fewer
//! workers is not significantly slower: more workers cost cores (that other
//! work could use) and power, so they must earn their place by a difference
//! the 95% interval supports, not by a median that noise could have put on
//! top. Only measured points are recommended; nothing is extrapolated (a
//! USL peak at an unmeasured N is not a recommendation).
//!
//! Fewer workers are chosen only on an interval's word: when a comparison
//! has no interval (fewer than 3 samples on a side) it is no evidence that
//! the best point is *not* better, so the best by median is kept and the
//! sentence says plainly that there were too few samples to judge, and how
//! to get more. A recommendation never names a point the table shows slower
//! without saying why.
//!
//! Whether SMT pays is judged by the 95% interval of the second sibling's
//! gain against [`SMT_PAYS_GAIN`], never by its median alone: it pays when
//! the interval's lower end reaches the threshold, does not when its upper
//! end stays below it, and otherwise (the interval holds the threshold, or
//! there is no interval) the advice is that the data cannot tell, with the
//! interval or the sample count.

use std::collections::{BTreeMap, BTreeSet};

use super::results::{Recommendation, SmtAdvice, SmtYield};
use super::scaling::median_of;
use super::smt::{finite_count, gain_ci_text};
use super::verdict::{compare, model_phrase, signed_pct};
use crate::summary::PointData;
use crate::units::sentence_value;
use smtlab_topology::Topology;
use smtlab_types::Metric;

/// Gain of the second sibling (as a fraction of one thread alone) from
/// which SMT is said to pay. Below 5% the extra hardware thread buys
/// little while it halves each thread's share of the core (longer
/// latencies per request) and adds noise; at or above it, doubling the
/// threads per core is worth having. Compared with the gain's 95% interval:
/// SMT pays when the lower end is at least this, does not when the upper
/// end is below it, and otherwise the data cannot tell.
pub const SMT_PAYS_GAIN: f64 = 0.05;

/// How a sentence tells the reader to get more samples.
pub const MEASURE_LONGER: &str = "measure longer: raise --max-time or --min-samples";

/// Why SMT could not be judged on a machine without it.
pub const NO_SMT_REASON: &str =
    "this machine has no SMT (one PU per core), so whether SMT pays was not measured";

/// Why SMT could not be judged on a machine whose kernel switched it off.
pub const SMT_SWITCHED_OFF_REASON: &str =
    "SMT is switched off on this machine (/sys/devices/system/cpu/smt/control), so whether SMT \
     pays was not measured; as root, `echo on > /sys/devices/system/cpu/smt/control` brings the \
     siblings back";

/// Why SMT could not be judged on a machine with it.
pub const NO_STUDY_REASON: &str = "the SMT study was not run";

/// One recommendation per (program, allocator) with at least one measured
/// point, ordered by program then allocator; plus notes naming those with
/// none.
pub fn recommend(
    points: &[PointData],
    smt_yields: &[SmtYield],
    topo: &Topology,
    seed: u64,
) -> (Vec<Recommendation>, Vec<String>) {
    let mut groups: BTreeMap<(String, String), Vec<&PointData>> = BTreeMap::new();
    let mut allocs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in points {
        let pt = &p.summary.point;
        let program = pt.program.label();
        allocs
            .entry(program.clone())
            .or_default()
            .insert(pt.alloc.clone());
        groups
            .entry((program, pt.alloc.clone()))
            .or_default()
            .push(p);
    }
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for ((program, alloc), mut members) in groups {
        members.sort_by_key(|p| p.summary.point.index);
        let several_allocs = allocs.get(&program).is_some_and(|s| s.len() > 1);
        let name = if several_allocs {
            format!("{program} with {alloc}")
        } else {
            program.clone()
        };
        match recommend_one(&name, &program, &alloc, &members, smt_yields, topo, seed) {
            Some(r) => out.push(r),
            None => notes.push(format!(
                "{name}: no point has results, so there is no recommendation."
            )),
        }
    }
    (out, notes)
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `a` is better than `b` on `metric` (strictly).
fn better(metric: &Metric, a: f64, b: f64) -> bool {
    if metric.higher_is_better {
        a > b
    } else {
        a < b
    }
}

fn recommend_one(
    name: &str,
    program: &str,
    alloc: &str,
    members: &[&PointData],
    smt_yields: &[SmtYield],
    topo: &Topology,
    seed: u64,
) -> Option<Recommendation> {
    let metric = members
        .iter()
        .find(|p| median_of(p).is_some())?
        .summary
        .point
        .metric
        .clone();
    // (point, median), in plan order; only points on the group's metric.
    let measured: Vec<(&PointData, f64)> = members
        .iter()
        .filter(|p| p.summary.point.metric == metric)
        .filter_map(|p| Some((*p, median_of(p)?)))
        .collect();
    let best_per_n = best_per_n(&measured, &metric);
    // The best overall: the fewest workers on a tie.
    let (best, best_median) =
        best_per_n
            .values()
            .copied()
            .reduce(|acc, c| if better(&metric, c.1, acc.1) { c } else { acc })?;
    let Fewer {
        chosen,
        why_fewer,
        unjudged,
    } = fewest_not_slower(best, best_median, &best_per_n, seed);
    let (point, median) = chosen;
    let pt = &point.summary.point;
    let smt = smt_advice(program, alloc, &pt.model.to_string(), smt_yields, topo);

    let mut sentence = format!(
        "For {name}: run {} in {}, placement {} (median {}).",
        workers(pt.workers),
        model_phrase(&pt.model),
        pt.placement,
        sentence_value(median, &metric.unit)
    );
    if let Some(why) = why_fewer {
        let b = &best.summary.point;
        sentence.push_str(&format!(
            " The fastest point measured, {} in {}, placement {} (median {}), was not \
             significantly faster ({why}), so the fewer workers are recommended.",
            workers(b.workers),
            model_phrase(&b.model),
            b.placement,
            sentence_value(best_median, &metric.unit)
        ));
    } else if !unjudged.is_empty() {
        sentence.push_str(&unjudged_text(best, &unjudged, &metric.unit));
    }
    // The other model at the same N and placement: is the model choice
    // itself backed by the data?
    let alt = measured
        .iter()
        .filter(|(p, _)| {
            let q = &p.summary.point;
            q.workers == pt.workers && q.placement == pt.placement && q.model != pt.model
        })
        .copied()
        .reduce(|acc, c| if better(&metric, c.1, acc.1) { c } else { acc });
    if let Some((other, _)) = alt {
        if let Some(clause) = model_clause(point, other, seed) {
            sentence.push_str(&clause);
        }
    }
    sentence.push_str(" Whether SMT pays: ");
    sentence.push_str(&smt_sentence(&smt));
    Some(Recommendation {
        program: program.to_string(),
        alloc: alloc.to_string(),
        model: pt.model.to_string(),
        placement: pt.placement.clone(),
        workers: pt.workers,
        median,
        metric,
        smt,
        sentence,
    })
}

/// The best point of each N (the first in plan order on a tie), by
/// ascending N: the only candidates for the recommendation.
fn best_per_n<'a>(
    measured: &[(&'a PointData, f64)],
    metric: &Metric,
) -> BTreeMap<usize, (&'a PointData, f64)> {
    let mut best_per_n: BTreeMap<usize, (&PointData, f64)> = BTreeMap::new();
    for &(p, m) in measured {
        let n = p.summary.point.workers;
        match best_per_n.get(&n) {
            Some(&(_, bm)) if !better(metric, m, bm) => {}
            _ => {
                best_per_n.insert(n, (p, m));
            }
        }
    }
    best_per_n
}

/// What [`fewest_not_slower`] chose: the point and its median, why fewer
/// workers than the best's were chosen (the interval), and the points with
/// fewer workers that could not be judged for want of an interval.
struct Fewer<'a> {
    chosen: (&'a PointData, f64),
    why_fewer: Option<String>,
    unjudged: Vec<(&'a PointData, f64)>,
}

/// The fewest workers that are not significantly slower than the best,
/// trying only each N's best point (a noisier, slower configuration must
/// not win by having a wider interval). Only an interval can say "not
/// significantly slower": a comparison without one is no evidence, so it
/// keeps the best (and the sentence says it could not judge).
fn fewest_not_slower<'a>(
    best: &'a PointData,
    best_median: f64,
    best_per_n: &BTreeMap<usize, (&'a PointData, f64)>,
    seed: u64,
) -> Fewer<'a> {
    let best_n = best.summary.point.workers;
    let mut chosen = (best, best_median);
    let mut why_fewer = None;
    let mut unjudged: Vec<(&PointData, f64)> = Vec::new();
    for (&n, &(cand, m)) in best_per_n {
        if n >= best_n {
            break;
        }
        let Some(v) = compare(best, cand, "best", "fewer", "", seed) else {
            continue;
        };
        match v.ci95 {
            Some((lo, hi)) if !v.significant => {
                chosen = (cand, m);
                why_fewer = Some(format!(
                    "95% CI of the difference {} to {}",
                    signed_pct(lo - 1.0),
                    signed_pct(hi - 1.0)
                ));
                break;
            }
            Some(_) => {}
            None => unjudged.push((cand, m)),
        }
    }
    Fewer {
        chosen,
        why_fewer,
        unjudged,
    }
}

/// The recommendation's clause on the other model at the same N and
/// placement (`other`): is the model choice itself backed by the data?
/// `None` when the two cannot be compared.
fn model_clause(point: &PointData, other: &PointData, seed: u64) -> Option<String> {
    let om = model_phrase(&other.summary.point.model);
    let v = compare(point, other, "", "", "", seed)?;
    Some(match (v.significant, v.ci95) {
        (true, Some((lo, hi))) => format!(
            " That is {} than {om} at the same N (95% CI {:.1}–{:.1}%).",
            super::verdict::faster_or_slower(v.speed_ratio),
            (lo - 1.0).abs().min((hi - 1.0).abs()) * 100.0,
            (lo - 1.0).abs().max((hi - 1.0).abs()) * 100.0,
        ),
        (_, Some((lo, hi))) => format!(
            " {} was not significantly different at the same N (95% CI of the \
             difference {} to {}): either model will do.",
            capitalise(&om),
            signed_pct(lo - 1.0),
            signed_pct(hi - 1.0)
        ),
        (_, None) => format!(
            " By the medians that is {} than {om} at the same N, but {}.",
            super::verdict::faster_or_slower(v.speed_ratio),
            model_unjudged_clause(point, other)
        ),
    })
}

/// SMT advice for a program from its SMT yields: the series of the same
/// allocator and model if there is one, else of the same allocator, else
/// any of the program's.
fn smt_advice(
    program: &str,
    alloc: &str,
    model: &str,
    yields: &[SmtYield],
    topo: &Topology,
) -> SmtAdvice {
    let mine: Vec<&SmtYield> = yields
        .iter()
        .filter(|y| y.key.program == program && y.siblings.len() >= 2)
        .collect();
    let pick = mine
        .iter()
        .find(|y| y.key.alloc == alloc && y.key.model == model)
        .or_else(|| mine.iter().find(|y| y.key.alloc == alloc))
        .or_else(|| mine.first());
    match pick {
        Some(y) => {
            let second = &y.siblings[1];
            let gain = second.gain;
            match second.gain_ci95 {
                Some(ci95) if ci95.0 >= SMT_PAYS_GAIN => SmtAdvice::Pays { gain, ci95 },
                Some(ci95) if ci95.1 < SMT_PAYS_GAIN => SmtAdvice::DoesNotPay { gain, ci95 },
                ci95 => SmtAdvice::CannotTell {
                    gain,
                    ci95,
                    samples: y.siblings[0].samples.min(second.samples),
                },
            }
        }
        None if topo.smt_switched_off() => SmtAdvice::Unknown {
            reason: SMT_SWITCHED_OFF_REASON.into(),
        },
        None if !topo.smt_active() => SmtAdvice::Unknown {
            reason: NO_SMT_REASON.into(),
        },
        None => SmtAdvice::Unknown {
            reason: NO_STUDY_REASON.into(),
        },
    }
}

/// What the second sibling did, as the SMT sentence says it: `added 17.3%
/// of one thread's throughput`, `lowered throughput by 4.0% of one
/// thread's`.
fn gain_phrase(gain: f64) -> String {
    if gain < 0.0 {
        format!(
            "lowered throughput by {:.1}% of one thread's",
            -gain * 100.0
        )
    } else {
        format!("added {:.1}% of one thread's throughput", gain * 100.0)
    }
}

/// The recommendation's answer to "whether SMT pays", from its advice.
fn smt_sentence(smt: &SmtAdvice) -> String {
    let threshold = format!(
        "the {:.0}% from which SMT is said to pay",
        SMT_PAYS_GAIN * 100.0
    );
    match smt {
        SmtAdvice::Pays { gain, ci95 } => format!(
            "yes — on one core, a second SMT thread {} ({}).",
            gain_phrase(*gain),
            gain_ci_text(*ci95)
        ),
        SmtAdvice::DoesNotPay { gain, ci95 } if *gain >= 0.0 => format!(
            "no — on one core, a second SMT thread added only {:.1}% of one thread's \
             throughput ({}, below {threshold}).",
            gain * 100.0,
            gain_ci_text(*ci95)
        ),
        SmtAdvice::DoesNotPay { gain, ci95 } => format!(
            "no — on one core, a second SMT thread {} ({}).",
            gain_phrase(*gain),
            gain_ci_text(*ci95)
        ),
        SmtAdvice::CannotTell {
            gain,
            ci95: Some(ci95),
            ..
        } => format!(
            "cannot tell — on one core, a second SMT thread {}, but its {} holds \
             {threshold}; {MEASURE_LONGER} to narrow it.",
            gain_phrase(*gain),
            gain_ci_text(*ci95)
        ),
        SmtAdvice::CannotTell {
            gain,
            ci95: None,
            samples,
        } if *samples < 3 => format!(
            "cannot tell — on one core, a second SMT thread {} by the medians, but there \
             were too few samples (n = {samples}) to judge: a 95% interval needs at least 3 \
             with 1 and with 2 threads; {MEASURE_LONGER}.",
            gain_phrase(*gain)
        ),
        SmtAdvice::CannotTell { gain, .. } => format!(
            "cannot tell — on one core, a second SMT thread {} by the medians, but its 95% \
             interval is unbounded (some resamples have no positive throughput).",
            gain_phrase(*gain)
        ),
        SmtAdvice::Unknown { reason } => format!("unknown — {reason}."),
    }
}

/// Why the other model at the same N cannot be judged: the comparison of
/// the two points has no interval (too few samples, or an unbounded one).
fn model_unjudged_clause(a: &PointData, b: &PointData) -> String {
    let (na, nb) = (finite_count(&a.values), finite_count(&b.values));
    if na < 3 || nb < 3 {
        format!("there were too few samples (n = {na} and {nb}) to judge whether the model matters")
    } else {
        "zeros among the samples leave the 95% interval unbounded, so whether the model \
         matters cannot be judged"
            .to_string()
    }
}

/// The sentence for a best point kept because the comparisons with fewer
/// workers had no interval: the sample counts, that they were too few to
/// judge, and how to get more.
fn unjudged_text(best: &PointData, fewer: &[(&PointData, f64)], unit: &str) -> String {
    let nb = finite_count(&best.values);
    let few = nb < 3 || fewer.iter().any(|(p, _)| finite_count(&p.values) < 3);
    if !few {
        return " Whether it is significantly faster than fewer workers cannot be judged \
                (zeros among the samples leave the 95% interval unbounded), so the fastest \
                by median is recommended."
            .to_string();
    }
    let mut counts = vec![format!("n = {nb} here")];
    counts.extend(fewer.iter().map(|(p, m)| {
        format!(
            "n = {} at {} (median {})",
            finite_count(&p.values),
            workers(p.summary.point.workers),
            sentence_value(*m, unit)
        )
    }));
    let counts = match counts.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => counts.join(""),
    };
    format!(
        " With {counts}, there were too few samples to judge whether it is significantly \
         faster than fewer workers (a 95% interval needs at least 3 a side), so the fastest \
         by median is recommended; {MEASURE_LONGER}."
    )
}

/// `1 worker`, `2 workers`.
fn workers(n: usize) -> String {
    if n == 1 {
        "1 worker".into()
    } else {
        format!("{n} workers")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{data, noisy, ops, pinned, point, wall};
    use crate::analysis::SeriesKey;
    use crate::analysis::SiblingYield;
    use smtlab_stats as stats;
    use smtlab_topology::synthetic;
    use smtlab_types::Model;

    fn mk(i: usize, model: Model, n: usize, x: f64, rel: f64, metric: Metric) -> PointData {
        data(
            point(i, "jbb", model, "compact", n, metric),
            &noisy(x, rel, 12, i as u64 + 1),
        )
    }

    fn no_smt() -> Topology {
        synthetic::parse("core:4").unwrap()
    }

    #[test]
    fn an_indistinguishable_other_model_is_named_as_equally_good() {
        let pts = vec![
            mk(0, Model::Thread, 1, 1.0e6, 0.005, ops()),
            mk(1, Model::Thread, 2, 1.93e6, 0.03, ops()),
            mk(2, Model::Process, 2, 1.92e6, 0.03, ops()),
        ];
        let (r, _) = recommend(&pts, &[], &no_smt(), 1);
        let s = &r[0].sentence;
        assert!(
            s.contains("was not significantly different at the same N")
                && s.contains("either model will do"),
            "{s}"
        );
    }

    #[test]
    fn best_point_when_clearly_better() {
        let pts = vec![
            mk(0, Model::Thread, 1, 1.0e6, 0.005, ops()),
            mk(1, Model::Thread, 2, 1.93e6, 0.005, ops()),
            mk(2, Model::Process, 2, 1.80e6, 0.005, ops()),
            mk(3, Model::Thread, 4, 1.60e6, 0.005, ops()),
        ];
        let (r, notes) = recommend(&pts, &[], &no_smt(), 1);
        assert!(notes.is_empty());
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert_eq!((r.model.as_str(), r.workers), ("thread", 2));
        assert_eq!(r.placement, "compact");
        assert_eq!(
            r.smt,
            SmtAdvice::Unknown {
                reason: NO_SMT_REASON.into()
            }
        );
        assert_eq!(
            r.sentence,
            format!(
                "For jbb: run 2 workers in the multi-thread model, placement compact (median \
                 {}). That is 7.7% faster than the multi-process model at the same N (95% CI \
                 7.0–7.9%). Whether SMT pays: unknown — this machine has no SMT (one PU per \
                 core), so whether SMT pays was not measured.",
                sentence_value(r.median, "ops/s")
            )
        );
        assert!(
            r.sentence.contains("(median 1.93 Mops/s)"),
            "{}",
            r.sentence
        );
    }

    #[test]
    fn fewer_workers_when_the_best_is_not_significantly_better() {
        // N = 4 is 0.5% ahead by its median, inside ±5% noise.
        let two = noisy(100.0, 0.05, 12, 1);
        let four: Vec<f64> = two.iter().rev().map(|x| x * 0.995).collect();
        let pts = vec![
            data(point(0, "jbb", Model::Thread, "compact", 2, wall()), &two),
            data(point(1, "jbb", Model::Thread, "compact", 4, wall()), &four),
            mk(2, Model::Thread, 8, 140.0, 0.05, wall()),
        ];
        let topo = synthetic::parse("core:2 pu:2").unwrap();
        let (r, _) = recommend(&pts, &[], &topo, 1);
        let r = &r[0];
        assert_eq!(r.workers, 2, "{}", r.sentence);
        assert!(
            r.sentence.contains(
                "The fastest point measured, 4 workers in the multi-thread model, placement \
                 compact (median "
            ),
            "{}",
            r.sentence
        );
        assert!(
            r.sentence
                .contains("was not significantly faster (95% CI of the difference \u{2212}"),
            "{}",
            r.sentence
        );
        assert!(r.sentence.contains("so the fewer workers are recommended."));
        assert_eq!(
            r.smt,
            SmtAdvice::Unknown {
                reason: NO_STUDY_REASON.into()
            }
        );
        assert!(r.sentence.ends_with("unknown — the SMT study was not run."));
        assert_eq!(r.median, stats::median(&two));
    }

    /// A yield of jbb (thread, glibc) on core 0 whose second sibling
    /// gained `gain`, with interval `ci` and `n` samples at 1 and 2.
    fn yield_of(gain: f64, ci: Option<(f64, f64)>, n: usize) -> SmtYield {
        SmtYield {
            key: SeriesKey {
                program: "jbb".into(),
                alloc: "glibc".into(),
                model: "thread".into(),
                placement: "smt:0".into(),
            },
            core: 0,
            siblings: vec![
                SiblingYield {
                    siblings: 1,
                    relative: 1.0,
                    gain: 0.0,
                    relative_ci95: (n >= 3).then_some((1.0, 1.0)),
                    gain_ci95: (n >= 3).then_some((0.0, 0.0)),
                    samples: n,
                },
                SiblingYield {
                    siblings: 2,
                    relative: 1.0 + gain,
                    gain,
                    relative_ci95: ci.map(|(lo, hi)| (1.0 + lo, 1.0 + hi)),
                    gain_ci95: ci,
                    samples: n,
                },
            ],
        }
    }

    #[test]
    fn smt_switched_off_by_the_kernel_is_not_a_machine_without_smt() {
        let pts = vec![mk(0, Model::Thread, 1, 1.0e6, 0.005, ops())];
        let mut topo = no_smt();
        assert_eq!(
            recommend(&pts, &[], &topo, 1).0[0].smt,
            SmtAdvice::Unknown {
                reason: NO_SMT_REASON.into()
            }
        );
        topo.smt_control = Some("forceoff".into());
        let r = recommend(&pts, &[], &topo, 1).0.remove(0);
        assert_eq!(
            r.smt,
            SmtAdvice::Unknown {
                reason: SMT_SWITCHED_OFF_REASON.into()
            }
        );
        assert!(
            r.sentence
                .contains("Whether SMT pays: unknown — SMT is switched off on this machine"),
            "{}",
            r.sentence
        );
    }

    #[test]
    fn smt_advice_from_the_yield_and_its_interval() {
        let topo = synthetic::parse("core:2 pu:2").unwrap();
        let pts = vec![data(
            pinned(point(0, "jbb", Model::Thread, "smt:0", 1, ops()), &[0]),
            &[5.0; 4],
        )];
        let advice = |g, ci, n| recommend(&pts, &[yield_of(g, ci, n)], &topo, 1).0.remove(0);
        let r = advice(0.25, Some((0.2, 0.3)), 10);
        assert_eq!(
            r.smt,
            SmtAdvice::Pays {
                gain: 0.25,
                ci95: (0.2, 0.3)
            }
        );
        assert!(
            r.sentence.ends_with(
                "Whether SMT pays: yes — on one core, a second SMT thread added 25.0% of one \
                 thread's throughput (95% CI 20.0–30.0%)."
            ),
            "{}",
            r.sentence
        );
        // The lower end decides, not the median: at the threshold it pays.
        assert!(matches!(
            advice(0.07, Some((0.05, 0.09)), 10).smt,
            SmtAdvice::Pays { .. }
        ));
        let r = advice(0.02, Some((0.01, 0.03)), 10);
        assert_eq!(
            r.smt,
            SmtAdvice::DoesNotPay {
                gain: 0.02,
                ci95: (0.01, 0.03)
            }
        );
        assert!(
            r.sentence.ends_with(
                "no — on one core, a second SMT thread added only 2.0% of one thread's \
                 throughput (95% CI 1.0–3.0%, below the 5% from which SMT is said to pay)."
            ),
            "{}",
            r.sentence
        );
        let r = advice(-0.1, Some((-0.12, -0.08)), 10);
        assert!(
            r.sentence.ends_with(
                "no — on one core, a second SMT thread lowered throughput by 10.0% of one \
                 thread's (95% CI \u{2212}12.0% to \u{2212}8.0%)."
            ),
            "{}",
            r.sentence
        );
        // A median above the threshold whose interval holds it: the data
        // cannot tell, and the sentence says so with the interval.
        let r = advice(0.06, Some((0.03, 0.09)), 10);
        assert_eq!(
            r.smt,
            SmtAdvice::CannotTell {
                gain: 0.06,
                ci95: Some((0.03, 0.09)),
                samples: 10
            }
        );
        assert!(
            r.sentence.ends_with(
                "cannot tell — on one core, a second SMT thread added 6.0% of one thread's \
                 throughput, but its 95% CI 3.0–9.0% holds the 5% from which SMT is said to \
                 pay; measure longer: raise --max-time or --min-samples to narrow it."
            ),
            "{}",
            r.sentence
        );
        // One sample at each: no interval, and no yes or no either.
        let r = advice(0.592, None, 1);
        assert_eq!(
            r.smt,
            SmtAdvice::CannotTell {
                gain: 0.592,
                ci95: None,
                samples: 1
            }
        );
        assert!(
            r.sentence.ends_with(
                "cannot tell — on one core, a second SMT thread added 59.2% of one thread's \
                 throughput by the medians, but there were too few samples (n = 1) to judge: \
                 a 95% interval needs at least 3 with 1 and with 2 threads; measure longer: \
                 raise --max-time or --min-samples."
            ),
            "{}",
            r.sentence
        );
        // Another program's yield says nothing about this one.
        let mut other = yield_of(0.3, Some((0.25, 0.35)), 10);
        other.key.program = "stream".into();
        assert!(matches!(
            recommend(&pts, &[other], &topo, 1).0[0].smt,
            SmtAdvice::Unknown { .. }
        ));
    }

    #[test]
    fn one_sample_per_point_keeps_the_fastest_and_says_it_cannot_judge() {
        // The guest run: 1 sample a point, 2 workers 62% faster by median.
        // Without an interval "not significant" is no evidence: 2 workers
        // stay recommended, and the sentence says why it cannot say more.
        let one = |i, model, n, x: f64| data(point(i, "spin", model, "compact", n, ops()), &[x]);
        let pts = vec![
            one(0, Model::Thread, 1, 1.0e6),
            one(1, Model::Thread, 2, 1.62e6),
            one(2, Model::Process, 2, 1.5e6),
        ];
        let (r, _) = recommend(&pts, &[], &no_smt(), 1);
        let r = &r[0];
        assert_eq!(
            (r.workers, r.model.as_str()),
            (2, "thread"),
            "{}",
            r.sentence
        );
        assert_eq!(r.median, 1.62e6);
        assert!(
            r.sentence.contains(
                "With n = 1 here and n = 1 at 1 worker (median 1.00 Mops/s), there were too \
                 few samples to judge whether it is significantly faster than fewer workers \
                 (a 95% interval needs at least 3 a side), so the fastest by median is \
                 recommended; measure longer: raise --max-time or --min-samples."
            ),
            "{}",
            r.sentence
        );
        assert!(
            r.sentence.contains(
                "By the medians that is 8.0% faster than the multi-process model at the same \
                 N, but there were too few samples (n = 1 and 1) to judge whether the model \
                 matters."
            ),
            "{}",
            r.sentence
        );
        assert!(!r.sentence.contains("fewer workers are recommended"));
    }

    #[test]
    fn a_recommendation_never_picks_a_slower_point_without_an_interval_saying_why() {
        // Every mix of sample counts (1, 2 or 12 a point) over a slow N = 1
        // and a fast N = 2, 4: whatever is recommended is either the
        // fastest by median, or a slower point whose sentence gives the
        // interval that allowed it.
        for counts in [[1, 1, 1], [12, 1, 12], [1, 12, 12], [2, 12, 2], [12, 12, 1]] {
            let pts: Vec<PointData> = [(1usize, 100.0), (2, 160.0), (4, 161.0)]
                .iter()
                .zip(counts)
                .enumerate()
                .map(|(i, (&(n, x), c))| {
                    data(
                        point(i, "jbb", Model::Thread, "compact", n, ops()),
                        &noisy(x, 0.05, c, i as u64 + 3),
                    )
                })
                .collect();
            let fastest = pts
                .iter()
                .map(|p| stats::median(&p.values))
                .fold(f64::MIN, f64::max);
            let (r, _) = recommend(&pts, &[], &no_smt(), 1);
            let r = &r[0];
            assert!(
                r.median == fastest
                    || (r
                        .sentence
                        .contains("was not significantly faster (95% CI of the difference")
                        && r.sentence.contains("so the fewer workers are recommended")),
                "{counts:?}: {}",
                r.sentence
            );
            assert!(
                r.workers != 1,
                "{counts:?}: N = 1 is clearly slower: {}",
                r.sentence
            );
        }
    }

    #[test]
    fn programs_without_results_get_a_note() {
        let pts = vec![data(
            point(0, "jbb", Model::Thread, "compact", 1, ops()),
            &[],
        )];
        let (r, notes) = recommend(&pts, &[], &no_smt(), 1);
        assert!(r.is_empty());
        assert_eq!(
            notes,
            ["jbb: no point has results, so there is no recommendation."]
        );
    }
}
