//! The stop rule: when a point has been measured enough (its precision
//! target reached, its time budget spent, or its sample cap hit). Used only
//! by the [engine](crate::engine), after every measured sample; the
//! precision it compares with its target is
//! [`smtlab_stats::precision_estimate`], the same statistics the report
//! shows.

use serde::{Deserialize, Serialize};
use smtlab_stats::precision_estimate;
use smtlab_types::RunSpec;

/// When to stop repeating a point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StopRule {
    /// Never stop for precision before this many finite samples.
    pub min_samples: usize,
    /// Target relative half-width of the 95% CI (0.02 = ±2%).
    pub precision: f64,
    /// Time budget of the point, in seconds.
    pub max_time_s: f64,
    /// Hard cap on samples, whatever else holds.
    pub max_samples: usize,
}

impl Default for StopRule {
    /// 10 samples at least (hyperfine's default minimum, and about where the
    /// bootstrap interval of the median becomes trustworthy), ±2% (the
    /// issue's default), at most 60 s or 100 samples per point.
    fn default() -> Self {
        StopRule {
            min_samples: 10,
            precision: 0.02,
            max_time_s: 60.0,
            max_samples: 100,
        }
    }
}

/// A [`StopRule`] that cannot be applied as written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StopRuleError {
    #[error("minimum samples must be at least 1")]
    ZeroMinSamples,
    #[error("maximum samples ({max}) is below the minimum ({min})")]
    MaxBelowMin { min: usize, max: usize },
    #[error("precision must be a positive fraction such as 0.02 (2%), got {0}")]
    BadPrecision(f64),
    #[error("maximum time must be a positive number of seconds, got {0}")]
    BadMaxTime(f64),
}

impl StopRule {
    /// Checks the rule makes sense (the CLI should call this on its flags).
    /// [`should_stop`] still behaves predictably on an invalid rule: the
    /// `max_samples` cap always wins.
    pub fn validate(&self) -> Result<(), StopRuleError> {
        if self.min_samples == 0 {
            return Err(StopRuleError::ZeroMinSamples);
        }
        if self.max_samples < self.min_samples {
            return Err(StopRuleError::MaxBelowMin {
                min: self.min_samples,
                max: self.max_samples,
            });
        }
        if !(self.precision.is_finite() && self.precision > 0.0) {
            return Err(StopRuleError::BadPrecision(self.precision));
        }
        // +inf is allowed: no time limit.
        if self.max_time_s.is_nan() || self.max_time_s <= 0.0 {
            return Err(StopRuleError::BadMaxTime(self.max_time_s));
        }
        Ok(())
    }
}

/// Why a point stopped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum StopReason {
    /// The 95% CI is within the precision target; `half_width_rel` is the
    /// value the decision used (see [`precision_estimate`]).
    PrecisionReached { half_width_rel: f64 },
    /// The time budget is spent; the precision target was not reached.
    MaxTime,
    /// The sample cap is reached; the precision target was not reached.
    MaxSamples,
}

impl StopReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            StopReason::PrecisionReached { .. } => "precision_reached",
            StopReason::MaxTime => "max_time",
            StopReason::MaxSamples => "max_samples",
        }
    }
}

/// Whether to take another sample of a point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum StopDecision {
    Continue,
    Stop(StopReason),
}

impl StopDecision {
    pub fn is_stop(&self) -> bool {
        matches!(self, StopDecision::Stop(_))
    }
}

