//! Per-point results of a stored run: statistics of the primary metric over
//! the successful measured samples (warm-ups excluded), failures with their
//! reasons, and the median of every counter. Read from the store, so `run`,
//! `show` and `--resume` all report the same numbers.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::derived::{derived, Derived};
use smtlab_stats::{self as stats, Summary};
use smtlab_store::{Store, StoreError};
use smtlab_types::extras::allocprobe;
use smtlab_types::Point;
use smtlab_types::{CounterScope, CounterStatus, CounterValue, Sample, SampleStatus};

/// One point's results, as the analysis needs them.
#[derive(Debug, Clone, Serialize)]
pub struct PointData {
    /// Its statistics. (Serialized as `report`, the name it had.)
    #[serde(rename = "report")]
    pub summary: PointSummary,
    /// Primary-metric values of the successful measured samples (warm-ups
    /// and failed samples excluded), in sample order.
    pub values: Vec<f64>,
}

/// A counter over a point's samples.
#[derive(Debug, Clone, Serialize)]
pub struct CounterSummary {
    pub name: String,
    pub scope: CounterScope,
    pub status: CounterStatus,
    /// Median over samples of the per-sample total (summed over threads).
    pub median: Option<f64>,
    /// Lowest fraction of time a counter was actually counting
    /// (multiplexing); 1.0 when never multiplexed.
    pub min_fraction_running: Option<f64>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PointSummary {
    pub point_id: i64,
    pub point: Point,
    /// Successful measured samples: the statistics' `n`.
    pub samples: usize,
    pub warmups: usize,
    pub failed: usize,
    pub summary: Option<Summary>,
    /// Seqs flagged as outliers.
    pub outliers: Vec<usize>,
    /// Distinct reasons of failed samples.
    pub failures: Vec<String>,
    pub counters: Vec<CounterSummary>,
    /// CPI, IPC and misses per 1000 instructions, from the counters' medians.
    pub derived: Derived,
    /// Medians of the resource usage over successful measured samples.
    pub user_s: Option<f64>,
    pub sys_s: Option<f64>,
    pub voluntary_cs: Option<f64>,
    pub involuntary_cs: Option<f64>,
    pub minor_faults: Option<f64>,
    pub migrations: Option<f64>,
    pub peak_rss_kb: Option<f64>,
    pub pss_kb: Option<f64>,
    /// Transparent huge pages in use (AnonHugePages), median.
    pub anon_huge_kb: Option<f64>,
    /// Per-worker operations (median over samples), for fairness.
    pub worker_ops: Vec<f64>,
    /// Why a finished point has fewer successful samples than
    /// `--min-samples`, when the reason is not its failures (those are in
    /// `failures`): its `--max-time` ran out. `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<String>,
    /// The workload's extra observations: for each name, the median over
    /// the successful measured samples that have it. Derived ratios are
    /// added where their parts exist: `foreign_share` is the median over
    /// samples of `foreign_objects / live_objects` (a median of ratios, not
    /// a ratio of medians, so it is the share a typical sample saw).
    pub extras: BTreeMap<String, f64>,
}

/// Medians of the samples' extras, plus the derived ratios.
fn extras_of(ok: &[&Sample]) -> BTreeMap<String, f64> {
    let names: BTreeSet<&String> = ok.iter().flat_map(|s| s.extras.keys()).collect();
    let mut out: BTreeMap<String, f64> = names
        .into_iter()
        .filter_map(|k| {
            Some((
                k.clone(),
                median_of(ok.iter().map(|s| s.extras.get(k).copied()))?,
            ))
        })
        .collect();
    let share = median_of(ok.iter().map(|s| {
        match (
            s.extras.get(allocprobe::FOREIGN_OBJECTS),
            s.extras.get(allocprobe::LIVE_OBJECTS),
        ) {
            (Some(&f), Some(&l)) if l > 0.0 => Some(f / l),
            _ => None,
        }
    }));
    if let Some(share) = share {
        out.insert(allocprobe::FOREIGN_SHARE.to_string(), share);
    }
    out
}

fn median_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    (!v.is_empty()).then(|| stats::median(&v))
}

/// Summaries of every point of `run_id`, in plan order.
pub fn point_summaries(
    store: &Store,
    run_id: i64,
    seed: u64,
) -> Result<Vec<PointSummary>, StoreError> {
    let limits = SampleLimits::of_run(store, run_id)?;
    let mut out = Vec::new();
    for (point_id, point) in store.points(run_id)? {
        let samples = store.samples(point_id)?;
        let mut summary = summarize_point(point_id, point, &samples, seed);
        summary.shortfall = limits.and_then(|l| l.shortfall(&samples));
        out.push(summary);
    }
    Ok(out)
}

