//! The analysis of a pair matrix (Ruan et al., "Do Commodity SMT Processors
//! Need More OS Research?", §2.2): the exact best and worst schedules, the
//! distribution of random ones, what re-randomizing every period does, and
//! the verdict, as one value whose JSON is the stable document of `smtlab
//! pairs --json` (and of the pairs study). Uses `matrix`, `matching`,
//! `random`, `rerandomize`, `gain`, `verdict` and `progress`.

use serde::Serialize;

use super::gain::{self, Gain, GAIN_TRIALS};
use super::matching::{self, Schedule};
use super::matrix::{Matrix, Resampling};
use super::progress::{Phase, Progress};
use super::random::{self, all_threads, RandomStats, Table};
use super::rerandomize::{self, Rerandomized, SCHEDULERS};
use super::verdict::verdict;

/// Random schedules drawn unless told otherwise (the paper drew 10 million,
/// of 26 programs), up to 500 programs: [`default_trials`].
pub const DEFAULT_TRIALS: u64 = 10_000_000;

/// Pairs of random schedules drawn by default at most: 10 million
/// schedules of 500 programs. Each pair is a random read of the matrix, so
/// time grows with programs × schedules; past 500 programs the default
/// draws fewer schedules, not more time. Nothing shown loses by it: 2.5
/// million schedules of 2,000 programs put the 5th and 95th percentiles
/// within about one histogram bin (10⁻⁵ of the best-worst range) of where
/// 10 million would, a hundredth of the verdict's 0.1 percentage point.
pub const DEFAULT_PAIR_DRAWS: u64 = 2_500_000_000;

/// The random schedules drawn when `--trials` is not given, for a matrix
/// of `programs`: [`DEFAULT_TRIALS`], or fewer past 500 programs so that
/// they hold [`DEFAULT_PAIR_DRAWS`] pairs (2.5 million for 2,000).
pub fn default_trials(programs: usize) -> u64 {
    let pairs = programs.div_ceil(2).max(1) as u64;
    DEFAULT_TRIALS.min(DEFAULT_PAIR_DRAWS / pairs)
}

/// A schedule in the JSON: pairs of indexes into `programs` (`[i, i]`:
/// program `i` runs alone), and its speedup (mean WS - 1; 0.20 = 20%).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ScheduleJson {
    pub pairs: Vec<[usize; 2]>,
    pub speedup: f64,
}

/// The random schedules' speedups: how many, mean, extremes, and the 5th,
/// 50th and 95th percentiles (nearest rank, to one histogram bin).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RandomJson {
    pub trials: u64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub p05: f64,
    pub p50: f64,
    pub p95: f64,
}

/// A re-randomizing scheduler's spread in the JSON: [`Rerandomized`] as it is.
pub type RerandomizedJson = Rerandomized;

/// The analysis. Its JSON starts with the keys scripts rely on, in this
/// order: `programs`, `matrix`, `best`, `worst`, `random`; then
/// `rerandomization`, `verdict`, `cdf`, (for a measured matrix) `ci`, and
/// `gain`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PairsAnalysis {
    pub programs: Vec<String>,
    /// `WS(i,j)`, rows and columns in the order of `programs`.
    pub matrix: Vec<Vec<f64>>,
    pub best: ScheduleJson,
    pub worst: ScheduleJson,
    pub random: RandomJson,
    /// Periods 1, 2, 4, ..., 64.
    pub rerandomization: Vec<RerandomizedJson>,
    pub verdict: String,
    /// `[speedup, fraction of random schedules at or below it]`, ascending,
    /// from the worst schedule's speedup (fraction 0) to the best's (1).
    pub cdf: Vec<[f64; 2]>,
    /// `ci[i][j]`: the 95% interval `[low, high]` of `matrix[i][j]` (`null`
    /// where it has none); only for a measured matrix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<Vec<Vec<Option<[f64; 2]>>>>,
    /// The verdict's number: the best speedup minus the random median,
    /// `{"value", "ci95": [low, high] or null, "interval": {"kind":
    /// "bootstrap", "resamples", "trials"} | {"kind": "no_samples"} |
    /// {"kind": "too_few_samples", "cells"} | {"kind": "unbounded"}}`.
    pub gain: Gain,
}

