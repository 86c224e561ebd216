//! Scaling series: the points of one (program, allocator, model, placement)
//! ordered by N, with speedup and efficiency against the series' own N = 1
//! point.
//!
//! Speedup is always a ratio of *throughputs*, so that "2.0" means "twice as
//! fast" whichever way the metric runs: throughput(N) / throughput(1) for a
//! higher-is-better metric, time(1) / time(N) for a lower-is-better one. Its
//! interval is the bootstrap interval of that ratio of medians
//! ([`stats::ratio_ci`]) on the raw samples, not a combination of the two
//! medians' intervals (which would ignore that the ratio's uncertainty is not
//! the sum of its parts).

use std::collections::BTreeMap;

use super::results::{ScalingPoint, Series, SeriesKey};
use crate::summary::PointData;
use smtlab_stats as stats;
use smtlab_types::{Metric, Point};

/// The median of a point's primary metric, when it has one: a summary with a
/// finite median (a point whose every sample failed has none).
pub(crate) fn median_of(p: &PointData) -> Option<f64> {
    p.summary
        .summary
        .as_ref()
        .map(|s| s.median)
        .filter(|m| m.is_finite())
}

/// A median as a throughput: itself for a higher-is-better metric, its
/// reciprocal for a time. `None` unless the result is finite and positive:
/// a zero or negative throughput makes every ratio built on it meaningless.
pub fn throughput(metric: &Metric, median: f64) -> Option<f64> {
    let x = if metric.higher_is_better {
        median
    } else {
        1.0 / median
    };
    (x.is_finite() && x > 0.0).then_some(x)
}

/// The series a point belongs to.
pub fn key_of(point: &Point) -> SeriesKey {
    SeriesKey {
        program: point.program.label(),
        alloc: point.alloc.clone(),
        model: point.model.to_string(),
        placement: point.placement.clone(),
    }
}

/// A series' name in notes: `jbb (thread, compact, glibc)`.
pub(crate) fn describe(key: &SeriesKey) -> String {
    format!(
        "{} ({}, {}, {})",
        key.program, key.model, key.placement, key.alloc
    )
}

/// Every point (with or without results) by series, each ascending by N and
/// then by plan index, so the first point of an N is the one a duplicate N
/// defers to.
pub(crate) fn group(points: &[PointData]) -> BTreeMap<SeriesKey, Vec<&PointData>> {
    let mut out: BTreeMap<SeriesKey, Vec<&PointData>> = BTreeMap::new();
    for p in points {
        out.entry(key_of(&p.summary.point)).or_default().push(p);
    }
    for v in out.values_mut() {
        v.sort_by_key(|p| (p.summary.point.workers, p.summary.point.index));
    }
    out
}

/// The scaling series of a run, ordered by key, with `usl` left `None` (the
/// caller fits it: see [`super::usl::fit_series`]), and notes on what could
/// not be computed.
///
/// Points without results are left out of their series (and named in a
/// note); a series with none at all is left out entirely. Speedup needs the
/// series' N = 1 point: without one it is `None` for every point rather
/// than measured against another N, which would silently assume that N
/// scaled perfectly. Points whose metric differs from the series' first
/// point (which only a mixed-up store can produce) are left out: a ratio of
/// two different metrics means nothing.
pub fn build_series(points: &[PointData], seed: u64) -> (Vec<Series>, Vec<String>) {
    let mut series = Vec::new();
    let mut notes = Vec::new();
    for (key, members) in group(points) {
        let name = describe(&key);
        let (measured, failed): (Vec<&PointData>, Vec<&PointData>) =
            members.into_iter().partition(|p| median_of(p).is_some());
        if !failed.is_empty() {
            let ns: Vec<String> = failed
                .iter()
                .map(|p| p.summary.point.workers.to_string())
                .collect();
            notes.push(format!(
                "{name}: no successful samples at N = {}, so those points are left out of \
                 its scaling analysis.",
                ns.join(", ")
            ));
        }
        let Some(first) = measured.first() else {
            continue;
        };
        let metric = first.summary.point.metric.clone();
        let (same, other): (Vec<&PointData>, Vec<&PointData>) = measured
            .into_iter()
            .partition(|p| p.summary.point.metric == metric);
        if !other.is_empty() {
            notes.push(format!(
                "{name}: {} point(s) measured a metric other than {}, and are left out of \
                 its scaling analysis.",
                other.len(),
                metric.name
            ));
        }
        let base = same.iter().copied().find(|p| p.summary.point.workers == 1);
        let base_x = base.and_then(|b| median_of(b).and_then(|m| throughput(&metric, m)));
        if base.is_none() {
            notes.push(format!(
                "{name}: no N = 1 point was measured, so there is no speedup or efficiency \
                 (they are relative to one worker of the same series)."
            ));
        } else if base_x.is_none() {
            notes.push(format!(
                "{name}: the N = 1 point's median is not a positive number, so there is no \
                 speedup or efficiency."
            ));
        }
        let points = same
            .iter()
            .map(|p| scaling_point(p, &metric, base.zip(base_x), seed))
            .collect();
        series.push(Series {
            key,
            metric,
            points,
            usl: None,
        });
    }
    (series, notes)
}