/// What a finished run asked of each point: enough to tell why a point has
/// fewer samples than it should.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleLimits {
    pub min_samples: usize,
    pub max_samples: usize,
    pub max_time_s: f64,
    pub warmup: usize,
}

impl SampleLimits {
    /// The limits of `run_id` if it is complete (an unfinished point is
    /// short for that reason alone) and its configuration names them.
    pub fn of_run(store: &Store, run_id: i64) -> Result<Option<SampleLimits>, StoreError> {
        let rec = store.run(run_id)?;
        if rec.status != smtlab_types::RunStatus::Complete {
            return Ok(None);
        }
        let c = &rec.config_json;
        let n = |k: &str| c.get(k).and_then(|v| v.as_u64()).map(|v| v as usize);
        Ok(
            match (
                n("min_samples"),
                n("max_samples"),
                c.get("max_time_s").and_then(|v| v.as_f64()),
            ) {
                (Some(min_samples), Some(max_samples), Some(max_time_s)) => Some(SampleLimits {
                    min_samples,
                    max_samples,
                    max_time_s,
                    warmup: n("warmup").unwrap_or(0),
                }),
                _ => None,
            },
        )
    }

    /// Why a point of a complete run with these `samples` fell short of
    /// `--min-samples`, when it was its time budget. The measurement loop
    /// ends a point for precision (only with `--min-samples` reached), for
    /// `--max-samples` (more than the minimum, or twice as many attempts
    /// when samples fail), for three failures in a row, or for
    /// `--max-time`; so a short point whose last samples did not all fail
    /// and whose attempts stayed under the cap ran out of time.
    pub fn shortfall(&self, samples: &[Sample]) -> Option<String> {
        let measured: Vec<&Sample> = samples.iter().filter(|s| !s.warmup).collect();
        let ok = measured
            .iter()
            .filter(|s| s.status == SampleStatus::Ok && s.metric.is_some())
            .count();
        if ok >= self.min_samples {
            return None;
        }
        let failed_out = measured.len() >= 3
            && measured[measured.len() - 3..]
                .iter()
                .all(|s| s.status != SampleStatus::Ok);
        if failed_out || measured.len() >= self.max_samples.saturating_mul(2) {
            return None;
        }
        // The budget is spent on whole attempts (set-up, the window,
        // tear-down; failures too), of which a sample stores only its
        // window: say what was spent on, not a sum that cannot reach it.
        // (A fold from 0.0: `Sum` of no f64 is -0.0, printed "-0.00".)
        let window = |warmup: bool| -> f64 {
            samples
                .iter()
                .filter(|s| s.warmup == warmup)
                .fold(0.0, |a, s| a + s.wall_s)
        };
        let warmups = samples.iter().filter(|s| s.warmup).count();
        let failed = measured.len() - ok;
        Some(format!(
            "{ok} of --min-samples {} samples measured: its --max-time {} s ran out; it counts \
             every attempt whole, set-up and tear-down included ({} attempt(s): {failed} \
             failed, {warmups} warm-up(s); measured windows {:.2} s, warm-up windows {:.2} s); \
             raise --max-time for the full count",
            self.min_samples,
            self.max_time_s,
            samples.len(),
            window(false),
            window(true),
        ))
    }
}

/// Every point of a run with its raw values and stored samples: what the
/// analysis and the report read.
#[derive(Debug, Clone)]
pub struct RunData {
    pub points: Vec<PointData>,
    /// Every stored sample of every point (warm-ups and failures too).
    pub samples: Vec<(Point, Vec<Sample>)>,
}

/// Load a run for analysis, in plan order.
pub fn run_data(store: &Store, run_id: i64, seed: u64) -> Result<RunData, StoreError> {
    let mut data = RunData {
        points: Vec::new(),
        samples: Vec::new(),
    };
    let limits = SampleLimits::of_run(store, run_id)?;
    for (point_id, point) in store.points(run_id)? {
        let samples = store.samples(point_id)?;
        let values = samples
            .iter()
            .filter(|s| !s.warmup && s.status == SampleStatus::Ok)
            .filter_map(|s| s.metric)
            .collect();
        let mut summary = summarize_point(point_id, point.clone(), &samples, seed);
        summary.shortfall = limits.and_then(|l| l.shortfall(&samples));
        data.points.push(PointData { summary, values });
        data.samples.push((point, samples));
    }
    Ok(data)
}

