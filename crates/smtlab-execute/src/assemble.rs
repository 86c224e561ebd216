//! One sample of a built-in workload, from its worker processes' reports:
//! per-worker rows, the totals, the status (failed, wrong result, missing
//! workers) and the metric. Uses `protocol`.

use std::collections::BTreeMap;

use smtlab_counters::perf_counters::sum_counters;
use smtlab_counters::rusage::sum_usage;
use smtlab_types::{CounterScope, Mode, Point, Program, Sample, SampleStatus, WorkerSample};

use crate::protocol::ProcessMeasurement;

/// Build the sample of a built-in workload from its workers' reports.
pub(crate) fn assemble_sample(
    point: &Point,
    seq: usize,
    warmup: bool,
    started_at: f64,
    failure: Option<(SampleStatus, String)>,
    reports: &[ProcessMeasurement],
) -> Sample {
    let (_, threads_per_proc) = point.model.shape(point.workers);
    let mut workers = Vec::new();
    for (rank, r) in reports.iter().enumerate() {
        for t in &r.threads {
            workers.push(WorkerSample {
                worker: rank * threads_per_proc + t.thread,
                rank,
                thread: t.thread,
                pid: r.pid,
                tid: Some(t.tid),
                cpu: t.cpu,
                last_cpu: t.last_cpu,
                ops: t.ops,
                start_s: t.start_s,
                end_s: t.end_s,
                counters: t.counters.clone(),
            });
        }
    }
    let start = workers
        .iter()
        .map(|w| w.start_s)
        .fold(f64::INFINITY, f64::min);
    let end = workers
        .iter()
        .map(|w| w.end_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let wall_s = if workers.is_empty() { 0.0 } else { end - start };
    let ops: u64 = workers.iter().map(|w| w.ops).sum();
    let counters = sum_counters(
        &workers
            .iter()
            .map(|w| w.counters.clone())
            .collect::<Vec<_>>(),
    );
    let mut usage = sum_usage(&reports.iter().map(|r| r.usage.clone()).collect::<Vec<_>>());
    usage.migrations = counters
        .iter()
        .find(|c| c.name == "cpu-migrations" && c.scope == CounterScope::All)
        .and_then(|c| c.value)
        .map(|v| v.round() as u64);
    let wrong = reports.iter().find_map(|r| r.wrong_result.clone());
    let extras = sum_extras(reports);
    let (status, reason) = match (failure, wrong) {
        (Some((s, r)), _) => (s, Some(r)),
        (None, Some(r)) => (SampleStatus::WrongResult, Some(r)),
        (None, None) if workers.len() != point.workers => (
            SampleStatus::Failed,
            Some(format!(
                "{} of {} workers reported",
                workers.len(),
                point.workers
            )),
        ),
        (None, None) => (SampleStatus::Ok, None),
    };
    let metric = if status == SampleStatus::Ok && wall_s > 0.0 {
        match point.mode {
            Mode::FixedTime { .. } => {
                time_metric(point).and_then(|m| m.value(ops, wall_s, point.workers))
            }
            Mode::FixedWork { .. } => Some(wall_s),
        }
    } else {
        None
    };
    // A success must carry a value: a window too short for one operation
    // (`--duration 1ns`) measured nothing, and a rate of 0 or "no value"
    // stored as a success would pass for a result.
    let (status, reason, metric) = match (status, metric) {
        (SampleStatus::Ok, _) if ops == 0 && matches!(point.mode, Mode::FixedTime { .. }) => (
            SampleStatus::Failed,
            Some(format!(
                "no operation completed in the measured window ({wall_s:.1e} s); give a longer \
                 --duration"
            )),
            None,
        ),
        (SampleStatus::Ok, Some(v)) if v.is_finite() => (status, reason, Some(v)),
        (SampleStatus::Ok, other) => (
            SampleStatus::Failed,
            Some(format!(
                "the workload's metric is {} after {ops} operations in {wall_s} s",
                other.map_or("undefined".to_string(), |v| v.to_string())
            )),
            None,
        ),
        (s, _) => (s, reason, None),
    };
    Sample {
        seq,
        warmup,
        status,
        reason,
        started_at,
        wall_s,
        ops: Some(ops),
        metric,
        usage,
        counters,
        workers,
        extras,
    }
}

/// The workers' extra observations summed over processes: they are
/// additive counts (objects, frames), so the sample's value is the total.
fn sum_extras(reports: &[ProcessMeasurement]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for r in reports {
        // A non-finite count would not survive JSON (NaN is `null`): a
        // workload reporting one reports nothing under that name.
        for (k, v) in r.extras.iter().filter(|(_, v)| v.is_finite()) {
            *out.entry(k.clone()).or_insert(0.0) += v;
        }
    }
    out
}

/// How a built-in workload turns a fixed-time sample into its metric.
fn time_metric(point: &Point) -> Option<smtlab_workloads::TimeMetric> {
    match &point.program {
        Program::Builtin { workload, .. } => {
            smtlab_workloads::builtin(workload).map(|w| w.info().time_metric)
        }
        Program::Command { .. }
        | Program::CoRun { .. }
        | Program::Server { .. }
        | Program::Ranks { .. } => None,
    }
}
