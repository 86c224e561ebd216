//! Drawing: a small chart description ([`Plot`]) rendered with plotters to
//! an SVG string (inlined in the HTML, and saved) or a PNG file.
//!
//! Why a description layer: the same chart is drawn twice, on two backends,
//! at two scales; and the data is cleaned once (non-finite values, and
//! values a log axis cannot show, are dropped here so that plotters never
//! sees them). Axes are our own [`Axis`] rather than plotters' log range,
//! because its tick choice labels log axes with uneven light lines and no
//! labels on short ranges; ours puts ticks at the measured N and at 1-2-5
//! steps of each decade.
//!
//! Text is measured with DejaVu Sans, embedded in the binary and registered
//! with plotters' `ab_glyph` font backend: no fontconfig or freetype, so a
//! report draws the same on any machine, including minimal containers.

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, KeyPointWeight, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle, FontTransform};

/// DejaVu Sans (Bitstream Vera licence: `assets/DejaVuSans-LICENSE.txt`).
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
/// The family name plotters asks for by default.
const FAMILY: &str = "sans-serif";

/// Size of a line chart in SVG pixels (CSS scales it to the page).
pub(crate) const WIDTH: u32 = 820;
pub(crate) const HEIGHT: u32 = 470;
/// PNG pixels per SVG pixel: sharp on high-density screens and in slides.
pub(crate) const PNG_SCALE: f64 = 1.5;

/// Tableau 10: distinguishable, and readable by most colour-blind readers
/// together with the marker shapes.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const GREY: RGBColor = RGBColor(110, 110, 110);
const REFERENCE: RGBColor = RGBColor(180, 30, 30);
const WEAK_BAR: RGBColor = RGBColor(174, 199, 232);

/// Why a chart could not be drawn. plotters' errors are generic over the
/// drawing backend (SVG string, bitmap file), so what they say is kept as
/// text rather than as one type per backend.
#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    #[error("the embedded DejaVu Sans font did not load")]
    Font,
    #[error("embedded font: {0}")]
    InvalidFont(#[from] ab_glyph::InvalidFont),
    #[error("{0}")]
    Backend(String),
}

/// Register the embedded font once per process.
fn ensure_font() -> Result<(), DrawError> {
    static LOADED: OnceLock<bool> = OnceLock::new();
    let ok = *LOADED.get_or_init(|| register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(DrawError::Font)
    }
}

