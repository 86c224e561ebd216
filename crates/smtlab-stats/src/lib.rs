//! Statistics over the samples of one point: location, spread, a bootstrap
//! 95% confidence interval of the median, MAD-based outlier flags, the ratio
//! of two points with its interval, the precision estimate the stop rule
//! compares with its target, and the seeded random streams everything here
//! draws from.
//!
//! Owns every statistical choice smtlab makes about samples; pure functions
//! over `f64` slices, with no I/O and no knowledge of what a sample is, so it
//! depends on nothing else in smtlab. Called by the measurement loop
//! (`smtlab-measure`: the stop rule and the seeded order of rounds, while a
//! run is in progress) and by analyse and report (summaries and comparisons
//! of stored samples).
//!
//! # Choices, and why
//!
//! * **The median is the headline number** (hyperfine also reports it;
//!   the acceptance test compares ours with hyperfine's): timing noise on a
//!   shared machine is one-sided (interrupts, migrations, a neighbour waking
//!   up only ever make a run slower), so the mean is pulled by a few bad
//!   samples and the median is not.
//! * **Its 95% CI is a percentile bootstrap** with [`BOOTSTRAP_RESAMPLES`]
//!   resamples: it makes no normality assumption and works for the median,
//!   whose standard error has no simple closed form. Limits, stated so that
//!   nobody reads more into the interval than it holds: a percentile
//!   bootstrap interval never extends beyond `[min, max]`, and `[min, max]`
//!   covers the true median with probability only `1 - 2^(1-n)` (75% at
//!   n = 3, 87.5% at 4, 93.75% at 5), so below about ten samples the
//!   interval is narrower than a true 95% interval. Measured coverage
//!   (4000 simulated data sets each, normal and log-normal alike):
//!
//!   | n | 3 | 5 | 7 | 10 | 15 | 20 | 30 | 50+ |
//!   |---|---|---|---|---|---|---|---|---|
//!   | coverage | 75% | 94% | 88% | 94% | 92% | 93–94% | 94.5% | 95% |
//!
//!   (odd n are worse at small sizes: the resampled median can only land on
//!   an order statistic). Hence the default of 10 samples at least, and
//!   the t-based guard of the stop rule below that ([`precision_estimate`]).
//!   No interval is given below 3 samples (see [`summarize`]).
//! * **Seeded and value-stable**: resampling draws from ChaCha8 (whose output
//!   `rand_chacha` guarantees across versions) through our own bounded
//!   integer sampler, and resamples the *sorted* values, so the interval
//!   depends only on the multiset of values and the seed — not on the order
//!   the store returns samples in, nor on `rand`'s internal algorithms.
//! * **Outliers are flagged, never removed** (as hyperfine does): a slow
//!   sample is a real observation of the machine, and silently dropping it
//!   would make the numbers look better than what a user will see. Flags let
//!   a report say "3 of 40 samples were outliers"; the statistics include
//!   them (the median and its interval are robust to a few anyway).
//! * **Non-finite values are rejected**, not propagated: `NaN` and `±inf`
//!   are dropped by every function here and counted in
//!   [`Summary::non_finite`], so one failed parse cannot turn a whole table
//!   into `NaN`, and the count keeps the drop visible.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

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

/// Modified z-score above which a sample is flagged (Iglewicz & Hoaglin
/// 1993, "How to Detect and Handle Outliers").
pub const OUTLIER_Z: f64 = 3.5;

/// Below this many samples the stop rule also requires the t-based interval
/// of the mean to be within the precision target (see
/// [`precision_estimate`]).
pub const SMALL_N: usize = 10;

/// Domain tags mixed into the RNG key so that summarize and ratio_ci, given
/// the same user seed, never draw the same stream as each other or as the
/// scheduler (crate::schedule uses its own tag).
const STREAM_SUMMARY: u64 = 1;
const STREAM_RATIO: u64 = 2;

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
/// * `ci95`: percentile bootstrap of the median, [`BOOTSTRAP_RESAMPLES`]
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

/// Median of the finite values (non-finite ones are ignored, as in
/// [`summarize`]); `NaN` when there is none. Even n: mean of the two middle
/// values.
pub fn median(values: &[f64]) -> f64 {
    let sorted = finite_sorted(values);
    if sorted.is_empty() {
        f64::NAN
    } else {
        median_sorted(&sorted)
    }
}

