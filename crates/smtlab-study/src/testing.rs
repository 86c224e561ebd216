//! Builders the tests share: a study plan's base specification, and the
//! samples, points' results and runs the findings tests make from plain
//! numbers, so each test states only what it is about.

use smtlab_analyse::analysis::PointData;
use smtlab_analyse::summary::{summarize_point, RunData};
use smtlab_types::{Point, ResourceUsage, RunSpec, Sample, SampleStatus, StudyKind};

use crate::planning::{base_spec, glibc_only, StudyRequest};

/// What `planning` hands a study's own plan (web, chat, comm): glibc, seed
/// 1, `min_samples` to `max_samples` samples; the rest left to the study.
pub(crate) fn plan_base(min_samples: usize, max_samples: usize) -> RunSpec {
    let given = StudyRequest {
        seed: 1,
        ..StudyRequest::default()
    };
    RunSpec {
        warmup: 0,
        min_samples,
        max_samples,
        precision: 0.05,
        max_time_s: 10.0,
        ..base_spec(StudyKind::Web, &given, &glibc_only(), None)
    }
}

/// One successful sample measuring `metric` in one second of wall time.
pub(crate) fn sample(seq: usize, warmup: bool, metric: f64) -> Sample {
    Sample {
        seq,
        warmup,
        status: SampleStatus::Ok,
        reason: None,
        started_at: 0.0,
        wall_s: 1.0,
        ops: None,
        metric: Some(metric),
        usage: ResourceUsage::default(),
        counters: Vec::new(),
        workers: Vec::new(),
        extras: Default::default(),
    }
}

/// A point measured with `values`, one successful sample each.
pub(crate) fn data(point: Point, values: &[f64]) -> PointData {
    let samples: Vec<Sample> = values
        .iter()
        .enumerate()
        .map(|(seq, &v)| sample(seq, false, v))
        .collect();
    PointData {
        summary: summarize_point(point.index as i64 + 1, point, &samples, 7),
        values: values.to_vec(),
    }
}

/// A run of these points and their samples, summarised as `report_run`
/// does: the values are the successful measured samples' metrics.
pub(crate) fn run(points: Vec<(Point, Vec<Sample>)>) -> RunData {
    let mut data = RunData {
        points: Vec::new(),
        samples: Vec::new(),
    };
    for (point, samples) in points {
        let summary = summarize_point(point.index as i64 + 1, point.clone(), &samples, 7);
        let values = samples
            .iter()
            .filter(|s| !s.warmup && s.status == SampleStatus::Ok)
            .filter_map(|s| s.metric)
            .collect();
        data.points.push(PointData { summary, values });
        data.samples.push((point, samples));
    }
    data
}

/// `n` values spread evenly ±`rel` around `center`.
pub(crate) fn around(center: f64, rel: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let u = if n == 1 {
                0.0
            } else {
                2.0 * i as f64 / (n - 1) as f64 - 1.0
            };
            center * (1.0 + rel * u)
        })
        .collect()
}

/// The verdict that starts with `start` (the test fails naming all of them
/// when there is none).
pub(crate) fn find<'a>(v: &'a [String], start: &str) -> &'a str {
    v.iter()
        .find(|s| s.starts_with(start))
        .unwrap_or_else(|| panic!("{start}: {v:#?}"))
}