/// Decides whether a point has been measured enough.
///
/// `values` are the point's measured samples so far (warm-ups excluded;
/// non-finite ones count towards the cap but not towards precision);
/// `elapsed_s` is the time spent on this point so far, as the caller
/// budgets it (with interleaving, the sum of its own samples' durations,
/// warm-ups included, is the natural choice). Pass the seed you will pass
/// to [`smtlab_stats::summarize`], so the decision and the reported interval agree.
///
/// In order, what a demanding hyperfine user expects:
///
/// 1. **Precision reached** once there are at least `min_samples` finite
///    values and [`precision_estimate`] is `<= precision`. Reported first
///    when several rules hold at once: it is the most informative reason.
/// 2. **Max samples**: `values.len() >= max_samples` stops, whatever else
///    holds — a hard cap, even below `min_samples` on a misconfigured rule.
/// 3. **Max time**: `elapsed_s >= max_time_s` stops, even before
///    `min_samples` (the budget is the user's; the report must then say the
///    point has fewer samples than asked and the interval is unreliable or
///    missing), but **never with zero samples**: a point with no sample has
///    no result at all. The caller must bound repeated *failures* itself,
///    as failed samples are not in `values`. The budget is checked between
///    samples, so it is overshot by up to one sample's duration.
/// 4. Otherwise **continue**.
///
/// Checking after every sample and stopping at the first narrow interval
/// makes the final interval slightly optimistic (optional stopping);
/// `min_samples` and the small-n guard below keep that effect small.
pub fn should_stop(rule: &StopRule, values: &[f64], elapsed_s: f64, seed: u64) -> StopDecision {
    let finite = values.iter().filter(|v| v.is_finite()).count();
    if finite >= rule.min_samples {
        if let Some(h) = precision_estimate(values, seed) {
            if h <= rule.precision {
                return StopDecision::Stop(StopReason::PrecisionReached { half_width_rel: h });
            }
        }
    }
    if values.len() >= rule.max_samples {
        return StopDecision::Stop(StopReason::MaxSamples);
    }
    if !values.is_empty() && elapsed_s >= rule.max_time_s {
        return StopDecision::Stop(StopReason::MaxTime);
    }
    StopDecision::Continue
}

