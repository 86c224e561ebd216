//! Descriptive statistics of finite values: median, percentile, mean,
//! standard deviation, MAD. Uses nothing else in this crate.

/// Median of the finite values (non-finite ones are ignored, as in
/// [`summarize`](crate::summarize)); `NaN` when there is none. Even n: mean of the two middle
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

pub(crate) fn finite_sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

pub(crate) fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        midpoint(sorted[n / 2 - 1], sorted[n / 2])
    }
}

pub(crate) fn midpoint(a: f64, b: f64) -> f64 {
    let m = (a + b) / 2.0;
    // a + b overflows only for values near f64::MAX.
    if m.is_finite() {
        m
    } else {
        a / 2.0 + b / 2.0
    }
}

pub(crate) fn mean_of(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample standard deviation, two-pass (deviations from the mean are
/// summed, not raw squares, so large values with small spread — wall times
/// in nanoseconds — keep their precision).
pub(crate) fn stddev_of(values: &[f64], mean: f64) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

pub(crate) fn mad_of(sorted: &[f64], median: f64) -> f64 {
    let mut dev: Vec<f64> = sorted.iter().map(|v| (v - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    median_sorted(&dev)
}