/// One point of a line, with an optional error bar (low, high).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Xy {
    pub x: f64,
    pub y: f64,
    pub err: Option<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    pub label: String,
    pub points: Vec<Xy>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scale {
    Linear,
    /// Linear, starting at 0: for quantities whose size matters (speedup,
    /// CPI), where a truncated axis would exaggerate differences.
    LinearFromZero,
    Log,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LinePlot {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// Ticks at the measured x values (worker counts) where they fit.
    pub x_ticks_at_data: bool,
    pub lines: Vec<Line>,
    /// Draw y = x, labelled so (the ideal speedup).
    pub ideal: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bar {
    pub label: String,
    pub value: f64,
    pub ci: Option<(f64, f64)>,
    /// Drawn in full colour (the CI excludes the reference).
    pub strong: bool,
}

/// Horizontal bars from a reference value (1.0 for ratios): a bar to the
/// right means "more than the reference".
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BarPlot {
    pub title: String,
    pub x_desc: String,
    pub reference: f64,
    pub reference_label: String,
    pub strong_label: String,
    pub weak_label: String,
    pub bars: Vec<Bar>,
}

/// One column of a [`GridPlot`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GridColumn {
    pub label: String,
    /// Neighbouring columns of one group (a core's PUs) share a shade, and
    /// a thin rule parts groups; `None`: a group of its own.
    pub group: Option<usize>,
    /// Greyed out (a PU offline, or not allowed).
    pub unavailable: bool,
}

/// Consecutive columns under one label (a NUMA node, a package).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GridSpan {
    /// Empty: no label over these columns.
    pub label: String,
    pub first: usize,
    pub len: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GridRow {
    pub label: String,
    /// One count per column; 0 is an empty cell.
    pub counts: Vec<u32>,
}

/// A grid of small counts: labelled rows over labelled columns, the
/// columns grouped by bands of spans above them (outermost first; an outer
/// band's boundaries are heavier rules). A cell of 1 is filled, a cell of
/// more is filled in a second colour with its count written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GridPlot {
    pub title: String,
    pub x_desc: String,
    pub columns: Vec<GridColumn>,
    pub bands: Vec<Vec<GridSpan>>,
    pub rows: Vec<GridRow>,
    /// Legend entries: a cell of 1, a cell of more, an unavailable column.
    pub one_label: String,
    pub many_label: String,
    pub unavailable_label: String,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plot {
    Lines(LinePlot),
    Bars(BarPlot),
    Grid(GridPlot),
}

impl Plot {
    /// The plot with every value it cannot draw removed.
    pub(crate) fn cleaned(mut self) -> Plot {
        match &mut self {
            Plot::Lines(p) => {
                let (xs, ys) = (p.x_scale, p.y_scale);
                for line in &mut p.lines {
                    line.points
                        .retain(|pt| drawable(pt.x, xs) && drawable(pt.y, ys));
                    for pt in &mut line.points {
                        pt.err = pt
                            .err
                            .filter(|(lo, hi)| drawable(*lo, ys) && drawable(*hi, ys) && lo <= hi);
                    }
                    line.points
                        .sort_by(|a, b| a.x.partial_cmp(&b.x).unwrap_or(std::cmp::Ordering::Equal));
                }
                p.lines.retain(|l| !l.points.is_empty());
            }
            Plot::Bars(p) => {
                p.bars.retain(|b| b.value.is_finite());
                for b in &mut p.bars {
                    b.ci =
                        b.ci.filter(|(lo, hi)| lo.is_finite() && hi.is_finite() && lo <= hi);
                }
            }
            Plot::Grid(p) => {
                let n = p.columns.len();
                for r in &mut p.rows {
                    r.counts.resize(n, 0);
                }
            }
        }
        self
    }

    /// Nothing to draw (after [`Plot::cleaned`]).
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Plot::Lines(p) => p.lines.is_empty(),
            Plot::Bars(p) => p.bars.is_empty(),
            Plot::Grid(p) => p.rows.is_empty() || p.columns.is_empty(),
        }
    }

    /// Size in SVG pixels: bar charts grow with their bars so labels never
    /// overlap.
    pub(crate) fn size(&self) -> (u32, u32) {
        match self {
            Plot::Lines(_) => (WIDTH, HEIGHT),
            Plot::Bars(p) => {
                let h = 150 + 30 * p.bars.len() as u32;
                (WIDTH, h.clamp(260, 2400))
            }
            Plot::Grid(p) => grid_layout(p).size,
        }
    }
}

fn drawable(v: f64, scale: Scale) -> bool {
    v.is_finite() && (scale != Scale::Log || v > 0.0)
}

/// The chart as an SVG document.
pub(crate) fn render_svg(plot: &Plot) -> Result<String, DrawError> {
    ensure_font()?;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, plot.size()).into_drawing_area();
        draw(&root, plot, 1.0)?;
        root.present().map_err(backend_error)?;
    }
    Ok(buf)
}

/// The chart as a PNG file at `path`.
pub(crate) fn render_png(plot: &Plot, path: &Path) -> Result<(), DrawError> {
    ensure_font()?;
    let (w, h) = plot.size();
    let size = (
        (w as f64 * PNG_SCALE).round() as u32,
        (h as f64 * PNG_SCALE).round() as u32,
    );
    let backend = crate::text::CrispText::new(BitMapBackend::new(path, size), FONT)?;
    let root = backend.into_drawing_area();
    draw(&root, plot, PNG_SCALE)?;
    root.present().map_err(backend_error)?;
    Ok(())
}

fn font(size: f64) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&BLACK)
}

