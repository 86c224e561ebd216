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

use std::collections::{BTreeMap, BTreeSet};

use super::scaling::median_of;
use super::verdict::{compare, model_phrase, signed_pct};
use super::{PointData, Recommendation, SmtAdvice, SmtYield};
use crate::units::sentence_value;
use smtlab_topology::Topology;
use smtlab_types::Metric;

/// Gain of the second sibling (as a fraction of one thread alone) from
/// which SMT is said to pay. Below 5% the extra hardware thread buys
/// little while it halves each thread's share of the core (longer
/// latencies per request) and adds noise; at or above it, doubling the
/// threads per core is worth having.
pub const SMT_PAYS_GAIN: f64 = 0.05;

/// Why SMT could not be judged on a machine without it.
pub const NO_SMT_REASON: &str =
    "this machine has no SMT (one PU per core), so whether SMT pays was not measured";

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
    // The best per N (the first in plan order on a tie), ascending N.
    let mut best_per_n: BTreeMap<usize, (&PointData, f64)> = BTreeMap::new();
    for &(p, m) in &measured {
        let n = p.summary.point.workers;
        match best_per_n.get(&n) {
            Some(&(_, bm)) if !better(&metric, m, bm) => {}
            _ => {
                best_per_n.insert(n, (p, m));
            }
        }
    }
    // The best overall: the fewest workers on a tie.
    let (best, best_median) =
        best_per_n
            .values()
            .copied()
            .reduce(|acc, c| if better(&metric, c.1, acc.1) { c } else { acc })?;
    let best_n = best.summary.point.workers;
    // The fewest workers that are not significantly slower than the best,
    // trying only each N's best point (a noisier, slower configuration must
    // not win by having a wider interval).
    let mut chosen = (best, best_median);
    let mut why_fewer = None;
    for (&n, &(cand, m)) in &best_per_n {
        if n >= best_n {
            break;
        }
        let v = compare(best, cand, "best", "fewer", "", seed);
        if let Some(v) = v.filter(|v| !v.significant) {
            chosen = (cand, m);
            why_fewer = Some(match v.ci95 {
                Some((lo, hi)) => format!(
                    "95% CI of the difference {} to {}",
                    signed_pct(lo - 1.0),
                    signed_pct(hi - 1.0)
                ),
                None => format!(
                    "{} by its median, with too few samples for a confidence interval",
                    super::verdict::faster_or_slower(v.speed_ratio)
                ),
            });
            break;
        }
    }
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
        let om = model_phrase(&other.summary.point.model);
        if let Some(v) = compare(point, other, "", "", "", seed) {
            match (v.significant, v.ci95) {
                (true, Some((lo, hi))) => sentence.push_str(&format!(
                    " That is {} than {om} at the same N (95% CI {:.1}–{:.1}%).",
                    super::verdict::faster_or_slower(v.speed_ratio),
                    (lo - 1.0).abs().min((hi - 1.0).abs()) * 100.0,
                    (lo - 1.0).abs().max((hi - 1.0).abs()) * 100.0,
                )),
                (_, Some((lo, hi))) => sentence.push_str(&format!(
                    " {} was not significantly different at the same N (95% CI of the \
                     difference {} to {}): either model will do.",
                    capitalise(&om),
                    signed_pct(lo - 1.0),
                    signed_pct(hi - 1.0)
                )),
                _ => {}
            }
        }
    }
    sentence.push_str(" Whether SMT pays: ");
    sentence.push_str(&match &smt {
        SmtAdvice::Pays { gain } => format!(
            "yes — on one core, a second SMT thread added {:.1}% of one thread's throughput.",
            gain * 100.0
        ),
        SmtAdvice::DoesNotPay { gain } if *gain < 0.0 => format!(
            "no — on one core, a second SMT thread lowered throughput by {:.1}% of one \
             thread's.",
            -gain * 100.0
        ),
        SmtAdvice::DoesNotPay { gain } => format!(
            "no — on one core, a second SMT thread added only {:.1}% of one thread's \
             throughput.",
            gain * 100.0
        ),
        SmtAdvice::Unknown { reason } => format!("unknown — {reason}."),
    });
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
            let gain = y.siblings[1].gain;
            if gain >= SMT_PAYS_GAIN {
                SmtAdvice::Pays { gain }
            } else {
                SmtAdvice::DoesNotPay { gain }
            }
        }
        None if !topo.smt_active() => SmtAdvice::Unknown {
            reason: NO_SMT_REASON.into(),
        },
        None => SmtAdvice::Unknown {
            reason: NO_STUDY_REASON.into(),
        },
    }
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

    #[test]
    fn smt_advice_from_the_yield() {
        let topo = synthetic::parse("core:2 pu:2").unwrap();
        let key = SeriesKey {
            program: "jbb".into(),
            alloc: "glibc".into(),
            model: "thread".into(),
            placement: "smt:0".into(),
        };
        let y = |gain: f64| SmtYield {
            key: key.clone(),
            core: 0,
            siblings: vec![
                SiblingYield {
                    siblings: 1,
                    relative: 1.0,
                    gain: 0.0,
                },
                SiblingYield {
                    siblings: 2,
                    relative: 1.0 + gain,
                    gain,
                },
            ],
        };
        let pts = vec![data(
            pinned(point(0, "jbb", Model::Thread, "smt:0", 1, ops()), &[0]),
            &[5.0; 4],
        )];
        let advice = |g| recommend(&pts, &[y(g)], &topo, 1).0.remove(0);
        let r = advice(0.25);
        assert_eq!(r.smt, SmtAdvice::Pays { gain: 0.25 });
        assert!(r.sentence.ends_with(
            "Whether SMT pays: yes — on one core, a second SMT thread added 25.0% of one \
             thread's throughput."
        ));
        assert_eq!(advice(0.05).smt, SmtAdvice::Pays { gain: 0.05 });
        let r = advice(0.02);
        assert_eq!(r.smt, SmtAdvice::DoesNotPay { gain: 0.02 });
        assert!(r.sentence.contains("added only 2.0%"), "{}", r.sentence);
        let r = advice(-0.1);
        assert!(
            r.sentence.contains("lowered throughput by 10.0%"),
            "{}",
            r.sentence
        );
        // Another program's yield says nothing about this one.
        let mut other = y(0.3);
        other.key.program = "stream".into();
        assert!(matches!(
            recommend(&pts, &[other], &topo, 1).0[0].smt,
            SmtAdvice::Unknown { .. }
        ));
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