/// The `p`-th percentile (`p` in 0..=100, clamped) of ascending `sorted`
/// values, interpolating linearly between the two nearest ranks (Hyndman &
/// Fan type 7, numpy's and R's default): rank `h = (n - 1) p / 100`.
/// `NaN` for an empty slice or a `NaN` p. The caller sorts and removes
/// non-finite values (checked in debug builds).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    debug_assert!(
        sorted.windows(2).all(|w| w[0] <= w[1]),
        "percentile: input not sorted ascending (or holds NaN)"
    );
    if sorted.is_empty() || p.is_nan() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 100.0) / 100.0;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    let (a, b) = (sorted[lo], sorted[hi]);
    if a == b {
        // Exact, and avoids inf - inf if a caller ever passes infinities.
        a
    } else {
        a + (h - lo as f64) * (b - a)
    }
}

/// Ratio of medians `median(a) / median(b)` with a percentile-bootstrap 95%
/// interval, resampling `a` and `b` independently (they are separate
/// points, measured in separate runs).
///
/// For wall times, a ratio of 0.982 with interval (0.973, 0.991) reads "a is
/// 1.8% faster than b, 95% CI 0.9–2.7%"; for throughputs, the other way
/// round. Meant for strictly positive metrics (times, rates): `None` when
/// either side has fewer than 3 finite values or `median(b)` is 0. Seeded
/// like [`summarize`].
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

/// The relative half-width the stop rule compares with its precision
/// target; also what a progress display should show ("±3.4%"). `None` with
/// fewer than 3 finite values or a median of 0.
///
/// From [`SMALL_N`] samples on it is exactly `summarize(values,
/// seed).ci_half_width_rel`, the bootstrap interval of the median that the
/// report shows. Below that it is the larger of that and the half-width of
/// the Student-t 95% interval of the mean relative to the mean. Why: with a
/// handful of samples the bootstrap interval is discrete and too narrow (it
/// cannot extend past `[min, max]`, see the module docs), so three or four
/// values that happen to lie close together would stop a point on luck. The
/// t interval instead widens with the t quantile (4.30 at n = 3, 2.78 at
/// n = 5, vs 1.96) and with any spread at all, so a small n stops only when
/// the values are tightly clustered *and* numerous enough for it to mean
/// something. It is not used for larger n because the standard deviation
/// is not robust: a single 10x sample among 50 would keep its interval above
/// 2% for hundreds of samples, burning the whole time budget, while the
/// median's interval rightly ignores it.
pub fn precision_estimate(values: &[f64], seed: u64) -> Option<f64> {
    let sorted = finite_sorted(values);
    let n = sorted.len();
    if n < 3 {
        return None;
    }
    let median = median_sorted(&sorted);
    let boot = half_width_rel(bootstrap_median_ci(&sorted, seed), median)?;
    if n >= SMALL_N {
        return Some(boot);
    }
    let mean = mean_of(&sorted);
    let t_half = t_quantile_975(n - 1) * stddev_of(&sorted, mean) / (n as f64).sqrt();
    if mean == 0.0 {
        return None;
    }
    Some(boot.max(t_half / mean.abs()))
}

/// Two-sided 95% quantile of Student's t with `df` degrees of freedom
/// (`t_{0.975, df}`); infinite for `df = 0`.
///
/// A table for df <= 30 (values to 9 digits, as in any statistics table);
/// above, the Cornish-Fisher expansion of t around the normal quantile,
/// whose error there is below 1e-6 — enough for a stopping rule, and no
/// dependency for one function.
pub fn t_quantile_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706204736,
        4.302652730,
        3.182446305,
        2.776445105,
        2.570581836,
        2.446911851,
        2.364624252,
        2.306004135,
        2.262157163,
        2.228138852,
        2.200985160,
        2.178812830,
        2.160368656,
        2.144786688,
        2.131449546,
        2.119905299,
        2.109815578,
        2.100922040,
        2.093024054,
        2.085963447,
        2.079613845,
        2.073873068,
        2.068657610,
        2.063898562,
        2.059538553,
        2.055529439,
        2.051830516,
        2.048407142,
        2.045229642,
        2.042272456,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        _ => {
            let z: f64 = 1.959_963_984_540_054;
            let v = df as f64;
            let (z2, z3) = (z * z, z * z * z);
            let (z5, z7) = (z3 * z2, z3 * z2 * z2);
            z + (z3 + z) / (4.0 * v)
                + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
                + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v * v * v)
        }
    }
}

