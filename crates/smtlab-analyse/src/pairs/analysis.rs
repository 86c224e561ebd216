//! The analysis of a pair matrix (Ruan et al., "Do Commodity SMT Processors
//! Need More OS Research?", §2.2): the exact best and worst schedules, the
//! distribution of random ones, what re-randomizing every period does, and
//! a verdict with numbers; as a stable JSON document and as text.

use std::fmt::Write;

use serde::Serialize;

use super::matching::{self, Schedule};
use super::matrix::Matrix;
use super::random::{self, RandomStats, Rerandomized};

/// Random schedules drawn unless told otherwise (the paper drew 10 million).
pub const DEFAULT_TRIALS: u64 = 10_000_000;

/// Simulated re-randomizing schedulers per number of periods.
pub const SCHEDULERS: usize = 20_000;

/// A schedule in the JSON: pairs of program indexes (`[i, i]`: alone).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ScheduleJson {
    pub pairs: Vec<[usize; 2]>,
    pub speedup: f64,
}

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

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RerandomizedJson {
    pub periods: u32,
    pub mean: f64,
    pub p05: f64,
    pub p50: f64,
    pub p95: f64,
}

/// The analysis; its JSON starts with the fields scripts rely on
/// (`programs`, `matrix`, `best`, `worst`, `random`), in that order.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PairsAnalysis {
    pub programs: Vec<String>,
    pub matrix: Vec<Vec<f64>>,
    pub best: ScheduleJson,
    pub worst: ScheduleJson,
    pub random: RandomJson,
    pub rerandomization: Vec<RerandomizedJson>,
    pub verdict: String,
    /// 95% intervals of the matrix cells, when it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<Vec<Vec<Option<[f64; 2]>>>>,
    /// (speedup, fraction of random schedules at or below it).
    pub cdf: Vec<[f64; 2]>,
}

fn schedule_json(s: &Schedule) -> ScheduleJson {
    ScheduleJson {
        pairs: s.pairs.iter().map(|&(i, j)| [i, j]).collect(),
        speedup: s.speedup,
    }
}

/// Analyse `m`: best and worst exactly, `trials` random schedules (seeded),
/// re-randomization over 1..64 periods.
pub fn analyse(m: &Matrix, trials: u64, seed: u64) -> PairsAnalysis {
    analyse_with(m, trials, SCHEDULERS, seed)
}

/// [`analyse`] with the number of simulated re-randomizing schedulers.
pub fn analyse_with(m: &Matrix, trials: u64, schedulers: usize, seed: u64) -> PairsAnalysis {
    let best = matching::best(m);
    let worst = matching::worst(m);
    let r: RandomStats = random::distribution(m, trials, seed, worst.speedup, best.speedup);
    let rr: Vec<Rerandomized> = random::rerandomization(m, schedulers, seed);
    let verdict = verdict(m, &best, &worst, &r);
    PairsAnalysis {
        programs: m.names.clone(),
        matrix: m.ws.clone(),
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
        rerandomization: rr
            .iter()
            .map(|x| RerandomizedJson {
                periods: x.periods,
                mean: x.mean,
                p05: x.p05,
                p50: x.p50,
                p95: x.p95,
            })
            .collect(),
        verdict,
        ci: m.ci.as_ref().map(|ci| {
            ci.iter()
                .map(|row| row.iter().map(|c| c.map(|(a, b)| [a, b])).collect())
                .collect()
        }),
        cdf: r.cdf.iter().map(|&(x, y)| [x, y]).collect(),
    }
}

/// Names of a schedule's pairs: `a+b`, `c alone`.
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

