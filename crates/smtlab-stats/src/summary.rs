//! The summary of one point's samples ([`summarize`]): location, spread,
//! the bootstrap interval of the median and the outlier flags. Uses
//! `descriptive`, `bootstrap` and `outliers`.

use serde::Serialize;

use crate::bootstrap::{bootstrap_median_ci, half_width_rel};
use crate::descriptive::{mad_of, mean_of, median_sorted, stddev_of};
use crate::outliers::outlier_flags;

/// Summary of the samples of one point.
///
/// Undefined quantities are `NaN` (written as `null` in JSON): every field
/// but `n` and `non_finite` when there is no finite value, and `stddev` when
/// there is only one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Finite values summarized.
    pub n: usize,
    /// Values dropped for being `NaN` or infinite.
    pub non_finite: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (divides by n - 1).
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// Percentile-bootstrap 95% confidence interval of the **median**,
    /// `(low, high)`; `None` below 3 values.
    pub ci95: Option<(f64, f64)>,
    /// Half the width of `ci95` divided by `|median|`; `None` when there is
    /// no interval or the median is 0.
    pub ci_half_width_rel: Option<f64>,
    /// Median absolute deviation from the median, unscaled (multiply by
    /// 1.4826 for an estimate of a normal distribution's standard deviation).
    pub mad: f64,
    /// Indexes **into the input slice** of the values flagged as outliers,
    /// ascending. They are still included in every statistic above.
    pub outliers: Vec<usize>,
}

/// Summarizes `values` (non-finite ones are dropped and counted).
///
/// * `median`, `mean`, `stddev` (sample, n - 1), `min`, `max`, `mad`.
/// * `ci95`: percentile bootstrap of the median, [`BOOTSTRAP_RESAMPLES`](crate::BOOTSTRAP_RESAMPLES)
///   resamples drawn from `seed`: the same values (in any order) and seed
///   give the same interval. `None` when n < 3: with one value every
///   resample is identical (a zero-width interval would claim perfect
///   precision), and with two the resampled median takes only three values
///   and the interval is just `[min, max]`, which covers the true median
///   half the time.
/// * `outliers`: modified z-score `0.6745 (x - median) / MAD` beyond ±3.5
///   (Iglewicz & Hoaglin). When more than half the values are equal the MAD
///   is 0: then nothing is flagged if all values are equal, and otherwise
///   the score is `(x - median) / (1.253314 * meanAD)`, with meanAD the mean
///   absolute deviation from the median (1.253314 = sqrt(pi/2) makes it
///   estimate the same standard deviation as 1.4826 MAD does for normal
///   data). Flags are reported, never removed (module docs).
pub fn summarize(values: &[f64], seed: u64) -> Summary {
    let mut indexed: Vec<(usize, f64)> = values
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .collect();
    let non_finite = values.len() - indexed.len();
    let n = indexed.len();
    if n == 0 {
        return Summary {
            n,
            non_finite,
            mean: f64::NAN,
            median: f64::NAN,
            stddev: f64::NAN,
            min: f64::NAN,
            max: f64::NAN,
            ci95: None,
            ci_half_width_rel: None,
            mad: f64::NAN,
            outliers: Vec::new(),
        };
    }
    indexed.sort_by(|a, b| a.1.total_cmp(&b.1));
    let sorted: Vec<f64> = indexed.iter().map(|&(_, v)| v).collect();

    let median = median_sorted(&sorted);
    let mean = mean_of(&sorted);
    let stddev = stddev_of(&sorted, mean);
    let mad = mad_of(&sorted, median);
    let ci95 = if n >= 3 {
        Some(bootstrap_median_ci(&sorted, seed))
    } else {
        None
    };
    let ci_half_width_rel = ci95.and_then(|ci| half_width_rel(ci, median));

    let mut outliers: Vec<usize> = outlier_flags(&sorted, median, mad)
        .into_iter()
        .map(|k| indexed[k].0)
        .collect();
    outliers.sort_unstable();

    Summary {
        n,
        non_finite,
        mean,
        median,
        stddev,
        min: sorted[0],
        max: sorted[n - 1],
        ci95,
        ci_half_width_rel,
        mad,
        outliers,
    }
}
