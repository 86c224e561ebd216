//! Verdicts: is A faster than B, by how much, and does the 95% confidence
//! interval allow saying so?
//!
//! A difference is called *significant* only when the bootstrap interval of
//! the speed ratio excludes 1 (no difference). Without an interval (fewer
//! than 3 samples a side) the sentence says what was measured and that it
//! is not a verdict: two samples can differ by chance as much as by design,
//! and a report must not turn a coin toss into advice.

use std::collections::{BTreeMap, BTreeSet};

use super::results::Verdict;
use super::scaling::median_of;
use crate::summary::PointData;
use smtlab_stats as stats;
use smtlab_types::Model;

/// Compares A against B on their primary metric: how many times faster A is
/// (`speed_ratio` > 1: A faster), its 95% CI, and one plain sentence.
///
/// `None` when either side has no result, when they measured different
/// metrics, or when the medians give no finite positive ratio (a zero
/// throughput or time).
pub fn compare(
    a: &PointData,
    b: &PointData,
    a_label: &str,
    b_label: &str,
    subject: &str,
    seed: u64,
) -> Option<Verdict> {
    compare_at(ON_THIS_MACHINE, a, b, a_label, b_label, subject, seed)
}

/// How [`compare`]'s sentences open: A and B were measured here.
pub const ON_THIS_MACHINE: &str = "On this machine";

/// [`compare`], its sentence opening with `place` instead of
/// [`ON_THIS_MACHINE`]: A and B measured on two machines (`compare` of runs of two
/// hosts) are no statement about this one.
pub fn compare_at(
    place: &str,
    a: &PointData,
    b: &PointData,
    a_label: &str,
    b_label: &str,
    subject: &str,
    seed: u64,
) -> Option<Verdict> {
    let metric = &a.summary.point.metric;
    if *metric != b.summary.point.metric {
        return None;
    }
    let (median_a, median_b) = (median_of(a)?, median_of(b)?);
    // Both ways round a ratio of throughputs, so > 1 always means A faster.
    let (speed_ratio, ci) = if metric.higher_is_better {
        (
            median_a / median_b,
            stats::ratio_ci(&a.values, &b.values, seed),
        )
    } else {
        (
            median_b / median_a,
            stats::ratio_ci(&b.values, &a.values, seed),
        )
    };
    if !(speed_ratio.is_finite() && speed_ratio > 0.0) {
        return None;
    }
    let ci_raw = ci.map(|(_, ci)| ci);
    // An infinite end (zeros among the samples) is no interval to state.
    let ci95 = ci_raw.filter(|(lo, hi)| lo.is_finite() && hi.is_finite());
    let significant = ci95.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0);
    let no_ci_reason = if ci_raw.is_none() {
        "with too few samples for a confidence interval"
    } else {
        "with zeros among the samples its confidence interval is unbounded"
    };
    let sentence = sentence(
        a_label,
        b_label,
        subject,
        speed_ratio,
        ci95,
        significant,
        no_ci_reason,
    );
    let sentence = format!("{place} {sentence}");
    Some(Verdict {
        subject: subject.to_string(),
        a: a_label.to_string(),
        b: b_label.to_string(),
        metric: metric.clone(),
        median_a,
        median_b,
        speed_ratio,
        ci95,
        significant,
        sentence,
    })
}

/// The verdict sentence (see [`Verdict::sentence`]). Percentages have one
/// decimal; ranges use an en dash; "slower" is expressed as the fraction of
/// B's speed A lacks, (1 − ratio), so "50% slower" means half as fast.
fn sentence(
    a: &str,
    b: &str,
    subject: &str,
    ratio: f64,
    ci: Option<(f64, f64)>,
    significant: bool,
    no_ci_reason: &str,
) -> String {
    match ci {
        // The direction is the interval's (it excludes 1 on one side), not
        // the point estimate's: a percentile interval need not contain it.
        Some((lo, hi)) if significant && lo > 1.0 => format!(
            "{a} was {:.1}% faster than {b} for {subject} (95% CI {:.1}–{:.1}%).",
            (ratio - 1.0) * 100.0,
            (lo - 1.0) * 100.0,
            (hi - 1.0) * 100.0
        ),
        Some((lo, hi)) if significant => format!(
            "{a} was {:.1}% slower than {b} for {subject} (95% CI {:.1}–{:.1}%).",
            (1.0 - ratio) * 100.0,
            (1.0 - hi) * 100.0,
            (1.0 - lo) * 100.0
        ),
        Some((lo, hi)) => format!(
            "there was no significant difference between {a} and {b} for \
             {subject} (95% CI of the difference {} to {}).",
            signed_pct(lo - 1.0),
            signed_pct(hi - 1.0)
        ),
        None => format!(
            "{a} measured {} than {b} for {subject}, but {no_ci_reason}, this \
             is not a verdict.",
            faster_or_slower(ratio)
        ),
    }
}

