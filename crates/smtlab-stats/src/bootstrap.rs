//! Percentile-bootstrap intervals: of a median (resampling the sorted
//! values in O(n) each) and of a ratio of two medians. Uses `random` and
//! `descriptive`.

use rand_chacha::ChaCha8Rng;

use crate::descriptive::{finite_sorted, median_sorted, midpoint, percentile};
use crate::random::{rng_for, uniform_below, STREAM_RATIO, STREAM_SUMMARY};

/// Bootstrap resamples per interval.
///
/// Efron & Tibshirani (1993, ch. 19) recommend at least 1000 for percentile
/// intervals (the 2.5% and 97.5% tails are estimated from only 2.5% of the
/// resamples each); 2000 halves the Monte-Carlo variance of the endpoints
/// again, so re-running with another seed moves them by a small fraction of
/// the interval's width. Cost: one resample is O(n), so 2000 resamples of
/// 1000 samples take a few milliseconds — nothing next to one measured
/// sample.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// Confidence level of every interval here.
pub const CONFIDENCE: f64 = 0.95;

/// Ratio of medians `median(a) / median(b)` with a percentile-bootstrap 95%
/// interval, resampling `a` and `b` independently (they are separate
/// points, measured in separate runs).
///
/// For wall times, a ratio of 0.982 with interval (0.973, 0.991) reads "a is
/// 1.8% faster than b, 95% CI 0.9–2.7%"; for throughputs, the other way
/// round. Meant for strictly positive metrics (times, rates): `None` when
/// either side has fewer than 3 finite values or `median(b)` is 0. Seeded
/// like [`summarize`](crate::summarize).
pub fn ratio_ci(a: &[f64], b: &[f64], seed: u64) -> Option<(f64, (f64, f64))> {
    let sa = finite_sorted(a);
    let sb = finite_sorted(b);
    if sa.len() < 3 || sb.len() < 3 {
        return None;
    }
    let ratio = median_sorted(&sa) / median_sorted(&sb);
    if !ratio.is_finite() {
        return None;
    }
    let mut rng = rng_for(seed, STREAM_RATIO);
    let mut counts_a = vec![0u32; sa.len()];
    let mut counts_b = vec![0u32; sb.len()];
    let mut ratios: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            let ma = resample_median(&sa, &mut counts_a, &mut rng);
            let mb = resample_median(&sb, &mut counts_b, &mut rng);
            // A resample of b with median 0 (possible only if b holds 0s)
            // gives ±inf: it sorts to an end and, if frequent enough, makes
            // an endpoint infinite — an honest "unbounded".
            ma / mb
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    Some((ratio, percentile_interval(&ratios)))
}

pub(crate) fn half_width_rel(ci: (f64, f64), median: f64) -> Option<f64> {
    if median == 0.0 {
        return None;
    }
    let h = (ci.1 - ci.0) / 2.0 / median.abs();
    h.is_finite().then_some(h)
}

/// Median of one bootstrap resample of `sorted`.
///
/// Because `sorted` is ascending, the k-th smallest resampled value is the
/// value at the k-th smallest drawn index, so drawing counts per index and
/// walking them once gives the median in O(n) without sorting the resample.
pub(crate) fn resample_median(sorted: &[f64], counts: &mut [u32], rng: &mut ChaCha8Rng) -> f64 {
    let n = sorted.len();
    counts.fill(0);
    for _ in 0..n {
        counts[uniform_below(rng, n)] += 1;
    }
    // 0-based ranks of the middle value(s) of the resample.
    let (r_lo, r_hi) = if n % 2 == 1 {
        (n / 2, n / 2)
    } else {
        (n / 2 - 1, n / 2)
    };
    let mut cumulative = 0usize;
    let mut lo = None;
    for (i, &c) in counts.iter().enumerate() {
        cumulative += c as usize;
        if lo.is_none() && cumulative > r_lo {
            lo = Some(i);
        }
        if cumulative > r_hi {
            let lo = lo.unwrap_or(i);
            return midpoint(sorted[lo], sorted[i]);
        }
    }
    unreachable!("counts sum to n > r_hi")
}

pub(crate) fn bootstrap_median_ci(sorted: &[f64], seed: u64) -> (f64, f64) {
    let mut rng = rng_for(seed, STREAM_SUMMARY);
    let mut counts = vec![0u32; sorted.len()];
    let mut medians: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| resample_median(sorted, &mut counts, &mut rng))
        .collect();
    medians.sort_by(f64::total_cmp);
    percentile_interval(&medians)
}

pub(crate) fn percentile_interval(sorted_estimates: &[f64]) -> (f64, f64) {
    let tail = (1.0 - CONFIDENCE) / 2.0 * 100.0;
    (
        percentile(sorted_estimates, tail),
        percentile(sorted_estimates, 100.0 - tail),
    )
}