/// Pixel size from a size in SVG pixels.
fn px(v: f64, s: f64) -> i32 {
    (v * s).round() as i32
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    plot: &Plot,
    s: f64,
) -> Result<(), DrawError> {
    root.fill(&WHITE).map_err(backend_error)?;
    match plot {
        Plot::Lines(p) => draw_lines(root, p, s),
        Plot::Bars(p) => draw_bars(root, p, s),
        Plot::Grid(p) => draw_grid(root, p, s),
    }
    .map_err(backend_error)
}

fn backend_error(e: impl std::fmt::Display) -> DrawError {
    DrawError::Backend(e.to_string())
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// What a legend entry shows.
enum Key {
    Line {
        color: RGBColor,
        marker: usize,
    },
    Dashed(RGBColor),
    /// A plain line, no marker (a reference value).
    Rule(RGBColor),
    Swatch(RGBColor),
    Whisker,
}

/// Width of the widest of `texts` at `style`.
fn text_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    texts: impl IntoIterator<Item = String>,
    style: &TextStyle,
) -> u32 {
    texts
        .into_iter()
        .map(|t| {
            area.estimate_text_size(&t, style)
                .map(|(w, _)| w)
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

/// `text` cut to at most `max_w` pixels, with an ellipsis when cut.
fn fit_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
    max_w: u32,
) -> String {
    let width = |t: &str| {
        area.estimate_text_size(t, style)
            .map(|(w, _)| w)
            .unwrap_or(0)
    };
    if width(text) <= max_w {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut n = chars.len();
    while n > 1 {
        n -= 1;
        let t: String = chars[..n].iter().collect::<String>() + "…";
        if width(&t) <= max_w {
            return t;
        }
    }
    "…".into()
}

/// Draw a legend down `area` (the strip right of the plot).
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, Key)],
    s: f64,
) -> DrawResult<DB> {
    let style = font(12.5 * s);
    let (w, _) = area.dim_in_pixel();
    let row = px(22.0, s);
    let x0 = px(6.0, s);
    let key_w = px(26.0, s);
    let text_x = x0 + key_w + px(8.0, s);
    let max_text = (w as i32 - text_x - px(4.0, s)).max(10) as u32;
    let mut y = px(48.0, s);
    for (label, key) in entries {
        let mid = x0 + key_w / 2;
        match key {
            Key::Line { color, marker } => {
                area.draw(&PathElement::new(
                    vec![(x0, y), (x0 + key_w, y)],
                    color.stroke_width(px(2.0, s) as u32),
                ))?;
                draw_marker(area, (mid, y), *marker, *color, s)?;
            }
            Key::Dashed(color) => {
                let seg = key_w / 4;
                for i in [0, 2] {
                    area.draw(&PathElement::new(
                        vec![(x0 + i * seg, y), (x0 + (i + 1) * seg + seg / 2, y)],
                        color.stroke_width(px(2.0, s) as u32),
                    ))?;
                }
            }
            Key::Rule(color) => {
                area.draw(&PathElement::new(
                    vec![(x0, y), (x0 + key_w, y)],
                    color.stroke_width(px(2.0, s) as u32),
                ))?;
            }
            Key::Swatch(color) => {
                area.draw(&Rectangle::new(
                    [
                        (x0 + px(3.0, s), y - px(6.0, s)),
                        (x0 + key_w - px(3.0, s), y + px(6.0, s)),
                    ],
                    color.filled(),
                ))?;
            }
            Key::Whisker => {
                let st = BLACK.stroke_width(px(1.5, s) as u32);
                area.draw(&PathElement::new(
                    vec![(x0 + px(3.0, s), y), (x0 + key_w - px(3.0, s), y)],
                    st,
                ))?;
                for x in [x0 + px(3.0, s), x0 + key_w - px(3.0, s)] {
                    area.draw(&PathElement::new(
                        vec![(x, y - px(5.0, s)), (x, y + px(5.0, s))],
                        st,
                    ))?;
                }
            }
        }
        let text = fit_text(area, label, &style, max_text);
        area.draw(&Text::new(
            text,
            (text_x, y),
            style.pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        y += row;
    }
    Ok(())
}

/// Marker `kind` (circle, triangle, square, diamond, by index) at pixel
/// `at` of `area`.
fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    at: (i32, i32),
    kind: usize,
    color: RGBColor,
    s: f64,
) -> DrawResult<DB> {
    let r = px(4.5, s);
    let (x, y) = at;
    match kind % 4 {
        0 => area.draw(&Circle::new(at, r, color.filled())),
        1 => area.draw(&Polygon::new(
            vec![(x, y - r - 1), (x - r - 1, y + r), (x + r + 1, y + r)],
            color.filled(),
        )),
        2 => area.draw(&Rectangle::new(
            [(x - r, y - r), (x + r, y + r)],
            color.filled(),
        )),
        _ => area.draw(&Polygon::new(
            vec![
                (x, y - r - 2),
                (x + r + 1, y),
                (x, y + r + 2),
                (x - r - 1, y),
            ],
            color.filled(),
        )),
    }
}

/// A 1-D axis with ticks chosen here, linear or logarithmic.
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<f64>,
    /// Light grid lines between ticks (log axes: 2..9 of each decade).
    minor: Vec<f64>,
}