/// `1.8% faster` or `3.2% slower`, from a speed ratio.
pub(crate) fn faster_or_slower(ratio: f64) -> String {
    if ratio >= 1.0 {
        format!("{:.1}% faster", (ratio - 1.0) * 100.0)
    } else {
        format!("{:.1}% slower", (1.0 - ratio) * 100.0)
    }
}

/// A fraction as a signed percentage with one decimal: `+1.3%`, `−0.8%`
/// (a true minus sign), `+0.0%` for anything that rounds to zero.
pub(crate) fn signed_pct(fraction: f64) -> String {
    let r = (fraction * 1000.0).round() / 10.0;
    if r < 0.0 {
        format!("\u{2212}{:.1}%", -r)
    } else {
        format!("+{:.1}%", r.abs())
    }
}

/// How a model is named in sentences.
pub(crate) fn model_phrase(model: &Model) -> String {
    match model {
        Model::Thread => "the multi-thread model".into(),
        Model::Process => "the multi-process model".into(),
        Model::Hybrid { processes, threads } => {
            format!("the hybrid model ({processes} processes × {threads} threads)")
        }
        Model::Event => "the event-driven model".into(),
        Model::Staged => "the staged model".into(),
        Model::Thread2 => "the two-threads-per-connection model".into(),
    }
}

/// `1 thread`, `2 threads`.
pub(crate) fn threads(n: usize) -> String {
    if n == 1 {
        "1 thread".into()
    } else {
        format!("{n} threads")
    }
}

