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

use smtlab_analyse::analysis::{verdict, PointData, Verdict};
use smtlab_analyse::summary::RunData;
use smtlab_analyse::units::table_value;
use smtlab_types::extras::dsm;
use smtlab_types::{Comm, Point, Program, Sample, SampleStatus, Table};

use crate::comm_plan::{layout_name, per_node_of, COMM_APPS};
use crate::findings::Findings;
use crate::intervals::{self, Estimate, NoInterval, Reading};
use crate::point_values::{median, num};

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
            per_rank(p, dsm::FAULT_S).unwrap_or(0.0) + per_rank(p, dsm::SYNC_S).unwrap_or(0.0)
                - per_rank(p, dsm::WAIT_S)?,
        ),
        name => per_rank(p, part_extra(name)?),
    }
}

/// The extra holding the seconds of `part`, for the parts that are one
/// statistic (`handling` is three).
fn part_extra(part: &str) -> Option<&'static str> {
    match part {
        "wait" => Some(dsm::WAIT_S),
        "compute" => Some(dsm::COMPUTE_S),
        "serve" => Some(dsm::SERVE_S),
        _ => None,
    }
}

/// Seconds per rank of `part` in each successful measured sample of `p`.
fn part_values(samples: &[(Point, Vec<Sample>)], p: &PointData, part: &str) -> Vec<f64> {
    let n = ranks(p).max(1) as f64;
    intervals::samples_of(samples, &p.summary.point)
        .iter()
        .filter_map(|s| {
            let x = |k: &str| s.extras.get(k).copied();
            match part {
                "handling" => Some(
                    x(dsm::FAULT_S).unwrap_or(0.0) + x(dsm::SYNC_S).unwrap_or(0.0)
                        - x(dsm::WAIT_S)?,
                ),
                name => x(part_extra(name)?),
            }
        })
        .map(|v| v / n)
        .collect()
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
                num(total(p, dsm::MESSAGES), 0),
                num(total(p, dsm::BYTES).map(|b| b / 1024.0), 1),
                num(total(p, dsm::GETP), 0),
                num(total(p, dsm::DIFFS), 0),
                num(total(p, dsm::LOCKS), 0),
                num(total(p, dsm::BARRIERS), 0),
                num(total(p, dsm::SERVED), 0),
                num(total(p, dsm::RETRANSMISSIONS), 0),
                num(total(p, dsm::DUPLICATES), 0),
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
                seconds(per_rank(p, dsm::COMPUTE_S)),
                seconds(per_rank(p, dsm::FAULT_S)),
                seconds(per_rank(p, dsm::SYNC_S)),
                seconds(per_rank(p, dsm::SERVE_S)),
                seconds(per_rank(p, dsm::WAIT_S)),
                seconds(per_rank(p, dsm::THREAD_MAIN_S)),
                seconds(per_rank(p, dsm::THREAD_COMM_S)),
                seconds(per_rank(p, dsm::THREAD_SEND_S)),
                seconds(per_rank(p, dsm::THREAD_RECV_S)),
                seconds(per_rank(p, dsm::THREAD_SERVE_S)),
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

/// `thr2 was 4.2% faster than sigio for LU at ... (95% CI 1.0–7.1%)`;
/// `why` says why there is no interval where there is none.
fn comparison_sentence(v: &Verdict, why: NoInterval) -> String {
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
            "{a} measured {} than {b} for {subject} ({:.1}%), but with {}: not a verdict",
            if r >= 1.0 { "faster" } else { "slower" },
            (r - 1.0).abs() * 100.0,
            why.text()
        ),
    }
}

/// What in the time split makes the difference between `a` and `b`: the
/// part whose per-rank seconds differ most, when the 95% interval of its
/// difference (from each sample's split) excludes none and points the same
/// way as the wall time; otherwise that the split does not explain it, or
/// cannot be judged.
fn explanation(
    a: &PointData,
    b: &PointData,
    samples: &[(Point, Vec<Sample>)],
    seed: u64,
) -> Option<String> {
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
    let d = intervals::difference(
        &part_values(samples, a, key),
        &part_values(samples, b, key),
        seed,
    );
    let ci = match d.map(|d| d.ci) {
        Some(Ok((lo, hi))) => format!(", 95% CI of the difference {lo:+.3} to {hi:+.3} s"),
        Some(Err(why)) => format!(", {}", why.text()),
        None => String::new(),
    };
    let numbers = format!(
        "{short} {da:.3} s vs {db:.3} s per rank{ci}, against {:.3} s of wall time",
        wall.abs()
    );
    // The wall time's way: a part that took longer in `a` explains `a`
    // taking longer.
    let wall_way = if wall > 0.0 {
        Reading::Above
    } else {
        Reading::Below
    };
    Some(match d.map(|d| d.reading(0.0)) {
        Some(Reading::None(_)) | None => format!(
            "the largest difference in the time split is {name}, which cannot be judged \
             ({numbers})"
        ),
        Some(Reading::Within) => format!(
            "the time split does not explain it: its largest difference, {name}, is within \
             the noise ({numbers})"
        ),
        Some(r) if r == wall_way => format!("the difference is {name} ({numbers})"),
        Some(_) => format!(
            "the time split does not explain it: the largest difference is {name}, the other \
             way ({numbers})"
        ),
    })
}