/// One N of a series; `base` is the series' N = 1 point and its throughput.
fn scaling_point(
    p: &PointData,
    metric: &Metric,
    base: Option<(&PointData, f64)>,
    seed: u64,
) -> ScalingPoint {
    let summary = p.summary.summary.as_ref();
    let median = median_of(p).unwrap_or(f64::NAN);
    let workers = p.summary.point.workers;
    let mut out = ScalingPoint {
        workers,
        point_index: p.summary.point.index,
        median,
        ci95: summary.and_then(|s| s.ci95),
        speedup: None,
        speedup_ci95: None,
        efficiency: None,
    };
    let Some((b, base_x)) = base else {
        return out;
    };
    let Some(x) = throughput(metric, median) else {
        return out;
    };
    let speedup = x / base_x;
    out.speedup = Some(speedup);
    out.efficiency = Some(speedup / workers.max(1) as f64);
    out.speedup_ci95 = if std::ptr::eq(b, p) {
        // The baseline against itself is 1 by definition, not an estimate;
        // bootstrapping it against itself would invent an uncertainty. Still
        // no interval below 3 samples, as everywhere else.
        (finite_count(&p.values) >= 3).then_some((1.0, 1.0))
    } else {
        let ci = if metric.higher_is_better {
            stats::ratio_ci(&p.values, &b.values, seed)
        } else {
            stats::ratio_ci(&b.values, &p.values, seed)
        };
        // An infinite end (zeros among the samples) is no interval to draw.
        ci.map(|(_, ci)| ci)
            .filter(|(lo, hi)| lo.is_finite() && hi.is_finite())
    };
    out
}

