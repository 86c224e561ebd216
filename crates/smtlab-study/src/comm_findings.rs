//! The communication study's findings, from the analysed points and every
//! stored sample: per application, the paper's two tables (message
//! statistics, and the time split with the CPU time of each thread) with a
//! row per rank count, layout and mechanism; and verdicts per application
//! and layout: the fastest mechanism, each thread mechanism against sigio
//! with what in the time split makes the difference, whether the paper's
//! findings held here (threads slightly worse than sigio when a rank has a
//! processor to itself, better when two ranks share a node, thr2 the best
//! of the three), how waiting grew with the ranks; and whether every result
//! verified.
//!
//! Every comparison is a ratio of medians with its bootstrap 95% interval
//! (`verdict::compare`); an interval that contains 1 is a tie, never a
//! difference, and a comparison without an interval (fewer than 3 samples
//! a side) says so. The time split's differences and the growth of waiting
//! have their intervals too, from each sample's own split.

use smtlab_analyse::analysis::PointData;
use smtlab_analyse::summary::RunData;
use smtlab_types::extras::dsm;
use smtlab_types::{Program, SampleStatus};

use crate::comm_plan::{layout_name, per_node_of, COMM_APPS};
use crate::comm_points::{app_name, comm_of, per_node, ranks, ranks_of};
use crate::comm_tables::{statistics_table, time_table};
use crate::comm_verdicts::{layout_verdicts, wait_growth};
use crate::findings::Findings;
use crate::point_values::median;

/// The communication study's tables and verdicts.
pub fn comm(data: &RunData, seed: u64) -> Findings {
    let mut f = Findings::default();
    let dsm: Vec<&PointData> = data
        .points
        .iter()
        .filter(|p| ranks_of(p).is_some())
        .collect();
    if dsm.is_empty() {
        return f;
    }
    verification(data, &mut f);
    let mut apps: Vec<&str> = COMM_APPS
        .into_iter()
        .filter(|a| {
            dsm.iter()
                .any(|p| ranks_of(p).is_some_and(|(x, _)| x == *a))
        })
        .collect();
    for p in &dsm {
        let (a, _) = ranks_of(p).expect("DSM points only");
        if !apps.contains(&a) {
            apps.push(a);
        }
    }
    for app in apps {
        let mut mine: Vec<&PointData> = dsm
            .iter()
            .copied()
            .filter(|p| ranks_of(p).is_some_and(|(a, _)| a == app))
            .collect();
        mine.sort_by_key(|p| (ranks(p), per_node(p), comm_of(p)));
        statistics_table(app, &mine, &mut f);
        time_table(app, &mine, &mut f);
        let mut layouts: Vec<(usize, usize)> =
            mine.iter().map(|p| (ranks(p), per_node(p))).collect();
        layouts.dedup();
        for (n, k) in layouts {
            let here: Vec<&PointData> = mine
                .iter()
                .copied()
                .filter(|p| ranks(p) == n && per_node(p) == k && median(p).is_some())
                .collect();
            layout_verdicts(app, n, k, &here, &data.samples, seed, &mut f);
        }
        for k in [1, 2] {
            let layout: Vec<&PointData> = mine
                .iter()
                .copied()
                .filter(|p| per_node(p) == k && median(p).is_some())
                .collect();
            wait_growth(app, k, &layout, &data.samples, seed, &mut f);
        }
    }
    f
}

