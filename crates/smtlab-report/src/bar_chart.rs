//! A bar chart drawn: a [`BarPlot`]'s horizontal bars from its reference
//! value, their CI whiskers, the reference line, and its legend.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::axis::{axis, fmt_tick, Axis};
use crate::font::{fit_text, font, text_width};
use crate::legend::{beside_legend, draw_legend, Key};
use crate::plot::{BarPlot, Scale};
use crate::style::{cartesian, px, DrawResult, PALETTE, REFERENCE, WEAK_BAR};

/// A [`BarPlot`]: title, the bars top down (labelled, cut to fit), their
/// whiskers, the reference line, and the legend on the right.
pub(crate) fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &BarPlot,
    s: f64,
) -> DrawResult<DB> {
    let area = root.titled(&p.title, font(17.0 * s))?;
    let mut entries = vec![
        (p.strong_label.clone(), Key::Swatch(PALETTE[0])),
        (p.weak_label.clone(), Key::Swatch(WEAK_BAR)),
    ];
    if p.bars.iter().any(|b| b.ci.is_some()) {
        entries.push(("95% CI".into(), Key::Whisker));
    }
    entries.push((p.reference_label.clone(), Key::Rule(REFERENCE)));
    let (plot_area, legend_area) = beside_legend(&area, &entries, 0.30, s);

    let n = p.bars.len();
    let mut xs = vec![p.reference];
    for b in &p.bars {
        xs.push(b.value);
        if let Some((lo, hi)) = b.ci {
            xs.extend([lo, hi]);
        }
    }
    let x_axis = axis(&xs, Scale::Linear, None);
    let y_axis = Axis::rows(n);
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
    let mut chart = cartesian(
        &plot_area,
        &x_axis,
        &y_axis,
        y_label_w as i32 + px(16.0, s),
        s,
    )?;
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