impl Axis {
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

fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &LinePlot,
    s: f64,
) -> DrawResult<DB> {
    let area = root.titled(&p.title, font(17.0 * s))?;
    let legend_style = font(12.5 * s);
    let mut entries: Vec<(String, Key)> = p
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            (
                l.label.clone(),
                Key::Line {
                    color: PALETTE[i % PALETTE.len()],
                    marker: i,
                },
            )
        })
        .collect();
    if let Some(label) = &p.ideal {
        entries.push((label.clone(), Key::Dashed(GREY)));
    }
    if p.lines
        .iter()
        .any(|l| l.points.iter().any(|pt| pt.err.is_some()))
    {
        entries.push(("95% CI".into(), Key::Whisker));
    }
    let (w, _) = area.dim_in_pixel();
    let legend_w = (text_width(&area, entries.iter().map(|e| e.0.clone()), &legend_style) as i32
        + px(52.0, s))
    .clamp(px(120.0, s), (w as f32 * 0.36) as i32);
    let (plot_area, legend_area) = area.split_horizontally(w as i32 - legend_w);

    let xs: Vec<f64> = p
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|pt| pt.x))
        .collect();
    let mut ys: Vec<f64> = Vec::new();
    for pt in p.lines.iter().flat_map(|l| &l.points) {
        ys.push(pt.y);
        if let Some((lo, hi)) = pt.err {
            ys.extend([lo, hi]);
        }
    }
    if p.ideal.is_some() {
        // y = x must stay visible over the measured range of x.
        ys.extend(xs.iter().copied());
    }
    let x_axis = axis(&xs, p.x_scale, p.x_ticks_at_data.then_some(&xs[..]));
    let y_axis = axis(&ys, p.y_scale, None);

    let label_style = font(12.5 * s);
    let y_label_w = text_width(
        &plot_area,
        y_axis.ticks.iter().map(|v| fmt_tick(*v)),
        &label_style,
    );
    let mut chart = ChartBuilder::on(&plot_area)
        .margin_top(px(8.0, s))
        .margin_left(px(8.0, s))
        .margin_right(px(14.0, s))
        .margin_bottom(px(6.0, s))
        .x_label_area_size(px(48.0, s))
        .y_label_area_size(y_label_w as i32 + px(36.0, s))
        .build_cartesian_2d(x_axis.clone(), y_axis.clone())?;
    let fmt = |v: &f64| fmt_tick(*v);
    chart
        .configure_mesh()
        .x_desc(p.x_desc.as_str())
        .y_desc(p.y_desc.as_str())
        .x_label_formatter(&fmt)
        .y_label_formatter(&fmt)
        .label_style(label_style.clone())
        .axis_desc_style(font(13.5 * s))
        .bold_line_style(BLACK.mix(0.16))
        .light_line_style(BLACK.mix(0.06))
        .axis_style(BLACK.mix(0.7))
        .set_all_tick_mark_size(px(4.0, s))
        .draw()?;

    if p.ideal.is_some() {
        let (a, b) = (x_axis.lo.max(y_axis.lo), x_axis.hi.min(y_axis.hi));
        if a < b {
            let pts: Vec<(f64, f64)> = (0..=40)
                .map(|i| {
                    let v = a + (b - a) * i as f64 / 40.0;
                    (v, v)
                })
                .collect();
            chart.draw_series(DashedLineSeries::new(
                pts,
                px(7.0, s),
                px(5.0, s),
                GREY.stroke_width(px(1.6, s) as u32),
            ))?;
        }
    }
    let cap = px(4.0, s);
    for (i, line) in p.lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let whisker = color.mix(0.85).stroke_width(px(1.4, s) as u32);
        for pt in &line.points {
            if let Some((lo, hi)) = pt.err {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(pt.x, lo), (pt.x, hi)],
                    whisker,
                )))?;
                for v in [lo, hi] {
                    chart.draw_series(std::iter::once(
                        EmptyElement::at((pt.x, v))
                            + PathElement::new(vec![(-cap, 0), (cap, 0)], whisker),
                    ))?;
                }
            }
        }
        chart.draw_series(LineSeries::new(
            line.points.iter().map(|pt| (pt.x, pt.y)),
            color.stroke_width(px(2.0, s) as u32),
        ))?;
    }
    // Markers last, so every point stays visible over other lines.
    let plotting = chart.plotting_area();
    for (i, line) in p.lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        for pt in &line.points {
            // Absolute pixels, which are the root's own coordinates.
            let at = plotting.map_coordinate(&(pt.x, pt.y));
            draw_marker(root, at, i, color, s)?;
        }
    }
    draw_legend(&legend_area, &entries, s)
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &BarPlot,
    s: f64,
) -> DrawResult<DB> {
    let area = root.titled(&p.title, font(17.0 * s))?;
    let legend_style = font(12.5 * s);
    let mut entries = vec![
        (p.strong_label.clone(), Key::Swatch(PALETTE[0])),
        (p.weak_label.clone(), Key::Swatch(WEAK_BAR)),
    ];
    if p.bars.iter().any(|b| b.ci.is_some()) {
        entries.push(("95% CI".into(), Key::Whisker));
    }
    entries.push((p.reference_label.clone(), Key::Rule(REFERENCE)));
    let (w, _) = area.dim_in_pixel();
    let legend_w = (text_width(&area, entries.iter().map(|e| e.0.clone()), &legend_style) as i32
        + px(52.0, s))
    .clamp(px(120.0, s), (w as f32 * 0.30) as i32);
    let (plot_area, legend_area) = area.split_horizontally(w as i32 - legend_w);

    let n = p.bars.len();
    let mut xs = vec![p.reference];
    for b in &p.bars {
        xs.push(b.value);
        if let Some((lo, hi)) = b.ci {
            xs.extend([lo, hi]);
        }
    }
    let x_axis = axis(&xs, Scale::Linear, None);
    let y_axis = Axis {
        lo: -0.6,
        hi: n as f64 - 0.4,
        log: false,
        ticks: (0..n).map(|i| i as f64).collect(),
        minor: Vec::new(),
    };
    let label_style = font(12.5 * s);
    let (pw, _) = plot_area.dim_in_pixel();
    let max_label = (pw as f64 * 0.45) as u32;
    // Bar 0 at the top: the y axis counts upwards.
    let labels: Vec<String> = p
        .bars
        .iter()
        .rev()
        .map(|b| fit_text(&plot_area, &b.label, &label_style, max_label))
        .collect();
    let y_label_w = text_width(&plot_area, labels.iter().cloned(), &label_style);
    let mut chart = ChartBuilder::on(&plot_area)
        .margin_top(px(8.0, s))
        .margin_left(px(8.0, s))
        .margin_right(px(14.0, s))
        .margin_bottom(px(6.0, s))
        .x_label_area_size(px(48.0, s))
        .y_label_area_size(y_label_w as i32 + px(16.0, s))
        .build_cartesian_2d(x_axis.clone(), y_axis.clone())?;
    let xfmt = |v: &f64| fmt_tick(*v);
    let yfmt = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_desc(p.x_desc.as_str())
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .label_style(label_style.clone())
        .axis_desc_style(font(13.5 * s))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(TRANSPARENT)
        .disable_y_mesh()
        .axis_style(BLACK.mix(0.7))
        .set_all_tick_mark_size(px(4.0, s))
        .draw()?;

    let cap = px(5.0, s);
    let whisker = BLACK.stroke_width(px(1.5, s) as u32);
    for (i, b) in p.bars.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        let color = if b.strong { PALETTE[0] } else { WEAK_BAR };
        chart.draw_series(std::iter::once(Rectangle::new(
            [(p.reference, y - 0.3), (b.value, y + 0.3)],
            color.filled(),
        )))?;
        if let Some((lo, hi)) = b.ci {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(lo, y), (hi, y)],
                whisker,
            )))?;
            for v in [lo, hi] {
                chart.draw_series(std::iter::once(
                    EmptyElement::at((v, y)) + PathElement::new(vec![(0, -cap), (0, cap)], whisker),
                ))?;
            }
        }
    }
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(p.reference, y_axis.lo), (p.reference, y_axis.hi)],
        REFERENCE.stroke_width(px(1.8, s) as u32),
    )))?;
    draw_legend(&legend_area, &entries, s)
}

