//! A scheduler that re-pairs the programs at random every period (Ruan et
//! al.'s remedy for an unlucky pairing): over k periods its speedup is the
//! mean of k random schedules, so its mean stays that of one random
//! schedule while its spread narrows (as 1/√k). Simulated here for k = 1,
//! 2, 4, ..., 64, each over many schedulers.
//!
//! Scheduler `s` runs the random schedules `64·s .. 64·s + 63` of the
//! analysis' one stream (`random`), and after k periods has run the first k
//! of them: each k's schedulers are independent of each other, as they
//! must be, while the k's share their draws (common random numbers: the
//! band's narrowing is not blurred by fresh noise at every k). With the
//! default 10 million trials the draws are the random distribution's own
//! first 1.28 million, so re-randomizing costs nothing more; with fewer
//! trials the stream is drawn on. Reproducible like `random`. Uses `matrix`
//! and `random`.

use smtlab_stats::percentile;

use super::matrix::Matrix;
use super::progress::Progress;
use super::random::{self, all_threads, Table};

/// The numbers of periods simulated.
pub const PERIODS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Random schedules each simulated scheduler runs: one per period of the
/// longest simulation.
pub const DRAWS_PER_SCHEDULER: usize = 64;

/// Simulated schedulers per number of periods unless told otherwise:
/// enough that the 5th and 95th percentiles move by well under a tenth of
/// a percentage point from one seed to another.
pub const SCHEDULERS: usize = 20_000;

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

/// The random schedules `schedulers` simulated schedulers need (at least
/// one scheduler).
pub fn draws_needed(schedulers: usize) -> usize {
    schedulers.max(1) * DRAWS_PER_SCHEDULER
}

/// [`PERIODS`], each over `schedulers` (at least 1) simulated schedulers,
/// drawn from `seed` on every core: the same numbers as the analysis of
/// `m` with this seed shows.
pub fn rerandomization(m: &Matrix, schedulers: usize, seed: u64) -> Vec<Rerandomized> {
    let table = Table::new(m);
    // Every schedule's mean WS lies between the smallest and largest cell
    // (or 1, alone): a range that clamps nothing.
    let cells = m.ws.iter().flatten().copied().chain([1.0]);
    let lo = cells.clone().fold(f64::INFINITY, f64::min) - 1.0;
    let hi = cells.fold(f64::NEG_INFINITY, f64::max) - 1.0;
    let (_, draws) = random::draw(
        &table,
        1,
        draws_needed(schedulers),
        seed,
        (lo, hi),
        all_threads(),
        &Progress::new(),
    );
    from_draws(&draws, schedulers)
}

/// [`PERIODS`] over `schedulers` (at least 1) simulated schedulers, from
/// the speedups of [`draws_needed`] random schedules, in stream order.
pub fn from_draws(draws: &[f64], schedulers: usize) -> Vec<Rerandomized> {
    let schedulers = schedulers.max(1);
    assert!(draws.len() >= draws_needed(schedulers), "too few draws");
    let mut means: Vec<Vec<f64>> = vec![Vec::with_capacity(schedulers); PERIODS.len()];
    for run in draws.chunks_exact(DRAWS_PER_SCHEDULER).take(schedulers) {
        let mut sum = 0.0;
        let mut p = 0;
        for (k, &x) in run.iter().enumerate() {
            sum += x;
            if k + 1 == PERIODS[p] as usize {
                means[p].push(sum / f64::from(PERIODS[p]));
                p += 1;
            }
        }
    }
    PERIODS
        .iter()
        .zip(means)
        .map(|(&periods, mut v)| {
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
    fn the_same_seed_gives_the_same_numbers_and_another_seed_others() {
        let m = four();
        let one = rerandomization(&m, 2500, 9);
        assert_eq!(rerandomization(&m, 2500, 9), one);
        assert_ne!(rerandomization(&m, 2500, 10), one);
        assert_eq!(rerandomization(&m, 0, 9)[0].schedulers, 1);
    }

    #[test]
    fn each_period_is_the_mean_of_that_many_of_a_schedulers_draws() {
        // Scheduler 0 draws 0..64, scheduler 1 draws 64..128.
        let draws: Vec<f64> = (0..128)
            .map(|k| if k < 64 { k as f64 } else { 0.0 })
            .collect();
        let rr = from_draws(&draws, 2);
        for r in &rr {
            let k = f64::from(r.periods);
            // Scheduler 0 after k periods: the mean of 0..k, (k - 1) / 2.
            assert_eq!(r.mean, (k - 1.0) / 4.0, "{r:?}");
            assert_eq!(r.p95, percentile(&[0.0, (k - 1.0) / 2.0], 95.0), "{r:?}");
        }
    }
}
