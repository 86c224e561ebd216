//! A grid chart drawn: a [`GridPlot`]'s layout (computed before any
//! backend exists, so it also gives the chart's size), then its shaded
//! column groups, cells, bands, labels and legend.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontTransform;

use crate::font::{fit_text, font, measure};
use crate::plot::GridPlot;
use crate::style::{px, DrawResult, PALETTE, SHADE, UNAVAILABLE, WIDTH};

/// Where a [`GridPlot`]'s parts go, in SVG pixels.
pub(crate) struct GridLayout {
    pub(crate) size: (u32, u32),
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

/// Where `p`'s parts go: cells as wide as the chart allows (2 to 48
/// pixels), row labels as wide as the widest (at most 240), column labels
/// only when cells are wide enough to tell them apart.
pub(crate) fn grid_layout(p: &GridPlot) -> GridLayout {
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
pub(crate) fn draw_grid<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &GridPlot,
    s: f64,
) -> DrawResult<DB> {
    let painter = Painter {
        root,
        p,
        l: grid_layout(p),
        s,
    };
    root.draw(&Text::new(
        p.title.clone(),
        (px(16.0, s), px(12.0, s)),
        font(17.0 * s),
    ))?;
    painter.column_groups()?;
    painter.cells()?;
    painter.bands()?;
    painter.labels()?;
    painter.below()
}

/// A grid being drawn: where (`root`, at `s` backend pixels per SVG
/// pixel), what, and its layout; each method draws one layer, in the
/// order [`draw_grid`] calls them.
struct Painter<'a, DB: DrawingBackend> {
    root: &'a DrawingArea<DB, Shift>,
    p: &'a GridPlot,
    l: GridLayout,
    s: f64,
}

impl<DB: DrawingBackend> Painter<'_, DB> {
    /// Backend pixels of the left edge of column `c`.
    fn x(&self, c: usize) -> i32 {
        px(self.l.left + c as f64 * self.l.cell_w, self.s)
    }

    /// Backend pixels of the top edge of row `r`.
    fn y(&self, r: usize) -> i32 {
        px(self.l.top + r as f64 * self.l.row_h, self.s)
    }

    /// Column groups: every other one shaded, unavailable columns grey, a thin
    /// rule where a group starts; and light rules between the rows.
    fn column_groups(&self) -> DrawResult<DB> {
        let (root, p, l) = (self.root, self.p, &self.l);
        let (n, rows) = (p.columns.len(), p.rows.len());
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
                [(self.x(c), self.y(0)), (self.x(c + 1), self.y(rows))],
                fill.filled(),
            ))?;
        }
        // (Narrow columns: the shading alone, rules would grey the grid.)
        for c in (1..n).filter(|&c| starts(c) && l.cell_w >= 6.0) {
            root.draw(&PathElement::new(
                vec![(self.x(c), self.y(0)), (self.x(c), self.y(rows))],
                BLACK.mix(0.15).stroke_width(1),
            ))?;
        }
        for r in 1..rows {
            root.draw(&PathElement::new(
                vec![(self.x(0), self.y(r)), (self.x(n), self.y(r))],
                BLACK.mix(0.07).stroke_width(1),
            ))?;
        }
        Ok(())
    }

    /// The cells (a count of 1 in one colour, more in another with the count
    /// written when it fits), then the grid's frame.
    fn cells(&self) -> DrawResult<DB> {
        let (root, p, l, s) = (self.root, self.p, &self.l, self.s);
        let (n, rows) = (p.columns.len(), p.rows.len());
        let centred = Pos::new(HPos::Center, VPos::Center);
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
            [(self.x(0), self.y(0)), (self.x(n), self.y(rows))],
            BLACK.mix(0.45).stroke_width(1),
        ))?;
        Ok(())
    }

    /// Bands: a label over each span, a bracket under it, and rules at the
    /// spans' boundaries down through the grid (heavier for outer bands).
    fn bands(&self) -> DrawResult<DB> {
        let (root, p, l, s) = (self.root, self.p, &self.l, self.s);
        let (n, rows) = (p.columns.len(), p.rows.len());
        let centred = Pos::new(HPos::Center, VPos::Center);
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
                        vec![(self.x(a), px(top, s)), (self.x(a), self.y(rows))],
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
        Ok(())
    }

    /// Column labels read upwards, ending just above the grid (when the
    /// layout has room for them); row labels end just left of it.
    fn labels(&self) -> DrawResult<DB> {
        let (root, p, l, s) = (self.root, self.p, &self.l, self.s);
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
        Ok(())
    }

    /// The axis description under the grid, then the legend: the kinds of
    /// cell the grid has, and unavailable columns if any.
    fn below(&self) -> DrawResult<DB> {
        let (root, p, l, s) = (self.root, self.p, &self.l, self.s);
        let (n, rows) = (p.columns.len(), p.rows.len());
        let centred = Pos::new(HPos::Center, VPos::Center);
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
}