/// A comparison of `a` against `b` as an estimate with its interval, and
/// why there is none where there is none.
fn estimate(v: &Verdict, a: &PointData, b: &PointData) -> Estimate {
    intervals::from_verdict(v, a, b)
}

/// Why `v` (of `a` against `b`) has no interval.
fn why_none(v: &Verdict, a: &PointData, b: &PointData) -> NoInterval {
    estimate(v, a, b).ci.err().unwrap_or(NoInterval::TooFew)
}

/// The verdicts of one application at one rank count and layout.
fn layout_verdicts(
    app: &str,
    n: usize,
    k: usize,
    here: &[&PointData],
    samples: &[(Point, Vec<Sample>)],
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
    let mut items = Vec::new();
    let (mut tied, mut contrary, mut unjudged) = (Vec::new(), Vec::new(), Vec::new());
    for p in here.iter().copied().filter(|p| !std::ptr::eq(*p, best)) {
        if let Some(v) = versus(best, p, &at, seed) {
            let name = comm_of(p).to_string();
            match outcome(&v) {
                Outcome::Faster => {}
                Outcome::Tie => tied.push(name.clone()),
                Outcome::Slower => contrary.push(name.clone()),
                Outcome::NoInterval => unjudged.push(name.clone()),
            }
            items.push((
                format!("{name} {:.2}x", v.speed_ratio),
                estimate(&v, best, p),
            ));
        }
    }
    let unit = best.summary.point.metric.unit.clone();
    let time = table_value(median(best).unwrap_or(f64::NAN), &unit);
    let lead = if tied.is_empty() && contrary.is_empty() && unjudged.is_empty() {
        format!("{} was the fastest ({time})", comm_of(best))
    } else {
        let mut s = format!("{} had the lowest median ({time})", comm_of(best));
        if !tied.is_empty() {
            s.push_str(&format!(
                ", not distinguishable from {}",
                intervals::and_list(&tied)
            ));
        }
        if !contrary.is_empty() {
            s.push_str(&format!(
                ", not shown faster than {}",
                intervals::and_list(&contrary)
            ));
        }
        if !unjudged.is_empty() && unjudged.len() < items.len() {
            s.push_str(&format!(
                ", with too few samples to tell it from {}",
                intervals::and_list(&unjudged)
            ));
        }
        s
    };
    f.verdicts.push(format!(
        "{at}: {lead}; the others took {} of its time.",
        intervals::list_with_cis(&items)
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
            let mut s = comparison_sentence(&v, why_none(&v, t, sigio));
            if matches!(outcome(&v), Outcome::Faster | Outcome::Slower) {
                if let Some(why) = explanation(t, sigio, samples, seed) {
                    s.push_str("; ");
                    s.push_str(&why);
                }
            }
            s.push('.');
            f.verdicts.push(capitalised(&s));
            against_sigio.push((c, outcome(&v), estimate(&v, t, sigio)));
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
/// share a dual-processor node (here two ranks per node). Judged from the
/// comparisons with sigio (`against`: each mechanism, how its comparison
/// read, its speed over sigio's with the interval), which the sentence
/// repeats.
fn paper_threads_vs_sigio(
    at: &str,
    k: usize,
    here: &[&PointData],
    against: &[(Comm, Outcome, Estimate)],
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
            .filter(|(_, x, _)| *x == o)
            .map(|(c, _, _)| c.to_string())
            .collect()
    };
    let (agree, disagree) = (list(expected), list(opposite));
    let (tied, unjudged) = (list(Outcome::Tie), list(Outcome::NoInterval));
    let word = |o: Outcome| {
        if o == Outcome::Faster {
            "faster"
        } else {
            "slower"
        }
    };
    // What the mechanisms neither for nor against the finding did.
    let rest = || {
        let mut r = Vec::new();
        if !tied.is_empty() {
            r.push(format!("{} tied with it", intervals::and_list(&tied)));
        }
        if !unjudged.is_empty() {
            r.push(format!(
                "too few samples for an interval for {}",
                intervals::and_list(&unjudged)
            ));
        }
        r.join(", ")
    };
    let verdict = if unjudged.len() == against.len() {
        format!("not measurable here: {}", intervals::TOO_FEW)
    } else if agree.len() == against.len() {
        format!(
            "held: {} {} than sigio",
            intervals::and_list(&agree),
            word(expected)
        )
    } else if !disagree.is_empty() && agree.is_empty() {
        format!(
            "did not hold: {} {} than sigio",
            intervals::and_list(&disagree),
            word(opposite)
        )
    } else if !agree.is_empty() && disagree.is_empty() {
        format!(
            "partly held: {} {} than sigio, {}",
            intervals::and_list(&agree),
            word(expected),
            rest()
        )
    } else if !agree.is_empty() {
        format!(
            "mixed: {} {} than sigio, but {} {}",
            intervals::and_list(&agree),
            word(expected),
            intervals::and_list(&disagree),
            word(opposite)
        )
    } else if unjudged.is_empty() {
        "not confirmed: every thread mechanism tied with sigio (differences within the noise)"
            .to_string()
    } else {
        format!("not confirmed: {}", rest())
    };
    let speeds: Vec<(String, Estimate)> = against
        .iter()
        .map(|(c, _, e)| (format!("{c} {:.2}x", e.value), *e))
        .collect();
    f.verdicts.push(format!(
        "The paper's finding ({claim}) for {at}: {verdict}; speed against sigio's: {}.",
        intervals::list_with_cis(&speeds)
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
    let ratios = intervals::list_in_parens(&[
        (
            format!("thr2 {:.2}x thr1's speed", v1.speed_ratio),
            estimate(&v1, thr2, thr1),
        ),
        (
            format!("{:.2}x thr3's", v3.speed_ratio),
            estimate(&v3, thr2, thr3),
        ),
    ]);
    let with = |o: Outcome| -> Vec<String> {
        [("thr1", o1), ("thr3", o3)]
            .iter()
            .filter(|(_, x)| *x == o)
            .map(|(c, _)| c.to_string())
            .collect()
    };
    let (beat, tied, unjudged) = (
        with(Outcome::Slower),
        with(Outcome::Tie),
        with(Outcome::NoInterval),
    );
    // A mechanism shown faster than thr2 settles it, whatever the other.
    let verdict = if !beat.is_empty() {
        format!(
            "did not hold: {} faster than thr2",
            intervals::and_list(&beat)
        )
    } else if o1 == Outcome::Faster && o3 == Outcome::Faster {
        "held".to_string()
    } else if !tied.is_empty() {
        let mut s = format!(
            "not confirmed: thr2 not distinguishable from {}",
            intervals::and_list(&tied)
        );
        if !unjudged.is_empty() {
            s.push_str(&format!(
                ", too few samples for an interval against {}",
                intervals::and_list(&unjudged)
            ));
        }
        s
    } else {
        format!(
            "not measurable here: too few samples for an interval against {}",
            intervals::and_list(&unjudged)
        )
    };
    f.verdicts.push(format!(
        "The paper's finding (thr2 the best of the three thread mechanisms) for {at}: {verdict} \
         ({ratios})."
    ));
}

/// How each mechanism's waiting per rank grew from the fewest ranks to the
/// most in one layout (the paper: the difference between mechanisms is
/// waiting, and it grows from 8 to 16 processors), each change a ratio of
/// medians with its 95% interval from each sample's waiting.
fn wait_growth(
    app: &str,
    k: usize,
    layout: &[&PointData],
    samples: &[(Point, Vec<Sample>)],
    seed: u64,
    f: &mut Findings,
) {
    let mut counts: Vec<usize> = layout.iter().map(|p| ranks(p)).collect();
    counts.sort_unstable();
    counts.dedup();
    let (Some(&lo), Some(&hi)) = (counts.first(), counts.last()) else {
        return;
    };
    if lo == hi {
        return;
    }
    let mut items: Vec<(String, Option<Estimate>)> = Vec::new();
    for c in Comm::ALL {
        let at = |n: usize| {
            layout
                .iter()
                .copied()
                .find(|p| comm_of(p) == c && ranks(p) == n)
        };
        let (Some(pa), Some(pb)) = (at(lo), at(hi)) else {
            continue;
        };
        if let (Some(a), Some(b)) = (per_rank(pa, dsm::WAIT_S), per_rank(pb, dsm::WAIT_S)) {
            let e = intervals::ratio(
                &part_values(samples, pb, "wait"),
                &part_values(samples, pa, "wait"),
                seed,
            );
            items.push((format!("{c} {a:.3} -> {b:.3} s"), e));
        }
    }
    if items.is_empty() {
        return;
    }
    let all_too_few = items
        .iter()
        .all(|(_, e)| e.is_some_and(|e| e.ci == Err(NoInterval::TooFew)));
    let parts: Vec<String> = items
        .iter()
        .map(|(text, e)| match e {
            Some(e) if all_too_few => format!("{text}, {:.2}x", e.value),
            Some(e) => format!("{text}, {}", e.x_with_ci()),
            None => format!("{text} (no ratio: no waiting at {lo} ranks)"),
        })
        .collect();
    let over = layout.iter().any(|p| ranks(p) == hi && oversubscribed(p));
    f.verdicts.push(format!(
        "{}, {}: waiting per rank from {lo} to {hi} ranks: {}{}{}.",
        app_name(app),
        layout_name(k),
        parts.join("; "),
        if all_too_few {
            format!(" ({})", intervals::TOO_FEW)
        } else {
            String::new()
        },
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

    use crate::testing::{self, run};
    use smtlab_types::{Metric, Mode, Model, Point, Sample, Spawn};

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