/// Grey of a [`GridPlot`]'s unavailable columns, and the shade of every
/// other column group.
const UNAVAILABLE: RGBColor = RGBColor(200, 200, 200);
const SHADE: RGBColor = RGBColor(240, 241, 244);

/// Width of `text` at `size` pixels in the embedded font, for a layout
/// made before any backend exists to measure it.
fn measure(text: &str, size: f64) -> f64 {
    use ab_glyph::{Font, ScaleFont};
    match ab_glyph::FontRef::try_from_slice(FONT) {
        Ok(font) => {
            let f = font.as_scaled(ab_glyph::PxScale::from(size as f32));
            text.chars()
                .map(|c| f64::from(f.h_advance(f.glyph_id(c))))
                .sum()
        }
        Err(_) => 0.6 * size * text.chars().count() as f64,
    }
}

/// Where a [`GridPlot`]'s parts go, in SVG pixels.
struct GridLayout {
    size: (u32, u32),
    /// The left edge of the row labels (the grid and its labels are
    /// centred when narrower than the chart).
    block_left: f64,
    /// The grid's left and top edges, a cell's width and height.
    left: f64,
    top: f64,
    cell_w: f64,
    row_h: f64,
    /// The bands' top edge and height of each.
    bands_top: f64,
    band_h: f64,
    row_label_w: f64,
    /// Column labels (rotated, above the grid) when the cells are wide
    /// enough to tell them apart, at this size.
    col_label_size: Option<f64>,
}

