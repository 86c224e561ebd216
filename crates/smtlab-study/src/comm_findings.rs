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
//! difference.

use smtlab_analyse::analysis::{verdict, PointData, Verdict};
use smtlab_analyse::summary::RunData;
use smtlab_analyse::units::table_value;
use smtlab_types::{Comm, Program, SampleStatus, Table};

use crate::comm_plan::{layout_name, per_node_of, COMM_APPS};
use crate::findings::Findings;

/// The application and mechanism of a DSM point; `None` for any other.
fn ranks_of(p: &PointData) -> Option<(&str, Comm)> {
    match &p.summary.point.program {
        Program::Ranks { app, comm, .. } => Some((app.as_str(), *comm)),
        _ => None,
    }
}

fn comm_of(p: &PointData) -> Comm {
    ranks_of(p).map_or(Comm::Sigio, |(_, c)| c)
}

fn ranks(p: &PointData) -> usize {
    p.summary.point.workers
}

fn per_node(p: &PointData) -> usize {
    per_node_of(&p.summary.point)
}

/// More ranks than CPUs: ranks take turns on a CPU.
fn oversubscribed(p: &PointData) -> bool {
    p.summary.point.oversubscription > 1.0
}

fn median(p: &PointData) -> Option<f64> {
    p.summary.summary.as_ref().map(|s| s.median)
}

/// A statistic summed over the ranks (median over the samples).
fn total(p: &PointData, key: &str) -> Option<f64> {
    p.summary.extras.get(key).copied()
}

/// A statistic per rank on average: the sum over ranks over the ranks.
fn per_rank(p: &PointData, key: &str) -> Option<f64> {
    total(p, key).map(|v| v / ranks(p).max(1) as f64)
}

/// `SOR`, `LU`, `TSP`: as the paper names them.
fn app_name(app: &str) -> String {
    app.to_uppercase()
}

/// `LU at 2 ranks, one rank per CPU`.
fn subject(app: &str, n: usize, per_node: usize) -> String {
    format!("{} at {n} ranks, {}", app_name(app), layout_name(per_node))
}

/// The parts of a rank's time that can make a difference between two
/// mechanisms: the paper's computation, serving and waiting, and the rest
/// of fault and synchronisation handling (waiting is counted inside both).
const PARTS: [(&str, &str); 4] = [
    ("wait", "waiting time"),
    ("compute", "computation"),
    ("serve", "serving on the computing thread"),
    (
        "handling",
        "fault and synchronisation handling besides waiting",
    ),
];

