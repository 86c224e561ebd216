//! The intervals the studies' verdicts state: a ratio of two medians with
//! its bootstrap 95% interval, a difference of two medians with its
//! interval, the share of one gain in another, and how each reads in a
//! sentence ("95% CI 0.90–1.05x", or "too few samples for an interval").
//!
//! The rule every verdict keeps: a number it judges by carries its 95%
//! interval, or says plainly that there were too few samples for one; a
//! direction ("grew", "faster") is claimed only when the interval excludes
//! no change. Every draw is seeded with the run's seed, as
//! `verdict::compare` is, so a report is reproducible.

use smtlab_analyse::analysis::{PointData, Verdict};
use smtlab_stats::{median, medians_ci, ratio_ci};
use smtlab_types::{Point, Sample, SampleStatus};

/// What a sentence says where an interval is missing for lack of samples
/// (a bootstrap needs 3 a side).
pub const TOO_FEW: &str = "too few samples for an interval";

/// What a sentence says where the resamples' ends are infinite (zeros
/// among the samples).
pub const UNBOUNDED: &str = "no bounded interval (zeros among the samples)";

/// Why an estimate has no interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoInterval {
    /// Fewer than 3 samples on a side.
    TooFew,
    /// An end of the interval is infinite.
    Unbounded,
}

impl NoInterval {
    pub fn text(self) -> &'static str {
        match self {
            NoInterval::TooFew => TOO_FEW,
            NoInterval::Unbounded => UNBOUNDED,
        }
    }
}

/// How an interval lies against the value of no change (1 for a ratio, 0
/// for a difference).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Wholly above it.
    Above,
    /// Wholly below it.
    Below,
    /// It contains it: no significant change.
    Within,
    /// No interval.
    None(NoInterval),
}

/// An estimate (a ratio, a difference, a share) with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub ci: Result<(f64, f64), NoInterval>,
}

impl Estimate {
    /// How the interval lies against `neutral` (1 for a ratio, 0 for a
    /// difference).
    pub fn reading(&self, neutral: f64) -> Reading {
        match self.ci {
            Err(why) => Reading::None(why),
            Ok((lo, _)) if lo > neutral => Reading::Above,
            Ok((_, hi)) if hi < neutral => Reading::Below,
            Ok(_) => Reading::Within,
        }
    }

    /// A ratio's reading against 1.
    pub fn ratio_reading(&self) -> Reading {
        self.reading(1.0)
    }

    /// `95% CI 0.90–1.05x` for a ratio, or why there is none.
    pub fn ci_x(&self) -> String {
        match self.ci {
            Ok((lo, hi)) => format!("95% CI {lo:.2}–{hi:.2}x"),
            Err(why) => why.text().to_string(),
        }
    }

    /// The ratio and its interval: `0.97x (95% CI 0.90–1.05x)`.
    pub fn x_with_ci(&self) -> String {
        format!("{:.2}x ({})", self.value, self.ci_x())
    }
}

/// Why `a` against `b` has no ratio interval: fewer than 3 values on a
/// side, else an unbounded end.
fn why_none(a: &[f64], b: &[f64]) -> NoInterval {
    let finite = |v: &[f64]| v.iter().filter(|x| x.is_finite()).count();
    if finite(a) < 3 || finite(b) < 3 {
        NoInterval::TooFew
    } else {
        NoInterval::Unbounded
    }
}

/// `median(a) / median(b)` with its percentile-bootstrap 95% interval
/// (`smtlab_stats::ratio_ci`, seeded with `seed`); `None` when a side has
/// no value or the ratio is not finite and positive.
pub fn ratio(a: &[f64], b: &[f64], seed: u64) -> Option<Estimate> {
    let (ma, mb) = (median(a), median(b));
    let value = ma / mb;
    if !(value.is_finite() && value > 0.0) {
        return None;
    }
    let ci = match ratio_ci(a, b, seed) {
        Some((_, (lo, hi))) if lo.is_finite() && hi.is_finite() => Ok((lo, hi)),
        _ => Err(why_none(a, b)),
    };
    Some(Estimate { value, ci })
}

/// A verdict's speed ratio as an [`Estimate`] (A's speed over B's), with
/// why it has no interval where it has none.
pub fn from_verdict(v: &Verdict, a: &PointData, b: &PointData) -> Estimate {
    Estimate {
        value: v.speed_ratio,
        ci: v.ci95.ok_or_else(|| why_none(&a.values, &b.values)),
    }
}

