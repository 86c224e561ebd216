//! A scheduler that re-pairs the programs at random every period (Ruan et
//! al.'s remedy for an unlucky pairing): over k periods its speedup is the
//! mean of k random schedules, so its mean stays that of one random
//! schedule while its spread narrows (as 1/√k). Simulated here for k = 1,
//! 2, 4, ..., 64, each over many schedulers, on every core; reproducible
//! like `random` (each block of schedulers keyed by (seed, k, block)).
//! Uses `matrix` and `random`.

use std::sync::atomic::{AtomicUsize, Ordering};

use smtlab_stats::{percentile, rng_for_domain};

use super::matrix::Matrix;
use super::random::{all_threads, Drawer};

/// The numbers of periods simulated.
pub const PERIODS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Simulated schedulers per number of periods unless told otherwise:
/// enough that the 5th and 95th percentiles move by well under a tenth of
/// a percentage point from one seed to another.
pub const SCHEDULERS: usize = 20_000;

/// Schedulers simulated per block (one unit of work for a thread).
const BLOCK: usize = 1_000;

/// A re-randomizing scheduler's speedup after `periods` periods, over
/// `schedulers` simulated ones: the mean, and the 5th, 50th and 95th
/// percentiles (linear between ranks). Serialized as it is in the analysis'
/// JSON.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Rerandomized {
    pub periods: u32,
    pub schedulers: usize,
    pub mean: f64,
    pub p05: f64,
    pub p50: f64,
    pub p95: f64,
}

/// [`PERIODS`], each over `schedulers` (at least 1) simulated schedulers,
/// on every core.
pub fn rerandomization(m: &Matrix, schedulers: usize, seed: u64) -> Vec<Rerandomized> {
    rerandomization_on(m, schedulers, seed, all_threads())
}

/// [`rerandomization`] on `threads` threads (the same numbers for any
/// count).
pub fn rerandomization_on(
    m: &Matrix,
    schedulers: usize,
    seed: u64,
    threads: usize,
) -> Vec<Rerandomized> {
    let schedulers = schedulers.max(1);
    let blocks = schedulers.div_ceil(BLOCK);
    // Job `j` is block `j % blocks` of `PERIODS[j / blocks]`.
    let jobs = PERIODS.len() * blocks;
    let next = AtomicUsize::new(0);
    let done: Vec<(usize, Vec<f64>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.clamp(1, jobs))
            .map(|_| {
                s.spawn(|| {
                    let mut drawer = Drawer::new(m);
                    let mut out = Vec::new();
                    loop {
                        let j = next.fetch_add(1, Ordering::Relaxed);
                        if j >= jobs {
                            break;
                        }
                        let (k, b) = (PERIODS[j / blocks], j % blocks);
                        let stream = u64::from(k) << 32 | b as u64;
                        let mut rng = rng_for_domain(seed, b"pairsrep", stream);
                        drawer.reset();
                        let count = BLOCK.min(schedulers - b * BLOCK);
                        let means = (0..count)
                            .map(|_| {
                                (0..k).map(|_| drawer.draw(&mut rng)).sum::<f64>() / f64::from(k)
                            })
                            .collect();
                        out.push((j, means));
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a simulating thread does not panic"))
            .collect()
    });
    let mut done = done;
    done.sort_by_key(|&(j, _)| j);
    PERIODS
        .iter()
        .enumerate()
        .map(|(p, &periods)| {
            // Blocks in order, so the mean is summed the same way always.
            let mut v: Vec<f64> = done[p * blocks..(p + 1) * blocks]
                .iter()
                .flat_map(|(_, means)| means.iter().copied())
                .collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            v.sort_by(f64::total_cmp);
            Rerandomized {
                periods,
                schedulers,
                mean,
                p05: percentile(&v, 5.0),
                p50: percentile(&v, 50.0),
                p95: percentile(&v, 95.0),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn four() -> Matrix {
        Matrix::from_csv(include_str!("../../../../examples/pairs-4.csv")).unwrap()
    }

    #[test]
    fn re_randomizing_keeps_the_mean_and_narrows_the_band() {
        let rr = rerandomization(&four(), 4000, 3);
        assert_eq!(rr.iter().map(|r| r.periods).collect::<Vec<_>>(), PERIODS);
        // One period: one random schedule, 10%, 25% or 45%.
        let (first, last) = (&rr[0], &rr[6]);
        assert_eq!(first.schedulers, 4000);
        assert!((first.p05 - 0.10).abs() < 1e-12 && (first.p95 - 0.45).abs() < 1e-12);
        for r in &rr {
            assert!((r.mean - 0.8 / 3.0).abs() < 0.01, "{r:?}");
            assert!(r.p05 <= r.p50 && r.p50 <= r.p95, "{r:?}");
        }
        // The band narrows about as 1/sqrt(k): 8 times narrower at 64.
        let band = |r: &Rerandomized| r.p95 - r.p05;
        assert!(rr.windows(2).all(|w| band(&w[1]) <= band(&w[0])), "{rr:?}");
        assert!(band(last) < band(first) / 5.0, "{rr:?}");
    }

    #[test]
    fn the_same_seed_gives_the_same_numbers_on_any_number_of_threads() {
        let m = four();
        let one = rerandomization_on(&m, 2500, 9, 1);
        assert_eq!(rerandomization_on(&m, 2500, 9, 3), one);
        assert_ne!(rerandomization_on(&m, 2500, 10, 2), one);
        assert_eq!(rerandomization_on(&m, 0, 9, 2)[0].schedulers, 1);
    }
}
