//! Tests of the whole crate, through its public names.

use crate::*;
use proptest::prelude::*;
use rand_chacha::ChaCha8Rng;
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
fn medians_ci_of_one_sample_is_the_median_and_its_interval() {
    let mut rng = test_rng(21);
    let v = normals(&mut rng, 30, 50.0, 3.0);
    let (m, (lo, hi)) = medians_ci(&[&v], |m| m[0], 4).unwrap();
    assert_eq!(m, median(&v));
    assert!(lo <= m && m <= hi, "{lo} {m} {hi}");
    // Another stream than summarize's, so not equal; equal up to
    // Monte-Carlo noise, small next to the width.
    let (slo, shi) = summarize(&v, 4).ci95.unwrap();
    assert!((slo - lo).abs() < (hi - lo) / 4.0, "{slo} {lo}");
    assert!((shi - hi).abs() < (hi - lo) / 4.0, "{shi} {hi}");
}

#[test]
fn medians_ci_of_a_ratio_agrees_with_ratio_ci() {
    let mut rng = test_rng(22);
    let a = normals(&mut rng, 25, 100.0, 2.0);
    let b = normals(&mut rng, 25, 80.0, 2.0);
    let (r, (lo, hi)) = medians_ci(&[&a, &b], |m| m[0] / m[1], 6).unwrap();
    let (r2, (lo2, hi2)) = ratio_ci(&a, &b, 6).unwrap();
    assert_eq!(r, r2, "the same estimate, exactly");
    assert!((lo - lo2).abs() < (hi2 - lo2) / 4.0, "{lo} {lo2}");
    assert!((hi - hi2).abs() < (hi2 - lo2) / 4.0, "{hi} {hi2}");
}

#[test]
fn medians_ci_covers_a_known_gain_in_simulation() {
    // The SMT gain (X2 − X1) / X1 of X1 ~ N(100, 4²), X2 ~ N(130, 5²):
    // 0.30. 20 samples a side, as a study measures; 200 trials.
    let mut rng = test_rng(20240602);
    let trials = 200;
    let gain = |m: &[f64]| (m[1] - m[0]) / m[0];
    let covered = (0..trials)
        .filter(|&t| {
            let x1 = normals(&mut rng, 20, 100.0, 4.0);
            let x2 = normals(&mut rng, 20, 130.0, 5.0);
            let (_, (lo, hi)) = medians_ci(&[&x1, &x2], gain, t).unwrap();
            lo <= 0.30 && 0.30 <= hi
        })
        .count();
    let coverage = covered as f64 / trials as f64;
    // As for ratio_ci: about 95%, a little short at this size; 200 trials
    // have a standard error of 1.5%.
    assert!((0.90..=0.995).contains(&coverage), "coverage {coverage}");
}

#[test]
fn medians_ci_is_seeded_and_ignores_the_order_of_values() {
    let mut rng = test_rng(23);
    let a = normals(&mut rng, 15, 10.0, 1.0);
    let b = normals(&mut rng, 16, 12.0, 1.0);
    let f = |m: &[f64]| m[1] - m[0];
    let one = medians_ci(&[&a, &b], f, 42);
    assert_eq!(one, medians_ci(&[&a, &b], f, 42));
    let mut rev = a.clone();
    rev.reverse();
    assert_eq!(one, medians_ci(&[&rev, &b], f, 42));
    let (_, (lo, hi)) = one.unwrap();
    let (_, other) = medians_ci(&[&a, &b], f, 43).unwrap();
    assert_ne!((lo, hi), other, "the seed must matter");
    assert!((other.0 - lo).abs() < (hi - lo) / 4.0);
    assert!((other.1 - hi).abs() < (hi - lo) / 4.0);
}

#[test]
fn medians_ci_needs_three_finite_values_in_every_sample() {
    let three = [1.0, 2.0, 3.0];
    let f = |m: &[f64]| m.iter().sum::<f64>();
    assert!(medians_ci(&[&three, &three], f, 0).is_some());
    assert!(medians_ci(&[&three, &[1.0, 2.0]], f, 0).is_none());
    assert!(medians_ci(&[&[4.0], &three], f, 0).is_none());
    assert!(medians_ci(&[&three, &[1.0, f64::NAN, 3.0]], f, 0).is_none());
    assert!(medians_ci(&[], f, 0).is_none());
    // An estimate that is not a number is no estimate.
    assert!(medians_ci(&[&three, &[0.0; 3]], |m| m[0] / m[1], 0).is_none());
    // Nor is an interval some of whose resamples are not numbers.
    let zeros_or_not = [0.0, 0.0, 1.0, 1.0, 1.0];
    assert!(medians_ci(&[&zeros_or_not], |m| m[0] / m[0], 0).is_none());
}

#[test]
fn medians_cis_gives_each_quantity_the_interval_medians_ci_gives_it() {
    let mut rng = test_rng(24);
    let a = normals(&mut rng, 12, 10.0, 1.0);
    let b = normals(&mut rng, 13, 20.0, 1.0);
    let both = |m: &[f64]| Some([m[0] + m[1], m[1] / m[0]]);
    let ([sum, ratio], [sum_ci, ratio_ci]) = medians_cis(&[&a, &b], both, 5).unwrap();
    assert_eq!(
        medians_ci(&[&a, &b], |m| m[0] + m[1], 5),
        Some((sum, sum_ci))
    );
    assert_eq!(
        medians_ci(&[&a, &b], |m| m[1] / m[0], 5),
        Some((ratio, ratio_ci))
    );
    // A quantity undefined for the data, or for one resample, is no
    // interval; an infinite one is kept.
    assert!(medians_cis(&[&a], |_| None::<[f64; 1]>, 5).is_none());
    let ([inf], [(lo, hi)]) = medians_cis(&[&a], |_| Some([f64::INFINITY]), 5).unwrap();
    assert_eq!((inf, lo, hi), (f64::INFINITY, f64::INFINITY, f64::INFINITY));
    assert!(medians_ci(&[&a], |_| f64::INFINITY, 5).is_none());
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
        + (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / (384.0 * v * v * v);
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
