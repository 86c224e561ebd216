//! The measurement loop of a run: interleaved rounds over the points,
//! warm-ups, adaptive repetition, every sample committed to the log as
//! soon as it is measured, and events for whoever shows progress.
//!
//! Each round measures every still-active point once, in a seeded random
//! order ([`crate::schedule`]), so slow drift of the machine (thermal,
//! background load) spreads over all points instead of biasing the ones
//! measured last. A point is active until its stop rule says so
//! ([`crate::stop_rule::should_stop`]) or it fails [`MAX_FAILURES_IN_A_ROW`]
//! times in a row. The engine never prints: it emits [`Event`]s.
//!
//! Samples come from a [`Sampler`] and go to a [`SampleLog`]: the real ones
//! run workers (`smtlab-execute`) and commit to SQLite (`smtlab-store`,
//! which implements the log), test doubles return fixed values and keep
//! samples in memory.

use smtlab_stats as stats;
use smtlab_types::{Outcome, Point, RunSpec, Sample, SampleLog, SampleStatus};

use crate::sampler::Sampler;
use crate::schedule::Scheduler;
use crate::stop_rule::{should_stop, StopDecision, StopRule};

/// A point that keeps failing is given up (with a warning) after this many
/// failures in a row; the sweep goes on with the others.
pub const MAX_FAILURES_IN_A_ROW: usize = 3;

/// What the engine tells its observer.
#[derive(Debug)]
pub enum Event<'a> {
    /// A sample was measured and committed.
    Sample {
        point: &'a Point,
        sample: &'a Sample,
        /// Samples (warm-ups included) this point has now.
        taken: usize,
    },
    /// A point needs no more samples.
    PointDone {
        point: &'a Point,
        why: String,
    },
    Warning(String),
}

pub trait EventSink {
    fn event(&mut self, e: Event<'_>);
}

/// How a run's measurement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    Complete,
    Interrupted,
}

/// Per-point progress, rebuilt from the sample log on resume.
struct PointState {
    point_id: i64,
    next_seq: usize,
    warmups: usize,
    /// Metric values of successful measured samples, and their seqs.
    values: Vec<f64>,
    seqs: Vec<usize>,
    attempts: usize,
    failures_in_a_row: usize,
    elapsed_s: f64,
    done: bool,
}

impl PointState {
    fn from_samples(point_id: i64, samples: &[Sample]) -> PointState {
        let mut s = PointState {
            point_id,
            next_seq: samples.iter().map(|x| x.seq + 1).max().unwrap_or(0),
            warmups: 0,
            values: Vec::new(),
            seqs: Vec::new(),
            attempts: 0,
            failures_in_a_row: 0,
            elapsed_s: 0.0,
            done: false,
        };
        for x in samples {
            s.record(x, x.wall_s);
        }
        s
    }

    fn record(&mut self, x: &Sample, elapsed_s: f64) {
        self.elapsed_s += elapsed_s;
        if x.warmup {
            self.warmups += 1;
            return;
        }
        self.attempts += 1;
        match (x.status, x.metric) {
            (SampleStatus::Ok, Some(v)) => {
                self.values.push(v);
                self.seqs.push(x.seq);
                self.failures_in_a_row = 0;
            }
            _ => self.failures_in_a_row += 1,
        }
    }
}