/// The 95% interval of `statistic` of the sides' medians
/// (`smtlab_stats::medians_ci`: each side resampled independently, seeded
/// with the run's `seed`), or why there is none: fewer than 3 finite values
/// on a side, else an undefined or infinite end.
fn bootstrap(
    sides: &[&[f64]],
    seed: u64,
    statistic: impl Fn(&[f64]) -> f64,
) -> Result<(f64, f64), NoInterval> {
    let finite = |v: &[f64]| v.iter().filter(|x| x.is_finite()).count();
    if sides.iter().any(|s| finite(s) < 3) {
        return Err(NoInterval::TooFew);
    }
    match medians_ci(sides, statistic, seed) {
        Some((_, (lo, hi))) if lo.is_finite() && hi.is_finite() => Ok((lo, hi)),
        _ => Err(NoInterval::Unbounded),
    }
}

/// `median(a) - median(b)` with its bootstrap 95% interval (each side
/// resampled independently); `None` when a side has no value.
pub fn difference(a: &[f64], b: &[f64], seed: u64) -> Option<Estimate> {
    let value = median(a) - median(b);
    if !value.is_finite() {
        return None;
    }
    let ci = bootstrap(&[a, b], seed, |m| m[0] - m[1]);
    Some(Estimate { value, ci })
}

/// What two configurations gain over a baseline, and the first gain as a
/// share of the second: `(g1 - 1) / (g2 - 1)` where `g = median(x) /
/// median(base)` for throughputs (`higher_is_better`), `median(base) /
/// median(x)` for times. The interval resamples the three sides
/// independently (the one baseline resample serving both gains). `None`
/// when a median is missing or the share is not finite.
pub fn gain_share(
    first: &[f64],
    second: &[f64],
    base: &[f64],
    higher_is_better: bool,
    seed: u64,
) -> Option<Estimate> {
    let share = move |m: &[f64]| {
        let gain = |x: f64| {
            if higher_is_better {
                x / m[2]
            } else {
                m[2] / x
            }
        };
        (gain(m[0]) - 1.0) / (gain(m[1]) - 1.0)
    };
    let value = share(&[median(first), median(second), median(base)]);
    if !value.is_finite() {
        return None;
    }
    let ci = bootstrap(&[first, second, base], seed, share);
    Some(Estimate { value, ci })
}

/// The successful measured samples of `point` (warm-ups and failures
/// left out, as the point's statistics leave them out), from a run's
/// stored samples.
pub fn samples_of<'a>(samples: &'a [(Point, Vec<Sample>)], point: &Point) -> Vec<&'a Sample> {
    samples
        .iter()
        .find(|(p, _)| p == point)
        .map(|(_, s)| {
            s.iter()
                .filter(|s| !s.warmup && s.status == SampleStatus::Ok && s.metric.is_some())
                .collect()
        })
        .unwrap_or_default()
}

/// One extra of every successful measured sample of `point` that has it.
pub fn extra_values(samples: &[(Point, Vec<Sample>)], point: &Point, key: &str) -> Vec<f64> {
    samples_of(samples, point)
        .iter()
        .filter_map(|s| s.extras.get(key).copied())
        .collect()
}

/// A list of items, each a text that states an estimate (`thread
/// 0.97x`, `2.11x thread2's`) followed by its interval: `thread 0.97x (95%
/// CI 0.90–1.05x), staged 0.70x (95% CI 0.64–0.81x)`; when no item has an
/// interval for lack of samples, that is said once, at the end: `thread
/// 0.97x, staged 0.70x (too few samples for an interval)`.
pub fn list_with_cis(items: &[(String, Estimate)]) -> String {
    let all_too_few =
        !items.is_empty() && items.iter().all(|(_, e)| e.ci == Err(NoInterval::TooFew));
    let texts: Vec<String> = items
        .iter()
        .map(|(text, e)| {
            if all_too_few {
                text.clone()
            } else {
                format!("{text} ({})", e.ci_x())
            }
        })
        .collect();
    if all_too_few {
        format!("{} ({TOO_FEW})", texts.join(", "))
    } else {
        texts.join(", ")
    }
}