fn schedule_json(s: &Schedule) -> ScheduleJson {
    ScheduleJson {
        pairs: s.pairs.iter().map(|&(i, j)| [i, j]).collect(),
        speedup: s.speedup,
    }
}

/// Analyse `m`: best and worst exactly, `trials` random schedules and
/// re-randomization over 1 to 64 periods (20 000 simulated schedulers
/// each), all drawn from `seed` on every core; the gain's interval from
/// `m.resampling` (none for a matrix given without samples).
pub fn analyse(m: &Matrix, trials: u64, seed: u64) -> PairsAnalysis {
    analyse_with(m, trials, SCHEDULERS, seed)
}

/// [`analyse`] with the number of simulated re-randomizing schedulers
/// (tests use fewer).
pub fn analyse_with(m: &Matrix, trials: u64, schedulers: usize, seed: u64) -> PairsAnalysis {
    analyse_watched(m, trials, schedulers, seed, &Progress::new())
}

/// The matching's work in [`Progress`] units: a stage with `f` programs
/// unpaired scans about `f` rows of the matrix, `f` falling by 2 a stage
/// (n³/4 cells in all), and a cell costs about a twelfth of a random
/// schedule's pair (a row is read in order, a pair's cell at random; one
/// thread, where the draws use every core): measured at 500 and 2,000
/// programs.
fn matching_units(nodes: usize) -> u64 {
    let n = nodes as u64;
    n * n * n / 48
}