/// The multi-thread model (A) against the multi-process model (B) for every
/// (program, allocator, placement, N) measured in both, in that order. The
/// subject reads `jbb at 2 threads (compact)`, with the allocator added
/// (`(compact, jemalloc)`) when the program was measured with more than one.
/// Where a configuration was measured twice in one model, the first point
/// in plan order is used.
pub fn model_verdicts(points: &[PointData], seed: u64) -> Vec<Verdict> {
    type Key = (String, String, String, usize);
    let mut thread: BTreeMap<Key, &PointData> = BTreeMap::new();
    let mut process: BTreeMap<Key, &PointData> = BTreeMap::new();
    let mut allocs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut sorted: Vec<&PointData> = points.iter().collect();
    sorted.sort_by_key(|p| p.summary.point.index);
    for p in sorted {
        let pt = &p.summary.point;
        let program = pt.program.label();
        allocs
            .entry(program.clone())
            .or_default()
            .insert(pt.alloc.clone());
        let key = (program, pt.alloc.clone(), pt.placement.clone(), pt.workers);
        match pt.model {
            Model::Thread => thread.entry(key).or_insert(p),
            Model::Process => process.entry(key).or_insert(p),
            Model::Hybrid { .. } | Model::Event | Model::Staged | Model::Thread2 => continue,
        };
    }
    thread
        .iter()
        .filter_map(|(key, a)| {
            let b = process.get(key)?;
            let (program, alloc, placement, n) = key;
            let several = allocs.get(program).is_some_and(|s| s.len() > 1);
            let within = if several {
                format!("{placement}, {alloc}")
            } else {
                placement.clone()
            };
            let subject = format!("{program} at {} ({within})", threads(*n));
            compare(
                a,
                b,
                &model_phrase(&Model::Thread),
                &model_phrase(&Model::Process),
                &subject,
                seed,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{data, noisy, ops, point, wall};
    use smtlab_types::Metric;

    fn pd(model: Model, metric: Metric, values: &[f64]) -> PointData {
        data(point(0, "jbb", model, "compact", 2, metric), values)
    }

    fn cmp(a: &PointData, b: &PointData) -> Verdict {
        compare(a, b, "A", "B", "jbb at 2 threads (compact)", 1).unwrap()
    }

    #[test]
    fn separated_samples_are_significant_in_the_right_direction() {
        let fast = noisy(110.0, 0.01, 20, 1);
        let slow = noisy(100.0, 0.01, 20, 2);
        // Higher is better: 110 ops/s is faster than 100.
        let v = cmp(
            &pd(Model::Thread, ops(), &fast),
            &pd(Model::Thread, ops(), &slow),
        );
        assert!(v.significant, "{v:?}");
        assert!((v.speed_ratio - 1.1).abs() < 0.02, "{v:?}");
        let (lo, hi) = v.ci95.unwrap();
        assert!(1.0 < lo && lo <= v.speed_ratio && v.speed_ratio <= hi);
        let (lo, hi) = ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0);
        assert_eq!(
            v.sentence,
            format!(
                "On this machine A was {:.1}% faster than B for jbb at 2 threads (compact) \
                 (95% CI {lo:.1}–{hi:.1}%).",
                (v.speed_ratio - 1.0) * 100.0
            )
        );
        // The other way round: slower.
        let v = cmp(
            &pd(Model::Thread, ops(), &slow),
            &pd(Model::Thread, ops(), &fast),
        );
        assert!(v.significant && v.speed_ratio < 1.0 && v.ci95.unwrap().1 < 1.0);
        assert!(v.sentence.contains("% slower than B"), "{}", v.sentence);
        // Lower is better: 110 s is slower than 100 s.
        let v = cmp(
            &pd(Model::Thread, wall(), &fast),
            &pd(Model::Thread, wall(), &slow),
        );
        assert!(v.significant, "{v:?}");
        assert!((v.speed_ratio - 100.0 / 110.0).abs() < 0.02, "{v:?}");
        assert!(v.ci95.unwrap().1 < 1.0);
        assert!(v.sentence.contains("% slower than B"), "{}", v.sentence);
        assert_eq!(
            (v.median_a, v.median_b),
            (median_of_vec(&fast), median_of_vec(&slow))
        );
        let v = cmp(
            &pd(Model::Thread, wall(), &slow),
            &pd(Model::Thread, wall(), &fast),
        );
        assert!(v.significant && v.speed_ratio > 1.0 && v.ci95.unwrap().0 > 1.0);
        assert!(v.sentence.contains("% faster than B"), "{}", v.sentence);
    }

    fn median_of_vec(v: &[f64]) -> f64 {
        stats::median(v)
    }

    #[test]
    fn overlapping_samples_are_not_significant() {
        for metric in [ops(), wall()] {
            let a = noisy(100.0, 0.10, 20, 3);
            let b = noisy(100.5, 0.10, 20, 4);
            let v = cmp(
                &pd(Model::Thread, metric.clone(), &a),
                &pd(Model::Process, metric, &b),
            );
            let (lo, hi) = v.ci95.unwrap();
            assert!(lo < 1.0 && 1.0 < hi, "{v:?}");
            assert!(!v.significant);
            assert!(
                v.sentence.starts_with(
                    "On this machine there was no significant difference between A and B for \
                     jbb at 2 threads (compact) (95% CI of the difference \u{2212}"
                ),
                "{}",
                v.sentence
            );
            assert!(v.sentence.contains("% to +"), "{}", v.sentence);
        }
    }

    #[test]
    fn a_verdict_across_machines_opens_with_its_place_and_judges_alike() {
        let a = pd(Model::Thread, ops(), &noisy(110.0, 0.01, 20, 1));
        let b = pd(Model::Thread, ops(), &noisy(100.0, 0.01, 20, 2));
        let here = cmp(&a, &b);
        let there = compare_at(
            "Across hosts alpha (A) and beta (B),",
            &a,
            &b,
            "A",
            "B",
            "jbb at 2 threads (compact)",
            1,
        )
        .unwrap();
        assert!(
            there
                .sentence
                .starts_with("Across hosts alpha (A) and beta (B), A was "),
            "{}",
            there.sentence
        );
        assert_eq!(
            there
                .sentence
                .replace("Across hosts alpha (A) and beta (B),", "On this machine"),
            here.sentence
        );
        assert_eq!(
            (there.speed_ratio, there.ci95, there.significant),
            (here.speed_ratio, here.ci95, here.significant)
        );
    }

    #[test]
    fn sentence_formats() {
        let s = |r, ci, sig| {
            let rest = sentence("A", "B", "x at 2 threads (compact)", r, ci, sig, "R");
            format!("On this machine {rest}")
        };
        assert_eq!(
            s(1.018, Some((1.009, 1.027)), true),
            "On this machine A was 1.8% faster than B for x at 2 threads (compact) \
             (95% CI 0.9–2.7%)."
        );
        assert_eq!(
            s(0.968, Some((0.95, 0.989)), true),
            "On this machine A was 3.2% slower than B for x at 2 threads (compact) \
             (95% CI 1.1–5.0%)."
        );
        assert_eq!(
            s(1.002, Some((0.992, 1.013)), false),
            "On this machine there was no significant difference between A and B for \
             x at 2 threads (compact) (95% CI of the difference \u{2212}0.8% to +1.3%)."
        );
        assert_eq!(
            s(1.018, None, false),
            "On this machine A measured 1.8% faster than B for x at 2 threads (compact), \
             but R, this is not a verdict."
        );
        assert_eq!(signed_pct(-0.0004), "+0.0%");
        assert_eq!(signed_pct(0.0), "+0.0%");
        assert_eq!(signed_pct(-0.0123), "\u{2212}1.2%");
    }

    #[test]
    fn too_few_samples_is_no_verdict() {
        let a = pd(Model::Thread, ops(), &[102.0, 101.0]);
        let b = pd(Model::Process, ops(), &noisy(100.0, 0.001, 10, 1));
        let v = cmp(&a, &b);
        assert_eq!(v.ci95, None);
        assert!(!v.significant);
        assert!(
            v.sentence.ends_with(
                "but with too few samples for a confidence interval, this is not a verdict."
            ),
            "{}",
            v.sentence
        );
        assert!(v.sentence.contains("A measured 1."), "{}", v.sentence);
    }

    #[test]
    fn no_result_or_mismatched_metrics_is_none() {
        let ok = pd(Model::Thread, ops(), &[1.0, 2.0, 3.0]);
        let empty = pd(Model::Thread, ops(), &[]);
        let nan = pd(Model::Thread, ops(), &[f64::NAN, f64::NAN]);
        let zero = pd(Model::Thread, ops(), &[0.0; 4]);
        assert!(compare(&ok, &empty, "A", "B", "s", 0).is_none());
        assert!(compare(&nan, &ok, "A", "B", "s", 0).is_none());
        assert!(compare(&ok, &zero, "A", "B", "s", 0).is_none());
        let time = pd(Model::Thread, wall(), &[1.0, 2.0, 3.0]);
        assert!(compare(&ok, &time, "A", "B", "s", 0).is_none());
    }

    #[test]
    fn thread_against_process_where_both_were_measured() {
        let mk = |i, model, placement: &str, n, x: f64, seed| {
            data(
                point(i, "jbb", model, placement, n, ops()),
                &noisy(x, 0.005, 12, seed),
            )
        };
        let pts = vec![
            mk(0, Model::Thread, "compact", 1, 100.0, 1),
            mk(1, Model::Thread, "compact", 2, 200.0, 2),
            mk(2, Model::Process, "compact", 2, 180.0, 3),
            mk(3, Model::Process, "compact", 4, 300.0, 4),
            mk(4, Model::Process, "scatter", 1, 100.0, 5),
            // Hybrid is neither side.
            mk(
                5,
                Model::Hybrid {
                    processes: 1,
                    threads: 1,
                },
                "compact",
                1,
                100.0,
                6,
            ),
        ];
        let v = model_verdicts(&pts, 3);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, "jbb at 2 threads (compact)");
        assert_eq!(v[0].a, "the multi-thread model");
        assert_eq!(v[0].b, "the multi-process model");
        assert!(v[0].significant && v[0].speed_ratio > 1.0);
        assert!(
            v[0].sentence
                .starts_with("On this machine the multi-thread model was 11."),
            "{}",
            v[0].sentence
        );
        assert!(v[0].sentence.contains(
            "faster than the multi-process model for jbb at 2 threads (compact) (95% CI "
        ));

        // Two allocators: the subject names which.
        let mut je = mk(6, Model::Thread, "compact", 1, 100.0, 7);
        je.summary.point.alloc = "jemalloc".into();
        let mut je2 = mk(7, Model::Process, "compact", 1, 90.0, 8);
        je2.summary.point.alloc = "jemalloc".into();
        let mut all = pts;
        all.push(je);
        all.push(je2);
        let v = model_verdicts(&all, 3);
        let subjects: Vec<&str> = v.iter().map(|v| v.subject.as_str()).collect();
        assert_eq!(
            subjects,
            [
                "jbb at 2 threads (compact, glibc)",
                "jbb at 1 thread (compact, jemalloc)"
            ]
        );
    }
}
