//! The charts' common look: their size, the PNG scale, the colours, sizes
//! in SVG pixels scaled to a backend's pixels, the frame of a chart with
//! axes, and what drawing on a backend gives (its errors kept as text in
//! [`DrawError`]).

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::axis::Axis;
use crate::error::DrawError;

/// Size of a line chart in SVG pixels (CSS scales it to the page).
pub(crate) const WIDTH: u32 = 820;
pub(crate) const HEIGHT: u32 = 470;
/// PNG pixels per SVG pixel: sharp on high-density screens and in slides.
pub(crate) const PNG_SCALE: f64 = 1.5;

/// Tableau 10: distinguishable, and readable by most colour-blind readers
/// together with the marker shapes.
pub(crate) const PALETTE: [RGBColor; 10] = [
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
pub(crate) const GREY: RGBColor = RGBColor(110, 110, 110);
pub(crate) const REFERENCE: RGBColor = RGBColor(180, 30, 30);
pub(crate) const WEAK_BAR: RGBColor = RGBColor(174, 199, 232);
/// Grey of a [`GridPlot`](crate::plot::GridPlot)'s unavailable columns,
/// and the shade of every other column group.
pub(crate) const UNAVAILABLE: RGBColor = RGBColor(200, 200, 200);
pub(crate) const SHADE: RGBColor = RGBColor(240, 241, 244);

/// Pixel size from a size in SVG pixels.
pub(crate) fn px(v: f64, s: f64) -> i32 {
    (v * s).round() as i32
}

/// What drawing on a backend gives: plotters' error, generic over the
/// backend.
pub(crate) type DrawResult<DB> =
    Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A backend's error (or any plotters error) as a [`DrawError`].
pub(crate) fn backend_error(e: impl std::fmt::Display) -> DrawError {
    DrawError::Backend(e.to_string())
}

/// A chart with axes, over our own [`Axis`] both ways.
pub(crate) type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<Axis, Axis>>;

/// The frame every chart with axes has, on `area`: the margins, room for
/// the x labels and `y_label_w` pixels for the y labels, over `x` and `y`.
pub(crate) fn cartesian<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    x: &Axis,
    y: &Axis,
    y_label_w: i32,
    s: f64,
) -> Result<Chart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    ChartBuilder::on(area)
        .margin_top(px(8.0, s))
        .margin_left(px(8.0, s))
        .margin_right(px(14.0, s))
        .margin_bottom(px(6.0, s))
        .x_label_area_size(px(48.0, s))
        .y_label_area_size(y_label_w)
        .build_cartesian_2d(x.clone(), y.clone())
}