/// A uniform integer in `0..n` (`n > 0`) from the raw output of `rng`:
/// Lemire's multiply-and-reject method, exactly unbiased. Ours rather than
/// `rand`'s `random_range`, whose algorithm `rand` does not promise to keep
/// between versions: a seeded order or interval must not change when a
/// dependency is upgraded. Below 2^32 it draws 32 bits at a time, which
/// halves the ChaCha output the bootstrap consumes (its main cost). Shared
/// with the measurement loop's schedule (`smtlab-measure`).
pub fn uniform_below(rng: &mut impl RngCore, n: usize) -> usize {
    debug_assert!(n > 0);
    if let Ok(n) = u32::try_from(n) {
        let mut m = u64::from(rng.next_u32()) * u64::from(n);
        if (m as u32) < n {
            // Reject the few low products that would over-represent some
            // outputs: 2^32 mod n of them.
            let threshold = n.wrapping_neg() % n;
            while (m as u32) < threshold {
                m = u64::from(rng.next_u32()) * u64::from(n);
            }
        }
        return (m >> 32) as usize;
    }
    let n = n as u64;
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    if (m as u64) < n {
        let threshold = n.wrapping_neg() % n;
        while (m as u64) < threshold {
            m = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (m >> 64) as usize
}

/// ChaCha8 keyed by (user seed, domain tag), on stream `stream`. Building
/// the key ourselves keeps the bits fully specified by this file plus
/// ChaCha8 itself; the tag keeps users of the same seed independent.
pub fn rng_for_domain(seed: u64, domain: &[u8; 8], stream: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(domain);
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(stream);
    rng
}

fn rng_for(seed: u64, stream: u64) -> ChaCha8Rng {
    rng_for_domain(seed, b"stats\0\0\0", stream)
}

fn finite_sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        midpoint(sorted[n / 2 - 1], sorted[n / 2])
    }
}

fn midpoint(a: f64, b: f64) -> f64 {
    let m = (a + b) / 2.0;
    // a + b overflows only for values near f64::MAX.
    if m.is_finite() {
        m
    } else {
        a / 2.0 + b / 2.0
    }
}

