//! One sample of a [`Program::CoRun`] point: several programs, each on its
//! own CPU, running for the same window (the pairs study).
//!
//! Each part runs its own samples back to back, one smtlab thread per part,
//! all started together: part k's program is a one-worker point pinned to
//! the point's `cpus[k]`, sampled by `builtin` or `command` as in any run.
//! A part stops counting once the window has passed, but keeps running
//! (uncounted) samples until every part has stopped counting: so every
//! counted sample of every part ran while all the others were running too.
//! (What a partner runs during a counted sample may be its set-up phase
//! rather than its measured loop; keep set-ups short against the window.)
//!
//! A part's rate is the mean over its counted samples of its metric, as a
//! rate: the metric itself when higher is better (operations/s), its
//! inverse when lower is better (1/seconds for fixed work, 1/ns for a
//! latency). The sample stores each part's rate as the extra `rate.K` and
//! its counted samples as `samples.K`; its metric is part 0's rate.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use smtlab_types::extras::co_run;
use smtlab_types::{Mode, Model, Outcome, Point, Program, ResourceUsage, Sample, SampleStatus};

use smtlab_plan::ProgramParams;

use crate::context::SampleContext;

/// One part's result: its counted samples' rates, or why it failed.
enum PartEnd {
    Rates(Vec<f64>),
    Failed(SampleStatus, String),
    Interrupted,
}

/// Take one sample of a co-run point, `planned` its parts' parameters as
/// planned, in the order of its parts.
pub fn run(
    point: &Point,
    planned: &[ProgramParams],
    ctx: &SampleContext,
    seq: usize,
    warmup: bool,
) -> Outcome {
    let Program::CoRun { parts } = &point.program else {
        unreachable!("co_run::run is only called for co-run points");
    };
    let window = match point.mode {
        Mode::FixedTime { seconds } => Duration::from_secs_f64(seconds),
        Mode::FixedWork { .. } => Duration::ZERO,
    };
    let started_at = smtlab_sys::unix_now_s();
    let start = Instant::now();
    let counting = AtomicUsize::new(parts.len());
    let abort = AtomicBool::new(false);
    let barrier = Barrier::new(parts.len());
    let ends: Vec<PartEnd> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter()
            .enumerate()
            .map(|(k, part)| {
                let one = Point {
                    index: point.index,
                    program: (*part.program).clone(),
                    model: Model::Thread,
                    spawn: point.spawn,
                    placement: point.placement.clone(),
                    workers: 1,
                    cpus: point.cpus.as_ref().map(|c| vec![c[k]]),
                    oversubscription: 1.0,
                    alloc: point.alloc.clone(),
                    mode: part.mode,
                    metric: smtlab_plan::program_metric(&part.program, part.mode),
                };
                let (counting, abort, barrier) = (&counting, &abort, &barrier);
                let planned = planned.get(k);
                std::thread::Builder::new()
                    .name(format!("co-run-{k}"))
                    .spawn_scoped(s, move || {
                        barrier.wait();
                        let part = Part { one: &one, planned };
                        run_part(part, ctx, seq, window, start, counting, abort)
                    })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or(PartEnd::Failed(
                    SampleStatus::Failed,
                    "a co-run thread panicked".into(),
                )),
                Err(e) => PartEnd::Failed(
                    SampleStatus::Failed,
                    format!("cannot start a thread for a co-running program: {e}"),
                ),
            })
            .collect()
    });
    let wall_s = start.elapsed().as_secs_f64();
    let mut extras = std::collections::BTreeMap::new();
    let mut metric = None;
    for (k, end) in ends.into_iter().enumerate() {
        match end {
            PartEnd::Interrupted => return Outcome::Interrupted,
            PartEnd::Failed(status, why) => {
                let name = &parts[k].name;
                return Outcome::Measured(Box::new(failed(
                    seq,
                    warmup,
                    started_at,
                    wall_s,
                    status,
                    format!("{name} (part {k}): {why}"),
                )));
            }
            PartEnd::Rates(rates) => {
                let rate = rates.iter().sum::<f64>() / rates.len() as f64;
                extras.insert(co_run::rate_key(k), rate);
                extras.insert(co_run::samples_key(k), rates.len() as f64);
                if k == 0 {
                    metric = Some(rate);
                }
            }
        }
    }
    Outcome::Measured(Box::new(Sample {
        seq,
        warmup,
        status: SampleStatus::Ok,
        reason: None,
        started_at,
        wall_s,
        ops: None,
        metric,
        usage: ResourceUsage::default(),
        counters: Vec::new(),
        workers: Vec::new(),
        extras,
    }))
}

