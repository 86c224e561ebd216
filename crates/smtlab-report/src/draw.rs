//! Rendering: a chart description ([`Plot`], in `plot`) drawn with
//! plotters to an SVG string (inlined in the HTML, and saved) or a PNG
//! file, each chart kind by its own module (`line_chart`, `bar_chart`,
//! `grid_chart`).
//!
//! Why a description layer: the same chart is drawn twice, on two backends,
//! at two scales; and the data is cleaned once ([`Plot::cleaned`]). Text is
//! measured with the embedded font (`font`), so a report draws the same on
//! any machine.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::bar_chart::draw_bars;
use crate::error::DrawError;
use crate::font::{ensure_font, FONT};
use crate::grid_chart::{draw_grid, grid_layout};
use crate::line_chart::draw_lines;
use crate::plot::Plot;
use crate::style::{backend_error, HEIGHT, PNG_SCALE, WIDTH};
use crate::text::CrispText;

/// Size in SVG pixels: bar charts grow with their bars so labels never
/// overlap; a grid is as large as its layout.
fn size(plot: &Plot) -> (u32, u32) {
    match plot {
        Plot::Lines(_) => (WIDTH, HEIGHT),
        Plot::Bars(p) => {
            let h = 150 + 30 * p.bars.len() as u32;
            (WIDTH, h.clamp(260, 2400))
        }
        Plot::Grid(p) => grid_layout(p).size,
    }
}

/// The chart as an SVG document.
pub(crate) fn render_svg(plot: &Plot) -> Result<String, DrawError> {
    ensure_font()?;
    svg_of(size(plot), |root, s| draw(root, plot, s))
}

/// The chart as a PNG file at `path`.
pub(crate) fn render_png(plot: &Plot, path: &Path) -> Result<(), DrawError> {
    ensure_font()?;
    png_of(size(plot), path, |root, s| draw(root, plot, s))
}

/// What `paint` draws (at scale 1) on an SVG of `size` SVG pixels, as SVG
/// text. The font must be registered first ([`ensure_font`]).
pub(crate) fn svg_of(
    size: (u32, u32),
    paint: impl FnOnce(&DrawingArea<SVGBackend, Shift>, f64) -> Result<(), DrawError>,
) -> Result<String, DrawError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        paint(&root, 1.0)?;
        root.present().map_err(backend_error)?;
    }
    Ok(buf)
}

/// What `paint` draws (at [`PNG_SCALE`]) on a chart of `size` SVG pixels,
/// as a PNG file at `path`, its text drawn by `text`'s `CrispText`. The
/// font must be registered first ([`ensure_font`]).
pub(crate) fn png_of(
    size: (u32, u32),
    path: &Path,
    paint: impl FnOnce(&DrawingArea<CrispText<BitMapBackend>, Shift>, f64) -> Result<(), DrawError>,
) -> Result<(), DrawError> {
    let (w, h) = size;
    let size = (
        (f64::from(w) * PNG_SCALE).round() as u32,
        (f64::from(h) * PNG_SCALE).round() as u32,
    );
    let backend = CrispText::new(BitMapBackend::new(path, size), FONT)?;
    let root = backend.into_drawing_area();
    paint(&root, PNG_SCALE)?;
    root.present().map_err(backend_error)?;
    Ok(())
}

/// `plot` on a white `root`, at `s` backend pixels per SVG pixel.
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