fn mean_of(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample standard deviation, two-pass (deviations from the mean are
/// summed, not raw squares, so large values with small spread — wall times
/// in nanoseconds — keep their precision).
fn stddev_of(values: &[f64], mean: f64) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

fn mad_of(sorted: &[f64], median: f64) -> f64 {
    let mut dev: Vec<f64> = sorted.iter().map(|v| (v - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    median_sorted(&dev)
}

/// Positions in `sorted` of the outliers (see [`summarize`]).
fn outlier_flags(sorted: &[f64], median: f64, mad: f64) -> Vec<usize> {
    // Scale such that score = (x - median) / scale.
    let scale = if mad > 0.0 {
        mad / 0.6745
    } else {
        let mean_ad = mean_of(
            &sorted
                .iter()
                .map(|v| (v - median).abs())
                .collect::<Vec<_>>(),
        );
        if mean_ad == 0.0 {
            return Vec::new(); // all values equal
        }
        1.253314 * mean_ad
    };
    sorted
        .iter()
        .enumerate()
        .filter(|(_, &v)| ((v - median) / scale).abs() > OUTLIER_Z)
        .map(|(i, _)| i)
        .collect()
}

fn half_width_rel(ci: (f64, f64), median: f64) -> Option<f64> {
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
fn resample_median(sorted: &[f64], counts: &mut [u32], rng: &mut ChaCha8Rng) -> f64 {
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

fn bootstrap_median_ci(sorted: &[f64], seed: u64) -> (f64, f64) {
    let mut rng = rng_for(seed, STREAM_SUMMARY);
    let mut counts = vec![0u32; sorted.len()];
    let mut medians: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| resample_median(sorted, &mut counts, &mut rng))
        .collect();
    medians.sort_by(f64::total_cmp);
    percentile_interval(&medians)
}

fn percentile_interval(sorted_estimates: &[f64]) -> (f64, f64) {
    let tail = (1.0 - CONFIDENCE) / 2.0 * 100.0;
    (
        percentile(sorted_estimates, tail),
        percentile(sorted_estimates, 100.0 - tail),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    // Explicit, to win over proptest's glob-exported rand traits.
    use rand::SeedableRng;

    use crate::testing::normals;

    fn test_rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn median_of_odd_and_even_n() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn median_ignores_non_finite() {
        assert_eq!(median(&[f64::NAN, 1.0, f64::INFINITY, 3.0, 2.0]), 2.0);
        assert!(median(&[f64::NAN, f64::NEG_INFINITY]).is_nan());
    }

    #[test]
    fn percentile_interpolates_linearly() {
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&s, 0.0), 1.0);
        assert_eq!(percentile(&s, 100.0), 5.0);
        assert_eq!(percentile(&s, 50.0), 3.0);
        // numpy.percentile([1,2,3,4,5], 10) == 1.4
        assert!(close(percentile(&s, 10.0), 1.4, 1e-12));
        assert!(close(percentile(&[10.0, 20.0], 25.0), 12.5, 1e-12));
        assert_eq!(percentile(&s, 250.0), 5.0);
        assert_eq!(percentile(&s, -3.0), 1.0);
        assert!(percentile(&[], 50.0).is_nan());
        assert!(percentile(&s, f64::NAN).is_nan());
    }

    #[test]
    fn summarize_known_values() {
        // Population sd 2, so sample sd sqrt(32/7).
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = summarize(&v, 1);
        assert_eq!(s.n, 8);
        assert_eq!(s.non_finite, 0);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.median, 4.5);
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12));
        assert_eq!((s.min, s.max), (2.0, 9.0));
        // |x - 4.5| = 2.5 .5 .5 .5 .5 .5 2.5 4.5 -> median 0.5
        assert_eq!(s.mad, 0.5);
        let (lo, hi) = s.ci95.unwrap();
        assert!(lo <= s.median && s.median <= hi && s.min <= lo && hi <= s.max);
        assert!(close(
            s.ci_half_width_rel.unwrap(),
            (hi - lo) / 2.0 / 4.5,
            1e-12
        ));
        // 9 scores 0.6745 * 4.5 / 0.5 = 6.07 > 3.5; 2 and 7 score 3.37.
        assert_eq!(s.outliers, vec![7]);
    }

    #[test]
    fn summarize_drops_non_finite_but_keeps_input_indexes() {
        let mut v = vec![1.0; 12];
        v[3] = f64::NAN;
        v[5] = 10.0;
        v[8] = f64::INFINITY;
        v[0] = 1.01;
        let s = summarize(&v, 7);
        assert_eq!((s.n, s.non_finite), (10, 2));
        assert!(s.mean.is_finite() && s.stddev.is_finite());
        assert_eq!(s.max, 10.0);
        // 1.01 is close to the rest; 10.0 is not (MAD is 0 here: 8 of 10
        // are equal, so the mean-absolute-deviation fallback decides).
        assert_eq!(
            s.outliers,
            vec![5],
            "indexes into the input, not the finite subset"
        );
    }

    #[test]
    fn summarize_tiny_inputs() {
        let s = summarize(&[], 0);
        assert_eq!(s.n, 0);
        assert!(s.median.is_nan() && s.mean.is_nan() && s.ci95.is_none());
        let s = summarize(&[f64::NAN], 0);
        assert_eq!((s.n, s.non_finite), (0, 1));
        let s = summarize(&[5.0], 0);
        assert_eq!(
            (s.median, s.mean, s.min, s.max, s.mad),
            (5.0, 5.0, 5.0, 5.0, 0.0)
        );
        assert!(s.stddev.is_nan());
        assert!(s.ci95.is_none() && s.ci_half_width_rel.is_none());
        let s = summarize(&[5.0, 6.0], 0);
        assert!(s.ci95.is_none());
        assert!(close(s.stddev, 0.5f64.sqrt(), 1e-12));
        let s = summarize(&[5.0, 6.0, 7.0], 0);
        assert!(s.ci95.is_some());
    }

    #[test]
    fn summary_serializes_ci_as_pair_and_nan_as_null() {
        let json = serde_json::to_value(summarize(&[1.0, 2.0, 3.0, 4.0], 3)).unwrap();
        assert_eq!(json["ci95"].as_array().unwrap().len(), 2);
        assert_eq!(json["median"], 2.5);
        let json = serde_json::to_value(summarize(&[1.0], 3)).unwrap();
        assert!(json["stddev"].is_null() && json["ci95"].is_null());
    }

    #[test]
    fn ci_covers_true_median_in_simulation() {
        // 400 samples of 20 from N(100, 5^2): the true median is 100.
        let mut rng = test_rng(20240601);
        let trials = 400;
        let covered = (0..trials)
            .filter(|&t| {
                let v = normals(&mut rng, 20, 100.0, 5.0);
                let (lo, hi) = summarize(&v, t).ci95.unwrap();
                lo <= 100.0 && 100.0 <= hi
            })
            .count();
        let coverage = covered as f64 / trials as f64;
        assert!(coverage >= 0.93, "coverage {coverage}");
        // ...and it is not a uselessly wide interval either.
        assert!(coverage <= 0.99, "coverage {coverage}");
    }

    #[test]
    fn ci_width_shrinks_with_n() {
        // Mean width over 10 data sets per n, so one lucky set cannot
        // decide; the width of a median's interval goes as 1/sqrt(n).
        let mut rng = test_rng(5);
        let widths: Vec<f64> = [10, 40, 160]
            .iter()
            .map(|&n| {
                let total: f64 = (0..10)
                    .map(|k| {
                        let v = normals(&mut rng, n, 100.0, 5.0);
                        let (lo, hi) = summarize(&v, k).ci95.unwrap();
                        hi - lo
                    })
                    .sum();
                total / 10.0
            })
            .collect();
        assert!(widths.windows(2).all(|w| w[1] < w[0]), "{widths:?}");
        // 4x the samples, about half the width; 16x, about a quarter.
        assert!(widths.windows(2).all(|w| w[1] < 0.7 * w[0]), "{widths:?}");
        assert!(widths[2] < widths[0] / 3.0, "{widths:?}");
    }

    #[test]
    fn same_seed_same_ci_regardless_of_input_order() {
        let mut rng = test_rng(11);
        let v = normals(&mut rng, 30, 50.0, 3.0);
        let mut rev = v.clone();
        rev.reverse();
        let a = summarize(&v, 42);
        assert_eq!(a, summarize(&v, 42));
        assert_eq!(a.ci95, summarize(&rev, 42).ci95);
        let other = summarize(&v, 43).ci95.unwrap();
        assert_ne!(a.ci95.unwrap(), other, "the seed must matter");
        // ...but only by Monte-Carlo noise, small next to the width.
        let (lo, hi) = a.ci95.unwrap();
        assert!((other.0 - lo).abs() < (hi - lo) / 4.0);
        assert!((other.1 - hi).abs() < (hi - lo) / 4.0);
    }

    #[test]
    fn outlier_injected_10x_is_flagged_and_kept() {
        let mut rng = test_rng(3);
        let mut v = normals(&mut rng, 30, 1.0, 0.01);
        v[17] = 10.0;
        let s = summarize(&v, 0);
        assert_eq!(s.outliers, vec![17]);
        assert_eq!(s.n, 30, "flagged, not removed");
        assert!(s.mean > 1.2, "the mean still includes it");
        assert_eq!(s.max, 10.0);
    }

    #[test]
    fn constant_input_has_no_outliers_and_zero_width() {
        let s = summarize(&[2.5; 25], 0);
        assert!(s.outliers.is_empty());
        assert_eq!((s.mad, s.stddev), (0.0, 0.0));
        assert_eq!(s.ci95, Some((2.5, 2.5)));
        assert_eq!(s.ci_half_width_rel, Some(0.0));
    }

    #[test]
    fn mad_zero_falls_back_to_mean_absolute_deviation() {
        // 7 of 10 equal: MAD = 0. meanAD = (0.01 + 0.02 + 5) / 10 = 0.503:
        // 5.0 scores 5 / (1.253314 * 0.503) = 7.9, the others about 0.03.
        let mut v = vec![1.0; 10];
        v[2] = 1.01;
        v[4] = 0.98;
        v[9] = 6.0;
        let s = summarize(&v, 0);
        assert_eq!(s.mad, 0.0);
        assert_eq!(s.outliers, vec![9]);
    }

    #[test]
    fn median_of_zero_has_no_relative_width() {
        let s = summarize(&[-1.0, 0.0, 1.0], 0);
        assert_eq!(s.median, 0.0);
        assert!(s.ci95.is_some() && s.ci_half_width_rel.is_none());
    }

    #[test]
    fn ratio_ci_of_identical_distributions_contains_one() {
        // The same samples on both sides: exactly 1, inside the interval.
        let mut rng = test_rng(8);
        let a = normals(&mut rng, 25, 200.0, 4.0);
        let (r, (lo, hi)) = ratio_ci(&a, &a, 1).unwrap();
        assert_eq!(r, 1.0);
        assert!(lo < 1.0 && 1.0 < hi, "{lo} {hi}");
        assert_eq!(ratio_ci(&a, &a, 1), ratio_ci(&a, &a, 1));
        // Independent samples of one distribution: the interval holds 1 in
        // about 95% of trials (as for summarize, the percentile bootstrap of
        // a median runs a little short at this size).
        let trials = 200;
        let held = (0..trials)
            .filter(|&t| {
                let a = normals(&mut rng, 20, 200.0, 4.0);
                let b = normals(&mut rng, 20, 200.0, 4.0);
                let (_, (lo, hi)) = ratio_ci(&a, &b, t).unwrap();
                lo <= 1.0 && 1.0 <= hi
            })
            .count();
        let coverage = held as f64 / trials as f64;
        // 0.96 over 4000 trials; 200 trials have a standard error of 1.4%.
        assert!((0.92..=0.995).contains(&coverage), "coverage {coverage}");
    }

    #[test]
    fn ratio_ci_finds_a_known_difference() {
        // b is 5% slower than a: the interval excludes 1 and holds 1/1.05.
        let mut rng = test_rng(9);
        let a = normals(&mut rng, 30, 100.0, 1.0);
        let b = normals(&mut rng, 30, 105.0, 1.05);
        let (r, (lo, hi)) = ratio_ci(&a, &b, 2).unwrap();
        assert!(hi < 1.0, "{lo} {r} {hi}");
        assert!(lo <= 1.0 / 1.05 && 1.0 / 1.05 <= hi, "{lo} {r} {hi}");
        // An exact copy scaled by 1.05 has ratio exactly 1.05.
        let c: Vec<f64> = a.iter().map(|x| x * 1.05).collect();
        let (r, (lo, hi)) = ratio_ci(&c, &a, 2).unwrap();
        assert!(close(r, 1.05, 1e-12) && lo <= r && r <= hi);
    }

    #[test]
    fn ratio_ci_needs_three_values_each_and_nonzero_denominator() {
        assert!(ratio_ci(&[1.0, 2.0], &[1.0, 2.0, 3.0], 0).is_none());
        assert!(ratio_ci(&[1.0, 2.0, 3.0], &[1.0, f64::NAN, 3.0], 0).is_none());
        assert!(ratio_ci(&[1.0, 2.0, 3.0], &[0.0, 0.0, 3.0], 0).is_none());
        assert!(ratio_ci(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0], 0).is_some());
    }

    #[test]
    fn t_quantiles() {
        assert_eq!(t_quantile_975(0), f64::INFINITY);
        assert!(close(t_quantile_975(1), 12.7062, 1e-4));
        assert!(close(t_quantile_975(9), 2.2622, 1e-4));
        // The expansion joins the table smoothly and tends to z.
        assert!(close(t_quantile_975(31), 2.039513, 1e-5));
        assert!(close(t_quantile_975(40), 2.021075, 1e-5));
        assert!(close(t_quantile_975(120), 1.979930, 1e-5));
        assert!(close(t_quantile_975(100_000), 1.959964, 1e-4));
        // The expansion agrees with the table where both exist.
        let v = 30.0;
        let z: f64 = 1.959_963_984_540_054;
        let cf = z
            + (z.powi(3) + z) / (4.0 * v)
            + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
            + (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z)
                / (384.0 * v * v * v);
        assert!(close(cf, t_quantile_975(30), 1e-5), "{cf}");
        assert!((1..200).all(|df| t_quantile_975(df + 1) < t_quantile_975(df)));
    }

    #[test]
    fn uniform_below_is_in_range_and_unbiased() {
        let mut rng = test_rng(15);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[uniform_below(&mut rng, 3)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_500..=10_500).contains(&c)),
            "{counts:?}"
        );
        assert_eq!(uniform_below(&mut rng, 1), 0);
        // The 64-bit path, above u32::MAX: thirds of 3 * 2^32.
        let big = 3usize << 32;
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[uniform_below(&mut rng, big) >> 32] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_500..=10_500).contains(&c)),
            "{counts:?}"
        );
        assert!((0..1000).all(|_| uniform_below(&mut rng, usize::MAX) < usize::MAX));
    }

    proptest! {
        // Each case runs one or two 2000-resample bootstraps, slow in an
        // unoptimized build: fewer cases than proptest's default 256.
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn prop_summary_is_consistent(
            v in proptest::collection::vec(-1e6f64..1e6, 1..60),
            seed in any::<u64>(),
        ) {
            let s = summarize(&v, seed);
            prop_assert_eq!(s.n, v.len());
            prop_assert!(s.min <= s.median && s.median <= s.max);
            prop_assert!(s.min <= s.mean + 1e-6 && s.mean <= s.max + 1e-6);
            prop_assert!(s.mad >= 0.0);
            if let Some((lo, hi)) = s.ci95 {
                prop_assert!(s.min <= lo && lo <= s.median && s.median <= hi && hi <= s.max);
            } else {
                prop_assert!(v.len() < 3);
            }
            prop_assert!(s.outliers.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(s.outliers.iter().all(|&i| i < v.len()));
        }

        #[test]
        fn prop_summary_scales_with_the_data(
            v in proptest::collection::vec(1.0f64..1e3, 3..40),
            c in 0.01f64..100.0,
            seed in any::<u64>(),
        ) {
            let s = summarize(&v, seed);
            let scaled: Vec<f64> = v.iter().map(|x| x * c).collect();
            let t = summarize(&scaled, seed);
            let tol = |x: f64| 1e-9 * x.abs().max(1.0);
            prop_assert!((t.median - c * s.median).abs() <= tol(t.median));
            let ((a, b), (x, y)) = (s.ci95.unwrap(), t.ci95.unwrap());
            prop_assert!((x - c * a).abs() <= tol(x) && (y - c * b).abs() <= tol(y));
            let (hs, ht) = (s.ci_half_width_rel.unwrap(), t.ci_half_width_rel.unwrap());
            prop_assert!((ht - hs).abs() <= 1e-9);
            prop_assert_eq!(s.outliers, t.outliers);
        }

        #[test]
        fn prop_percentile_is_monotone(
            mut v in proptest::collection::vec(-1e6f64..1e6, 1..50),
            p in 0.0f64..100.0,
            q in 0.0f64..100.0,
        ) {
            v.sort_by(f64::total_cmp);
            let (p, q) = if p <= q { (p, q) } else { (q, p) };
            let (a, b) = (percentile(&v, p), percentile(&v, q));
            prop_assert!(a <= b);
            prop_assert!(v[0] <= a && b <= v[v.len() - 1]);
        }

        #[test]
        fn prop_ratio_interval_holds_the_ratio(
            a in proptest::collection::vec(1.0f64..1e3, 3..30),
            b in proptest::collection::vec(1.0f64..1e3, 3..30),
            seed in any::<u64>(),
        ) {
            let (r, (lo, hi)) = ratio_ci(&a, &b, seed).unwrap();
            prop_assert!(lo <= hi && r > 0.0);
            prop_assert!((r - median(&a) / median(&b)).abs() <= 1e-12 * r);
        }
    }
}

/// Test data for this crate's tests and the stop rule's (`smtlab-measure`,
/// through the `testing` feature): deterministic normal draws.
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    use rand::RngCore;
    use rand_chacha::ChaCha8Rng;

    /// Standard normal draws (Box-Muller) from a seeded ChaCha8, so every
    /// simulated test is deterministic.
    pub fn normals(rng: &mut ChaCha8Rng, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        let unit =
            |rng: &mut ChaCha8Rng| ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        (0..n)
            .map(|_| {
                let (u1, u2) = (unit(rng), unit(rng));
                mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
            })
            .collect()
    }
}