/// [`list_with_cis`] for inside parentheses: `thr2 0.90x thr1's speed,
/// 95% CI 0.89–0.91x; 1.00x thr3's, 95% CI 0.97–1.04x`, or `thr2 1.03x
/// thr1's speed, 0.86x thr3's; too few samples for an interval`.
pub fn list_in_parens(items: &[(String, Estimate)]) -> String {
    let all_too_few =
        !items.is_empty() && items.iter().all(|(_, e)| e.ci == Err(NoInterval::TooFew));
    if all_too_few {
        let texts: Vec<&str> = items.iter().map(|(t, _)| t.as_str()).collect();
        return format!("{}; {TOO_FEW}", texts.join(", "));
    }
    items
        .iter()
        .map(|(text, e)| format!("{text}, {}", e.ci_x()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `a`, `a and b`, `a, b and c`.
pub fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What keeps a "best" verdict from being sure, one clause each: the
/// others it cannot be told from (`tied`), those its interval does not
/// show below it (`contrary`: "not shown to `verb` more than"), and those
/// with too few samples to judge (`unjudged`) — unless none of the `total`
/// comparisons has an interval, which the verdict's list says once.
pub fn best_caveats(
    tied: &[String],
    contrary: &[String],
    unjudged: &[String],
    total: usize,
    verb: &str,
) -> Vec<String> {
    let mut but = Vec::new();
    if !tied.is_empty() {
        but.push(format!("not distinguishable from {}", and_list(tied)));
    }
    if !contrary.is_empty() {
        but.push(format!(
            "not shown to {verb} more than {}",
            and_list(contrary)
        ));
    }
    if !unjudged.is_empty() && unjudged.len() < total {
        but.push(format!(
            "with too few samples to tell it from {}",
            and_list(unjudged)
        ));
    }
    but
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_has_its_interval_or_says_why_not() {
        let a = [2.0, 2.1, 1.9, 2.0, 2.05];
        let b = [1.0, 1.02, 0.98, 1.0, 1.01];
        let r = ratio(&a, &b, 7).unwrap();
        assert!((r.value - 2.0).abs() < 1e-12);
        assert_eq!(r.ratio_reading(), Reading::Above);
        assert!(r.ci_x().starts_with("95% CI 1.9"), "{}", r.ci_x());
        let few = ratio(&a[..2], &b, 7).unwrap();
        assert_eq!(few.ci, Err(NoInterval::TooFew));
        assert_eq!(few.ci_x(), TOO_FEW);
        assert_eq!(ratio(&[], &b, 7), None);
        // The same seed, the same interval as `ratio_ci` gives.
        assert_eq!(r.ci.unwrap(), ratio_ci(&a, &b, 7).unwrap().1);
    }

    #[test]
    fn a_difference_and_a_share_are_bootstrapped_and_seeded() {
        let a = [3.0, 3.1, 2.9, 3.0];
        let b = [1.0, 1.1, 0.9, 1.0];
        let d = difference(&a, &b, 1).unwrap();
        assert!((d.value - 2.0).abs() < 1e-12);
        assert_eq!(d.reading(0.0), Reading::Above);
        assert_eq!(difference(&a, &b, 1), Some(d));
        // Base 100, first 125 (+25%), second 200 (+100%): a quarter.
        let base = [99.0, 100.0, 101.0, 100.0];
        let first = [124.0, 125.0, 126.0, 125.0];
        let second = [198.0, 200.0, 202.0, 200.0];
        let s = gain_share(&first, &second, &base, true, 1).unwrap();
        assert!((s.value - 0.25).abs() < 1e-12);
        let (lo, hi) = s.ci.unwrap();
        assert!(lo < 0.25 && 0.25 < hi && lo > 0.2 && hi < 0.3, "{lo} {hi}");
        assert_eq!(
            gain_share(&first[..2], &second, &base, true, 1).unwrap().ci,
            Err(NoInterval::TooFew)
        );
        // Times: lower is better, so a halved time is a gain of 1.
        let t = gain_share(
            &[0.8, 0.8, 0.8],
            &[0.5, 0.5, 0.5],
            &[1.0, 1.0, 1.0],
            false,
            1,
        )
        .unwrap();
        assert!((t.value - 0.25).abs() < 1e-12, "{t:?}");
    }

    #[test]
    fn lists_say_too_few_once_when_no_item_has_an_interval() {
        let few = Estimate {
            value: 0.5,
            ci: Err(NoInterval::TooFew),
        };
        let ok = Estimate {
            value: 0.97,
            ci: Ok((0.9, 1.05)),
        };
        assert_eq!(
            list_with_cis(&[("a 0.50x".into(), few), ("b 0.50x".into(), few)]),
            "a 0.50x, b 0.50x (too few samples for an interval)"
        );
        assert_eq!(
            list_with_cis(&[("a 0.97x".into(), ok), ("b 0.50x".into(), few)]),
            "a 0.97x (95% CI 0.90–1.05x), b 0.50x (too few samples for an interval)"
        );
        assert_eq!(
            list_in_parens(&[("a 0.97x".into(), ok), ("b 0.50x".into(), few)]),
            "a 0.97x, 95% CI 0.90–1.05x; b 0.50x, too few samples for an interval"
        );
        assert_eq!(
            list_in_parens(&[("a 0.50x".into(), few), ("b 0.50x".into(), few)]),
            "a 0.50x, b 0.50x; too few samples for an interval"
        );
        assert_eq!(
            and_list(&["a".into(), "b".into(), "c".into()]),
            "a, b and c"
        );
    }
}