fn verdict(m: &Matrix, best: &Schedule, worst: &Schedule, r: &RandomStats) -> String {
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    let pairs: Vec<[usize; 2]> = best.pairs.iter().map(|&(i, j)| [i, j]).collect();
    format!(
        "An ideal scheduler gains {:.1} percentage points over the median random pairing (best \
         {}, random mean {}, worst {}; {} random pairings, 5-95% {} to {}). Best pairs: {}.",
        (best.speedup - r.p50) * 100.0,
        pct(best.speedup),
        pct(r.mean),
        pct(worst.speedup),
        r.trials,
        pct(r.p05),
        pct(r.p95),
        pair_names(&m.names, &pairs).join(", ")
    )
}

/// The analysis as text: the matrix (with intervals when measured), the
/// best and worst schedules, the random distribution, re-randomization and
/// the verdict.
pub fn render_text(a: &PairsAnalysis) -> String {
    let mut s = String::new();
    let w = a.programs.iter().map(String::len).max().unwrap_or(4).max(6);
    writeln!(s, "Pair matrix: weighted speedup WS(i,j) (1.00 = no gain over running them one after the other)").ok();
    let cell = |i: usize, j: usize| -> String {
        let v = a.matrix[i][j];
        match a.ci.as_ref().and_then(|c| c[i][j]) {
            Some([lo, hi]) => format!("{v:.2} [{lo:.2}-{hi:.2}]"),
            None => format!("{v:.2}"),
        }
    };
    let cw = (0..a.programs.len())
        .flat_map(|i| (0..a.programs.len()).map(move |j| (i, j)))
        .map(|(i, j)| cell(i, j).len())
        .max()
        .unwrap_or(4)
        .max(w);
    write!(s, "  {:<w$}", "").ok();
    for n in &a.programs {
        write!(s, " {n:>cw$}").ok();
    }
    s.push('\n');
    for (i, n) in a.programs.iter().enumerate() {
        write!(s, "  {n:<w$}").ok();
        for j in 0..a.programs.len() {
            write!(s, " {:>cw$}", cell(i, j)).ok();
        }
        s.push('\n');
    }
    let sched = |label: &str, sc: &ScheduleJson| {
        format!(
            "{label} schedule: speedup {:.1}%: {}\n",
            sc.speedup * 100.0,
            pair_names(&a.programs, &sc.pairs).join(", ")
        )
    };
    s.push_str(&sched("Best", &a.best));
    s.push_str(&sched("Worst", &a.worst));
    let r = &a.random;
    writeln!(
        s,
        "Random schedules ({}): mean {:.1}%, min {:.1}%, 5% {:.1}%, median {:.1}%, 95% {:.1}%, max {:.1}%",
        r.trials,
        r.mean * 100.0,
        r.min * 100.0,
        r.p05 * 100.0,
        r.p50 * 100.0,
        r.p95 * 100.0,
        r.max * 100.0
    )
    .ok();
    writeln!(
        s,
        "Re-pairing at random every period ({} schedulers each):",
        SCHEDULERS
    )
    .ok();
    writeln!(s, "  periods    mean      5%     50%     95%").ok();
    for x in &a.rerandomization {
        writeln!(
            s,
            "  {:>7} {:>6.1}% {:>6.1}% {:>6.1}% {:>6.1}%",
            x.periods,
            x.mean * 100.0,
            x.p05 * 100.0,
            x.p50 * 100.0,
            x.p95 * 100.0
        )
        .ok();
    }
    writeln!(s, "Verdict: {}", a.verdict).ok();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
        let j = serde_json::to_value(&a).unwrap();
        // Odd: best pairs a+b and c alone, mean (1.5 + 1) / 2.
        assert_eq!(j["best"]["pairs"], serde_json::json!([[0, 1], [2, 2]]));
        assert!((j["best"]["speedup"].as_f64().unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(j["random"]["trials"], 50_000);
        assert!(
            a.verdict.contains("Best pairs: a+b, c alone"),
            "{}",
            a.verdict
        );
        let text = render_text(&a);
        assert!(
            text.contains("Best schedule: speedup 25.0%: a+b, c alone"),
            "{text}"
        );
    }
}
