//! Percentile-bootstrap intervals: of a median (resampling the sorted
//! values in O(n) each), of a ratio of two medians, and of any function of
//! several independent samples' medians. Uses `random` and `descriptive`.

use rand_chacha::ChaCha8Rng;

use crate::descriptive::{finite_sorted, median_sorted, midpoint, percentile};
use crate::random::{rng_for, uniform_below, STREAM_MEDIANS, STREAM_RATIO, STREAM_SUMMARY};

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

/// A function `f` of the medians of several independent samples (one per
/// measured point), with a percentile-bootstrap 95% interval: each resample
/// draws every sample anew, independently (they are separate points), and
/// evaluates `f` on their medians, in the order of `samples`.
///
/// For example the SMT gain of a second sibling, (X(2) − X(1)) / X(1),
/// is `medians_ci(&[&x1, &x2], |m| (m[1] - m[0]) / m[0], seed)`. A
/// quantity of *transformed* medians (the throughput 1/t of a time t)
/// applies the transform inside `f`, to the medians: the estimate is then
/// exactly the one computed from the points' medians (the median of 1/t is
/// not 1/median(t) for an even count), and the interval is of that same
/// estimate.
///
/// `None` when `samples` is empty, when any sample has fewer than 3 finite
/// values (non-finite ones are dropped first, as everywhere here), when
/// `f` of the medians is not finite, or when `f` of a resample is `NaN`
/// (the interval is then undefined; `±inf` is kept, as in [`ratio_ci`]:
/// an endpoint may be infinite, which callers treat as no interval).
/// Seeded like [`summarize`](crate::summarize), on a stream of its own: the
/// same values, `f` and seed always give the same interval, whatever the
/// order of the values inside each sample.
pub fn medians_ci(
    samples: &[&[f64]],
    f: impl Fn(&[f64]) -> f64,
    seed: u64,
) -> Option<(f64, (f64, f64))> {
    let ([estimate], [ci]) = medians_cis(samples, |m| Some([f(m)]), seed)?;
    estimate.is_finite().then_some((estimate, ci))
}

/// `K` estimates and the 95% interval of each, as [`medians_cis`] returns
/// them.
pub type Estimates<const K: usize> = ([f64; K], [(f64, f64); K]);

/// [`medians_ci`] of `K` quantities at once, from the same resamples (so a
/// fit refitted once per resample gives the interval of each of its
/// parameters): `f` returns the `K` values, or `None` where they are
/// undefined (a fit that fails).
///
/// `None` when `samples` is empty, when any sample has fewer than 3 finite
/// values, or when `f` gives `None` or a `NaN` for the medians or for any
/// resample. Unlike [`medians_ci`] an estimate may be infinite (a fit's
/// predicted peak where there is none), and so may an endpoint. Draws the
/// same stream as [`medians_ci`]: `medians_cis` with `K = 1` gives its
/// interval.
pub fn medians_cis<const K: usize>(
    samples: &[&[f64]],
    f: impl Fn(&[f64]) -> Option<[f64; K]>,
    seed: u64,
) -> Option<Estimates<K>> {
    if samples.is_empty() {
        return None;
    }
    let sorted: Vec<Vec<f64>> = samples.iter().map(|s| finite_sorted(s)).collect();
    if sorted.iter().any(|s| s.len() < 3) {
        return None;
    }
    let defined = |v: Option<[f64; K]>| v.filter(|v| v.iter().all(|x| !x.is_nan()));
    let medians: Vec<f64> = sorted.iter().map(|s| median_sorted(s)).collect();
    let estimate = defined(f(&medians))?;
    let mut rng = rng_for(seed, STREAM_MEDIANS);
    let mut counts: Vec<Vec<u32>> = sorted.iter().map(|s| vec![0u32; s.len()]).collect();
    let mut resampled = vec![0.0; sorted.len()];
    let mut estimates: [Vec<f64>; K] =
        std::array::from_fn(|_| Vec::with_capacity(BOOTSTRAP_RESAMPLES));
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for ((s, c), m) in sorted.iter().zip(&mut counts).zip(&mut resampled) {
            *m = resample_median(s, c, &mut rng);
        }
        let e = defined(f(&resampled))?;
        for (all, v) in estimates.iter_mut().zip(e) {
            all.push(v);
        }
    }
    let cis = estimates.map(|mut all| {
        all.sort_by(f64::total_cmp);
        percentile_interval(&all)
    });
    Some((estimate, cis))
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
