//! The pair matrix of a measured pairs study: from each wave's samples
//! (`rate.K` of every part), each program's rate alone and with each
//! partner, and the weighted speedup
//! `WS(i,j) = rate_i(with j) / rate_i(alone) + rate_j(with i) / rate_j(alone)`
//! with a 95% percentile-bootstrap interval.
//!
//! Rates are medians over a point's successful measured samples. The
//! interval resamples each co-run's samples jointly (the two rates of one
//! sample were measured together) and each alone measurement
//! independently, [`smtlab_stats::BOOTSTRAP_RESAMPLES`] times, seeded.
//!
//! The verdict's gain (the ideal scheduler's over the median random
//! pairing) combines every cell, so the matrix also carries
//! [`GAIN_RESAMPLES`] bootstrap replicates of the whole of it
//! ([`Resampling::Replicates`]): in each, every program's alone samples are
//! resampled once (its one median serves its whole row, as in the matrix)
//! and every co-run's samples jointly, and every WS is recomputed;
//! `smtlab_analyse::pairs::gain` turns them into the gain's interval.
//!
//! A WS whose interval lies wholly above 2.0 (no interference) is no
//! gain from sharing: the alone runs were slowed, most often by the other
//! co-runs of their wave ([`MeasuredMatrix::baseline_limits`] says which
//! pairs, and what to do).

use std::collections::BTreeMap;

use smtlab_analyse::pairs::Resampling;
use smtlab_stats::{median, percentile, rng_for_domain, uniform_below, BOOTSTRAP_RESAMPLES};
use smtlab_types::extras::co_run;
use smtlab_types::{Point, Program, Sample, SampleStatus};

/// Replicates of the whole matrix drawn for the gain's interval: a few
/// hundred, not [`BOOTSTRAP_RESAMPLES`], because each costs an exact
/// matching and a few thousand random schedules; 400 put each end of a 95%
/// interval on 10 replicates, enough for a verdict's one decimal.
pub const GAIN_RESAMPLES: usize = 400;

/// Fewest samples a resample is drawn from, as everywhere in smtlab.
const MIN_SAMPLES: usize = 3;

/// What the samples give: names in plan order, WS and its interval.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredMatrix {
    pub names: Vec<String>,
    /// `None` where a rate is missing (every sample of that co-run failed).
    pub ws: Vec<Vec<Option<f64>>>,
    pub ci: Vec<Vec<Option<(f64, f64)>>>,
    /// Each program's median rate alone (`None`: no successful sample).
    pub alone: Vec<Option<f64>>,
    /// For each program, the most co-runs (slots, its own included) of a
    /// wave its alone samples ran in: 1 when it ran alone on the machine
    /// (`--at-once 1`), 0 when it has no alone sample.
    pub alone_wave: Vec<usize>,
    /// Bootstrap replicates of the whole matrix for the gain's interval,
    /// or the co-runs with too few samples for them.
    pub resampling: Resampling,
}

