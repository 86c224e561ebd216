//! Analysis of a measured run: scaling (speedup and efficiency against N),
//! SMT yield, Universal Scalability Law fits, verdicts with 95% confidence
//! intervals, and a recommendation per workload.
//!
//! Pure functions over stored results (no I/O, no clock): the same store and
//! seed give the same analysis, so `study`, `report` and `compare` agree.
//! Nothing here extrapolates a measurement: a USL fit's predicted peak is
//! labelled as a prediction, and a quantity that needs hardware the machine
//! lacks (SMT siblings, N = 1 baselines) is absent rather than guessed.

pub mod recommend;
mod results;
pub mod scaling;
pub mod smt;
#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod merge_notes_tests {
    use super::merge_notes;

    #[test]
    fn three_or_more_identical_series_notes_become_one() {
        let n = |who: &str, what: &str| format!("{who}: {what}");
        let notes = vec![
            n("a (thread, compact, glibc)", "no N = 1 point was measured."),
            "A plain note.".to_string(),
            n("b (thread, compact, glibc)", "no N = 1 point was measured."),
            n(
                "c (process, compact, glibc)",
                "no N = 1 point was measured.",
            ),
            n("d (thread, compact, glibc)", "something else."),
        ];
        let merged = merge_notes(notes);
        assert_eq!(
            merged,
            vec![
                "No N = 1 point was measured (for 3 series: a (thread, compact, glibc); \
                 b (thread, compact, glibc); c (process, compact, glibc))."
                    .to_string(),
                "A plain note.".to_string(),
                "d (thread, compact, glibc): something else.".to_string(),
            ]
        );
    }

    #[test]
    fn a_note_about_many_series_names_six_and_counts_the_rest() {
        let notes: Vec<String> = (0..10)
            .map(|i| format!("w{i} (thread, compact, glibc): no N = 1 point was measured."))
            .collect();
        assert_eq!(
            merge_notes(notes),
            vec![
                "No N = 1 point was measured (for 10 series: w0 (thread, compact, glibc); \
                 w1 (thread, compact, glibc); w2 (thread, compact, glibc); \
                 w3 (thread, compact, glibc); w4 (thread, compact, glibc); \
                 w5 (thread, compact, glibc); and 4 more)."
                    .to_string()
            ]
        );
    }
}
pub mod usl;
pub mod verdict;

use serde::Serialize;

pub use crate::summary::PointData;
pub use results::{
    Recommendation, ScalingPoint, Series, SeriesKey, SiblingYield, SmtAdvice, SmtYield, UslFit,
    Verdict,
};
use smtlab_topology::Topology;

/// Most series a merged note names; the rest are counted.
const MAX_NAMED_SERIES: usize = 6;

/// Notes of the form `SERIES: what` that say the same `what` about three or
/// more series become one note naming them (the first
/// `MAX_NAMED_SERIES`, then how many more): a sweep over many programs
/// and allocators would otherwise repeat one sentence a dozen times.
pub fn merge_notes(notes: Vec<String>) -> Vec<String> {
    let split = |n: &str| {
        n.split_once("): ")
            .map(|(who, what)| (format!("{who})"), what.to_string()))
    };
    let mut out: Vec<String> = Vec::new();
    let mut done = vec![false; notes.len()];
    for i in 0..notes.len() {
        if done[i] {
            continue;
        }
        let Some((_, what)) = split(&notes[i]) else {
            out.push(notes[i].clone());
            continue;
        };
        let same: Vec<usize> = (i..notes.len())
            .filter(|&j| !done[j] && split(&notes[j]).is_some_and(|(_, w)| w == what))
            .collect();
        if same.len() < 3 {
            out.push(notes[i].clone());
            done[i] = true;
            continue;
        }
        let whos: Vec<String> = same
            .iter()
            .filter_map(|&j| split(&notes[j]).map(|(w, _)| w))
            .collect();
        for j in same {
            done[j] = true;
        }
        let mut what = what;
        if let Some(first) = what.get(..1) {
            what = first.to_uppercase() + &what[1..];
        }
        // A study of many series would otherwise print one line of
        // thousands of characters: name the first few and count the rest.
        let named = whos.len().min(MAX_NAMED_SERIES);
        let rest = whos.len() - named;
        let mut list = whos[..named].join("; ");
        if rest > 0 {
            list += &format!("; and {rest} more");
        }
        out.push(
            format!(
                "{} (for {} series: {list})",
                what.trim_end_matches('.'),
                whos.len(),
            ) + ".",
        );
    }
    out
}

