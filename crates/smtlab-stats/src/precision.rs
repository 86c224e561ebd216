//! The precision estimate the stop rule compares with its target: the
//! bootstrap interval of the median, guarded by Student's t interval of the
//! mean below [`SMALL_N`] samples. Uses `descriptive` and `bootstrap`.

use crate::bootstrap::{bootstrap_median_ci, half_width_rel};
use crate::descriptive::{finite_sorted, mean_of, median_sorted, stddev_of};

/// Below this many samples the stop rule also requires the t-based interval
/// of the mean to be within the precision target (see
/// [`precision_estimate`]).
pub const SMALL_N: usize = 10;

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
