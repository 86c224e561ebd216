//! The verdict's number: what an ideal scheduler gains over the median
//! random pairing (the best schedule's speedup minus the random
//! schedules' median), with its 95% interval when the matrix was measured,
//! or why it has none. Uses `matrix`, `matching` and `random`.
//!
//! # The interval, and why it is drawn this way
//!
//! The gain combines every cell (the best schedule is a matching over all
//! of them, the random median a distribution over all of them), so no
//! cell's interval gives it. A measured matrix carries bootstrap
//! replicates of the whole matrix ([`Resampling::Replicates`], drawn by
//! the pairs study from every cell's samples at once); for each, the gain
//! is recomputed exactly as for the matrix itself: the exact best schedule
//! (maximum-weight matching) minus the median of random schedules. The
//! 2.5th and 97.5th percentiles of those gains are the 95% interval (the
//! percentile bootstrap, as every interval in smtlab).
//!
//! Kept cheap: the study draws a few hundred replicates (not the 2000 of a
//! median's interval), and each replicate's random median comes from
//! [`GAIN_TRIALS`] random schedules (or `--trials`, if fewer), not 10
//! million: the median of 4000 draws has a standard error of about 2% of
//! the random schedules' standard deviation, and every replicate draws the
//! same schedules (one seeded stream: common random numbers), so that
//! error moves the interval's ends together rather than widening it by
//! chance. Each replicate's best schedule is exact. One known bias: the
//! best is a maximum over schedules, so where several schedules are nearly
//! tied and the cells are noisy, the replicates' best leans high and the
//! interval with it; the matrix's own cell intervals show when that is so. A matrix given as numbers (a CSV file) has no samples: its gain
//! has no interval, and the verdict says so.

use serde::Serialize;

use smtlab_stats::{percentile, rng_for_domain};

use super::matching;
use super::matrix::{Matrix, Resampling};
use super::random::{Drawer, Table, Words, LANES};

/// Random schedules drawn for each replicate's median (fewer when
/// `--trials` asks for fewer).
pub const GAIN_TRIALS: u64 = 4_000;

/// Co-runs named in a "too few samples" clause before the rest are
/// counted.
const MAX_NAMED: usize = 6;

/// The gain over the median random pairing and its interval.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Gain {
    /// Best speedup minus the random median (0.055 = 5.5 percentage
    /// points).
    pub value: f64,
    /// Its 95% interval `[low, high]`; `null` without one (`interval` says
    /// why).
    pub ci95: Option<[f64; 2]>,
    /// How the interval was drawn, or why there is none.
    pub interval: GainInterval,
}

/// How a gain's interval was drawn, or why it has none.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GainInterval {
    /// Percentile bootstrap over `resamples` replicates of the measured
    /// matrix, `trials` random schedules each for its median.
    Bootstrap { resamples: usize, trials: u64 },
    /// The matrix was given as numbers, without samples.
    NoSamples,
    /// These co-runs (`a+b`, `a alone`) had fewer than 3 successful
    /// samples.
    TooFewSamples { cells: Vec<String> },
    /// A replicate was no matrix (a resampled rate alone of zero made a
    /// weighted speedup infinite): no bounded interval.
    Unbounded,
}

impl Gain {
    /// The gain as the verdict states it: `5.5 percentage points (95% CI
    /// 3.1–7.9)`, or the value and why it has no interval.
    pub fn text(&self) -> String {
        let value = format!("{:.1} percentage points", self.value * 100.0);
        match (&self.ci95, &self.interval) {
            (Some([lo, hi]), _) => {
                format!("{value} (95% CI {:.1}–{:.1})", lo * 100.0, hi * 100.0)
            }
            (None, GainInterval::TooFewSamples { cells }) => {
                let which = match cells.as_slice() {
                    [one] => one.clone(),
                    _ => {
                        let named = cells.len().min(MAX_NAMED);
                        let mut list = cells[..named].join(", ");
                        if cells.len() > named {
                            list += &format!(" and {} more", cells.len() - named);
                        }
                        format!("{} co-runs ({list})", cells.len())
                    }
                };
                format!(
                    "{value} (too few samples for a 95% interval: {which} had fewer than 3 \
                     successful samples)"
                )
            }
            (None, GainInterval::Unbounded) => format!(
                "{value} (no bounded 95% interval: a resampled rate alone was zero, which makes \
                 a weighted speedup infinite)"
            ),
            (None, _) => {
                format!("{value} (no 95% interval: the matrix was given without samples)")
            }
        }
    }
}