/// Everything the analysis derives from a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    pub series: Vec<Series>,
    pub smt_yields: Vec<SmtYield>,
    /// Thread model against process model at each (program, alloc,
    /// placement, N) measured in both.
    pub model_verdicts: Vec<Verdict>,
    pub recommendations: Vec<Recommendation>,
    /// Plain sentences about what could not be analysed and why.
    pub notes: Vec<String>,
}

/// Everything the analysis derives from a run's points on `topo`.
///
/// `seed` drives every bootstrap interval (speedups, verdicts), so the same
/// points and seed always give the same analysis. The notes collect, in
/// plain sentences, what could not be derived and why: series without an
/// N = 1 point, too few N for a USL fit, no SMT on this machine, programs
/// without results.
pub fn analyze(points: &[PointData], topo: &Topology, seed: u64) -> Analysis {
    let (mut series, mut notes) = scaling::build_series(points, seed);
    // Series too short for a fit are named in one note, not one each: a
    // 2-core machine would otherwise list every series of a tour.
    let mut too_short: Vec<String> = Vec::new();
    let mut most_n = 0;
    for s in &mut series {
        s.usl = usl::fit_series(s, points, seed);
        let distinct = {
            let mut ns: Vec<usize> = s.points.iter().map(|p| p.workers).collect();
            ns.dedup();
            ns.len()
        };
        // A single N was never meant to scale; say nothing about it.
        if s.usl.is_none() && distinct >= 2 {
            if distinct < usl::MIN_DISTINCT_N {
                too_short.push(scaling::describe(&s.key));
                most_n = most_n.max(distinct);
            } else {
                notes.push(format!(
                    "{}: no scalability-law fit (the throughputs are not all positive, or \
                     do not vary with N).",
                    scaling::describe(&s.key)
                ));
            }
        }
    }
    if !too_short.is_empty() {
        let which = if too_short.len() == series.len() {
            String::new()
        } else {
            format!(" for {}", too_short.join("; "))
        };
        notes.push(format!(
            "No scalability-law (USL) fit{which}: a fit needs at least {} distinct N and \
             {} measured at most {most_n} (a machine with more PUs, or --threads with more \
             counts, allows one).",
            usl::MIN_DISTINCT_N,
            if too_short.len() == series.len() {
                "this run"
            } else {
                "these"
            },
        ));
    }
    let smt_yields = smt::smt_yields(points, topo, seed);
    // A kernel that switched SMT off leaves one PU per core too, but the
    // machine has siblings: "has no SMT" would contradict the study's own
    // limit and the recommendation, which say it is switched off.
    if !points.is_empty() && topo.smt_switched_off() {
        notes.push(
            "SMT is switched off on this machine (one PU per core online): no SMT yield can be \
             measured here."
                .to_string(),
        );
    } else if !points.is_empty() && !topo.smt_active() {
        notes.push(
            "This machine has no SMT (one PU per core): no SMT yield can be measured here."
                .to_string(),
        );
    }
    let model_verdicts = verdict::model_verdicts(points, seed);
    let (recommendations, rec_notes) = recommend::recommend(points, &smt_yields, topo, seed);
    notes.extend(rec_notes);
    let notes = merge_notes(notes);
    Analysis {
        series,
        smt_yields,
        model_verdicts,
        recommendations,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{data, noisy, ops, pinned, point};
    use super::*;
    use smtlab_topology::synthetic;
    use smtlab_types::Model;

    /// A small study on a 2-core, 2-way SMT machine: jbb with N = 1, 2, 4, 8
    /// (compact) in both models, an SMT series on core 0, and a program
    /// whose only point failed.
    fn study() -> Vec<PointData> {
        let usl = |n: f64| 1000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0));
        let mut pts = Vec::new();
        let mut i = 0;
        for (model, factor) in [(Model::Thread, 1.0), (Model::Process, 0.9)] {
            for n in [1usize, 2, 4, 8] {
                let x = usl(n as f64) * if n == 1 { 1.0 } else { factor };
                pts.push(data(
                    point(i, "jbb", model, "compact", n, ops()),
                    &noisy(x, 0.002, 10, i as u64),
                ));
                i += 1;
            }
        }
        for (n, x) in [(1usize, 1000.0), (2, 1250.0)] {
            let cpus: Vec<u32> = (0..n as u32).collect();
            pts.push(data(
                pinned(point(i, "jbb", Model::Thread, "smt:0", n, ops()), &cpus),
                &noisy(x, 0.002, 10, i as u64),
            ));
            i += 1;
        }
        pts.push(data(
            point(i, "stream", Model::Thread, "compact", 1, ops()),
            &[],
        ));
        pts
    }

    #[test]
    fn smt_switched_off_is_not_said_to_be_a_machine_without_smt() {
        let pts = vec![data(
            point(0, "jbb", Model::Thread, "compact", 1, ops()),
            &noisy(1000.0, 0.002, 5, 0),
        )];
        let mut topo = synthetic::parse("core:2 pu:1").unwrap();
        let none = analyze(&pts, &topo, 1).notes;
        assert!(
            none.iter()
                .any(|n| n.starts_with("This machine has no SMT")),
            "{none:?}"
        );
        topo.smt_control = Some("off".into());
        let off = analyze(&pts, &topo, 1).notes;
        assert!(
            off.iter()
                .any(|n| n.starts_with("SMT is switched off on this machine")),
            "{off:?}"
        );
        assert!(!off.iter().any(|n| n.contains("has no SMT")), "{off:?}");
    }

    #[test]
    fn analyze_ties_the_parts_together() {
        let topo = synthetic::parse("core:2 pu:2").unwrap();
        let a = analyze(&study(), &topo, 11);
        let keys: Vec<(&str, &str)> = a
            .series
            .iter()
            .map(|s| (s.key.model.as_str(), s.key.placement.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("process", "compact"),
                ("thread", "compact"),
                ("thread", "smt:0")
            ]
        );
        assert!(a.series[0].usl.is_some() && a.series[1].usl.is_some());
        assert!(a.series[2].usl.is_none(), "two N do not make a fit");
        let fit = a.series[1].usl.as_ref().unwrap();
        assert!((fit.sigma - 0.05).abs() < 0.01, "{fit:?}");
        assert!(fit.describes_data && fit.min_samples == 10, "{fit:?}");
        let (lo, hi) = fit.sigma_ci95.unwrap();
        assert!(lo <= fit.sigma && fit.sigma <= hi, "{fit:?}");

        assert_eq!(a.smt_yields.len(), 1);
        assert!((a.smt_yields[0].siblings[1].gain - 0.25).abs() < 0.01);
        let (lo, hi) = a.smt_yields[0].siblings[1].gain_ci95.unwrap();
        assert!(lo > 0.2 && hi < 0.3, "{lo} {hi}");

        // N = 1 is the same in both models (no verdict either way); above
        // it, threads are 11% faster.
        assert_eq!(a.model_verdicts.len(), 4);
        assert!(
            !a.model_verdicts[0].significant,
            "{:?}",
            a.model_verdicts[0]
        );
        assert!(a.model_verdicts[1..]
            .iter()
            .all(|v| v.significant && v.speed_ratio > 1.05));

        assert_eq!(a.recommendations.len(), 1);
        let r = &a.recommendations[0];
        assert_eq!((r.program.as_str(), r.model.as_str()), ("jbb", "thread"));
        assert_eq!(r.workers, 8);
        assert!(matches!(r.smt, SmtAdvice::Pays { .. }), "{r:?}");

        assert!(
            a.notes
                .iter()
                .any(|n| n.starts_with("stream (thread, compact, glibc): no successful")),
            "{:?}",
            a.notes
        );
        assert!(
            a.notes
                .iter()
                .any(|n| n.starts_with("No scalability-law (USL) fit")
                    && n.contains("jbb (thread, smt:0, glibc)")
                    && n.contains("measured at most 2")),
            "{:?}",
            a.notes
        );
        assert!(a
            .notes
            .iter()
            .any(|n| n.starts_with("stream: no point has results")));
        assert!(!a.notes.iter().any(|n| n.contains("no SMT")));
    }

    #[test]
    fn analyze_without_smt_or_points() {
        let topo = synthetic::parse("core:4").unwrap();
        let a = analyze(&study(), &topo, 11);
        assert!(a.smt_yields.is_empty());
        assert!(a.notes.iter().any(|n| n.contains("no SMT")));
        assert!(matches!(
            &a.recommendations[0].smt,
            SmtAdvice::Unknown { reason } if reason.contains("no SMT")
        ));
        let empty = analyze(&[], &topo, 11);
        assert!(empty.series.is_empty() && empty.notes.is_empty());
        assert!(empty.recommendations.is_empty() && empty.model_verdicts.is_empty());
    }
}
