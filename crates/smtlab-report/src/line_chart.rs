//! A line chart drawn: a [`LinePlot`]'s lines with their markers and CI
//! whiskers, the ideal y = x when asked, and its legend.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::axis::{axis, fmt_tick, Axis};
use crate::font::{font, text_width};
use crate::legend::{beside_legend, draw_legend, draw_marker, Key};
use crate::plot::LinePlot;
use crate::style::{cartesian, px, Chart, DrawResult, GREY, PALETTE};

/// A [`LinePlot`]: title, axes and grid, the ideal, the lines with their
/// whiskers, the markers over them all, and the legend on the right.
pub(crate) fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &LinePlot,
    s: f64,
) -> DrawResult<DB> {
    let area = root.titled(&p.title, font(17.0 * s))?;
    let entries = legend_entries(p);
    let (plot_area, legend_area) = beside_legend(&area, &entries, 0.36, s);
    let (x_axis, y_axis) = axes(p);

    let label_style = font(12.5 * s);
    let y_label_w = text_width(
        &plot_area,
        y_axis.ticks.iter().map(|v| fmt_tick(*v)),
        &label_style,
    );
    let mut chart = cartesian(
        &plot_area,
        &x_axis,
        &y_axis,
        y_label_w as i32 + px(36.0, s),
        s,
    )?;
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
        draw_ideal(&mut chart, &x_axis, &y_axis, s)?;
    }
    draw_series(&mut chart, p, s)?;
    draw_markers(root, &chart, p, s)?;
    draw_legend(&legend_area, &entries, s)
}

/// The legend: a line with its marker per line, then the ideal and the
/// whisker when the chart has them.
fn legend_entries(p: &LinePlot) -> Vec<(String, Key)> {
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
    entries
}

/// The x and y axes: over every point, the y axis over the whiskers too,
/// and over y = x along the measured x when the ideal is drawn.
fn axes(p: &LinePlot) -> (Axis, Axis) {
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
    (x_axis, y_axis)
}

/// The ideal y = x, dashed, where both axes cover it.
fn draw_ideal<DB: DrawingBackend>(
    chart: &mut Chart<DB>,
    x_axis: &Axis,
    y_axis: &Axis,
    s: f64,
) -> DrawResult<DB> {
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
    Ok(())
}

/// Each line in its colour, after its points' CI whiskers (with caps).
fn draw_series<DB: DrawingBackend>(chart: &mut Chart<DB>, p: &LinePlot, s: f64) -> DrawResult<DB> {
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
    Ok(())
}

/// Every point's marker, drawn last so every point stays visible over
/// other lines.
fn draw_markers<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart<DB>,
    p: &LinePlot,
    s: f64,
) -> DrawResult<DB> {
    let plotting = chart.plotting_area();
    for (i, line) in p.lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        for pt in &line.points {
            // Absolute pixels, which are the root's own coordinates.
            let at = plotting.map_coordinate(&(pt.x, pt.y));
            draw_marker(root, at, i, color, s)?;
        }
    }
    Ok(())
}