/// Seconds per rank of `part` (one of [`PARTS`]).
fn part(p: &PointData, part: &str) -> Option<f64> {
    match part {
        "handling" => Some(
            per_rank(p, "fault_s").unwrap_or(0.0) + per_rank(p, "sync_s").unwrap_or(0.0)
                - per_rank(p, "wait_s")?,
        ),
        name => per_rank(p, &format!("{name}_s")),
    }
}

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
            layout_verdicts(app, n, k, &here, seed, &mut f);
        }
        for k in [1, 2] {
            let layout: Vec<&PointData> = mine
                .iter()
                .copied()
                .filter(|p| per_node(p) == k && median(p).is_some())
                .collect();
            wait_growth(app, k, &layout, &mut f);
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
                || s.extras.get("verified").is_some_and(|&v| v < 0.5);
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

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

/// Seconds with at least three significant digits: a short run's split
/// (tens of microseconds of compute) must not read as `0.000`, which
/// would say that no time was spent.
fn seconds(v: Option<f64>) -> String {
    num(v.map(|v| v.max(0.0)), v.map_or(3, significant_decimals))
}

/// Decimals that show three significant digits of `v` (at least 3, at
/// most 9: below a nanosecond a time is noise).
fn significant_decimals(v: f64) -> usize {
    if v <= 0.0 || !v.is_finite() {
        return 3;
    }
    (2 - v.log10().floor() as i64).clamp(3, 9) as usize
}

/// The row's first cells: ranks, layout (with oversubscription said),
/// mechanism.
fn row_head(p: &PointData) -> Vec<String> {
    let mut layout = layout_name(per_node(p)).to_string();
    if oversubscribed(p) {
        layout.push_str(&format!(
            " (oversubscribed {:.0}x)",
            p.summary.point.oversubscription
        ));
    }
    vec![ranks(p).to_string(), layout, comm_of(p).to_string()]
}

/// The paper's statistics table of one application.
fn statistics_table(app: &str, mine: &[&PointData], f: &mut Findings) {
    let rows = mine
        .iter()
        .map(|p| {
            let mut row = row_head(p);
            row.extend([
                num(total(p, "messages"), 0),
                num(total(p, "bytes").map(|b| b / 1024.0), 1),
                num(total(p, "getp"), 0),
                num(total(p, "diffs"), 0),
                num(total(p, "locks"), 0),
                num(total(p, "barriers"), 0),
                num(total(p, "served"), 0),
                num(total(p, "retransmissions"), 0),
                num(total(p, "duplicates"), 0),
            ]);
            row
        })
        .collect();
    f.tables.push(Table {
        title: format!("{}: communication statistics", app_name(app)),
        columns: [
            "ranks",
            "layout",
            "mechanism",
            "messages",
            "KB",
            "GETP",
            "diffs",
            "locks",
            "barriers",
            "served",
            "retransmissions",
            "duplicates",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: Some(
            "per sample, summed over the ranks, medians over the samples; messages and KB sent \
             (each datagram once, acknowledgements included); GETP: pages fetched from their \
             home; diffs sent to homes; locks acquired; barriers passed by each rank; served: \
             requests a rank served for the others; retransmissions after a timeout and \
             duplicates dropped by the receiver"
                .to_string(),
        ),
    });
}

/// The paper's time-split table of one application.
fn time_table(app: &str, mine: &[&PointData], f: &mut Findings) {
    let rows = mine
        .iter()
        .map(|p| {
            let r = &p.summary;
            let unit = r.point.metric.unit.as_str();
            let mut row = row_head(p);
            let ci = r
                .summary
                .as_ref()
                .and_then(|s| s.ci95)
                .map_or("-".to_string(), |(lo, hi)| {
                    format!("[{}, {}]", table_value(lo, unit), table_value(hi, unit))
                });
            let note = if r.summary.is_none() {
                "no successful sample".to_string()
            } else if r.failed > 0 {
                format!("{} failed: {}", r.failed, r.failures.join("; "))
            } else {
                String::new()
            };
            row.extend([
                median(p).map_or("failed".to_string(), |m| table_value(m, unit)),
                ci,
                seconds(per_rank(p, "compute_s")),
                seconds(per_rank(p, "fault_s")),
                seconds(per_rank(p, "sync_s")),
                seconds(per_rank(p, "serve_s")),
                seconds(per_rank(p, "wait_s")),
                seconds(per_rank(p, "thread.main_s")),
                seconds(per_rank(p, "thread.comm_s")),
                seconds(per_rank(p, "thread.send_s")),
                seconds(per_rank(p, "thread.recv_s")),
                seconds(per_rank(p, "thread.serve_s")),
                note,
            ]);
            row
        })
        .collect();
    f.tables.push(Table {
        title: format!(
            "{}: wall time and where each rank's time went",
            app_name(app)
        ),
        columns: [
            "ranks",
            "layout",
            "mechanism",
            "wall time",
            "95% CI",
            "compute s",
            "SEGV s",
            "sync s",
            "serve s",
            "wait s",
            "main CPU s",
            "comm CPU s",
            "send CPU s",
            "recv CPU s",
            "serve thread CPU s",
            "note",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: Some(
            "wall time: the parallel section, median over the samples with its bootstrap 95% \
             interval; then seconds per rank on average (medians over the samples): compute = \
             the application's own work, SEGV = in the page-fault handler (page fetches, \
             twins), sync = in locks and barriers, serve = serving others' requests on the \
             computing thread (sigio's handler, poll's checks), wait = blocked for a reply \
             (inside SEGV and sync, counted there too); the CPU seconds of each thread of the \
             thread mechanisms (thr1: comm; thr2: send, recv; thr3: send, recv, serve)"
                .to_string(),
        ),
    });
}

/// A comparison of `a` against `b` (a's speed over b's), or `None`.
fn versus(a: &PointData, b: &PointData, subject: &str, seed: u64) -> Option<Verdict> {
    verdict::compare(
        a,
        b,
        comm_of(a).as_str(),
        comm_of(b).as_str(),
        subject,
        seed,
    )
}

/// How a comparison reads: `faster`, `slower`, a tie, or no interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Faster,
    Slower,
    Tie,
    NoInterval,
}

fn outcome(v: &Verdict) -> Outcome {
    match v.ci95 {
        None => Outcome::NoInterval,
        Some((lo, _)) if v.significant && lo > 1.0 => Outcome::Faster,
        Some(_) if v.significant => Outcome::Slower,
        Some(_) => Outcome::Tie,
    }
}

/// `thr2 was 4.2% faster than sigio for LU at ... (95% CI 1.0–7.1%)`.
fn comparison_sentence(v: &Verdict) -> String {
    let (a, b, subject, r) = (&v.a, &v.b, &v.subject, v.speed_ratio);
    match (outcome(v), v.ci95) {
        (Outcome::Faster, Some((lo, hi))) => format!(
            "{a} was {:.1}% faster than {b} for {subject} (95% CI {:.1}–{:.1}%)",
            (r - 1.0) * 100.0,
            (lo - 1.0) * 100.0,
            (hi - 1.0) * 100.0
        ),
        (Outcome::Slower, Some((lo, hi))) => format!(
            "{a} was {:.1}% slower than {b} for {subject} (95% CI {:.1}–{:.1}%)",
            (1.0 - r) * 100.0,
            (1.0 - hi) * 100.0,
            (1.0 - lo) * 100.0
        ),
        (_, Some((lo, hi))) => format!(
            "{a} and {b} tied for {subject} (95% CI of the difference {:+.1}% to {:+.1}%, \
             within the noise)",
            (lo - 1.0) * 100.0,
            (hi - 1.0) * 100.0
        ),
        (_, None) => format!(
            "{a} measured {} than {b} for {subject} ({:.1}%), but with too few samples for a \
             confidence interval: not a verdict",
            if r >= 1.0 { "faster" } else { "slower" },
            (r - 1.0).abs() * 100.0
        ),
    }
}

/// What in the time split makes the difference between `a` and `b`: the
/// part whose per-rank seconds differ most, when it points the same way
/// as the wall time.
fn explanation(a: &PointData, b: &PointData) -> Option<String> {
    let wall = median(a)? - median(b)?;
    let (key, name, da, db) = PARTS
        .iter()
        .filter_map(|(key, name)| Some((*key, *name, part(a, key)?, part(b, key)?)))
        .max_by(|x, y| (x.2 - x.3).abs().total_cmp(&(y.2 - y.3).abs()))?;
    let short = if key == "handling" {
        "fault+sync-wait"
    } else {
        key
    };
    let numbers = format!(
        "{short} {da:.3} s vs {db:.3} s per rank, against {:.3} s of wall time",
        wall.abs()
    );
    if (da - db) * wall > 0.0 {
        Some(format!("the difference is {name} ({numbers})"))
    } else {
        Some(format!(
            "the time split does not explain it: the largest difference is {name}, the other \
             way ({numbers})"
        ))
    }
}

/// The verdicts of one application at one rank count and layout.
fn layout_verdicts(
    app: &str,
    n: usize,
    k: usize,
    here: &[&PointData],
    seed: u64,
    f: &mut Findings,
) {
    if here.len() < 2 {
        return;
    }
    let at = subject(app, n, k);
    let by = |c: Comm| here.iter().copied().find(|p| comm_of(p) == c);
    // The fastest, and every other against it.
    let best = here
        .iter()
        .copied()
        .min_by(|a, b| {
            median(a)
                .unwrap_or(f64::MAX)
                .total_cmp(&median(b).unwrap_or(f64::MAX))
        })
        .expect("two or more");
    let mut others = Vec::new();
    let mut tied = Vec::new();
    for p in here.iter().copied().filter(|p| !std::ptr::eq(*p, best)) {
        if let Some(v) = versus(best, p, &at, seed) {
            let ci = v
                .ci95
                .map(|(lo, hi)| format!(" [{lo:.2}–{hi:.2}]"))
                .unwrap_or_default();
            others.push(format!("{} {:.2}x{ci}", comm_of(p), v.speed_ratio));
            if outcome(&v) != Outcome::Faster {
                tied.push(comm_of(p).to_string());
            }
        }
    }
    let unit = best.summary.point.metric.unit.clone();
    let time = table_value(median(best).unwrap_or(f64::NAN), &unit);
    let lead = if tied.is_empty() {
        format!("{} was the fastest ({time})", comm_of(best))
    } else {
        format!(
            "{} had the lowest median ({time}), not distinguishable from {}",
            comm_of(best),
            tied.join(", ")
        )
    };
    f.verdicts.push(format!(
        "{at}: {lead}; the others took {} of its time (95% CIs).",
        others.join(", ")
    ));
    // Each thread mechanism against the interrupt.
    let threads = [Comm::Thr1, Comm::Thr2, Comm::Thr3];
    let mut against_sigio = Vec::new();
    if let Some(sigio) = by(Comm::Sigio) {
        for c in threads {
            let Some(t) = by(c) else { continue };
            let Some(v) = versus(t, sigio, &at, seed) else {
                continue;
            };
            let mut s = comparison_sentence(&v);
            if matches!(outcome(&v), Outcome::Faster | Outcome::Slower) {
                if let Some(why) = explanation(t, sigio) {
                    s.push_str("; ");
                    s.push_str(&why);
                }
            }
            s.push('.');
            f.verdicts.push(capitalised(&s));
            against_sigio.push((c, outcome(&v)));
        }
    }
    paper_threads_vs_sigio(&at, k, here, &against_sigio, f);
    thr2_best(&at, here, seed, f);
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The paper: threads slightly worse than sigio when a process has a
/// processor to itself (here one rank per CPU), better when two processes
/// share a dual-processor node (here two ranks per node).
fn paper_threads_vs_sigio(
    at: &str,
    k: usize,
    here: &[&PointData],
    against: &[(Comm, Outcome)],
    f: &mut Findings,
) {
    let claim = if k == 1 {
        "threads slightly slower than sigio when a process has a processor to itself"
    } else {
        "threads faster than sigio when two processes share a node's processors"
    };
    if here.iter().any(|p| oversubscribed(p)) {
        f.verdicts.push(format!(
            "The paper's finding ({claim}) for {at}: not measurable here: the ranks share CPUs \
             (oversubscribed), which is neither of the paper's conditions."
        ));
        return;
    }
    if against.is_empty() {
        return;
    }
    let expected = if k == 1 {
        Outcome::Slower
    } else {
        Outcome::Faster
    };
    let opposite = if k == 1 {
        Outcome::Faster
    } else {
        Outcome::Slower
    };
    let list = |o: Outcome| -> Vec<String> {
        against
            .iter()
            .filter(|(_, x)| *x == o)
            .map(|(c, _)| c.to_string())
            .collect()
    };
    let (agree, disagree) = (list(expected), list(opposite));
    let word = |o: Outcome| {
        if o == Outcome::Faster {
            "faster"
        } else {
            "slower"
        }
    };
    let verdict = if against.iter().all(|(_, o)| *o == Outcome::NoInterval) {
        "not measurable here: too few samples for confidence intervals".to_string()
    } else if agree.len() == against.len() {
        format!("held: {} {} than sigio", agree.join(", "), word(expected))
    } else if !disagree.is_empty() && agree.is_empty() {
        format!(
            "did not hold: {} {} than sigio",
            disagree.join(", "),
            word(opposite)
        )
    } else if !agree.is_empty() && disagree.is_empty() {
        format!(
            "partly held: {} {} than sigio, the others tied",
            agree.join(", "),
            word(expected)
        )
    } else if !agree.is_empty() {
        format!(
            "mixed: {} {} than sigio, but {} {}",
            agree.join(", "),
            word(expected),
            disagree.join(", "),
            word(opposite)
        )
    } else {
        "not confirmed: every thread mechanism tied with sigio (differences within the noise)"
            .to_string()
    };
    f.verdicts.push(format!(
        "The paper's finding ({claim}) for {at}: {verdict}."
    ));
}

/// The paper: of the thread mechanisms, two threads (a sender, and a
/// receiver that serves) did best.
fn thr2_best(at: &str, here: &[&PointData], seed: u64, f: &mut Findings) {
    let by = |c: Comm| here.iter().copied().find(|p| comm_of(p) == c);
    let (Some(thr2), Some(thr1), Some(thr3)) = (by(Comm::Thr2), by(Comm::Thr1), by(Comm::Thr3))
    else {
        return;
    };
    let Some(v1) = versus(thr2, thr1, at, seed) else {
        return;
    };
    let Some(v3) = versus(thr2, thr3, at, seed) else {
        return;
    };
    let (o1, o3) = (outcome(&v1), outcome(&v3));
    let ci = |v: &Verdict| {
        v.ci95
            .map(|(lo, hi)| format!(" [{lo:.2}–{hi:.2}]"))
            .unwrap_or_default()
    };
    let ratios = format!(
        "thr2 {:.2}x thr1's speed{}, {:.2}x thr3's{}",
        v1.speed_ratio,
        ci(&v1),
        v3.speed_ratio,
        ci(&v3)
    );
    let beat: Vec<&str> = [("thr1", o1), ("thr3", o3)]
        .iter()
        .filter(|(_, o)| *o == Outcome::Slower)
        .map(|(c, _)| *c)
        .collect();
    let tied: Vec<&str> = [("thr1", o1), ("thr3", o3)]
        .iter()
        .filter(|(_, o)| *o == Outcome::Tie)
        .map(|(c, _)| *c)
        .collect();
    let verdict = if o1 == Outcome::NoInterval || o3 == Outcome::NoInterval {
        "not measurable here: too few samples for confidence intervals".to_string()
    } else if o1 == Outcome::Faster && o3 == Outcome::Faster {
        "held".to_string()
    } else if !beat.is_empty() {
        format!("did not hold: {} faster than thr2", beat.join(" and "))
    } else {
        format!(
            "not confirmed: thr2 not distinguishable from {}",
            tied.join(" and ")
        )
    };
    f.verdicts.push(format!(
        "The paper's finding (thr2 the best of the three thread mechanisms) for {at}: {verdict} \
         ({ratios})."
    ));
}

/// How each mechanism's waiting per rank grew from the fewest ranks to the
/// most in one layout (the paper: the difference between mechanisms is
/// waiting, and it grows from 8 to 16 processors).
fn wait_growth(app: &str, k: usize, layout: &[&PointData], f: &mut Findings) {
    let mut counts: Vec<usize> = layout.iter().map(|p| ranks(p)).collect();
    counts.sort_unstable();
    counts.dedup();
    let (Some(&lo), Some(&hi)) = (counts.first(), counts.last()) else {
        return;
    };
    if lo == hi {
        return;
    }
    let mut parts = Vec::new();
    for c in Comm::ALL {
        let at = |n: usize| {
            layout
                .iter()
                .find(|p| comm_of(p) == c && ranks(p) == n)
                .and_then(|p| per_rank(p, "wait_s"))
        };
        if let (Some(a), Some(b)) = (at(lo), at(hi)) {
            parts.push(format!("{c} {a:.3} -> {b:.3} s"));
        }
    }
    if parts.is_empty() {
        return;
    }
    let over = layout.iter().any(|p| ranks(p) == hi && oversubscribed(p));
    f.verdicts.push(format!(
        "{}, {}: waiting per rank from {lo} to {hi} ranks: {}{}.",
        app_name(app),
        layout_name(k),
        parts.join(", "),
        if over {
            format!(" (at {hi} ranks the ranks share CPUs: part of that is waiting for a CPU)")
        } else {
            String::new()
        }
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn split_seconds_keep_three_significant_digits() {
        assert_eq!(seconds(Some(1.23456)), "1.235");
        assert_eq!(seconds(Some(0.0123456)), "0.0123");
        // Tens of microseconds of compute in a short run are not 0.000.
        assert_eq!(seconds(Some(0.0000123456)), "0.0000123");
        assert_eq!(seconds(Some(0.0)), "0.000");
        assert_eq!(seconds(Some(1e-15)), "0.000000000");
        assert_eq!(seconds(None), "-");
    }

    use smtlab_analyse::summary::summarize_point;
    use smtlab_types::{Metric, Mode, Model, Point, ResourceUsage, Sample, Spawn};

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
            seq,
            warmup,
            status: SampleStatus::Ok,
            reason: None,
            started_at: 0.0,
            wall_s: v,
            ops: None,
            metric: Some(v),
            usage: ResourceUsage::default(),
            counters: Vec::new(),
            workers: Vec::new(),
            extras: extras.clone(),
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

    fn run(points: Vec<(Point, Vec<Sample>)>) -> RunData {
        let mut data = RunData {
            points: Vec::new(),
            samples: Vec::new(),
        };
        for (point, samples) in points {
            let summary = summarize_point(point.index as i64 + 1, point.clone(), &samples, 7);
            let values = samples
                .iter()
                .filter(|s| !s.warmup && s.status == SampleStatus::Ok)
                .filter_map(|s| s.metric)
                .collect();
            data.points.push(PointData { summary, values });
            data.samples.push((point, samples));
        }
        data
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
                == "LU, one rank per CPU: waiting per rank from 2 to 4 ranks: sigio 0.100 -> 0.200 s."),
            "{v:#?}"
        );
    }
}