/// The summary of one point from its samples.
pub fn summarize_point(point_id: i64, point: Point, samples: &[Sample], seed: u64) -> PointSummary {
    let measured: Vec<&Sample> = samples.iter().filter(|s| !s.warmup).collect();
    let ok: Vec<&Sample> = measured
        .iter()
        .copied()
        .filter(|s| s.status == SampleStatus::Ok && s.metric.is_some())
        .collect();
    let values: Vec<f64> = ok.iter().filter_map(|s| s.metric).collect();
    let summary = (!values.is_empty()).then(|| stats::summarize(&values, seed));
    let outliers = summary
        .as_ref()
        .map(|s| s.outliers.iter().map(|&i| ok[i].seq).collect())
        .unwrap_or_default();
    let mut failures: Vec<String> = Vec::new();
    for s in samples.iter().filter(|s| s.status != SampleStatus::Ok) {
        let r = format!(
            "{}: {}",
            s.status.as_str(),
            s.reason.as_deref().unwrap_or("no reason given")
        );
        if !failures.contains(&r) {
            failures.push(r);
        }
    }
    let mut counters = Vec::new();
    if let Some(first) = ok.first() {
        for c in &first.counters {
            let mine: Vec<_> = ok
                .iter()
                .filter_map(|s| {
                    s.counters
                        .iter()
                        .find(|x| x.name == c.name && x.scope == c.scope)
                })
                .collect();
            let all_ok = mine.iter().all(|x| x.status == CounterStatus::Ok);
            counters.push(CounterSummary {
                name: c.name.clone(),
                scope: c.scope,
                status: mine
                    .iter()
                    .map(|x| x.status)
                    .find(|s| *s != CounterStatus::Ok)
                    .unwrap_or(CounterStatus::Ok),
                median: if all_ok {
                    median_of(mine.iter().map(|x| x.value))
                } else {
                    None
                },
                min_fraction_running: mine
                    .iter()
                    .filter_map(|x| x.fraction_running)
                    .reduce(f64::min),
                reason: mine.iter().find_map(|x| x.reason.clone()),
            });
        }
    }
    let workers = point.workers;
    let worker_ops = (0..workers)
        .map(|w| {
            median_of(ok.iter().map(|s| {
                s.workers
                    .iter()
                    .find(|x| x.worker == w)
                    .map(|x| x.ops as f64)
            }))
            .unwrap_or(0.0)
        })
        .collect();
    let medians: Vec<CounterValue> = counters
        .iter()
        .map(|c| CounterValue {
            name: c.name.clone(),
            scope: c.scope,
            status: c.status,
            raw: None,
            value: c.median,
            fraction_running: c.min_fraction_running,
            reason: c.reason.clone(),
        })
        .collect();
    PointSummary {
        point_id,
        derived: derived(&medians),
        samples: ok.len(),
        warmups: samples.iter().filter(|s| s.warmup).count(),
        failed: samples
            .iter()
            .filter(|s| s.status != SampleStatus::Ok)
            .count(),
        summary,
        outliers,
        failures,
        counters,
        user_s: median_of(ok.iter().map(|s| s.usage.user_s)),
        sys_s: median_of(ok.iter().map(|s| s.usage.sys_s)),
        voluntary_cs: median_of(ok.iter().map(|s| s.usage.voluntary_cs.map(|v| v as f64))),
        involuntary_cs: median_of(ok.iter().map(|s| s.usage.involuntary_cs.map(|v| v as f64))),
        minor_faults: median_of(ok.iter().map(|s| s.usage.minor_faults.map(|v| v as f64))),
        migrations: median_of(ok.iter().map(|s| s.usage.migrations.map(|v| v as f64))),
        peak_rss_kb: median_of(ok.iter().map(|s| s.usage.peak_rss_kb.map(|v| v as f64))),
        pss_kb: median_of(ok.iter().map(|s| s.usage.pss_kb.map(|v| v as f64))),
        anon_huge_kb: median_of(ok.iter().map(|s| s.usage.anon_huge_kb.map(|v| v as f64))),
        worker_ops,
        extras: extras_of(&ok),
        point,
        shortfall: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_types::ResourceUsage;
    use smtlab_types::{Metric, Mode, Model, Program, Spawn};

    fn point() -> Point {
        Point {
            index: 0,
            program: Program::Builtin {
                workload: "allocprobe".into(),
                params: BTreeMap::new(),
            },
            model: Model::Thread,
            spawn: Spawn::Exec,
            placement: "compact".into(),
            workers: 2,
            cpus: None,
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: Mode::FixedTime { seconds: 1.0 },
            metric: Metric {
                name: "throughput".into(),
                unit: "allocs/s".into(),
                higher_is_better: true,
            },
        }
    }

    fn sample(seq: usize, status: SampleStatus, extras: &[(&str, f64)]) -> Sample {
        Sample {
            seq,
            warmup: seq == 0,
            status,
            reason: None,
            started_at: 0.0,
            wall_s: 1.0,
            ops: Some(10),
            metric: (status == SampleStatus::Ok).then_some(10.0),
            usage: ResourceUsage::default(),
            counters: Vec::new(),
            workers: Vec::new(),
            extras: extras.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
        }
    }

    /// A point that ran out of time says what the time went on: whole
    /// attempts, failures among them, and never "-0.00 s" of warm-ups.
    #[test]
    fn a_shortfall_names_the_attempts_that_spent_the_time() {
        let limits = SampleLimits {
            min_samples: 3,
            max_samples: 3,
            max_time_s: 8.0,
            warmup: 0,
        };
        let mut failed = sample(1, SampleStatus::Failed, &[]);
        failed.wall_s = 0.0;
        let mut ok = sample(2, SampleStatus::Ok, &[]);
        ok.wall_s = 0.37;
        let text = limits.shortfall(&[failed, ok]).unwrap();
        assert_eq!(
            text,
            "1 of --min-samples 3 samples measured: its --max-time 8 s ran out; it counts every \
             attempt whole, set-up and tear-down included (2 attempt(s): 1 failed, 0 warm-up(s); \
             measured windows 0.37 s, warm-up windows 0.00 s); raise --max-time for the full count"
        );
        // Enough samples: no shortfall.
        let three: Vec<Sample> = (1..4).map(|i| sample(i, SampleStatus::Ok, &[])).collect();
        assert_eq!(limits.shortfall(&three), None);
    }

    /// Medians over successful measured samples only; the foreign share is
    /// the median of per-sample ratios; a name some samples lack is the
    /// median of those that have it.
    #[test]
    fn extras_are_medians_with_a_derived_foreign_share() {
        let samples = [
            // Warm-up and failure: ignored.
            sample(
                0,
                SampleStatus::Ok,
                &[("live_objects", 1.0), ("foreign_objects", 1.0)],
            ),
            sample(1, SampleStatus::WrongResult, &[("live_objects", 9e9)]),
            sample(
                2,
                SampleStatus::Ok,
                &[("live_objects", 100.0), ("foreign_objects", 10.0)],
            ),
            sample(
                3,
                SampleStatus::Ok,
                &[("live_objects", 200.0), ("foreign_objects", 60.0)],
            ),
            sample(
                4,
                SampleStatus::Ok,
                &[
                    ("live_objects", 400.0),
                    ("foreign_objects", 80.0),
                    ("frames", 7.0),
                ],
            ),
        ];
        let p = point();
        let r = summarize_point(1, p.clone(), &samples, 1);
        let want: BTreeMap<String, f64> = [
            ("live_objects", 200.0),
            ("foreign_objects", 60.0),
            ("frames", 7.0),
            // Ratios 0.1, 0.3, 0.2: median 0.2 (the ratio of medians would
            // be 0.3).
            ("foreign_share", 0.2),
        ]
        .iter()
        .map(|&(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(r.extras.len(), want.len());
        for (k, v) in &want {
            assert!((r.extras[k] - v).abs() < 1e-12, "{k}: {}", r.extras[k]);
        }

        // No extras (most workloads), or no live objects: no share.
        let plain = [sample(1, SampleStatus::Ok, &[])];
        assert!(summarize_point(1, p.clone(), &plain, 1).extras.is_empty());
        let empty = [sample(
            1,
            SampleStatus::Ok,
            &[("live_objects", 0.0), ("foreign_objects", 0.0)],
        )];
        let r = summarize_point(1, p, &empty, 1);
        assert!(!r.extras.contains_key("foreign_share"));
        assert_eq!(r.extras["live_objects"], 0.0);
    }
}
