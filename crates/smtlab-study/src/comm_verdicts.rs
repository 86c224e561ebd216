//! The communication study's verdicts per application and layout: the
//! fastest mechanism, each thread mechanism against sigio with what in the
//! time split makes the difference, whether the paper's findings held
//! here, thr2 the best of the three, how waiting grew with the ranks. Each
//! a ratio of medians with its bootstrap 95% interval, or said to have
//! too few samples.

use smtlab_analyse::analysis::{verdict, PointData, Verdict};
use smtlab_analyse::units::table_value;
use smtlab_types::extras::dsm;
use smtlab_types::{Comm, Point, Sample};

use crate::comm_plan::layout_name;
use crate::comm_points::{
    app_name, comm_of, oversubscribed, part, part_values, per_rank, ranks, subject, PARTS,
};
use crate::findings::Findings;
use crate::intervals::{self, Estimate, NoInterval, Reading};
use crate::point_values::median;

/// A comparison of `a` against `b` (a's speed over b's), or `None`.
pub(crate) fn versus(a: &PointData, b: &PointData, subject: &str, seed: u64) -> Option<Verdict> {
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
pub(crate) enum Outcome {
    Faster,
    Slower,
    Tie,
    NoInterval,
}

pub(crate) fn outcome(v: &Verdict) -> Outcome {
    match v.ci95 {
        None => Outcome::NoInterval,
        Some((lo, _)) if v.significant && lo > 1.0 => Outcome::Faster,
        Some(_) if v.significant => Outcome::Slower,
        Some(_) => Outcome::Tie,
    }
}

/// `thr2 was 4.2% faster than sigio for LU at ... (95% CI 1.0–7.1%)`;
/// `why` says why there is no interval where there is none.
pub(crate) fn comparison_sentence(v: &Verdict, why: NoInterval) -> String {
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
pub(crate) fn explanation(
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
pub(crate) fn estimate(v: &Verdict, a: &PointData, b: &PointData) -> Estimate {
    intervals::from_verdict(v, a, b)
}

/// Why `v` (of `a` against `b`) has no interval.
pub(crate) fn why_none(v: &Verdict, a: &PointData, b: &PointData) -> NoInterval {
    estimate(v, a, b).ci.err().unwrap_or(NoInterval::TooFew)
}

/// The verdicts of one application at one rank count and layout.
pub(crate) fn layout_verdicts(
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

pub(crate) fn capitalised(s: &str) -> String {
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
pub(crate) fn paper_threads_vs_sigio(
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
pub(crate) fn thr2_best(at: &str, here: &[&PointData], seed: u64, f: &mut Findings) {
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
pub(crate) fn wait_growth(
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