/// [`analyse_with`], counting its work into `progress` as it goes (for a
/// progress bar drawn by the caller from another thread).
pub fn analyse_watched(
    m: &Matrix,
    trials: u64,
    schedulers: usize,
    seed: u64,
    progress: &Progress,
) -> PairsAnalysis {
    let nodes = m.len() + m.len() % 2;
    let pairs = (nodes / 2) as u64;
    let exact = matching_units(nodes);
    let draws = trials
        .max(1)
        .max(rerandomize::draws_needed(schedulers) as u64);
    let gain_units = match &m.resampling {
        Resampling::Replicates(reps) => {
            reps.len() as u64 * (exact + trials.clamp(1, GAIN_TRIALS) * pairs)
        }
        _ => 0,
    };
    progress.plan(2 * exact + draws * pairs + gain_units);
    progress.enter(Phase::Exact);
    // The matching's remaining work falls as the square of the programs
    // still unpaired.
    let exact_progress = |start: u64| {
        move |left: usize| {
            let left = left as f64 / nodes.max(1) as f64;
            progress.reach(start + (exact as f64 * (1.0 - left * left)) as u64);
        }
    };
    let best = matching::optimum(m, true, &mut exact_progress(0));
    progress.reach(exact);
    let worst = matching::optimum(m, false, &mut exact_progress(exact));
    progress.reach(2 * exact);
    progress.enter(Phase::Random);
    let table = Table::new(m);
    let (r, kept): (RandomStats, Vec<f64>) = random::draw(
        &table,
        trials,
        rerandomize::draws_needed(schedulers),
        seed,
        (worst.speedup, best.speedup),
        all_threads(),
        progress,
    );
    drop(table);
    let rr: Vec<Rerandomized> = rerandomize::from_draws(&kept, schedulers);
    drop(kept);
    progress.enter(Phase::Gain);
    let gain = gain::gain_watched(m, best.speedup - r.p50, trials, seed, &|| {
        progress.advance(exact + trials.clamp(1, GAIN_TRIALS) * pairs)
    });
    PairsAnalysis {
        programs: m.names.clone(),
        matrix: m.ws.clone(),
        verdict: verdict(&m.names, &best, &worst, &r, &gain),
        best: schedule_json(&best),
        worst: schedule_json(&worst),
        random: RandomJson {
            trials: r.trials,
            mean: r.mean,
            min: r.min,
            max: r.max,
            p05: r.p05,
            p50: r.p50,
            p95: r.p95,
        },
        rerandomization: rr,
        cdf: r.cdf.iter().map(|&(x, y)| [x, y]).collect(),
        ci: m.ci.as_ref().map(|ci| {
            ci.iter()
                .map(|row| row.iter().map(|c| c.map(|(lo, hi)| [lo, hi])).collect())
                .collect()
        }),
        gain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::matrix::Resampling;

    #[test]
    fn the_json_has_the_documented_shape_and_values() {
        let m = Matrix::from_csv(",a,b,c\na,1,1.5,1.2\nb,1.5,1,1.1\nc,1.2,1.1,1\n").unwrap();
        let a = analyse_with(&m, 50_000, 500, 1);
        let text = serde_json::to_string(&a).unwrap();
        let at = |k: &str| text.find(&format!("\"{k}\":")).unwrap();
        let order = [
            "programs",
            "matrix",
            "best",
            "worst",
            "random",
            "rerandomization",
            "verdict",
            "cdf",
            "gain",
        ];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
        assert!(!text.contains("\"ci\""), "no intervals for a file's matrix");
        let j = serde_json::to_value(&a).unwrap();
        assert_eq!(j["programs"], serde_json::json!(["a", "b", "c"]));
        assert_eq!(j["matrix"][1][0], 1.5);
        // Odd: best pairs a+b and c alone, mean (1.5 + 1) / 2; the worst
        // b+c with a alone, (1.1 + 1) / 2.
        assert_eq!(j["best"]["pairs"], serde_json::json!([[0, 1], [2, 2]]));
        assert!((j["best"]["speedup"].as_f64().unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(j["worst"]["pairs"], serde_json::json!([[0, 0], [1, 2]]));
        assert!((j["worst"]["speedup"].as_f64().unwrap() - 0.05).abs() < 1e-12);
        let r = &j["random"];
        assert_eq!(r["trials"], 50_000);
        let mut keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["max", "mean", "min", "p05", "p50", "p95", "trials"]);
        assert_eq!(j["rerandomization"].as_array().unwrap().len(), 7);
        assert_eq!(j["rerandomization"][6]["periods"], 64);
        assert!(
            a.verdict.contains("Best pairs: a+b, c alone."),
            "{}",
            a.verdict
        );
        // The gain, the best 25% against the median 10% (each of the three
        // schedules is a third of the draws), has no interval: no samples.
        assert!((a.gain.value - 0.15).abs() < 1e-4, "{:?}", a.gain);
        assert_eq!(
            j["gain"],
            serde_json::json!({
                "value": a.gain.value,
                "ci95": null,
                "interval": {"kind": "no_samples"}
            })
        );
        assert!(
            a.verdict
                .contains("(no 95% interval: the matrix was given without samples)"),
            "{}",
            a.verdict
        );
    }

    #[test]
    fn a_measured_matrix_carries_its_intervals() {
        let mut m = Matrix::from_csv(",a,b\na,1,1.5\nb,1.5,1\n").unwrap();
        m.ci = Some(vec![
            vec![Some((0.9, 1.1)), Some((1.4, 1.6))],
            vec![Some((1.4, 1.6)), None],
        ]);
        m.resampling = Resampling::Replicates(vec![m.ws.clone(); 20]);
        let a = analyse_with(&m, 1000, 10, 1);
        let j = serde_json::to_value(&a).unwrap();
        assert_eq!(
            j["ci"],
            serde_json::json!([[[0.9, 1.1], [1.4, 1.6]], [[1.4, 1.6], null]])
        );
        // Two programs: one schedule, so every number is its speedup, and
        // the gain over the median is 0 in every replicate.
        assert_eq!(j["best"]["speedup"], j["random"]["p50"]);
        assert_eq!(
            j["gain"],
            serde_json::json!({
                "value": 0.0,
                "ci95": [0.0, 0.0],
                "interval": {"kind": "bootstrap", "resamples": 20, "trials": 1000}
            })
        );
        assert!(
            a.verdict.starts_with(
                "An ideal scheduler gains 0.0 percentage points (95% CI 0.0–0.0) over"
            ),
            "{}",
            a.verdict
        );
    }
}