fn grid_layout(p: &GridPlot) -> GridLayout {
    let pad = 16.0;
    let row_label_w = p
        .rows
        .iter()
        .map(|r| measure(&r.label, 12.5))
        .fold(0.0, f64::max)
        .min(240.0);
    let labels_w = row_label_w + 12.0;
    let n = p.columns.len().max(1) as f64;
    let cell_w = ((f64::from(WIDTH) - 2.0 * pad - labels_w) / n).clamp(2.0, 48.0);
    let spare = f64::from(WIDTH) - 2.0 * pad - labels_w - n * cell_w;
    let block_left = pad + (spare / 2.0).max(0.0);
    let left = block_left + labels_w;
    let col_label_size = (cell_w >= 10.0).then(|| (cell_w * 0.8).min(11.5));
    let col_label_h = col_label_size.map_or(0.0, |size| {
        p.columns
            .iter()
            .map(|c| measure(&c.label, size))
            .fold(0.0, f64::max)
            + 10.0
    });
    let (bands_top, band_h, row_h) = (40.0, 20.0, 20.0);
    let top = bands_top + band_h * p.bands.len() as f64 + col_label_h;
    let height = top + row_h * p.rows.len() as f64 + 72.0;
    let width = (left + n * cell_w + pad).max(f64::from(WIDTH));
    GridLayout {
        size: (width.ceil() as u32, height.ceil() as u32),
        block_left,
        left,
        top,
        cell_w,
        row_h,
        bands_top,
        band_h,
        row_label_w,
        col_label_size,
    }
}