fn finite_count(values: &[f64]) -> usize {
    values.iter().filter(|v| v.is_finite()).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{data, noisy, ops, point, wall};
    use smtlab_types::Model;

    #[test]
    fn speedup_and_efficiency_of_a_throughput_series() {
        let pts = vec![
            // Plan order is not N order: the series must sort.
            data(
                point(0, "jbb", Model::Thread, "compact", 4, ops()),
                &noisy(360.0, 0.01, 10, 1),
            ),
            data(
                point(1, "jbb", Model::Thread, "compact", 1, ops()),
                &noisy(100.0, 0.01, 10, 2),
            ),
            data(
                point(2, "jbb", Model::Thread, "compact", 2, ops()),
                &noisy(190.0, 0.01, 10, 3),
            ),
        ];
        let (series, notes) = build_series(&pts, 5);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(series.len(), 1);
        let s = &series[0];
        assert_eq!(s.key.program, "jbb");
        assert_eq!(s.key.model, "thread");
        let ns: Vec<usize> = s.points.iter().map(|p| p.workers).collect();
        assert_eq!(ns, [1, 2, 4]);
        assert_eq!(s.points[0].speedup, Some(1.0));
        assert_eq!(s.points[0].speedup_ci95, Some((1.0, 1.0)));
        let p4 = &s.points[2];
        assert_eq!(p4.point_index, 0);
        let sp = p4.speedup.unwrap();
        assert!((sp - 3.6).abs() < 0.1, "{sp}");
        assert!((p4.efficiency.unwrap() - sp / 4.0).abs() < 1e-12);
        let (lo, hi) = p4.speedup_ci95.unwrap();
        assert!(
            lo <= sp && sp <= hi && lo > 3.4 && hi < 3.8,
            "{lo} {sp} {hi}"
        );
        // The speedup is exactly the ratio of the medians.
        assert_eq!(sp, p4.median / s.points[0].median);
    }

    #[test]
    fn time_metric_speedup_is_inverted() {
        let pts = vec![
            data(
                point(0, "parfib", Model::Process, "scatter", 1, wall()),
                &noisy(8.0, 0.01, 10, 1),
            ),
            data(
                point(1, "parfib", Model::Process, "scatter", 2, wall()),
                &noisy(4.0, 0.01, 10, 2),
            ),
        ];
        let (series, _) = build_series(&pts, 5);
        let p2 = &series[0].points[1];
        let sp = p2.speedup.unwrap();
        assert!(
            (sp - 2.0).abs() < 0.05,
            "time halved is a speedup of 2: {sp}"
        );
        let (lo, hi) = p2.speedup_ci95.unwrap();
        assert!(lo <= sp && sp <= hi && lo > 1.9 && hi < 2.1, "{lo} {hi}");
        assert!((p2.efficiency.unwrap() - sp / 2.0).abs() < 1e-12);
    }

    #[test]
    fn no_n1_point_means_no_speedup_and_a_note() {
        let pts = vec![
            data(
                point(0, "jbb", Model::Thread, "compact", 2, ops()),
                &noisy(190.0, 0.01, 10, 1),
            ),
            data(
                point(1, "jbb", Model::Thread, "compact", 4, ops()),
                &noisy(360.0, 0.01, 10, 2),
            ),
        ];
        let (series, notes) = build_series(&pts, 5);
        assert!(series[0]
            .points
            .iter()
            .all(|p| p.speedup.is_none() && p.efficiency.is_none() && p.speedup_ci95.is_none()));
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("jbb (thread, compact, glibc): no N = 1 point"),
            "{notes:?}"
        );
    }

    #[test]
    fn series_are_split_by_model_and_points_without_results_left_out() {
        let pts = vec![
            data(
                point(0, "jbb", Model::Thread, "compact", 1, ops()),
                &[1.0; 5],
            ),
            data(
                point(1, "jbb", Model::Process, "compact", 1, ops()),
                &[1.0; 5],
            ),
            data(point(2, "jbb", Model::Process, "compact", 2, ops()), &[]),
            data(
                point(3, "jbb", Model::Process, "compact", 4, ops()),
                &[f64::NAN],
            ),
        ];
        let (series, notes) = build_series(&pts, 5);
        let models: Vec<&str> = series.iter().map(|s| s.key.model.as_str()).collect();
        assert_eq!(models, ["process", "thread"]);
        assert_eq!(series[0].points.len(), 1);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("N = 2, 4"), "{notes:?}");
        // Two samples a side: a speedup but no interval.
        let few = vec![
            data(point(0, "x", Model::Thread, "c", 1, ops()), &[1.0, 1.1]),
            data(point(1, "x", Model::Thread, "c", 2, ops()), &[2.0, 2.1]),
        ];
        let (series, _) = build_series(&few, 5);
        assert!(series[0].points[1].speedup.is_some());
        assert_eq!(series[0].points[0].speedup_ci95, None);
        assert_eq!(series[0].points[1].speedup_ci95, None);
    }

    #[test]
    fn throughput_rejects_nonpositive_and_nonfinite() {
        assert_eq!(throughput(&ops(), 5.0), Some(5.0));
        assert_eq!(throughput(&wall(), 4.0), Some(0.25));
        assert_eq!(throughput(&wall(), 0.0), None);
        assert_eq!(throughput(&ops(), 0.0), None);
        assert_eq!(throughput(&ops(), -1.0), None);
        assert_eq!(throughput(&ops(), f64::NAN), None);
    }
}