/// The gain `value` (best speedup minus the random median, computed by the
/// caller) of `m`, with the interval its [`Resampling`] allows: each
/// replicate's exact best minus the median of `trials` random schedules
/// (at most [`GAIN_TRIALS`]), drawn from `seed`.
pub fn gain(m: &Matrix, value: f64, trials: u64, seed: u64) -> Gain {
    gain_watched(m, value, trials, seed, &|| {})
}

/// [`gain`], calling `replicate` after each replicate (for progress).
pub(crate) fn gain_watched(
    m: &Matrix,
    value: f64,
    trials: u64,
    seed: u64,
    replicate: &dyn Fn(),
) -> Gain {
    let (ci95, interval) = match &m.resampling {
        Resampling::NoSamples => (None, GainInterval::NoSamples),
        Resampling::TooFew(cells) => (
            None,
            GainInterval::TooFewSamples {
                cells: cells.clone(),
            },
        ),
        Resampling::Replicates(reps) => {
            let trials = trials.clamp(1, GAIN_TRIALS);
            match interval(m, reps, trials, seed, replicate) {
                Some(ci) => (
                    Some(ci),
                    GainInterval::Bootstrap {
                        resamples: reps.len(),
                        trials,
                    },
                ),
                None => (None, GainInterval::Unbounded),
            }
        }
    };
    Gain {
        value,
        ci95,
        interval,
    }
}

/// The percentile interval of the replicates' gains; `None` when there are
/// none, or one is not a valid matrix.
fn interval(
    m: &Matrix,
    reps: &[Vec<Vec<f64>>],
    trials: u64,
    seed: u64,
    replicate: &dyn Fn(),
) -> Option<[f64; 2]> {
    let mut gains = Vec::with_capacity(reps.len());
    for ws in reps {
        let rep = Matrix::new(m.names.clone(), ws.clone()).ok()?;
        let best = matching::best(&rep).speedup;
        // Every random schedule is at most the best: the gain is never
        // below 0 but by rounding.
        gains.push((best - random_median(&rep, trials, seed)).max(0.0));
        replicate();
    }
    if gains.is_empty() || gains.iter().any(|g| !g.is_finite()) {
        return None;
    }
    gains.sort_by(f64::total_cmp);
    Some([percentile(&gains, 2.5), percentile(&gains, 97.5)])
}

