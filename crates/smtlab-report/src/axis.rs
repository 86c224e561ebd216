//! Axis arithmetic: the range an axis covers and where its ticks go,
//! linear or logarithmic, and how a tick is labelled. Our own [`Axis`]
//! rather than plotters' log range, because its tick choice labels log
//! axes with uneven light lines and no labels on short ranges; ours puts
//! ticks at the measured N and at 1-2-5 steps of each decade.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, KeyPointWeight, Ranged};

use crate::plot::{drawable, Scale};

/// A 1-D axis with ticks chosen here, linear or logarithmic.
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    log: bool,
    pub(crate) ticks: Vec<f64>,
    /// Light grid lines between ticks (log axes: 2..9 of each decade).
    minor: Vec<f64>,
}

impl Axis {
    /// A bar chart's rows as an axis: one tick per bar (0 to `n` - 1), with
    /// some room above and below.
    pub(crate) fn rows(n: usize) -> Axis {
        Axis {
            lo: -0.6,
            hi: n as f64 - 0.4,
            log: false,
            ticks: (0..n).map(|i| i as f64).collect(),
            minor: Vec::new(),
        }
    }

    fn t(&self, v: f64) -> f64 {
        if self.log {
            v.max(f64::MIN_POSITIVE).ln()
        } else {
            v
        }
    }
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let (a, b) = (self.t(self.lo), self.t(self.hi));
        let f = if b > a {
            (self.t(*value) - a) / (b - a)
        } else {
            0.5
        };
        let p = limit.0 as f64 + f * (limit.1 - limit.0) as f64;
        p.clamp(-1e6, 1e6).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        match hint.weight() {
            KeyPointWeight::Bold => self.ticks.clone(),
            KeyPointWeight::Any => {
                let mut all: Vec<f64> = self.ticks.iter().chain(&self.minor).copied().collect();
                all.sort_by(|a, b| a.total_cmp(b));
                all
            }
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// An axis covering `values` (already drawable on `scale`), with margins.
pub(crate) fn axis(values: &[f64], scale: Scale, ticks_at: Option<&[f64]>) -> Axis {
    let finite = values.iter().copied().filter(|v| drawable(*v, scale));
    let (mut lo, mut hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if lo > hi {
        // Nothing to show: a unit range, so the frame still draws.
        (lo, hi) = if scale == Scale::Log {
            (1.0, 10.0)
        } else {
            (0.0, 1.0)
        };
    }
    match scale {
        Scale::Log => {
            if hi / lo < 1.000_001 {
                lo /= 2.0;
                hi *= 2.0;
            }
            let pad = (hi / lo).powf(0.06).max(1.12);
            lo /= pad;
            hi *= pad;
        }
        Scale::Linear | Scale::LinearFromZero => {
            if scale == Scale::LinearFromZero {
                lo = lo.min(0.0);
                hi = hi.max(0.0);
            }
            if hi - lo < 1e-12 * hi.abs().max(1.0) {
                let d = if hi == 0.0 { 1.0 } else { hi.abs() * 0.5 };
                lo -= if scale == Scale::LinearFromZero && lo >= 0.0 {
                    0.0
                } else {
                    d
                };
                hi += d;
            }
            let pad = (hi - lo) * 0.06;
            if !(scale == Scale::LinearFromZero && lo == 0.0) {
                lo -= pad;
            }
            hi += pad;
        }
    }
    let log = scale == Scale::Log;
    let (ticks, minor) = match ticks_at.and_then(|d| data_ticks(d, lo, hi, log)) {
        Some(t) => (t, Vec::new()),
        None if log => log_ticks(lo, hi),
        None => (nice_ticks(lo, hi), Vec::new()),
    };
    Axis {
        lo,
        hi,
        log,
        ticks,
        minor,
    }
}

/// Ticks at the measured values when they are few and spread enough that
/// their labels do not collide; `None` otherwise.
fn data_ticks(data: &[f64], lo: f64, hi: f64, log: bool) -> Option<Vec<f64>> {
    let mut v: Vec<f64> = data
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x >= lo && *x <= hi)
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v.dedup();
    if v.is_empty() || v.len() > 12 {
        return None;
    }
    let t = |x: f64| if log { x.ln() } else { x };
    let span = t(hi) - t(lo);
    let crowded = v.windows(2).any(|w| t(w[1]) - t(w[0]) < span / 28.0);
    if crowded {
        if log {
            // Powers of two suit worker counts.
            let mut p = 1.0;
            let mut out = Vec::new();
            while p <= hi {
                if p >= lo {
                    out.push(p);
                }
                p *= 2.0;
            }
            return (out.len() >= 2).then_some(out);
        }
        return None;
    }
    Some(v)
}

/// Major ticks at 1, 1-2-5, or 1..9 of each decade (the coarsest set giving
/// at least three), and light lines at 1..9 between decades.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let e0 = lo.log10().floor() as i32;
    let e1 = hi.log10().ceil() as i32;
    let within = |m: &[f64]| -> Vec<f64> {
        let mut out = Vec::new();
        for e in e0..=e1 {
            for &k in m {
                let v = k * 10f64.powi(e);
                if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                    out.push(v);
                }
            }
        }
        out
    };
    let all: Vec<f64> = within(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    let decades = within(&[1.0]);
    if decades.len() >= 3 {
        // Long range: every k-th decade so labels stay apart.
        let step = decades.len().div_ceil(8);
        let major: Vec<f64> = decades.iter().step_by(step).copied().collect();
        return (major, all);
    }
    for m in [&[1.0, 2.0, 5.0][..], &all_mantissas()[..]] {
        let t = thin_log(within(m), lo, hi);
        if t.len() >= 3 && t.len() <= 10 {
            return (t, Vec::new());
        }
    }
    // A narrow range: plain linear steps inside it read best.
    (nice_ticks(lo, hi), Vec::new())
}

/// Drop ticks too close to the previous one for their labels to read
/// (900 next to 1000), keeping powers of ten over their neighbours.
fn thin_log(ticks: Vec<f64>, lo: f64, hi: f64) -> Vec<f64> {
    let min_gap = (hi / lo).ln() / 14.0;
    let is_decade = |v: f64| (v.log10() - v.log10().round()).abs() < 1e-9;
    let mut out: Vec<f64> = Vec::new();
    for v in ticks {
        match out.last() {
            Some(&prev) if (v / prev).ln() < min_gap => {
                if is_decade(v) && !is_decade(prev) {
                    out.pop();
                    out.push(v);
                }
            }
            _ => out.push(v),
        }
    }
    out
}

fn all_mantissas() -> [f64; 9] {
    [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
}

/// 4 to 8 ticks at multiples of 1, 2 or 5 × 10^k.
pub(crate) fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return vec![lo];
    }
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|st| span / st <= 7.0)
        .unwrap_or(10.0 * mag);
    let mut out = Vec::new();
    let mut k = (lo / step).ceil();
    while k * step <= hi + step * 1e-9 && out.len() < 50 {
        let v = k * step;
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        k += 1.0;
    }
    out
}