impl MeasuredMatrix {
    /// What the matrix shows about its own baselines: a WS above 2.0 with
    /// its 95% interval wholly above it cannot come from sharing (2.0 is no
    /// interference at all), so the alone runs of those programs were
    /// slowed, by the other co-runs of their wave where there were any.
    /// Names the pairs, says why and what to do (`--at-once 1`); a WS
    /// above 2.0 with too few samples for an interval is named apart.
    pub fn baseline_limits(&self) -> Vec<String> {
        let n = self.names.len();
        let pair = |i: usize, j: usize| format!("{}+{}", self.names[i], self.names[j]);
        let (mut above, mut unjudged) = (Vec::new(), Vec::new());
        let mut programs: Vec<usize> = Vec::new();
        for i in 0..n {
            for j in i..n {
                match (self.ws[i][j], self.ci[i][j]) {
                    (Some(v), Some((lo, hi))) if lo > 2.0 => {
                        above.push(format!("{} {v:.2} (95% CI {lo:.2}–{hi:.2})", pair(i, j)));
                        programs.extend([i, j]);
                    }
                    (Some(v), None) if v > 2.0 => {
                        unjudged.push(format!("{} {v:.2}", pair(i, j)));
                    }
                    _ => {}
                }
            }
        }
        programs.sort_unstable();
        programs.dedup();
        let mut out = Vec::new();
        if !above.is_empty() {
            let shared: Vec<usize> = programs
                .iter()
                .copied()
                .filter(|&i| self.alone_wave[i] > 1)
                .collect();
            let names = |ids: &[usize]| {
                ids.iter()
                    .map(|&i| self.names[i].as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let cause = if shared.is_empty() {
                "Their alone runs ran one co-run at a time, so something outside the study \
                 slowed them (other load on the machine, frequency changes, virtual CPUs \
                 sharing host threads): measure again on a quiet machine."
                    .to_string()
            } else {
                let width = shared
                    .iter()
                    .map(|&i| self.alone_wave[i])
                    .max()
                    .unwrap_or(1);
                format!(
                    "The alone runs of {} ran in waves of up to {width} co-runs at once on other \
                     PUs (--at-once, by default every slot the machine has), which slowed them \
                     (as on a virtual machine whose CPUs share host threads, or through shared \
                     memory bandwidth): these WS, and the pairings built on them, are inflated. \
                     Measure with --at-once 1, one co-run at a time.",
                    names(&shared)
                )
            };
            out.push(format!(
                "The 95% interval of WS lies wholly above 2.0 (no interference at all) for {}: a \
                 program cannot run faster beside a partner than alone, so the alone runs of {} \
                 were slowed. {cause}",
                above.join(", "),
                names(&programs)
            ));
        }
        if !unjudged.is_empty() {
            out.push(format!(
                "WS above 2.0 for {}, with too few samples for an interval: if it holds, the \
                 alone runs were slowed (measure with --at-once 1 and more samples).",
                unjudged.join(", ")
            ));
        }
        out
    }

    /// The cells without a value, as `a+b` names.
    pub fn missing(&self) -> Vec<String> {
        let n = self.names.len();
        let mut out = Vec::new();
        for i in 0..n {
            for j in i..n {
                if self.ws[i][j].is_none() {
                    out.push(format!("{}+{}", self.names[i], self.names[j]));
                }
            }
        }
        out
    }
}

/// Build the matrix from a pairs study's points and their samples.
pub fn measured_matrix(samples: &[(Point, Vec<Sample>)], seed: u64) -> MeasuredMatrix {
    let mut names: Vec<String> = Vec::new();
    let mut alone: Vec<Vec<f64>> = Vec::new();
    let mut alone_wave: Vec<usize> = Vec::new();
    // (i, j) with i <= j: per sample (rate of i, rate of j).
    let mut pairs: BTreeMap<(usize, usize), Vec<(f64, f64)>> = BTreeMap::new();
    let index_of = |name: &str, names: &mut Vec<String>, alone: &mut Vec<Vec<f64>>| {
        names.iter().position(|n| n == name).unwrap_or_else(|| {
            names.push(name.to_string());
            alone.push(Vec::new());
            names.len() - 1
        })
    };
    for (point, point_samples) in samples {
        let Program::CoRun { parts } = &point.program else {
            continue;
        };
        let ids: Vec<usize> = parts
            .iter()
            .map(|p| index_of(&p.name, &mut names, &mut alone))
            .collect();
        alone_wave.resize(names.len(), 0);
        let slots: Vec<usize> = {
            let mut s: Vec<usize> = parts.iter().map(|p| p.slot).collect();
            s.dedup();
            s
        };
        for s in point_samples
            .iter()
            .filter(|s| !s.warmup && s.status == SampleStatus::Ok)
        {
            for &slot in &slots {
                let ks: Vec<usize> = (0..parts.len())
                    .filter(|&k| parts[k].slot == slot)
                    .collect();
                let rate = |k: usize| s.extras.get(&co_run::rate_key(k)).copied();
                match ks.as_slice() {
                    [k] => {
                        if let Some(r) = rate(*k) {
                            alone[ids[*k]].push(r);
                            let w = &mut alone_wave[ids[*k]];
                            *w = (*w).max(slots.len());
                        }
                    }
                    [k1, k2] => {
                        if let (Some(r1), Some(r2)) = (rate(*k1), rate(*k2)) {
                            let (a, b) = (ids[*k1], ids[*k2]);
                            let (key, pair) = if a <= b {
                                ((a, b), (r1, r2))
                            } else {
                                ((b, a), (r2, r1))
                            };
                            pairs.entry(key).or_default().push(pair);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let n = names.len();
    let mut ws = vec![vec![None; n]; n];
    let mut ci = vec![vec![None; n]; n];
    let med = |v: &[f64]| (!v.is_empty()).then(|| median(v));
    let alone_med: Vec<Option<f64>> = alone.iter().map(|v| med(v)).collect();
    let mut rng = rng_for_domain(seed, b"pairs\0\0\0", 0);
    for (&(i, j), pair) in &pairs {
        let (Some(ai), Some(aj)) = (alone_med[i], alone_med[j]) else {
            continue;
        };
        if ai <= 0.0 || aj <= 0.0 {
            continue;
        }
        let ri: Vec<f64> = pair.iter().map(|p| p.0).collect();
        let rj: Vec<f64> = pair.iter().map(|p| p.1).collect();
        let value = median(&ri) / ai + median(&rj) / aj;
        ws[i][j] = Some(value);
        ws[j][i] = Some(value);
        // Too few samples for an interval: the value alone.
        if pair.len() < 3 || alone[i].len() < 3 || alone[j].len() < 3 {
            continue;
        }
        let mut draws: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
            .map(|_| {
                let pick = |len: usize, rng: &mut _| uniform_below(rng, len);
                let mut bi = Vec::with_capacity(pair.len());
                let mut bj = Vec::with_capacity(pair.len());
                for _ in 0..pair.len() {
                    let k = pick(pair.len(), &mut rng);
                    bi.push(pair[k].0);
                    bj.push(pair[k].1);
                }
                let resample = |v: &[f64], rng: &mut _| {
                    let r: Vec<f64> = (0..v.len()).map(|_| v[pick(v.len(), rng)]).collect();
                    median(&r)
                };
                let (mi, mj) = (resample(&alone[i], &mut rng), resample(&alone[j], &mut rng));
                median(&bi) / mi + median(&bj) / mj
            })
            .collect();
        draws.sort_by(f64::total_cmp);
        let c = (percentile(&draws, 2.5), percentile(&draws, 97.5));
        ci[i][j] = Some(c);
        ci[j][i] = Some(c);
    }
    let resampling = resampling(&names, &alone, &pairs, seed);
    MeasuredMatrix {
        names,
        ws,
        ci,
        alone: alone_med,
        alone_wave,
        resampling,
    }
}

/// [`GAIN_RESAMPLES`] replicates of the whole matrix, each from one
/// resample of every program's alone samples and of every co-run's
/// samples (the two rates of a sample together); or, when a program alone
/// or a co-run has fewer than 3 samples (none at all, for a co-run never
/// measured), which. Seeded with the run's `seed`, on a stream of its own.
fn resampling(
    names: &[String],
    alone: &[Vec<f64>],
    pairs: &BTreeMap<(usize, usize), Vec<(f64, f64)>>,
    seed: u64,
) -> Resampling {
    let n = names.len();
    let mut few: Vec<String> = Vec::new();
    for i in 0..n {
        if alone[i].len() < MIN_SAMPLES {
            few.push(format!("{} alone", names[i]));
        }
    }
    for i in 0..n {
        for j in i..n {
            if pairs.get(&(i, j)).map_or(0, Vec::len) < MIN_SAMPLES {
                few.push(format!("{}+{}", names[i], names[j]));
            }
        }
    }
    if !few.is_empty() {
        return Resampling::TooFew(few);
    }
    let mut rng = rng_for_domain(seed, b"pairsgnr", 0);
    let mut pick = |len: usize| uniform_below(&mut rng, len);
    let replicates = (0..GAIN_RESAMPLES)
        .map(|_| {
            let a: Vec<f64> = alone
                .iter()
                .map(|v| median(&(0..v.len()).map(|_| v[pick(v.len())]).collect::<Vec<_>>()))
                .collect();
            let mut ws = vec![vec![0.0; n]; n];
            for (&(i, j), pair) in pairs {
                let (mut bi, mut bj) = (Vec::with_capacity(pair.len()), Vec::new());
                for _ in 0..pair.len() {
                    let k = pick(pair.len());
                    bi.push(pair[k].0);
                    bj.push(pair[k].1);
                }
                // A zero rate alone makes this infinite: the analysis then
                // says the interval is unbounded.
                let v = median(&bi) / a[i] + median(&bj) / a[j];
                ws[i][j] = v;
                ws[j][i] = v;
            }
            ws
        })
        .collect();
    Resampling::Replicates(replicates)
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_types::{CoPart, Metric, Mode, Model, ResourceUsage, Spawn};

    fn part(name: &str, slot: usize) -> CoPart {
        CoPart {
            name: name.into(),
            slot,
            program: Box::new(Program::Builtin {
                workload: "spin".into(),
                params: Default::default(),
            }),
            mode: Mode::FixedTime { seconds: 0.1 },
        }
    }

    fn point(index: usize, parts: Vec<CoPart>) -> Point {
        Point {
            index,
            workers: parts.len(),
            cpus: Some((0..parts.len() as u32).collect()),
            program: Program::CoRun { parts },
            model: Model::Thread,
            spawn: Spawn::Exec,
            placement: "pairs:cache".into(),
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: Mode::FixedTime { seconds: 1.0 },
            metric: Metric {
                name: "rate".into(),
                unit: "1/s".into(),
                higher_is_better: true,
            },
        }
    }

    fn sample(seq: usize, rates: &[f64]) -> Sample {
        Sample {
            seq,
            warmup: false,
            status: SampleStatus::Ok,
            reason: None,
            started_at: 0.0,
            wall_s: 1.0,
            ops: None,
            metric: rates.first().copied(),
            usage: ResourceUsage::default(),
            counters: Vec::new(),
            workers: Vec::new(),
            extras: rates
                .iter()
                .enumerate()
                .map(|(k, r)| (format!("rate.{k}"), *r))
                .collect(),
        }
    }

    #[test]
    fn weighted_speedup_is_the_sum_of_each_programs_relative_rate() {
        // a alone 100, b alone 50; together a 80, b 30: WS = 0.8 + 0.6.
        let a_alone = point(0, vec![part("a", 0)]);
        let b_alone = point(1, vec![part("b", 0)]);
        let ab = point(2, vec![part("a", 0), part("b", 0)]);
        let aa = point(3, vec![part("a", 0), part("a", 0)]);
        let five = |r: &[f64]| (0..5).map(|s| sample(s, r)).collect::<Vec<_>>();
        let m = measured_matrix(
            &[
                (a_alone, five(&[100.0])),
                (b_alone, five(&[50.0])),
                (ab, five(&[80.0, 30.0])),
                (aa, five(&[60.0, 60.0])),
            ],
            1,
        );
        assert_eq!(m.names, ["a", "b"]);
        assert!((m.ws[0][1].unwrap() - 1.4).abs() < 1e-12);
        assert_eq!(m.ws[0][1], m.ws[1][0]);
        assert!((m.ws[0][0].unwrap() - 1.2).abs() < 1e-12);
        assert_eq!(m.ws[1][1], None);
        assert_eq!(m.missing(), ["b+b"]);
        // Identical samples: the interval is the value.
        let (lo, hi) = m.ci[0][1].unwrap();
        assert!((lo - 1.4).abs() < 1e-12 && (hi - 1.4).abs() < 1e-12);
    }

    #[test]
    fn a_wave_of_several_slots_yields_each_co_run() {
        // One wave: a alone in slot 0, b+c in slot 1; then b, c alone.
        let wave = point(0, vec![part("a", 0), part("b", 1), part("c", 1)]);
        let rest = point(1, vec![part("b", 0), part("c", 1)]);
        let m = measured_matrix(
            &[
                (wave, vec![sample(0, &[10.0, 4.0, 6.0])]),
                (rest, vec![sample(0, &[8.0, 12.0])]),
            ],
            1,
        );
        assert_eq!(m.names, ["a", "b", "c"]);
        assert_eq!(m.alone, [Some(10.0), Some(8.0), Some(12.0)]);
        assert!((m.ws[1][2].unwrap() - (0.5 + 0.5)).abs() < 1e-12);
        // One sample: no interval, and no replicate for the gain's: every
        // alone run and co-run is named (a+a and the rest never ran).
        assert_eq!(m.ci[1][2], None);
        assert_eq!(
            m.resampling,
            Resampling::TooFew(
                ["a alone", "b alone", "c alone", "a+a", "a+b", "a+c", "b+b", "b+c", "c+c"]
                    .map(String::from)
                    .to_vec()
            )
        );
    }

    #[test]
    fn replicates_of_the_whole_matrix_resample_every_cell_and_are_seeded() {
        // a alone 100, b alone 50; a+b, a+a, b+b co-running.
        let five = |r: &[f64]| spread(r, 0.05, 5);
        let data = [
            (point(0, vec![part("a", 0)]), five(&[100.0])),
            (point(1, vec![part("b", 0)]), five(&[50.0])),
            (
                point(2, vec![part("a", 0), part("b", 0)]),
                five(&[80.0, 30.0]),
            ),
            (
                point(3, vec![part("a", 0), part("a", 0)]),
                five(&[60.0, 60.0]),
            ),
            (
                point(4, vec![part("b", 0), part("b", 0)]),
                five(&[20.0, 20.0]),
            ),
        ];
        let m = measured_matrix(&data, 1);
        let Resampling::Replicates(reps) = &m.resampling else {
            panic!("{:?}", m.resampling);
        };
        assert_eq!(reps.len(), GAIN_RESAMPLES);
        for ws in reps {
            assert_eq!(ws[0][1], ws[1][0]);
            // Each cell within the spread its samples allow (±5% a rate).
            for (i, j) in [(0, 0), (0, 1), (1, 1)] {
                let v = m.ws[i][j].unwrap();
                assert!(
                    (ws[i][j] - v).abs() <= v * 0.11,
                    "{i},{j}: {} vs {v}",
                    ws[i][j]
                );
            }
        }
        // The replicates spread like the cells' own intervals.
        let mut ab: Vec<f64> = reps.iter().map(|ws| ws[0][1]).collect();
        ab.sort_by(f64::total_cmp);
        let (lo, hi) = m.ci[0][1].unwrap();
        assert!(ab[0] < lo && hi < ab[ab.len() - 1], "{lo} {hi} {ab:?}");
        assert_eq!(measured_matrix(&data, 1).resampling, m.resampling);
        assert_ne!(measured_matrix(&data, 2).resampling, m.resampling);
    }

    /// Samples of `rates` (one per part), the first rate spread by ±`rel`.
    fn spread(rates: &[f64], rel: f64, n: usize) -> Vec<Sample> {
        (0..n)
            .map(|i| {
                let u = 2.0 * i as f64 / (n - 1).max(1) as f64 - 1.0;
                let r: Vec<f64> = rates.iter().map(|r| r * (1.0 + rel * u)).collect();
                sample(i, &r)
            })
            .collect()
    }

    #[test]
    fn ws_above_two_names_its_pairs_and_says_to_measure_one_at_a_time() {
        // The guest's case: s alone beside t alone in one wave (each
        // slowed to 10), s+s at 38 each: WS 7.6; t+t 0.9 + 0.9.
        let alone = point(0, vec![part("s", 0), part("t", 1)]);
        let ss = point(
            1,
            vec![part("s", 0), part("s", 0), part("t", 1), part("t", 1)],
        );
        let m = measured_matrix(
            &[
                (alone, spread(&[10.0, 10.0], 0.02, 5)),
                (ss, spread(&[38.0, 38.0, 9.0, 9.0], 0.02, 5)),
            ],
            1,
        );
        assert_eq!(m.alone_wave, [2, 2]);
        let limits = m.baseline_limits();
        assert_eq!(limits.len(), 1, "{limits:?}");
        let l = &limits[0];
        assert!(
            l.starts_with(
                "The 95% interval of WS lies wholly above 2.0 (no interference at all) for s+s \
                 7.60 (95% CI 7."
            ),
            "{l}"
        );
        assert!(!l.contains("t+t"), "{l}");
        assert!(l.contains("so the alone runs of s were slowed"), "{l}");
        assert!(
            l.contains("The alone runs of s ran in waves of up to 2 co-runs at once"),
            "{l}"
        );
        assert!(
            l.ends_with("Measure with --at-once 1, one co-run at a time."),
            "{l}"
        );
    }

    #[test]
    fn ws_above_two_measured_one_at_a_time_or_without_an_interval() {
        // --at-once 1: each alone run by itself; still above 2.0.
        let a = point(0, vec![part("s", 0)]);
        let ss = point(1, vec![part("s", 0), part("s", 0)]);
        let m = measured_matrix(
            &[
                (a.clone(), spread(&[10.0], 0.02, 5)),
                (ss.clone(), spread(&[15.0, 15.0], 0.02, 5)),
            ],
            1,
        );
        assert_eq!(m.alone_wave, [1]);
        let l = m.baseline_limits();
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(l[0].contains("s+s 3.00 (95% CI"), "{l:?}");
        assert!(
            l[0].contains("Their alone runs ran one co-run at a time, so something outside"),
            "{l:?}"
        );
        assert!(!l[0].contains("--at-once 1"), "{l:?}");
        // An interval that reaches 2.0: nothing to warn of.
        let m = measured_matrix(
            &[
                (a.clone(), spread(&[10.0], 0.3, 5)),
                (ss.clone(), spread(&[11.0, 11.0], 0.3, 5)),
            ],
            1,
        );
        assert!(m.ci[0][0].unwrap().0 <= 2.0, "{:?}", m.ci);
        assert_eq!(m.baseline_limits(), Vec::<String>::new());
        // Two samples: above 2.0 but no interval, said so.
        let m = measured_matrix(
            &[
                (a, spread(&[10.0], 0.02, 2)),
                (ss, spread(&[15.0, 15.0], 0.02, 2)),
            ],
            1,
        );
        assert_eq!(
            m.baseline_limits(),
            ["WS above 2.0 for s+s 3.00, with too few samples for an interval: if it holds, the \
              alone runs were slowed (measure with --at-once 1 and more samples)."]
        );
    }
}