/// Measure `points` (each with its id in `log`) until every one is done or
/// the sampler reports an interruption. Resumes from what `log` already
/// holds: a point's committed samples count, and its sequence numbers go on
/// where they stopped.
pub fn measure<L: SampleLog>(
    log: &L,
    points: &[(i64, Point)],
    spec: &RunSpec,
    sampler: &mut dyn Sampler,
    sink: &mut dyn EventSink,
) -> Result<RunEnd, L::Error> {
    let rule = StopRule::of(spec);
    let mut states = Vec::with_capacity(points.len());
    for (id, p) in points {
        let mut st = PointState::from_samples(*id, &log.samples(*id)?);
        st.done = stop_decision(&rule, &st, spec.seed).is_some();
        if let Some(why) = stop_decision(&rule, &st, spec.seed) {
            sink.event(Event::PointDone { point: p, why });
        }
        states.push(st);
    }
    // Every active point takes one sample per round (a warm-up counts), so
    // an active point's next seq is the number of rounds it has been
    // through. A resumed run goes on with the round that was interrupted
    // (the lowest next seq of the points still active, done points aside)
    // and, in it, skips the points that were already sampled: the seeded
    // order of the rest of the run is the one it would have had.
    let round = states
        .iter()
        .filter(|s| !s.done)
        .map(|s| s.next_seq as u64)
        .min()
        .unwrap_or(0);
    let mut scheduler = Scheduler::resume_at(points.len(), spec.seed, round);
    loop {
        let active: Vec<usize> = (0..points.len()).filter(|&i| !states[i].done).collect();
        if active.is_empty() {
            break;
        }
        let this_round = scheduler.round();
        for i in scheduler.next_round(&active) {
            if states[i].next_seq as u64 > this_round {
                continue;
            }
            if sampler.interrupted() {
                finish_outliers(log, &states, spec.seed)?;
                return Ok(RunEnd::Interrupted);
            }
            let (_, point) = &points[i];
            let st = &mut states[i];
            // Warm-ups spend the point's --max-time like any sample: once
            // it is gone, the point goes on to its measured samples.
            let warmup = st.warmups < spec.warmup && st.elapsed_s < rule.max_time_s;
            let t0 = sampler.now_s();
            let sample = match sampler.sample(point, st.next_seq, warmup) {
                Outcome::Measured(s) => *s,
                Outcome::Interrupted => {
                    finish_outliers(log, &states, spec.seed)?;
                    return Ok(RunEnd::Interrupted);
                }
            };
            // Committed before anything else happens: a later crash or
            // Ctrl-C must not lose it.
            log.add_sample(st.point_id, &sample)?;
            st.next_seq += 1;
            st.record(&sample, sampler.now_s() - t0);
            sink.event(Event::Sample {
                point,
                sample: &sample,
                taken: st.next_seq,
            });
            if warmup {
                continue;
            }
            if st.failures_in_a_row >= MAX_FAILURES_IN_A_ROW {
                st.done = true;
                sink.event(Event::Warning(format!(
                    "point {} ({} {} {} N={}) failed {} times in a row; giving up on it: {}",
                    point.index,
                    point.program.label(),
                    point.model,
                    point.placement,
                    point.workers,
                    MAX_FAILURES_IN_A_ROW,
                    sample.reason.as_deref().unwrap_or("no reason given")
                )));
                sink.event(Event::PointDone {
                    point,
                    why: "failed".into(),
                });
            } else if let Some(why) = stop_decision(&rule, st, spec.seed) {
                st.done = true;
                if st.values.len() < spec.min_samples && why == "max_time" {
                    sink.event(Event::Warning(format!(
                        "point {} ({} {} {} N={}): {} of --min-samples {} samples measured when \
                         its --max-time {} s ran out; raise --max-time for the full count",
                        point.index,
                        point.program.label(),
                        point.model,
                        point.placement,
                        point.workers,
                        st.values.len(),
                        spec.min_samples,
                        spec.max_time_s
                    )));
                }
                sink.event(Event::PointDone { point, why });
            }
        }
    }
    finish_outliers(log, &states, spec.seed)?;
    Ok(RunEnd::Complete)
}

/// Why a point needs no more samples, if it does not.
fn stop_decision(rule: &StopRule, st: &PointState, seed: u64) -> Option<String> {
    if st.failures_in_a_row >= MAX_FAILURES_IN_A_ROW {
        return Some("failed".into());
    }
    // Failed attempts count toward the sample cap, so a flaky point ends.
    if st.attempts >= rule.max_samples.saturating_mul(2) {
        return Some("max_samples".into());
    }
    match should_stop(rule, &st.values, st.elapsed_s, seed) {
        StopDecision::Stop(r) => Some(r.as_str().to_string()),
        StopDecision::Continue => None,
    }
}

/// Flag outliers (MAD rule) among each point's measured samples.
fn finish_outliers<L: SampleLog>(
    log: &L,
    states: &[PointState],
    seed: u64,
) -> Result<(), L::Error> {
    for st in states {
        if st.values.is_empty() {
            continue;
        }
        let summary = stats::summarize(&st.values, seed);
        let seqs: Vec<usize> = summary.outliers.iter().map(|&i| st.seqs[i]).collect();
        log.set_outliers(st.point_id, &seqs)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
