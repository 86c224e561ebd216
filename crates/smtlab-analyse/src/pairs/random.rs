//! Random schedules: uniformly random perfect matchings of the programs
//! (an odd count adds an "alone" slot, `WS = 1`), drawn in seeded chunks
//! spread over every core, and the distribution of their speedup: mean,
//! min, max, percentiles and the CDF, from a fine histogram rather than 10
//! million stored values.
//!
//! Reproducible: chunk `c` always holds draws `c·CHUNK ..` and draws them
//! from ChaCha8 keyed by (seed, `c`), starting from the same slot order, so
//! which thread runs which chunk does not matter; counts are integers and
//! the sum is added up in chunk order. The same seed gives the same numbers
//! on one thread or sixty-four. Uses `matrix`.

use std::sync::atomic::{AtomicU64, Ordering};

use rand_chacha::ChaCha8Rng;
use smtlab_stats::{rng_for_domain, uniform_below};

use super::matrix::Matrix;

/// Draws per chunk: enough that handing out chunks costs nothing, few
/// enough that 10 million draws keep every core busy to the end.
const CHUNK: u64 = 50_000;

/// Bins of the speedup histogram, spread evenly between the exact worst and
/// best speedups (every schedule lies between them): percentiles are exact
/// to one bin, (best - worst) / 100 000 — for the paper's 12-26% spread,
/// 0.0014 percentage points. 800 KB of counts per thread.
pub const BINS: usize = 100_000;

/// Points of the CDF reported (and drawn) between the lowest and highest
/// speedup drawn, besides its two ends.
const CDF_POINTS: usize = 200;

/// Draws uniformly random schedules of one matrix. Holds the matrix as one
/// flat table with the "alone" slot as a row and column of 1s, so a draw
/// reads one cell per pair with no branch.
pub(crate) struct Drawer {
    slots: usize,
    ws: Vec<f64>,
    order: Vec<usize>,
}

impl Drawer {
    pub(crate) fn new(m: &Matrix) -> Drawer {
        let n = m.len();
        let slots = n + n % 2;
        let mut ws = vec![1.0; slots * slots];
        for i in 0..n {
            ws[i * slots..i * slots + n].copy_from_slice(&m.ws[i]);
        }
        Drawer {
            slots,
            ws,
            order: (0..slots).collect(),
        }
    }

    /// Start again from the identity order, so that what a stream draws
    /// does not depend on the draws made before it.
    pub(crate) fn reset(&mut self) {
        self.order.iter_mut().enumerate().for_each(|(i, o)| *o = i);
    }

    /// The speedup of one uniformly random schedule. Pairs the first
    /// unpaired slot with a uniformly chosen other one, again and again:
    /// every perfect matching comes out with probability 1/(slots-1)!!,
    /// from half the random numbers a full shuffle would take.
    pub(crate) fn draw(&mut self, rng: &mut ChaCha8Rng) -> f64 {
        let s = self.slots;
        let mut sum = 0.0;
        let mut i = 0;
        while i + 1 < s {
            let j = i + 1 + uniform_below(rng, s - i - 1);
            self.order.swap(i + 1, j);
            sum += self.ws[self.order[i] * s + self.order[i + 1]];
            i += 2;
        }
        sum / (s / 2) as f64 - 1.0
    }
}

/// The distribution of random schedules' speedups.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomStats {
    pub trials: u64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub p05: f64,
    pub p50: f64,
    pub p95: f64,
    /// (speedup, fraction of schedules at or below it), ascending: `(lo,
    /// 0)`, then bin edges evenly spread from the lowest to the highest
    /// speedup drawn (at most 201), then `(hi, 1)`.
    pub cdf: Vec<(f64, f64)>,
}

/// The threads to use: every core this process may run on.
pub(crate) fn all_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |t| t.get())
}

/// `trials` random schedules (at least 1) of `m`, their speedup
/// distribution on a histogram over `[lo, hi]`, the exact worst and best
/// speedups; on every core.
pub fn distribution(m: &Matrix, trials: u64, seed: u64, lo: f64, hi: f64) -> RandomStats {
    distribution_on(m, trials, seed, lo, hi, all_threads())
}

/// What one thread found: its counts and extremes, and each chunk's sum.
struct Part {
    hist: Vec<u64>,
    min: f64,
    max: f64,
    sums: Vec<(u64, f64)>,
}