impl StopRule {
    /// The stop rule of a run specification.
    pub fn of(spec: &RunSpec) -> StopRule {
        StopRule {
            min_samples: spec.min_samples,
            precision: spec.precision,
            max_time_s: spec.max_time_s,
            max_samples: spec.max_samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use smtlab_stats::summarize;
    use smtlab_stats::testing::normals;

    use super::*;

    fn test_rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    fn rule(min: usize, precision: f64, max_time: f64, max: usize) -> StopRule {
        StopRule {
            min_samples: min,
            precision,
            max_time_s: max_time,
            max_samples: max,
        }
    }

    #[test]
    fn stop_rule_defaults_validate() {
        let d = StopRule::default();
        assert_eq!(d.precision, 0.02);
        assert!(d.validate().is_ok());
        assert_eq!(
            rule(0, 0.02, 1.0, 5).validate(),
            Err(StopRuleError::ZeroMinSamples)
        );
        assert!(matches!(
            rule(10, 0.02, 1.0, 5).validate(),
            Err(StopRuleError::MaxBelowMin { min: 10, max: 5 })
        ));
        assert!(rule(1, 0.0, 1.0, 5).validate().is_err());
        assert!(rule(1, f64::NAN, 1.0, 5).validate().is_err());
        assert!(rule(1, 0.02, f64::NAN, 5).validate().is_err());
        assert!(rule(1, 0.02, 0.0, 5).validate().is_err());
    }

    #[test]
    fn should_stop_waits_for_min_samples() {
        let r = rule(10, 0.02, 60.0, 100);
        // Perfectly precise, but only 9 samples.
        assert_eq!(should_stop(&r, &[1.0; 9], 1.0, 0), StopDecision::Continue);
        assert_eq!(
            should_stop(&r, &[1.0; 10], 1.0, 0),
            StopDecision::Stop(StopReason::PrecisionReached {
                half_width_rel: 0.0
            })
        );
        // Non-finite values do not count towards the minimum.
        let mut v = vec![1.0; 10];
        v[0] = f64::NAN;
        assert_eq!(should_stop(&r, &v, 1.0, 0), StopDecision::Continue);
    }

    #[test]
    fn should_stop_continues_while_imprecise() {
        let mut rng = test_rng(12);
        let v = normals(&mut rng, 20, 100.0, 20.0); // CV 20%: CI ~ ±10%
        let r = rule(5, 0.02, 60.0, 100);
        assert_eq!(should_stop(&r, &v, 10.0, 0), StopDecision::Continue);
        // Loosen the target and it stops, reporting what it used.
        let r = rule(5, 0.5, 60.0, 100);
        match should_stop(&r, &v, 10.0, 0) {
            StopDecision::Stop(StopReason::PrecisionReached { half_width_rel }) => {
                assert_eq!(Some(half_width_rel), summarize(&v, 0).ci_half_width_rel);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn should_stop_at_max_samples_even_below_min() {
        let mut rng = test_rng(13);
        let v = normals(&mut rng, 50, 100.0, 20.0);
        assert_eq!(
            should_stop(&rule(5, 0.02, 60.0, 50), &v, 1.0, 0),
            StopDecision::Stop(StopReason::MaxSamples)
        );
        assert_eq!(
            should_stop(&rule(5, 0.02, 60.0, 51), &v, 1.0, 0),
            StopDecision::Continue
        );
        // Misconfigured max < min: the cap still wins.
        assert_eq!(
            should_stop(&rule(10, 0.02, 60.0, 3), &[1.0, 2.0, 3.0], 0.0, 0),
            StopDecision::Stop(StopReason::MaxSamples)
        );
        // Failed (non-finite) samples count towards the cap.
        assert_eq!(
            should_stop(&rule(1, 0.02, 60.0, 2), &[f64::NAN, f64::NAN], 0.0, 0),
            StopDecision::Stop(StopReason::MaxSamples)
        );
    }

    #[test]
    fn should_stop_at_max_time_but_never_without_a_sample() {
        let r = rule(10, 0.02, 30.0, 100);
        assert_eq!(should_stop(&r, &[], 100.0, 0), StopDecision::Continue);
        assert_eq!(
            should_stop(&r, &[5.0], 30.0, 0),
            StopDecision::Stop(StopReason::MaxTime)
        );
        assert_eq!(should_stop(&r, &[5.0], 29.9, 0), StopDecision::Continue);
    }

    #[test]
    fn precision_reported_first_when_several_rules_hold() {
        let r = rule(3, 0.02, 1.0, 10);
        assert_eq!(
            should_stop(&r, &[1.0; 10], 5.0, 0),
            StopDecision::Stop(StopReason::PrecisionReached {
                half_width_rel: 0.0
            })
        );
    }

    #[test]
    fn small_n_guard_needs_the_t_interval_too() {
        // Seven values from a noisy distribution whose middle five happen to
        // sit within 0.4%: the bootstrap interval of the median alone is
        // about +-0.2% and would stop at a 2% target; the t interval of the
        // mean (2.45 s / sqrt 7, about 2.7%) keeps the point running.
        let v = [95.0, 99.8, 99.9, 100.0, 100.1, 100.2, 105.0];
        let r = rule(3, 0.02, 60.0, 100);
        let boot = summarize(&v, 0).ci_half_width_rel.unwrap();
        assert!(boot < 0.01, "{boot}");
        let est = precision_estimate(&v, 0).unwrap();
        assert!(est > 0.02, "t guard must dominate: {est} vs {boot}");
        assert_eq!(should_stop(&r, &v, 1.0, 0), StopDecision::Continue);
        // Tight values do stop early, and with the t-based half-width.
        let tight = [100.0, 100.1, 99.9, 100.05, 99.95];
        match should_stop(&r, &tight, 1.0, 0) {
            StopDecision::Stop(StopReason::PrecisionReached { half_width_rel }) => {
                assert!(half_width_rel < 0.02 && half_width_rel > 0.0)
            }
            other => panic!("{other:?}"),
        }
        // From SMALL_N on, only the robust bootstrap interval counts: one
        // 10x sample among 40 does not keep the point running.
        let mut rng = test_rng(14);
        let mut v = normals(&mut rng, 40, 100.0, 0.5);
        v[7] = 1000.0;
        assert!(should_stop(&r, &v, 1.0, 0).is_stop());
        assert_eq!(
            precision_estimate(&v, 0),
            summarize(&v, 0).ci_half_width_rel
        );
    }
}
