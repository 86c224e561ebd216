//! Shared fixtures for the analysis tests: points and their results built
//! from synthetic metric values, through the real `summary::summarize_point`, so the
//! analysis is tested on the same `PointSummary`s a stored run produces.

use std::collections::BTreeMap;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::summary;
use crate::summary::PointData;
use smtlab_types::{Metric, Mode, Model, Point, Program, Spawn};
use smtlab_types::{ResourceUsage, Sample, SampleStatus};

/// A throughput metric (higher is better).
pub(crate) fn ops() -> Metric {
    Metric {
        name: "ops_per_s".into(),
        unit: "ops/s".into(),
        higher_is_better: true,
    }
}

/// A time metric (lower is better).
pub(crate) fn wall() -> Metric {
    Metric {
        name: "wall_time".into(),
        unit: "s".into(),
        higher_is_better: false,
    }
}

/// A point of built-in workload `program`, unpinned, allocator `glibc`.
pub(crate) fn point(
    index: usize,
    program: &str,
    model: Model,
    placement: &str,
    workers: usize,
    metric: Metric,
) -> Point {
    Point {
        index,
        program: Program::Builtin {
            workload: program.into(),
            params: BTreeMap::new(),
        },
        model,
        spawn: Spawn::Exec,
        placement: placement.into(),
        workers,
        cpus: None,
        oversubscription: 1.0,
        alloc: "glibc".into(),
        mode: Mode::FixedTime { seconds: 1.0 },
        metric,
    }
}

/// The same point pinned on `cpus`.
pub(crate) fn pinned(mut p: Point, cpus: &[u32]) -> Point {
    p.cpus = Some(cpus.to_vec());
    p
}

/// A point's results: one successful measured sample per value (plus a
/// warm-up, which the summary must ignore).
pub(crate) fn data(point: Point, values: &[f64]) -> PointData {
    let sample = |seq: usize, warmup: bool, v: f64| Sample {
        seq,
        warmup,
        status: SampleStatus::Ok,
        reason: None,
        started_at: 0.0,
        wall_s: 1.0,
        ops: None,
        metric: Some(v),
        usage: ResourceUsage::default(),
        counters: Vec::new(),
        workers: Vec::new(),
        extras: Default::default(),
    };
    let mut samples = vec![sample(0, true, 1e9)];
    samples.extend(
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| sample(i + 1, false, v)),
    );
    let summary = summary::summarize_point(point.index as i64 + 1, point, &samples, 7);
    PointData {
        summary,
        values: values.to_vec(),
    }
}

/// `n` values `center * (1 + u)` with `u` uniform in `[-rel, rel]`, seeded.
pub(crate) fn noisy(center: f64, rel: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| center * (1.0 + rel * (2.0 * unit(&mut rng) - 1.0)))
        .collect()
}

/// A uniform value in `[0, 1)`.
pub(crate) fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}
