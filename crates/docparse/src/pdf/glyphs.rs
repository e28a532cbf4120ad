//! The output device: pdf-extract's plain-text layout, with each
//! character's glyph box on the page as displayed.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

use super::page::PageFrame;
use crate::geometry::{Axis, Glyph, Rect};

/// pdf-extract's plain-text layout, recording each written character's glyph.
pub(super) struct GlyphOutput {
    pub(super) text: String,
    pub(super) glyphs: Vec<Option<Glyph>>,
    frame: Option<PageFrame>,
    fonts: Vec<(f64, f64)>,
    words: usize,
    last_end: f64,
    last_y: f64,
    first_char: bool,
    flip_height: f64,
}

impl GlyphOutput {
    pub(super) fn new(frame: Option<PageFrame>, fonts: Vec<(f64, f64)>) -> Self {
        GlyphOutput {
            text: String::new(),
            glyphs: Vec::new(),
            frame,
            fonts,
            words: 0,
            last_end: 100000.,
            last_y: 0.,
            first_char: false,
            flip_height: 0.,
        }
    }

    pub(super) fn clear(&mut self) {
        self.text.clear();
        self.glyphs.clear();
    }

    fn push(&mut self, s: &str, glyph: Option<Glyph>) {
        let n = s.chars().count();
        self.text.push_str(s);
        match glyph {
            // A glyph that decodes to several characters (a ligature)
            // shares its box among them.
            Some(g) if n > 1 => self.glyphs.extend(g.rect.split(n, g.axis).into_iter().map(|rect| Some(Glyph { rect, ..g }))),
            _ => self.glyphs.extend(std::iter::repeat_n(glyph, n)),
        }
    }

    fn glyph(&self, trm: &Transform, width: f64, font_size: f64) -> Option<Glyph> {
        let frame = self.frame?;
        // The font of this string; when the walk and pdf-extract disagree
        // on the count, the defaults (the box stays close, not exact).
        let (ascent, descent) = self.fonts.get(self.words.wrapping_sub(1)).copied().unwrap_or((0.95, -0.35));
        let at = |tx: f64, ty: f64| {
            let (x, y) = (tx * trm.m11 + ty * trm.m21 + trm.m31, tx * trm.m12 + ty * trm.m22 + trm.m32);
            frame.display(x, y)
        };
        let adv = width * font_size;
        let corners = [at(0., descent * font_size), at(adv, descent * font_size), at(0., ascent * font_size), at(adv, ascent * font_size)];
        let (x0, x1) = corners.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
        let (y0, y1) = corners.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
        if !(x0.is_finite() && x1.is_finite() && y0.is_finite() && y1.is_finite()) {
            return None;
        }
        // Direction of the advance as displayed.
        let (o, e) = (at(0., 0.), at(adv.max(1e-6), 0.));
        let (dx, dy) = (e.0 - o.0, e.1 - o.1);
        let (axis, forward) = if dx.abs() >= dy.abs() { (Axis::X, dx >= 0.) } else { (Axis::Y, dy >= 0.) };
        Some(Glyph { rect: Rect { x0: x0 as f32, y0: y0 as f32, x1: x1 as f32, y1: y1 as f32 }, axis, forward })
    }
}

impl OutputDev for GlyphOutput {
    fn begin_page(&mut self, _page_num: u32, media_box: &MediaBox, _: Option<(f64, f64, f64, f64)>) -> Result<(), OutputError> {
        self.flip_height = media_box.ury - media_box.lly;
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn output_character(&mut self, trm: &Transform, width: f64, _spacing: f64, font_size: f64, char: &str) -> Result<(), OutputError> {
        // Exactly PlainTextOutput's decisions, so the text is unchanged.
        let (x, y) = (trm.m31, self.flip_height - trm.m32);
        let (vx, vy) = (font_size * trm.m11 + font_size * trm.m21, font_size * trm.m12 + font_size * trm.m22);
        let transformed_font_size = (vx * vy).sqrt();
        if self.first_char {
            if (y - self.last_y).abs() > transformed_font_size * 1.5 {
                self.push("\n", None);
            }
            if x < self.last_end && (y - self.last_y).abs() > transformed_font_size * 0.5 {
                self.push("\n", None);
            }
            if x > self.last_end + transformed_font_size * 0.1 {
                self.push(" ", None);
            }
        }
        let glyph = if char.trim().is_empty() { None } else { self.glyph(trm, width, font_size) };
        self.push(char, glyph);
        self.first_char = false;
        self.last_y = y;
        self.last_end = x + width * transformed_font_size;
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.first_char = true;
        self.words += 1;
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}
