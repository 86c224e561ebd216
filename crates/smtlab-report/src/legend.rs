//! Legends and markers: a legend's entries down a strip beside the plot
//! (each key a line with its marker, a dashed or plain line, a swatch, a
//! whisker), where that strip goes, and the markers the lines share with
//! their legend.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::font::{fit_text, font, text_width};
use crate::style::{px, DrawResult};

/// What a legend entry shows.
pub(crate) enum Key {
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

/// `area` split into the plot (left) and the legend's strip (right): as
/// wide as the legend's widest label needs, within 120 SVG pixels and
/// `max_share` of the width.
pub(crate) fn beside_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, Key)],
    max_share: f32,
    s: f64,
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let legend_style = font(12.5 * s);
    let (w, _) = area.dim_in_pixel();
    let legend_w = (text_width(area, entries.iter().map(|e| e.0.clone()), &legend_style) as i32
        + px(52.0, s))
    .clamp(px(120.0, s), (w as f32 * max_share) as i32);
    area.split_horizontally(w as i32 - legend_w)
}

/// Draw a legend down `area` (the strip right of the plot).
pub(crate) fn draw_legend<DB: DrawingBackend>(
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
pub(crate) fn draw_marker<DB: DrawingBackend>(
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
