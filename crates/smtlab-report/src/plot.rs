//! What a chart shows, before any drawing: [`Plot`] (lines, bars or a grid
//! of counts) and its parts, as the chart modules describe them, and the
//! values it cannot draw removed ([`Plot::cleaned`]), so that plotters
//! never sees a non-finite value or one a log axis cannot show.

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
}

/// `v` can be drawn on an axis of `scale` (finite, and positive on a log
/// axis).
pub(crate) fn drawable(v: f64, scale: Scale) -> bool {
    v.is_finite() && (scale != Scale::Log || v > 0.0)
}