/// Every sample's result is checked against a sequential run: say that
/// they all verified, or which did not (a wrong result is never a time).
fn verification(data: &RunData, f: &mut Findings) {
    let mut checked = 0;
    let mut wrong: Vec<String> = Vec::new();
    let mut wrong_samples = 0;
    for (point, samples) in &data.samples {
        let Program::Ranks { app, comm, .. } = &point.program else {
            continue;
        };
        let mut here = 0;
        for s in samples {
            let unverified = s.status == SampleStatus::WrongResult
                || s.extras.get(dsm::VERIFIED).is_some_and(|&v| v < 0.5);
            if unverified {
                here += 1;
            } else if s.status == SampleStatus::Ok {
                checked += 1;
            }
        }
        if here > 0 {
            wrong_samples += here;
            wrong.push(format!(
                "{} {comm} at {} ranks, {} ({here})",
                app_name(app),
                point.workers,
                layout_name(per_node_of(point))
            ));
        }
    }
    if wrong.is_empty() {
        f.verdicts.push(format!(
            "Every result verified: all {checked} successful samples (warm-ups included) matched \
             the sequential run of the same input."
        ));
    } else {
        let s = format!(
            "{wrong_samples} sample{} did not verify (a wrong result, not counted as a time): {}.",
            if wrong_samples == 1 { "" } else { "s" },
            wrong.join(", ")
        );
        f.verdicts.push(s.clone());
        f.limits.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use crate::testing::{self, run};
    use smtlab_types::{Comm, Metric, Mode, Model, Point, Sample, Spawn};

    fn point(index: usize, comm: Comm, n: usize, per_node: usize, over: f64) -> Point {
        Point {
            index,
            program: Program::Ranks {
                app: "lu".into(),
                comm,
                params: [("per_node".to_string(), per_node.to_string())].into(),
            },
            model: Model::Process,
            spawn: Spawn::Exec,
            placement: "scatter".into(),
            workers: n,
            cpus: Some((0..n as u32).collect()),
            oversubscription: over,
            alloc: "glibc".into(),
            mode: Mode::FixedWork { work: 1 },
            metric: Metric {
                name: "wall_time".into(),
                unit: "s".into(),
                higher_is_better: false,
            },
        }
    }

    /// Samples of wall times `values` (a warm-up first), each with the
    /// time split `split` summed over the ranks.
    fn samples(values: &[f64], split: &[(&str, f64)]) -> Vec<Sample> {
        let extras: BTreeMap<String, f64> = split
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .chain([("verified".to_string(), 1.0)])
            .collect();
        let sample = |seq: usize, warmup: bool, v: f64| Sample {
            wall_s: v,
            extras: extras.clone(),
            ..testing::sample(seq, warmup, v)
        };
        let mut out = vec![sample(0, true, values[0])];
        out.extend(
            values
                .iter()
                .enumerate()
                .map(|(i, &v)| sample(i + 1, false, v)),
        );
        out
    }

    /// Eight wall times around `center`, spread by `rel`.
    fn around(center: f64, rel: f64) -> Vec<f64> {
        [-1.0, -0.7, -0.4, -0.1, 0.1, 0.4, 0.7, 1.0]
            .iter()
            .map(|u| center * (1.0 + rel * u))
            .collect()
    }

    /// Two ranks' split: the same computation, `wait` seconds per rank.
    fn split(wait: f64) -> Vec<(&'static str, f64)> {
        vec![
            ("compute_s", 2.0 * 0.5),
            ("fault_s", 2.0 * (wait + 0.01)),
            ("sync_s", 2.0 * 0.02),
            ("serve_s", 0.0),
            ("wait_s", 2.0 * wait),
            ("messages", 1000.0),
            ("bytes", 4096.0 * 300.0),
            ("getp", 300.0),
        ]
    }

    fn verdicts(data: &RunData) -> Vec<String> {
        comm(data, 7).verdicts
    }

    #[test]
    fn thr2_faster_than_sigio_is_said_with_its_interval_and_its_cause() {
        let data = run(vec![
            (
                point(0, Comm::Sigio, 2, 2, 1.0),
                samples(&around(1.00, 0.01), &split(0.38)),
            ),
            (
                point(1, Comm::Thr2, 2, 2, 1.0),
                samples(&around(0.93, 0.01), &split(0.31)),
            ),
        ]);
        let v = verdicts(&data);
        let line = v
            .iter()
            .find(|s| s.starts_with("Thr2 was") && s.contains("faster than sigio"))
            .unwrap_or_else(|| panic!("{v:#?}"));
        assert!(line.contains("LU at 2 ranks, two ranks per node"), "{line}");
        assert!(line.contains("(95% CI "), "{line}");
        assert!(
            line.contains("the difference is waiting time (wait 0.310 s vs 0.380 s per rank"),
            "{line}"
        );
        assert!(
            v.iter()
                .any(|s| s.starts_with("LU at 2 ranks, two ranks per node: thr2 was the fastest")),
            "{v:#?}"
        );
        // Two ranks sharing a node, thr2 faster: the paper's finding held.
        assert!(
            v.iter()
                .any(|s| s.starts_with("The paper's finding (threads faster")
                    && s.contains(": held: thr2 faster")),
            "{v:#?}"
        );
        assert!(v[0].starts_with("Every result verified: all 18"), "{v:#?}");
        let f = comm(&data, 7);
        assert_eq!(f.tables.len(), 2);
        assert_eq!(f.tables[0].title, "LU: communication statistics");
        assert_eq!(f.tables[0].rows[0][3], "1000");
        assert_eq!(f.tables[0].rows[0][4], "1200.0");
        // Per rank: 0.38 s of waiting for sigio.
        assert_eq!(f.tables[1].rows[0][9], "0.380");
    }

    #[test]
    fn overlapping_intervals_are_a_tie_and_the_paper_is_not_confirmed() {
        let data = run(vec![
            (
                point(0, Comm::Sigio, 2, 1, 1.0),
                samples(&around(1.00, 0.05), &split(0.3)),
            ),
            (
                point(1, Comm::Thr1, 2, 1, 1.0),
                samples(&around(1.005, 0.05), &split(0.3)),
            ),
        ]);
        let v = verdicts(&data);
        assert!(
            v.iter()
                .any(|s| s.starts_with("Thr1 and sigio tied for LU at 2 ranks, one rank per CPU")),
            "{v:#?}"
        );
        assert!(!v.iter().any(|s| s.contains("the difference is")), "{v:#?}");
        assert!(
            v.iter().any(|s| s.contains("had the lowest median (")
                && s.contains("not distinguishable from thr1")),
            "{v:#?}"
        );
        assert!(
            v.iter().any(
                |s| s.starts_with("The paper's finding (threads slightly slower")
                    && s.contains("not confirmed")
            ),
            "{v:#?}"
        );
    }

    #[test]
    fn the_cause_is_the_part_that_differs_most_and_oversubscription_is_not_judged() {
        // thr3 slower by its computation (its threads take the rank's CPU),
        // not by waiting.
        let mut slow = split(0.3);
        slow[0].1 = 2.0 * 0.6;
        let data = run(vec![
            (
                point(0, Comm::Sigio, 4, 1, 2.0),
                samples(&around(1.0, 0.01), &split(0.3)),
            ),
            (
                point(1, Comm::Thr3, 4, 1, 2.0),
                samples(&around(1.1, 0.01), &slow),
            ),
        ]);
        let v = verdicts(&data);
        assert!(
            v.iter().any(|s| s.starts_with("Thr3 was")
                && s.contains("slower than sigio")
                && s.contains("the difference is computation")),
            "{v:#?}"
        );
        assert!(
            v.iter()
                .any(|s| s.contains("not measurable here: the ranks share CPUs")),
            "{v:#?}"
        );
    }

    #[test]
    fn thr2_best_of_three_and_wrong_results_are_counted() {
        let mut data = run(vec![
            (
                point(0, Comm::Thr1, 2, 1, 1.0),
                samples(&around(1.10, 0.01), &split(0.3)),
            ),
            (
                point(1, Comm::Thr2, 2, 1, 1.0),
                samples(&around(1.00, 0.01), &split(0.3)),
            ),
            (
                point(2, Comm::Thr3, 2, 1, 1.0),
                samples(&around(1.05, 0.01), &split(0.3)),
            ),
        ]);
        data.samples[2].1.push(Sample::without_result(
            9,
            false,
            SampleStatus::WrongResult,
            "checksum differs".into(),
            0.0,
            1.0,
        ));
        let f = comm(&data, 7);
        assert!(
            f.verdicts.iter().any(|s| s.starts_with(
                "The paper's finding (thr2 the best of the three thread mechanisms) for LU at 2 \
                 ranks, one rank per CPU: held"
            )),
            "{:#?}",
            f.verdicts
        );
        assert!(
            f.limits
                .iter()
                .any(|l| l.starts_with("1 sample did not verify")
                    && l.contains("LU thr3 at 2 ranks")),
            "{:?}",
            f.limits
        );
    }

    #[test]
    fn thr2_beaten_or_tied_is_said_so() {
        let data = run(vec![
            (
                point(0, Comm::Thr1, 2, 2, 1.0),
                samples(&around(0.90, 0.01), &split(0.3)),
            ),
            (
                point(1, Comm::Thr2, 2, 2, 1.0),
                samples(&around(1.00, 0.01), &split(0.3)),
            ),
            (
                point(2, Comm::Thr3, 2, 2, 1.0),
                samples(&around(1.002, 0.05), &split(0.3)),
            ),
        ]);
        let v = verdicts(&data);
        assert!(
            v.iter()
                .any(|s| s.starts_with("The paper's finding (thr2 the best")
                    && s.contains(": did not hold: thr1 faster than thr2 (")),
            "{v:#?}"
        );
        let data = run(vec![
            (
                point(0, Comm::Thr1, 2, 2, 1.0),
                samples(&around(1.10, 0.01), &split(0.3)),
            ),
            (
                point(1, Comm::Thr2, 2, 2, 1.0),
                samples(&around(1.00, 0.01), &split(0.3)),
            ),
            (
                point(2, Comm::Thr3, 2, 2, 1.0),
                samples(&around(1.002, 0.05), &split(0.3)),
            ),
        ]);
        let v = verdicts(&data);
        assert!(
            v.iter()
                .any(|s| s.starts_with("The paper's finding (thr2 the best")
                    && s.contains(": not confirmed: thr2 not distinguishable from thr3 (")),
            "{v:#?}"
        );
    }

    #[test]
    fn waiting_growth_is_reported_per_layout() {
        let data = run(vec![
            (
                point(0, Comm::Sigio, 2, 1, 1.0),
                samples(&around(1.0, 0.01), &split(0.1)),
            ),
            // Sums over 4 ranks: 0.2 s each.
            (
                point(1, Comm::Sigio, 4, 1, 1.0),
                samples(&around(1.0, 0.01), &split(0.4)),
            ),
        ]);
        let v = verdicts(&data);
        assert!(
            v.iter().any(|s| s
                == "LU, one rank per CPU: waiting per rank from 2 to 4 ranks: sigio 0.100 -> \
                    0.200 s, 2.00x (95% CI 2.00–2.00x)."),
            "{v:#?}"
        );
    }

    /// `split(wait)` with the waiting of each sample spread by `rel`.
    fn samples_waiting(values: &[f64], wait: f64, rel: f64) -> Vec<Sample> {
        let mut out = samples(values, &split(wait));
        let n = out.len();
        for (i, s) in out.iter_mut().enumerate() {
            let u = 2.0 * i as f64 / (n - 1) as f64 - 1.0;
            let w = 2.0 * wait * (1.0 + rel * u);
            s.extras.insert("wait_s".into(), w);
            s.extras.insert("fault_s".into(), w + 2.0 * 0.01);
        }
        out
    }

    #[test]
    fn a_cause_within_the_noise_is_not_claimed() {
        // thr2 faster, its waiting lower by median but spread 50% a sample.
        let data = run(vec![
            (
                point(0, Comm::Sigio, 2, 2, 1.0),
                samples_waiting(&around(1.00, 0.01), 0.33, 0.5),
            ),
            (
                point(1, Comm::Thr2, 2, 2, 1.0),
                samples_waiting(&around(0.93, 0.01), 0.31, 0.5),
            ),
        ]);
        let v = verdicts(&data);
        let line = v
            .iter()
            .find(|s| s.starts_with("Thr2 was"))
            .unwrap_or_else(|| panic!("{v:#?}"));
        assert!(
            line.contains(
                "the time split does not explain it: its largest difference, waiting time, is \
                 within the noise (wait 0.329 s vs 0.351 s per rank, 95% CI of the difference -0.162 \
                 to +0.118 s, against 0.070 s of wall time)."
            ),
            "{line}"
        );
        // Growing waiting: each mechanism's ratio has its interval.
        let with = |n: usize, wait: f64| {
            let mut p = point(n, Comm::Sigio, n, 1, 1.0);
            p.index = n;
            (p, samples_waiting(&around(1.0, 0.01), wait, 0.1))
        };
        let v = verdicts(&run(vec![with(2, 0.1), with(4, 0.4)]));
        let s = v
            .iter()
            .find(|s| s.starts_with("LU, one rank per CPU: waiting"))
            .unwrap_or_else(|| panic!("{v:#?}"));
        assert!(
            s.starts_with(
                "LU, one rank per CPU: waiting per rank from 2 to 4 ranks: sigio 0.101 -> 0.203 \
                 s, 2.00x (95% CI 1."
            ),
            "{s}"
        );
    }

    #[test]
    fn too_few_samples_are_said_wherever_an_interval_is_missing() {
        // Two samples of thr2 (the guest's case), eight of the others.
        let data = run(vec![
            (
                point(0, Comm::Sigio, 4, 2, 1.0),
                samples(&around(0.3731, 0.01), &split(0.3)),
            ),
            (
                point(1, Comm::Thr1, 4, 2, 1.0),
                samples(&around(0.45, 0.01), &split(0.3)),
            ),
            (
                point(2, Comm::Thr2, 4, 2, 1.0),
                samples(&[0.43, 0.44], &split(0.3)),
            ),
            (
                point(3, Comm::Thr3, 4, 2, 1.0),
                samples(&around(0.372, 0.01), &split(0.3)),
            ),
        ]);
        let v = verdicts(&data);
        let at = "LU at 4 ranks, two ranks per node";
        let lead = v
            .iter()
            .find(|s| s.starts_with(&format!("{at}: ")))
            .unwrap_or_else(|| panic!("{v:#?}"));
        assert!(
            lead.starts_with(&format!(
                "{at}: thr3 had the lowest median (372.0 ms), not distinguishable from sigio, \
                 with too few samples to tell it from thr2; the others took "
            )),
            "{lead}"
        );
        assert!(
            lead.contains("thr2 1.17x (too few samples for an interval)"),
            "{lead}"
        );
        assert!(lead.contains("thr1 1.21x (95% CI 1."), "{lead}");
        assert!(!lead.contains("(95% CIs)"), "{lead}");
        assert!(
            v.iter()
                .any(|s| s.starts_with("Thr2 measured slower than sigio")
                    && s.contains("but with too few samples for an interval: not a verdict")),
            "{v:#?}"
        );
        // thr3 tied with thr2's... thr1 shown slower, thr3 tied, thr2 unjudged.
        let paper = v
            .iter()
            .find(|s| s.starts_with("The paper's finding (threads faster"))
            .unwrap_or_else(|| panic!("{v:#?}"));
        assert!(
            paper.contains(
                ": did not hold: thr1 slower than sigio; speed against sigio's: thr1 0.83x (95% \
                 CI 0."
            ) && paper.contains("thr2 0.86x (too few samples for an interval)"),
            "{paper}"
        );
        let best = v
            .iter()
            .find(|s| s.starts_with("The paper's finding (thr2 the best"))
            .unwrap_or_else(|| panic!("{v:#?}"));
        assert!(
            best.ends_with(
                ": not measurable here: too few samples for an interval against thr1 and thr3 \
                 (thr2 1.03x thr1's speed, 0.86x thr3's; too few samples for an interval)."
            ),
            "{best}"
        );
        // thr3 shown faster than thr2 settles it, although thr1 against
        // thr2 has no interval.
        let v = verdicts(&run(vec![
            (
                point(0, Comm::Thr1, 4, 2, 1.0),
                samples(&[0.45, 0.46], &split(0.3)),
            ),
            (
                point(1, Comm::Thr2, 4, 2, 1.0),
                samples(&around(0.43, 0.01), &split(0.3)),
            ),
            (
                point(2, Comm::Thr3, 4, 2, 1.0),
                samples(&around(0.372, 0.01), &split(0.3)),
            ),
        ]));
        let best = v
            .iter()
            .find(|s| s.starts_with("The paper's finding (thr2 the best"))
            .unwrap_or_else(|| panic!("{v:#?}"));
        assert!(
            best.contains(
                ": did not hold: thr3 faster than thr2 (thr2 1.06x thr1's speed, too few samples \
                 for an interval; 0.87x thr3's, 95% CI 0.8"
            ),
            "{best}"
        );
        // Every point with two samples: nothing judged, all said.
        let two = |i: usize, c: Comm, t: f64| {
            (point(i, c, 2, 1, 1.0), samples(&[t, t * 1.01], &split(0.3)))
        };
        let v = verdicts(&run(vec![
            two(0, Comm::Sigio, 1.0),
            two(1, Comm::Thr2, 1.1),
        ]));
        assert!(
            v.iter().any(|s| s
                == "LU at 2 ranks, one rank per CPU: sigio had the lowest median (1.005 s); the \
                    others took thr2 1.10x (too few samples for an interval) of its time."),
            "{v:#?}"
        );
        assert!(
            v.iter().any(|s| s.starts_with(
                "The paper's finding (threads slightly slower than sigio when a process has a \
                 processor to itself) for LU at 2 ranks, one rank per CPU: not measurable here: \
                 too few samples for an interval; speed against sigio's: thr2 0.91x (too few \
                 samples for an interval)."
            )),
            "{v:#?}"
        );
    }
}