/// One part of a co-run: its one-worker point and its parameters as
/// planned (`None`: not planned).
struct Part<'a> {
    one: &'a Point,
    planned: Option<&'a ProgramParams>,
}

/// One part's loop: samples until the window has passed (counted), then
/// uncounted ones until every part has stopped counting.
fn run_part(
    Part { one, planned }: Part<'_>,
    ctx: &SampleContext,
    seq: usize,
    window: Duration,
    start: Instant,
    counting: &AtomicUsize,
    abort: &AtomicBool,
) -> PartEnd {
    let mut rates = Vec::new();
    let mut done = false;
    // Sub-sample numbers only label the inner samples (never stored).
    let mut inner = seq * 1000;
    loop {
        if abort.load(Ordering::SeqCst) {
            return PartEnd::Failed(SampleStatus::Failed, "another part failed".into());
        }
        let outcome = match (&one.program, planned) {
            (Program::Builtin { .. }, Some(ProgramParams::Builtin(config))) => {
                crate::builtin::run(one, config, ctx, inner, false)
            }
            (Program::Builtin { .. }, _) => {
                let why = format!(
                    "{}: its parameters were not planned with the run",
                    one.program.label()
                );
                return PartEnd::Failed(SampleStatus::Failed, why);
            }
            (Program::Command { .. }, _) => crate::command::run(one, ctx, inner, false),
            (Program::CoRun { .. }, _) => {
                return PartEnd::Failed(SampleStatus::Failed, "a co-run inside a co-run".into())
            }
            (Program::Server { .. }, _) => {
                return PartEnd::Failed(SampleStatus::Failed, "a server inside a co-run".into())
            }
            (Program::Ranks { .. }, _) => {
                return PartEnd::Failed(SampleStatus::Failed, "DSM ranks inside a co-run".into())
            }
        };
        let s = match outcome {
            Outcome::Measured(s) => *s,
            Outcome::Interrupted => {
                abort.store(true, Ordering::SeqCst);
                return PartEnd::Interrupted;
            }
        };
        inner += 1;
        if !done {
            match (s.status, s.metric) {
                (SampleStatus::Ok, Some(m)) if m > 0.0 && m.is_finite() => {
                    rates.push(if one.metric.higher_is_better {
                        m
                    } else {
                        1.0 / m
                    });
                }
                (status, _) => {
                    // The others stop at their next sample.
                    abort.store(true, Ordering::SeqCst);
                    let why = s.reason.unwrap_or_else(|| "no metric".into());
                    let status = if status == SampleStatus::Ok {
                        SampleStatus::Failed
                    } else {
                        status
                    };
                    return PartEnd::Failed(status, why);
                }
            }
            if start.elapsed() >= window {
                done = true;
                counting.fetch_sub(1, Ordering::SeqCst);
            }
        }
        if done && counting.load(Ordering::SeqCst) == 0 {
            return PartEnd::Rates(rates);
        }
    }
}

fn failed(
    seq: usize,
    warmup: bool,
    started_at: f64,
    wall_s: f64,
    status: SampleStatus,
    reason: String,
) -> Sample {
    Sample::without_result(seq, warmup, status, reason, started_at, wall_s)
}
