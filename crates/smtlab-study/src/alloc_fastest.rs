//! The alloc study's answer per workload: which allocator was fastest, and
//! smtalloc's throughput against it with the 95% interval of the ratio, so
//! a user sees where smtalloc is not the answer (and where it is, by how
//! much over the runner-up).
//!
//! "Fastest" is the best median; whether that ranking is more than noise is
//! the interval's to say, as every verdict's: a sentence names a winner
//! outright only when the interval excludes 1, says "by the medians" when
//! it does not, and says there were too few samples when there is none.

use std::collections::BTreeMap;

use smtlab_analyse::analysis::{verdict, PointData};

use crate::intervals::{from_verdict, Estimate, Reading};
use crate::point_values::median;

/// The allocator the sentences measure the others against.
pub(crate) const SMTALLOC: &str = "smtalloc";

/// One sentence per workload (program, model, N, placement) measured with
/// smtalloc and at least one other allocator: the fastest allocator and
/// smtalloc's ratio to it, or, when smtalloc was fastest, its ratio to the
/// runner-up; each with its 95% interval or why there is none.
pub(crate) fn fastest_verdicts(points: &[PointData], seed: u64) -> Vec<String> {
    // (program, model, N, placement) -> that workload's points, in order.
    let mut groups: BTreeMap<(String, String, usize, String), Vec<&PointData>> = BTreeMap::new();
    for p in points.iter().filter(|p| median(p).is_some()) {
        let pt = &p.summary.point;
        groups
            .entry((
                pt.program.label(),
                pt.model.to_string(),
                pt.workers,
                pt.placement.clone(),
            ))
            .or_default()
            .push(p);
    }
    groups
        .into_iter()
        .filter_map(|((prog, model, n, _), group)| {
            let subject = format!("{prog} in the {model} model at N = {n}");
            workload_sentence(&subject, &group, seed)
        })
        .collect()
}

/// The sentence for one workload's points (all with a median), `None`
/// without smtalloc or without another allocator to compare it with.
fn workload_sentence(subject: &str, group: &[&PointData], seed: u64) -> Option<String> {
    let smt = *group.iter().find(|p| p.summary.point.alloc == SMTALLOC)?;
    let higher_is_better = smt.summary.point.metric.higher_is_better;
    // Best first: the highest throughput, or the shortest time.
    let mut others: Vec<&PointData> = group
        .iter()
        .copied()
        .filter(|p| p.summary.point.alloc != SMTALLOC)
        .collect();
    others.sort_by(|a, b| {
        let (ma, mb) = (median(a).unwrap_or(f64::NAN), median(b).unwrap_or(f64::NAN));
        if higher_is_better {
            mb.total_cmp(&ma)
        } else {
            ma.total_cmp(&mb)
        }
    });
    let best_other = *others.first()?;
    let other = best_other.summary.point.alloc.as_str();
    let quantity = if higher_is_better {
        "throughput"
    } else {
        "speed (1/time)"
    };
    // smtalloc's speed over the other's: > 1 when smtalloc is faster.
    let v = verdict::compare(smt, best_other, SMTALLOC, other, subject, seed)?;
    let est = from_verdict(&v, smt, best_other);
    Some(if v.speed_ratio > 1.0 {
        smtalloc_fastest(subject, other, quantity, &est)
    } else {
        other_fastest(subject, other, quantity, &est)
    })
}

/// smtalloc had the best median: its ratio to the runner-up `other`.
fn smtalloc_fastest(subject: &str, other: &str, quantity: &str, est: &Estimate) -> String {
    let ratio = format!(
        "{:.2}x the {quantity} of the runner-up, {other} ({})",
        est.value,
        est.ci_x()
    );
    match est.ratio_reading() {
        Reading::Above => format!("For {subject} the fastest was {SMTALLOC}: {ratio}."),
        Reading::Within | Reading::Below => {
            format!("For {subject} {SMTALLOC} had the best median, but not significantly: {ratio}.")
        }
        Reading::None(_) => {
            format!("For {subject} the fastest by the medians was {SMTALLOC}: {ratio}.")
        }
    }
}

