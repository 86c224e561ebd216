//! Text for bitmap charts, drawn with correct glyph spacing.
//!
//! Why: plotters' `ab_glyph` font backend places each glyph at the pen
//! position without the glyph's left side bearing, so PNG labels read
//! "comp act", "thre ads". [`CrispText`] wraps a backend and draws text
//! itself with `ab_glyph` (outline at the real pen position, anti-aliased
//! coverage as alpha), forwarding everything else unchanged so the wrapped
//! backend's fast paths for lines and fills still apply. SVG charts do not
//! need it: the browser lays out their text.

use ab_glyph::{point, Font, FontRef, GlyphId, InvalidFont, PxScale, ScaleFont};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};

pub(crate) struct CrispText<B> {
    inner: B,
    font: FontRef<'static>,
}

impl<B> CrispText<B> {
    pub(crate) fn new(inner: B, font: &'static [u8]) -> Result<Self, InvalidFont> {
        let font = FontRef::try_from_slice(font)?;
        Ok(CrispText { inner, font })
    }

    /// Glyphs with their pen x positions, and the advance width of `text`.
    fn layout(&self, text: &str, scale: PxScale) -> (Vec<(GlyphId, f32)>, f32) {
        let f = self.font.as_scaled(scale);
        let mut x = 0.0f32;
        let mut prev: Option<GlyphId> = None;
        let mut out = Vec::with_capacity(text.len());
        for c in text.chars() {
            let id = f.glyph_id(c);
            if let Some(p) = prev {
                x += f.kern(p, id);
            }
            out.push((id, x));
            x += f.h_advance(id);
            prev = Some(id);
        }
        (out, x)
    }
}

impl<B: DrawingBackend> DrawingBackend for CrispText<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let scale = PxScale::from(style.size() as f32);
        let (_, width) = self.layout(text, scale);
        let height = self.font.as_scaled(scale).height();
        Ok((width.ceil() as u32, height.ceil() as u32))
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 || !style.size().is_finite() || style.size() <= 0.0 {
            return Ok(());
        }
        let scale = PxScale::from(style.size() as f32);
        let scaled = self.font.as_scaled(scale);
        let (ascent, height) = (scaled.ascent(), scaled.height());
        let (glyphs, width) = self.layout(text, scale);
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0.0,
            HPos::Center => -width / 2.0,
            HPos::Right => -width,
        };
        let dy = match anchor.v_pos {
            VPos::Top => 0.0,
            VPos::Center => -height / 2.0,
            VPos::Bottom => -height,
        };
        let trans = style.transform();
        let mut pixels: Vec<(i32, i32, f32)> = Vec::new();
        for (id, x) in glyphs {
            let glyph = id.with_scale_and_position(scale, point(x + dx, ascent + dy));
            if let Some(outline) = self.font.outline_glyph(glyph) {
                let b = outline.px_bounds();
                let (x0, y0) = (b.min.x as i32, b.min.y as i32);
                outline.draw(|gx, gy, coverage| {
                    if coverage > 0.0 {
                        pixels.push((x0 + gx as i32, y0 + gy as i32, coverage.min(1.0)));
                    }
                });
            }
        }
        for (x, y, coverage) in pixels {
            let (x, y) = trans.transform(x, y);
            self.inner.draw_pixel(
                (pos.0 + x, pos.1 + y),
                BackendColor {
                    alpha: color.alpha * coverage as f64,
                    rgb: color.rgb,
                },
            )?;
        }
        Ok(())
    }
}