/// A tick label: 3 significant digits at most, k/M/G above 10 000.
pub(crate) fn fmt_tick(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if a < 1e-3 {
        let s = format!("{v:.1e}");
        return s.replace(".0e", "e");
    }
    let (x, suffix) = if a >= 1e12 {
        (v / 1e12, "T")
    } else if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let digits = (2 - x.abs().log10().floor() as i32).clamp(0, 4) as usize;
    let mut s = format!("{x:.digits$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s + suffix
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(fmt_tick(0.0), "0");
        assert_eq!(fmt_tick(1.0), "1");
        assert_eq!(fmt_tick(2.5), "2.5");
        assert_eq!(fmt_tick(0.05), "0.05");
        assert_eq!(fmt_tick(1234.0), "1234");
        assert_eq!(fmt_tick(20_000.0), "20k");
        assert_eq!(fmt_tick(1.5e6), "1.5M");
        assert_eq!(fmt_tick(2e-4), "2e-4");
        assert_eq!(fmt_tick(f64::NAN), "");
    }

    #[test]
    fn log_axes_get_readable_ticks() {
        // Under three decades: 1-2-5 steps.
        let a = axis(&[0.5, 40.0], Scale::Log, None);
        assert_eq!(a.ticks, vec![0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        // Many decades: decades only, light lines between.
        let a = axis(&[1.0, 1e5], Scale::Log, None);
        assert_eq!(a.ticks, vec![1.0, 10.0, 100.0, 1e3, 1e4, 1e5]);
        assert!(!a.minor.is_empty());
        let a = axis(&[1.0, 1.5], Scale::Log, None);
        assert!(a.ticks.len() >= 3, "{:?}", a.ticks);
        // 900 would crowd 1000.
        let a = axis(&[1000.0, 4200.0], Scale::Log, None);
        assert_eq!(a.ticks, vec![1000.0, 2000.0, 3000.0, 4000.0]);
        let a = axis(
            &[1.0, 2.0, 4.0, 8.0],
            Scale::Log,
            Some(&[1.0, 2.0, 4.0, 8.0]),
        );
        assert_eq!(a.ticks, vec![1.0, 2.0, 4.0, 8.0]);
        // One value: still a range around it.
        let a = axis(&[3.0], Scale::Log, Some(&[3.0]));
        assert!(a.lo < 3.0 && a.hi > 3.0);
        // No value at all: a unit range, no panic.
        let a = axis(&[], Scale::Log, None);
        assert!(a.lo < a.hi);
        let a = axis(&[f64::NAN], Scale::LinearFromZero, None);
        assert!(a.lo < a.hi);
    }

    #[test]
    fn nice_ticks_cover_the_range() {
        let t = nice_ticks(0.0, 10.0);
        assert_eq!(t.first(), Some(&0.0));
        assert!(t.len() >= 4 && t.len() <= 8, "{t:?}");
        assert_eq!(nice_ticks(1.0, 1.0), vec![1.0]);
    }
}