/// The median (nearest rank, as the analysis' `p50`) of `trials` random
/// schedules' speedups, always the same schedules for the same `seed`.
fn random_median(m: &Matrix, trials: u64, seed: u64) -> f64 {
    let table = Table::new(m);
    let mut drawer = Drawer::new(&table);
    let mut rng = Words::new(rng_for_domain(seed, b"pairsgai", 0));
    let mut draws: Vec<f64> = Vec::with_capacity(trials as usize + LANES);
    while (draws.len() as u64) < trials {
        draws.extend(drawer.draw(&mut rng));
    }
    draws.truncate(trials as usize);
    draws.sort_by(f64::total_cmp);
    let rank = (draws.len() as f64 * 0.5).ceil() as usize;
    draws[rank.clamp(1, draws.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn four() -> Matrix {
        Matrix::from_csv(include_str!("../../../../examples/pairs-4.csv")).unwrap()
    }

    /// Replicates of `m` with every off-diagonal cell moved by up to
    /// ±`spread`, the same amount for a cell and its mirror.
    fn replicates(m: &Matrix, spread: f64, count: usize) -> Vec<Vec<Vec<f64>>> {
        let n = m.len();
        let cells: Vec<(usize, usize)> = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .collect();
        (0..count)
            .map(|r| {
                let mut ws = m.ws.clone();
                for &(i, j) in &cells {
                    // A fixed, well-mixed sequence in -1..1.
                    let u = ((r * 31 + i * 7 + j * 13) * 2_654_435_761 % 1000) as f64 / 500.0 - 1.0;
                    ws[i][j] += spread * u;
                    ws[j][i] = ws[i][j];
                }
                ws
            })
            .collect()
    }

    #[test]
    fn a_matrix_without_samples_has_a_gain_without_an_interval() {
        let g = gain(&four(), 0.20, 10_000, 1);
        assert_eq!(g.ci95, None);
        assert_eq!(g.interval, GainInterval::NoSamples);
        assert_eq!(
            g.text(),
            "20.0 percentage points (no 95% interval: the matrix was given without samples)"
        );
    }

    #[test]
    fn replicates_give_an_interval_around_the_gain() {
        // pairs-4: best 45%, the random median 25% (each of three
        // schedules a third of the time): a gain of 20 points.
        let mut m = four();
        m.resampling = Resampling::Replicates(replicates(&m, 0.02, 300));
        let g = gain(&m, 0.20, 100_000, 1);
        let [lo, hi] = g.ci95.unwrap();
        assert!(lo < 0.20 && 0.20 < hi, "{g:?}");
        assert!(lo > 0.15 && hi < 0.25, "{g:?}");
        assert_eq!(
            g.interval,
            GainInterval::Bootstrap {
                resamples: 300,
                trials: GAIN_TRIALS
            }
        );
        assert!(
            g.text().starts_with("20.0 percentage points (95% CI 1"),
            "{}",
            g.text()
        );
        // Seeded: the same replicates and seed, the same interval.
        assert_eq!(gain(&m, 0.20, 100_000, 1), g);
        // Identical replicates: the interval is the gain itself.
        m.resampling = Resampling::Replicates(vec![m.ws.clone(); 50]);
        let [lo, hi] = gain(&m, 0.20, 500, 1).ci95.unwrap();
        assert!(
            (lo - 0.20).abs() < 1e-9 && (hi - 0.20).abs() < 1e-9,
            "{lo} {hi}"
        );
    }

    #[test]
    fn too_few_samples_or_an_infinite_cell_is_said() {
        let mut m = four();
        let cells: Vec<String> = (0..8).map(|i| format!("p{i}+p{i}")).collect();
        m.resampling = Resampling::TooFew(cells);
        assert_eq!(
            gain(&m, 0.2, 100, 1).text(),
            "20.0 percentage points (too few samples for a 95% interval: 8 co-runs (p0+p0, \
             p1+p1, p2+p2, p3+p3, p4+p4, p5+p5 and 2 more) had fewer than 3 successful samples)"
        );
        m.resampling = Resampling::TooFew(vec!["a alone".into()]);
        assert_eq!(
            gain(&m, 0.2, 100, 1).text(),
            "20.0 percentage points (too few samples for a 95% interval: a alone had fewer than 3 \
             successful samples)"
        );
        let mut bad = m.ws.clone();
        bad[0][1] = f64::INFINITY;
        bad[1][0] = f64::INFINITY;
        m.resampling = Resampling::Replicates(vec![m.ws.clone(), bad]);
        let g = gain(&m, 0.2, 100, 1);
        assert_eq!((g.ci95, &g.interval), (None, &GainInterval::Unbounded));
        assert!(g.text().contains("no bounded 95% interval"), "{}", g.text());
    }
}
