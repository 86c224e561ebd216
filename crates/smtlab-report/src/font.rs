//! The embedded font and text: DejaVu Sans, embedded in the binary and
//! registered with plotters' `ab_glyph` font backend (no fontconfig or
//! freetype, so a report draws the same on any machine, including minimal
//! containers); the text style of a size, and text measured and cut to fit.

use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::error::DrawError;

/// DejaVu Sans (Bitstream Vera licence: `assets/DejaVuSans-LICENSE.txt`).
pub(crate) const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
/// The family name plotters asks for by default.
const FAMILY: &str = "sans-serif";

/// Register the embedded font once per process.
pub(crate) fn ensure_font() -> Result<(), DrawError> {
    static LOADED: OnceLock<bool> = OnceLock::new();
    let ok = *LOADED.get_or_init(|| register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(DrawError::Font)
    }
}

/// The embedded font at `size` pixels, in black.
pub(crate) fn font(size: f64) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&BLACK)
}

/// Width of the widest of `texts` at `style`.
pub(crate) fn text_width<DB: DrawingBackend>(
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
pub(crate) fn fit_text<DB: DrawingBackend>(
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

/// Width of `text` at `size` pixels in the embedded font, for a layout
/// made before any backend exists to measure it.
pub(crate) fn measure(text: &str, size: f64) -> f64 {
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