/// `other` had the best median: smtalloc's ratio to it.
fn other_fastest(subject: &str, other: &str, quantity: &str, est: &Estimate) -> String {
    let ratio = format!(
        "{SMTALLOC} was {:.2}x its {quantity} ({})",
        est.value,
        est.ci_x()
    );
    match est.ratio_reading() {
        Reading::Below => format!("For {subject} the fastest was {other}: {ratio}."),
        Reading::Within | Reading::Above => format!(
            "For {subject} the fastest by the medians was {other}, but not significantly: \
             {ratio}."
        ),
        Reading::None(_) => {
            format!("For {subject} the fastest by the medians was {other}: {ratio}.")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{around, data};
    use smtlab_types::{Metric, Mode, Model, Point, Program, Spawn};

    /// `alloc` running xmalloc in the thread model at N = 2, point `index`.
    fn point(index: usize, alloc: &str) -> Point {
        Point {
            index,
            program: Program::Builtin {
                workload: "xmalloc".into(),
                params: Default::default(),
            },
            model: Model::Thread,
            spawn: Spawn::Exec,
            placement: "compact".into(),
            workers: 2,
            cpus: Some(vec![0, 1]),
            oversubscription: 1.0,
            alloc: alloc.into(),
            mode: Mode::FixedTime { seconds: 0.5 },
            metric: Metric {
                name: "ops_per_s".into(),
                unit: "ops/s".into(),
                higher_is_better: true,
            },
        }
    }

    /// Each allocator measured with `n` samples around its throughput.
    fn measured(allocs: &[(&str, f64)], n: usize) -> Vec<PointData> {
        allocs
            .iter()
            .enumerate()
            .map(|(i, (a, x))| data(point(i, a), &around(*x, 0.02, n)))
            .collect()
    }

    #[test]
    fn the_fastest_allocator_is_named_with_smtallocs_interval_against_it() {
        let pts = measured(
            &[
                ("glibc", 10.0e6),
                ("jemalloc", 26.7e6),
                ("tcmalloc", 32.6e6),
                ("smtalloc", 23.8e6),
            ],
            9,
        );
        let v = fastest_verdicts(&pts, 7);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].starts_with(
                "For xmalloc in the thread model at N = 2 the fastest was tcmalloc: smtalloc \
                 was 0.73x its throughput (95% CI "
            ),
            "{v:?}"
        );
        assert!(v[0].ends_with("x)."), "{v:?}");
    }

    #[test]
    fn smtalloc_fastest_is_said_with_its_interval_against_the_runner_up() {
        let pts = measured(
            &[
                ("glibc", 10.0e6),
                ("smtalloc", 30.0e6),
                ("jemalloc", 24.0e6),
                ("tcmalloc", 20.0e6),
            ],
            9,
        );
        let v = fastest_verdicts(&pts, 7);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].starts_with(
                "For xmalloc in the thread model at N = 2 the fastest was smtalloc: 1.25x the \
                 throughput of the runner-up, jemalloc (95% CI "
            ),
            "{v:?}"
        );
        assert!(v[0].ends_with("x)."), "{v:?}");
    }

    #[test]
    fn too_few_samples_name_the_fastest_by_the_medians_only() {
        let pts = measured(&[("jemalloc", 26.7e6), ("smtalloc", 23.8e6)], 2);
        let v = fastest_verdicts(&pts, 7);
        assert_eq!(
            v,
            [
                "For xmalloc in the thread model at N = 2 the fastest by the medians was \
              jemalloc: smtalloc was 0.89x its throughput (too few samples for an interval)."
            ]
        );
    }

    #[test]
    fn a_difference_within_the_noise_names_no_winner_outright() {
        let pts = measured(&[("jemalloc", 100.0), ("smtalloc", 99.0)], 9);
        let v = fastest_verdicts(&pts, 7);
        assert!(
            v[0].starts_with(
                "For xmalloc in the thread model at N = 2 the fastest by the medians was \
                 jemalloc, but not significantly: smtalloc was 0.99x its throughput (95% CI "
            ),
            "{v:?}"
        );
    }

    #[test]
    fn workloads_without_smtalloc_or_a_rival_get_no_sentence() {
        let without = measured(&[("glibc", 10.0), ("jemalloc", 12.0)], 9);
        assert!(fastest_verdicts(&without, 7).is_empty());
        let alone = measured(&[("smtalloc", 12.0)], 9);
        assert!(fastest_verdicts(&alone, 7).is_empty());
    }
}