/// A [`GridPlot`]: shaded column groups, band labels and rules, rotated
/// column labels, row labels, the cells, and a legend under the grid.
fn draw_grid<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &GridPlot,
    s: f64,
) -> DrawResult<DB> {
    let l = grid_layout(p);
    let (n, rows) = (p.columns.len(), p.rows.len());
    let x = |c: usize| px(l.left + c as f64 * l.cell_w, s);
    let y = |r: usize| px(l.top + r as f64 * l.row_h, s);
    let centred = Pos::new(HPos::Center, VPos::Center);
    root.draw(&Text::new(
        p.title.clone(),
        (px(16.0, s), px(12.0, s)),
        font(17.0 * s),
    ))?;

    // Column groups: every other one shaded, unavailable columns grey,
    // a thin rule where a group starts.
    let starts = |c: usize| {
        c > 0 && (p.columns[c].group.is_none() || p.columns[c].group != p.columns[c - 1].group)
    };
    let mut shaded = false;
    for (c, col) in p.columns.iter().enumerate() {
        if starts(c) {
            shaded = !shaded;
        }
        let fill = if col.unavailable {
            UNAVAILABLE
        } else if shaded {
            SHADE
        } else {
            continue;
        };
        root.draw(&Rectangle::new(
            [(x(c), y(0)), (x(c + 1), y(rows))],
            fill.filled(),
        ))?;
    }
    // (Narrow columns: the shading alone, rules would grey the grid.)
    for c in (1..n).filter(|&c| starts(c) && l.cell_w >= 6.0) {
        root.draw(&PathElement::new(
            vec![(x(c), y(0)), (x(c), y(rows))],
            BLACK.mix(0.15).stroke_width(1),
        ))?;
    }
    for r in 1..rows {
        root.draw(&PathElement::new(
            vec![(x(0), y(r)), (x(n), y(r))],
            BLACK.mix(0.07).stroke_width(1),
        ))?;
    }

    // The cells.
    let inset = if l.cell_w >= 6.0 { 1.5 } else { 0.0 };
    let count_style = font((l.cell_w * 0.7).min(11.5) * s).pos(centred);
    for (r, row) in p.rows.iter().enumerate() {
        let (y0, y1) = (l.top + r as f64 * l.row_h, l.top + (r + 1) as f64 * l.row_h);
        for (c, &k) in row.counts.iter().enumerate().filter(|(_, k)| **k > 0) {
            let (x0, x1) = (
                l.left + c as f64 * l.cell_w,
                l.left + (c + 1) as f64 * l.cell_w,
            );
            let color = if k == 1 { PALETTE[0] } else { PALETTE[1] };
            root.draw(&Rectangle::new(
                [
                    (px(x0 + inset, s), px(y0 + 2.5, s)),
                    (px(x1 - inset, s), px(y1 - 2.5, s)),
                ],
                color.filled(),
            ))?;
            if k > 1 && l.cell_w >= 9.0 {
                root.draw(&Text::new(
                    k.to_string(),
                    (px((x0 + x1) / 2.0, s), px((y0 + y1) / 2.0, s)),
                    count_style.clone(),
                ))?;
            }
        }
    }
    root.draw(&Rectangle::new(
        [(x(0), y(0)), (x(n), y(rows))],
        BLACK.mix(0.45).stroke_width(1),
    ))?;

    // Bands: a label over each span, a bracket under it, and rules at the
    // spans' boundaries down through the grid (heavier for outer bands).
    for (level, band) in p.bands.iter().enumerate() {
        let top = l.bands_top + level as f64 * l.band_h;
        let rule = if level == 0 {
            BLACK.mix(0.75).stroke_width(px(2.0, s).max(1) as u32)
        } else {
            BLACK.mix(0.45).stroke_width(1)
        };
        let style = font(12.0 * s).pos(centred);
        for span in band.iter().filter(|sp| sp.len > 0) {
            let (a, b) = (span.first, (span.first + span.len).min(n));
            if a > 0 {
                root.draw(&PathElement::new(
                    vec![(x(a), px(top, s)), (x(a), y(rows))],
                    rule,
                ))?;
            }
            if span.label.is_empty() {
                continue;
            }
            let w = (b - a) as f64 * l.cell_w;
            let bracket = px(top + l.band_h - 3.0, s);
            root.draw(&PathElement::new(
                vec![
                    (px(l.left + a as f64 * l.cell_w + 2.0, s), bracket),
                    (px(l.left + b as f64 * l.cell_w - 2.0, s), bracket),
                ],
                BLACK.mix(0.35).stroke_width(1),
            ))?;
            let text = fit_text(root, &span.label, &style, px(w - 4.0, s).max(1) as u32);
            root.draw(&Text::new(
                text,
                (
                    px(l.left + (a + b) as f64 * l.cell_w / 2.0, s),
                    px(top + l.band_h / 2.0 - 1.0, s),
                ),
                style.clone(),
            ))?;
        }
    }

    // Column labels read upwards, ending just above the grid; row labels
    // end just left of it.
    if let Some(size) = l.col_label_size {
        let style = font(size * s)
            .pos(Pos::new(HPos::Left, VPos::Center))
            .transform(FontTransform::Rotate270);
        for (c, col) in p.columns.iter().enumerate() {
            root.draw(&Text::new(
                col.label.clone(),
                (
                    px(l.left + (c as f64 + 0.5) * l.cell_w, s),
                    px(l.top - 5.0, s),
                ),
                style.clone(),
            ))?;
        }
    }
    let row_style = font(12.5 * s).pos(Pos::new(HPos::Right, VPos::Center));
    for (r, row) in p.rows.iter().enumerate() {
        // (+4: a backend's text measure may round up from the layout's.)
        let text = fit_text(
            root,
            &row.label,
            &row_style,
            px(l.row_label_w + 4.0, s) as u32,
        );
        root.draw(&Text::new(
            text,
            (
                px(l.left - 6.0, s),
                px(l.top + (r as f64 + 0.5) * l.row_h, s),
            ),
            row_style.clone(),
        ))?;
    }

    // The axis description under the grid, then the legend.
    let below = l.top + rows as f64 * l.row_h;
    let desc_w = measure(&p.x_desc, 13.5);
    let mid = (l.left + n as f64 * l.cell_w / 2.0).max(16.0 + desc_w / 2.0);
    root.draw(&Text::new(
        p.x_desc.clone(),
        (px(mid, s), px(below + 16.0, s)),
        font(13.5 * s).pos(centred),
    ))?;
    let any = |f: fn(u32) -> bool| p.rows.iter().any(|r| r.counts.iter().any(|k| f(*k)));
    let mut entries = Vec::new();
    if any(|k| k == 1) {
        entries.push((PALETTE[0], p.one_label.as_str()));
    }
    if any(|k| k > 1) {
        entries.push((PALETTE[1], p.many_label.as_str()));
    }
    if p.columns.iter().any(|c| c.unavailable) {
        entries.push((UNAVAILABLE, p.unavailable_label.as_str()));
    }
    let legend_style = font(12.5 * s).pos(Pos::new(HPos::Left, VPos::Center));
    let (ly, mut lx) = (below + 44.0, l.block_left);
    for (color, label) in entries {
        root.draw(&Rectangle::new(
            [
                (px(lx, s), px(ly - 7.0, s)),
                (px(lx + 14.0, s), px(ly + 7.0, s)),
            ],
            color.filled(),
        ))?;
        root.draw(&Text::new(
            label.to_string(),
            (px(lx + 20.0, s), px(ly, s)),
            legend_style.clone(),
        ))?;
        lx += 20.0 + measure(label, 12.5) + 28.0;
    }
    Ok(())
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
