//! The verdict of a pairs analysis, one sentence with its numbers (Ruan et
//! al.'s question: how much does an ideal pairing gain over a random
//! one?), and the names of a schedule's pairs. Uses `matching`, `random`
//! and `gain`.

use super::gain::Gain;
use super::matching::Schedule;
use super::random::RandomStats;

/// Names of a schedule's pairs, `a+b`, and `c alone` for a program that
/// runs alone (`[i, i]`).
pub fn pair_names(names: &[String], pairs: &[[usize; 2]]) -> Vec<String> {
    pairs
        .iter()
        .map(|&[i, j]| {
            if i == j {
                format!("{} alone", names[i])
            } else {
                format!("{}+{}", names[i], names[j])
            }
        })
        .collect()
}

/// "An ideal scheduler gains X percentage points (95% CI L–H) over the
/// median random pairing (best B%, random mean R%, worst W%; ...). Best
/// pairs: ...", the interval replaced by why there is none (a matrix given
/// without samples, too few samples) where there is none. Against the
/// median, not the mean: the median is what a typical random schedule
/// gets. `gain` is `best.speedup - random.p50` with its interval.
pub fn verdict(
    names: &[String],
    best: &Schedule,
    worst: &Schedule,
    random: &RandomStats,
    gain: &Gain,
) -> String {
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    let pairs: Vec<[usize; 2]> = best.pairs.iter().map(|&(i, j)| [i, j]).collect();
    format!(
        "An ideal scheduler gains {} over the median random pairing (best {}, random mean {}, \
         worst {}; {} random pairings, 5-95% {} to {}). Best pairs: {}.",
        gain.text(),
        pct(best.speedup),
        pct(random.mean),
        pct(worst.speedup),
        random.trials,
        pct(random.p05),
        pct(random.p95),
        pair_names(names, &pairs).join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::gain::GainInterval;

    #[test]
    fn the_verdict_says_the_gain_over_the_median_with_its_numbers() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let best = Schedule {
            pairs: vec![(0, 2), (1, 1)],
            speedup: 0.26,
        };
        let worst = Schedule {
            pairs: vec![(0, 1), (2, 2)],
            speedup: 0.12,
        };
        let random = RandomStats {
            trials: 10_000_000,
            mean: 0.20,
            min: 0.12,
            max: 0.26,
            p05: 0.15,
            p50: 0.205,
            p95: 0.24,
            cdf: Vec::new(),
        };
        let measured = Gain {
            value: 0.055,
            ci95: Some([0.031, 0.079]),
            interval: GainInterval::Bootstrap {
                resamples: 400,
                trials: 4000,
            },
        };
        assert_eq!(
            verdict(&names, &best, &worst, &random, &measured),
            "An ideal scheduler gains 5.5 percentage points (95% CI 3.1–7.9) over the median \
             random pairing (best 26.0%, random mean 20.0%, worst 12.0%; 10000000 random \
             pairings, 5-95% 15.0% to 24.0%). Best pairs: a+c, b alone."
        );
        // A matrix given as numbers: the gain has no interval, and says why.
        let given = Gain {
            value: 0.055,
            ci95: None,
            interval: GainInterval::NoSamples,
        };
        assert_eq!(
            verdict(&names, &best, &worst, &random, &given),
            "An ideal scheduler gains 5.5 percentage points (no 95% interval: the matrix was \
             given without samples) over the median random pairing (best 26.0%, random mean \
             20.0%, worst 12.0%; 10000000 random pairings, 5-95% 15.0% to 24.0%). Best pairs: \
             a+c, b alone."
        );
    }
}
