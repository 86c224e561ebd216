//! What an analysis derives, as values: scaling series and their points,
//! USL fits, SMT yields, verdicts and recommendations. Their own file so
//! that the files computing them (`scaling`, `usl`, `smt`, `verdict`,
//! `recommend`) share them without using the module that calls them.

use serde::Serialize;
use smtlab_types::Metric;

/// What identifies a scaling series: points that differ only in N.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SeriesKey {
    /// `Program::label()`: the workload name or the command's first word.
    pub program: String,
    pub alloc: String,
    /// `Model`'s display form: `thread`, `process`, `hybrid:2x4`.
    pub model: String,
    /// The placement as written (`compact`, `scatter`, an expression).
    pub placement: String,
}

/// One N of a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScalingPoint {
    pub workers: usize,
    /// `Point::index` of the measured point.
    pub point_index: usize,
    /// Median of the primary metric and the bootstrap 95% CI of the median.
    pub median: f64,
    pub ci95: Option<(f64, f64)>,
    /// Speed relative to the series' N = 1 point: throughput(N) /
    /// throughput(1), or time(1) / time(N) for lower-is-better metrics.
    /// `None` without an N = 1 point with results.
    pub speedup: Option<f64>,
    /// Bootstrap 95% CI of the speedup (`stats::ratio_ci`); `None` below 3
    /// samples on either side.
    pub speedup_ci95: Option<(f64, f64)>,
    /// speedup / N.
    pub efficiency: Option<f64>,
}

/// Points differing only in N, ascending N.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    pub key: SeriesKey,
    pub metric: Metric,
    pub points: Vec<ScalingPoint>,
    /// Present when the series has at least 4 distinct N with results.
    pub usl: Option<UslFit>,
}

/// Universal Scalability Law fit, X(N) = λN / (1 + σ(N−1) + κN(N−1)), to a
/// series' throughput (1 / time for lower-is-better metrics).
///
/// A fit always exists once there are enough distinct N, but it *means*
/// something only when [`UslFit::describes_data`]: a reader must check that
/// before quoting σ, κ or the peak (the study's sentences do).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UslFit {
    /// Throughput of one worker, in the metric's throughput unit.
    pub lambda: f64,
    /// Contention (serialisation), ≥ 0.
    pub sigma: f64,
    /// Coherency (crosstalk), ≥ 0.
    pub kappa: f64,
    /// N of peak throughput, sqrt((1 − σ) / κ): a prediction, not a
    /// measurement; `None` when κ = 0 (no peak: throughput only levels off).
    pub peak_n: Option<f64>,
    /// Coefficient of determination of the fit on the measured points.
    pub r_squared: f64,
    /// Distinct N the fit used.
    pub points: usize,
    /// Whether the law describes these data: R² at least
    /// [`super::usl::USL_MIN_R_SQUARED`] and σ within [0, 1]. When false, σ, κ and
    /// the peak are no statement about the program (a fit worse than the
    /// mean, or a "contention" above 1), and nothing is predicted from them.
    pub describes_data: bool,
    /// Bootstrap 95% CIs of λ, σ and κ (each point's samples resampled, the
    /// law refitted to the resampled medians, [`smtlab_stats::medians_ci`]'s
    /// method); `None` with fewer than 3 samples at any N of the fit, or
    /// when a refit fails.
    pub lambda_ci95: Option<(f64, f64)>,
    pub sigma_ci95: Option<(f64, f64)>,
    pub kappa_ci95: Option<(f64, f64)>,
    /// Bootstrap 95% CI of the predicted peak N; `None` as above, and also
    /// when too many refits have no peak (κ = 0) for a finite upper end.
    pub peak_n_ci95: Option<(f64, f64)>,
    /// The fewest successful samples at any N of the fit (below 3: no
    /// intervals).
    pub min_samples: usize,
}

/// Throughput gained from each extra SMT sibling of one core.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SmtYield {
    pub key: SeriesKey,
    /// The core (index into `Topology::cores`) whose siblings were used.
    pub core: usize,
    /// One entry per sibling count k = 1..=K measured on that core.
    pub siblings: Vec<SiblingYield>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiblingYield {
    /// Threads on the core (1 = the core alone).
    pub siblings: usize,
    /// Throughput with k siblings / throughput with 1.
    pub relative: f64,
    /// (X(k) − X(k−1)) / X(1): what the k-th sibling added, as a fraction
    /// of one thread alone. 0 for k = 1.
    pub gain: f64,
    /// Bootstrap 95% CI of `relative` (the points at k and 1 resampled
    /// independently); `None` with fewer than 3 samples at either. (1, 1)
    /// for k = 1, which is 1 by definition.
    pub relative_ci95: Option<(f64, f64)>,
    /// Bootstrap 95% CI of `gain` (the points at k, k − 1 and 1 resampled
    /// independently); `None` with fewer than 3 samples at any of them.
    /// (0, 0) for k = 1.
    pub gain_ci95: Option<(f64, f64)>,
    /// Successful samples of the point at k: with those of the entries
    /// before it, the counts the intervals rest on.
    pub samples: usize,
}

/// A comparison of two measured points, A against B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// What was compared, e.g. `jbb at 2 threads (compact)`.
    pub subject: String,
    /// e.g. `the multi-thread model`, `run 3`.
    pub a: String,
    pub b: String,
    pub metric: Metric,
    pub median_a: f64,
    pub median_b: f64,
    /// How many times faster A is than B: throughput(A) / throughput(B), or
    /// time(B) / time(A) for lower-is-better metrics. > 1: A faster.
    pub speed_ratio: f64,
    /// Bootstrap 95% CI of `speed_ratio`; `None` below 3 samples a side.
    pub ci95: Option<(f64, f64)>,
    /// The CI excludes 1 (a difference of zero). Never true without a CI.
    pub significant: bool,
    /// One plain-language sentence, e.g. "On this machine the multi-thread
    /// model was 1.8% faster than the multi-process model for jbb at 2
    /// threads (95% CI 0.9–2.7%)."
    pub sentence: String,
}

/// Whether SMT siblings pay for a workload: the gain of the second sibling
/// of one core (a fraction of one thread's throughput) against
/// [`super::recommend::SMT_PAYS_GAIN`], judged by its 95% interval, never by the
/// median alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SmtAdvice {
    /// The interval's lower end is at least the threshold.
    Pays { gain: f64, ci95: (f64, f64) },
    /// The interval's upper end is below the threshold.
    DoesNotPay { gain: f64, ci95: (f64, f64) },
    /// Measured, but the data cannot decide: the interval holds the
    /// threshold, or (`ci95` `None`) there were fewer than 3 samples with 1
    /// or 2 threads on the core (`samples`: the fewer of the two counts).
    CannotTell {
        gain: f64,
        ci95: Option<(f64, f64)>,
        samples: usize,
    },
    /// Not measured here, and why (e.g. "this machine has no SMT").
    Unknown { reason: String },
}

/// What to run, per program and allocator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    pub program: String,
    pub alloc: String,
    /// The best measured point's model, placement and N.
    pub model: String,
    pub placement: String,
    pub workers: usize,
    pub median: f64,
    pub metric: Metric,
    pub smt: SmtAdvice,
    /// One or two plain sentences.
    pub sentence: String,
}