/// [`distribution`] on `threads` threads (the same numbers for any count;
/// the benchmark compares one thread and all).
pub fn distribution_on(
    m: &Matrix,
    trials: u64,
    seed: u64,
    lo: f64,
    hi: f64,
    threads: usize,
) -> RandomStats {
    let trials = trials.max(1);
    let chunks = trials.div_ceil(CHUNK);
    // An all-equal matrix has lo == hi: one bin holds everything.
    let width = (hi - lo).max(f64::MIN_POSITIVE);
    // Float rounding may put a draw a hair outside [lo, hi]: the end bins.
    let bin = |s: f64| (((s - lo) / width * BINS as f64).max(0.0) as usize).min(BINS - 1);
    let next = AtomicU64::new(0);
    let threads = threads.clamp(1, usize::try_from(chunks).unwrap_or(usize::MAX));
    let parts: Vec<Part> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut drawer = Drawer::new(m);
                    let mut p = Part {
                        hist: vec![0; BINS],
                        min: f64::INFINITY,
                        max: f64::NEG_INFINITY,
                        sums: Vec::new(),
                    };
                    loop {
                        let c = next.fetch_add(1, Ordering::Relaxed);
                        if c >= chunks {
                            break;
                        }
                        let mut rng = rng_for_domain(seed, b"pairsrnd", c);
                        drawer.reset();
                        let mut sum = 0.0;
                        for _ in 0..CHUNK.min(trials - c * CHUNK) {
                            let v = drawer.draw(&mut rng);
                            sum += v;
                            p.min = p.min.min(v);
                            p.max = p.max.max(v);
                            p.hist[bin(v)] += 1;
                        }
                        p.sums.push((c, sum));
                    }
                    p
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a drawing thread does not panic"))
            .collect()
    });
    let mut hist = vec![0u64; BINS];
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut sums = Vec::with_capacity(chunks as usize);
    for p in parts {
        hist.iter_mut().zip(&p.hist).for_each(|(h, x)| *h += x);
        min = min.min(p.min);
        max = max.max(p.max);
        sums.extend(p.sums);
    }
    // Added in chunk order: the same floating-point sum on any threads.
    sums.sort_by_key(|&(c, _)| c);
    let sum: f64 = sums.iter().map(|&(_, s)| s).sum();
    let bin_mid = |k: usize| lo + (k as f64 + 0.5) / BINS as f64 * width;
    // The smallest value with at least a fraction q of the draws at or
    // below it (the nearest-rank percentile), to within one bin: the
    // middle of its bin, never outside what was drawn.
    let at = |q: f64| -> f64 {
        let want = ((q * trials as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (k, &c) in hist.iter().enumerate() {
            seen += c;
            if seen >= want {
                return bin_mid(k).clamp(min, max);
            }
        }
        max
    };
    // The CDF's points spread over the bins that hold draws, not over all
    // of [lo, hi]: with many programs random schedules crowd into a narrow
    // band far from the best and worst, which 200 points spread evenly over
    // [lo, hi] would cross in two or three steps.
    let mut below = Vec::with_capacity(BINS);
    let mut seen = 0u64;
    for &c in &hist {
        seen += c;
        below.push(seen);
    }
    let (first, last) = (bin(min), bin(max));
    let edge = |k: usize| lo + (k + 1) as f64 / BINS as f64 * width;
    let mut cdf = Vec::with_capacity(CDF_POINTS + 3);
    cdf.push((lo, 0.0));
    for t in 0..=CDF_POINTS {
        let k = first + (last - first) * t / CDF_POINTS;
        if cdf.last().is_some_and(|&(x, _)| x >= edge(k)) {
            continue; // fewer bins than points: each bin once
        }
        cdf.push((edge(k), below[k] as f64 / trials as f64));
    }
    if cdf.last().is_some_and(|&(x, _)| x < hi) {
        cdf.push((hi, 1.0));
    }
    RandomStats {
        trials,
        // Adding up many equal values can round a hair past them.
        mean: (sum / trials as f64).clamp(min, max),
        min,
        max,
        p05: at(0.05),
        p50: at(0.50),
        p95: at(0.95),
        cdf,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::matching;
    use proptest::prelude::*;

    fn four() -> Matrix {
        Matrix::from_csv(include_str!("../../../../examples/pairs-4.csv")).unwrap()
    }

    #[test]
    fn every_schedule_is_equally_likely() {
        // Five programs (six slots): 15 schedules, each 1/15 of the draws.
        let names = (0..5).map(|i| format!("p{i}")).collect();
        let ws = (0..5)
            .map(|i| (0..5).map(|j| (1 << i | 1 << j) as f64).collect())
            .collect();
        let m = Matrix::new(names, ws).unwrap();
        let mut d = Drawer::new(&m);
        let mut rng = rng_for_domain(1, b"test\0\0\0\0", 0);
        let mut count = std::collections::BTreeMap::new();
        let draws = 150_000;
        for _ in 0..draws {
            d.draw(&mut rng);
            // After a draw, consecutive slots are the pairs.
            let mut pairs: Vec<(usize, usize)> = d
                .order
                .chunks(2)
                .map(|p| (p[0].min(p[1]), p[0].max(p[1])))
                .collect();
            pairs.sort_unstable();
            *count.entry(pairs).or_insert(0u32) += 1;
        }
        assert_eq!(count.len(), 15, "{count:?}");
        for (pairs, &c) in &count {
            // 10 000 expected; 5 standard deviations is about 480.
            assert!((9_500..10_500).contains(&c), "{pairs:?}: {c}");
        }
    }

    #[test]
    fn random_schedules_are_uniform_and_between_the_worst_and_the_best() {
        // Three schedules, speedups 0.45, 0.25, 0.10, each 1/3 likely.
        let m = four();
        let (b, w) = (matching::best(&m), matching::worst(&m));
        let r = distribution(&m, 300_000, 7, w.speedup, b.speedup);
        assert_eq!(r.trials, 300_000);
        assert!((r.mean - 0.8 / 3.0).abs() < 0.002, "{}", r.mean);
        assert!((r.min - 0.10).abs() < 1e-12 && (r.max - 0.45).abs() < 1e-12);
        assert!((r.p05 - 0.10).abs() < 1e-5, "{}", r.p05);
        assert!((r.p50 - 0.25).abs() < 1e-5, "{}", r.p50);
        assert!((r.p95 - 0.45).abs() < 1e-5, "{}", r.p95);
        // The CDF: 0 at the worst, a third just above it, 1 at the best.
        assert_eq!(r.cdf[0], (w.speedup, 0.0));
        assert!((r.cdf[1].1 - 1.0 / 3.0).abs() < 0.005, "{:?}", r.cdf[1]);
        let last = r.cdf.last().unwrap();
        assert!((last.0 - 0.45).abs() < 1e-12 && last.1 == 1.0, "{last:?}");
        assert!(r
            .cdf
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert!(
            (200..=CDF_POINTS + 3).contains(&r.cdf.len()),
            "{}",
            r.cdf.len()
        );
    }

    #[test]
    fn the_cdf_has_its_points_where_the_draws_are() {
        // 40 programs: random schedules fill only part of the range between
        // the exact worst and best; the CDF still has 200 points across it.
        let upper: Vec<f64> = (0..820)
            .map(|k| 0.8 + (k * 7919 % 1000) as f64 / 1000.0)
            .collect();
        let m = Matrix::from_upper(40, &upper);
        let (b, w) = (matching::best(&m), matching::worst(&m));
        let r = distribution(&m, 50_000, 1, w.speedup, b.speedup);
        // (Spread evenly over [worst, best], only about 110 would be.)
        assert!(r.max - r.min < (b.speedup - w.speedup) * 0.6, "{r:?}");
        let bin = (b.speedup - w.speedup) / BINS as f64;
        let inside = r
            .cdf
            .iter()
            .filter(|&&(x, _)| x >= r.min && x <= r.max + bin)
            .count();
        assert!(inside >= 190, "{inside} points between min and max");
        assert_eq!(r.cdf.first(), Some(&(w.speedup, 0.0)));
        assert_eq!(r.cdf.last(), Some(&(b.speedup, 1.0)));
        // At the 5th percentile, about 5% of the draws are at or below.
        let at = r.cdf.iter().find(|&&(x, _)| x >= r.p05).unwrap();
        assert!((at.1 - 0.05).abs() < 0.01, "{at:?}");
    }

    #[test]
    fn the_same_seed_gives_the_same_numbers_on_any_number_of_threads() {
        let m = four();
        let one = distribution_on(&m, 230_001, 7, 0.10, 0.45, 1);
        for threads in [2, 3, 8] {
            assert_eq!(distribution_on(&m, 230_001, 7, 0.10, 0.45, threads), one);
        }
        assert_ne!(
            distribution_on(&m, 230_001, 8, 0.10, 0.45, 2).mean,
            one.mean
        );
        // One trial, and an all-equal matrix (lo == hi), are fine.
        let r = distribution_on(&m, 1, 7, 0.10, 0.45, 4);
        assert_eq!((r.trials, r.min, r.max, r.p50), (1, r.mean, r.mean, r.mean));
        let flat = Matrix::new(vec!["a".into(), "b".into()], vec![vec![1.2; 2]; 2]).unwrap();
        let r = distribution(&flat, 1000, 1, 0.2, 0.2);
        assert!((r.p05 - 0.2).abs() < 1e-12 && (r.p95 - 0.2).abs() < 1e-12);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        /// The exact optimum is never below the best random schedule, nor
        /// the exact worst above the worst one.
        #[test]
        fn no_random_schedule_beats_the_exact_best_or_undercuts_the_worst(
            n in 2usize..=30,
            upper in prop::collection::vec(0.0f64..3.0, 465),
            seed in 0u64..1000,
        ) {
            let m = Matrix::from_upper(n, &upper);
            let (b, w) = (matching::best(&m), matching::worst(&m));
            let r = distribution(&m, 20_000, seed, w.speedup, b.speedup);
            prop_assert!(r.max <= b.speedup + 1e-9, "random {} above the best {}", r.max, b.speedup);
            prop_assert!(r.min >= w.speedup - 1e-9, "random {} below the worst {}", r.min, w.speedup);
            prop_assert!(r.min <= r.p05 && r.p05 <= r.p50 && r.p50 <= r.p95 && r.p95 <= r.max);
            prop_assert!(r.min <= r.mean && r.mean <= r.max);
        }
    }
}
