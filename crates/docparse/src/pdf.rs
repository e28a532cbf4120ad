//! PDF with a text layer, page by page (pure Rust: pdf-extract over lopdf),
//! with the box of every glyph on the page as displayed.
//!
//! The text is laid out exactly as pdf-extract's `PlainTextOutput` does
//! (spaces and line breaks from glyph positions); [`GlyphOutput`] repeats
//! that logic so it can record, for each character it writes, the glyph's
//! box. A glyph's box runs along its advance and, across it, from the
//! font's descent to its ascent (the font descriptor's, as poppler does),
//! so boxes match what PDF viewers select.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pdf_extract::{Dictionary, Document, MediaBox, Object, ObjectId, OutputDev, OutputError, Transform};

use crate::geometry::{Axis, Glyph, PageSize, Rect};
use crate::{Block, Limits, OutputBudget, ParseError};

pub fn blocks(bytes: &[u8], limits: &Limits, budget: &mut OutputBudget) -> Result<(Vec<Block>, u32, Vec<PageSize>), ParseError> {
    if !bytes.starts_with(b"%PDF") && !bytes[..bytes.len().min(1024)].windows(4).any(|w| w == b"%PDF") {
        return Err(ParseError::CorruptPdf("no %PDF header".into()));
    }
    // lopdf inflates object streams while loading, and pdf-extract content
    // streams while reading, each without a bound: measure first.
    check_inflated_size(bytes, limits)?;
    // pdf-extract can panic on malformed input: contain it.
    let loaded = catch_unwind(AssertUnwindSafe(|| Document::load_mem(bytes)))
        .map_err(|_| ParseError::CorruptPdf("the PDF structure could not be read".into()))?;
    let mut doc = loaded.map_err(|e| ParseError::CorruptPdf(e.to_string()))?;
    if doc.is_encrypted() {
        // An empty user password is common ("owner-only" protection).
        if doc.decrypt("").is_err() {
            return Err(ParseError::EncryptedPdf);
        }
    }
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(ParseError::CorruptPdf("the PDF has no pages".into()));
    }
    if pages.len() as u64 > u64::from(limits.max_pages) {
        return Err(ParseError::TooManyPages { pages: pages.len() as u64, limit: limits.max_pages });
    }
    let page_count = pages.len() as u32;
    let mut blocks = Vec::new();
    let mut sizes = Vec::new();
    for (i, (page_num, page_id)) in pages.iter().enumerate() {
        let frame = catch_unwind(AssertUnwindSafe(|| PageFrame::of(&doc, *page_id))).ok().flatten();
        if let Some(f) = &frame {
            sizes.push(PageSize { page_idx: i as u32, width: f.width() as f32, height: f.height() as f32, unit: "pt".into() });
        }
        let fonts = catch_unwind(AssertUnwindSafe(|| shown_fonts(&doc, *page_id))).unwrap_or_default();
        let mut out = GlyphOutput::new(frame, fonts);
        let result = catch_unwind(AssertUnwindSafe(|| pdf_extract::output_doc_page(&doc, &mut out, *page_num)));
        match result {
            Ok(Ok(())) => {}
            // One unreadable page does not sink the document: it is
            // reported among the pages without text.
            Ok(Err(_)) | Err(_) => out.clear(),
        }
        if !out.text.trim().is_empty() {
            budget.take(out.text.chars().count())?;
            blocks.push(Block { page_idx: i as u32, text: out.text, glyphs: out.glyphs, cells: None });
        }
    }
    Ok((blocks, page_count, sizes))
}

/// Inflates every Flate stream of the file into a counter, not into
/// memory: a stream over `max_unzipped_bytes` or all of them over
/// `max_pdf_inflated_bytes` is a decompression bomb. Streams are found by
/// their `stream` keyword, as a reader recovering a damaged file does;
/// data that is not zlib stops the decoder at once. Like lopdf, a stream
/// whose zlib header is damaged is read again as raw deflate.
fn check_inflated_size(bytes: &[u8], limits: &Limits) -> Result<(), ParseError> {
    use flate2::read::{DeflateDecoder, ZlibDecoder};
    use std::io::Read;
    fn count(mut r: impl Read, cap: u64) -> u64 {
        let mut buf = [0u8; 64 * 1024];
        let mut total = 0u64;
        while total <= cap {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n as u64,
            }
        }
        total
    }
    let mut total: u64 = 0;
    let mut at = 0;
    while let Some(found) = memchr_stream(&bytes[at..]) {
        let keyword = at + found;
        at = keyword + b"stream".len();
        if keyword >= 3 && &bytes[keyword - 3..keyword] == b"end" {
            continue;
        }
        // `stream`, optional spaces (lopdf accepts them), then the line end.
        let mut data_at = at;
        while matches!(bytes.get(data_at), Some(b' ' | b'\t')) {
            data_at += 1;
        }
        let data = match bytes[data_at..] {
            [b'\r', b'\n', ..] => &bytes[data_at + 2..],
            [b'\n', ..] | [b'\r', ..] => &bytes[data_at + 1..],
            _ => continue,
        };
        let cap = limits.max_unzipped_bytes;
        let mut n = count(ZlibDecoder::new(data), cap);
        if n == 0 && data.len() > 2 {
            n = count(DeflateDecoder::new(&data[2..]), cap);
        }
        if n > cap {
            return Err(ParseError::DecompressionBomb(format!("a PDF stream at byte {keyword} inflates past {cap} bytes")));
        }
        total += n;
        if total > limits.max_pdf_inflated_bytes {
            return Err(ParseError::DecompressionBomb(format!(
                "the PDF's streams inflate past {} bytes in all",
                limits.max_pdf_inflated_bytes
            )));
        }
    }
    Ok(())
}

fn memchr_stream(hay: &[u8]) -> Option<usize> {
    hay.windows(6).position(|w| w == b"stream")
}

/// The page as displayed: the box shown (crop box, else media box) and the
/// clockwise rotation.
#[derive(Debug, Clone, Copy)]
struct PageFrame {
    llx: f64,
    lly: f64,
    urx: f64,
    ury: f64,
    rotate: i64,
}

impl PageFrame {
    fn of(doc: &Document, page_id: ObjectId) -> Option<PageFrame> {
        let rect = |key: &[u8]| -> Option<[f64; 4]> {
            let arr = inherited(doc, page_id, key)?;
            let arr = arr.as_array().ok()?;
            let v: Vec<f64> = arr.iter().filter_map(|o| number(doc, o)).collect();
            (v.len() == 4).then(|| [v[0].min(v[2]), v[1].min(v[3]), v[0].max(v[2]), v[1].max(v[3])])
        };
        let media = rect(b"MediaBox")?;
        // The crop box, clipped to the media box, is what viewers show.
        let b = match rect(b"CropBox") {
            Some(c) => [c[0].max(media[0]), c[1].max(media[1]), c[2].min(media[2]), c[3].min(media[3])],
            None => media,
        };
        let rotate = inherited(doc, page_id, b"Rotate").and_then(|o| number(doc, o)).unwrap_or(0.0) as i64;
        Some(PageFrame { llx: b[0], lly: b[1], urx: b[2], ury: b[3], rotate: rotate.rem_euclid(360) / 90 * 90 })
    }

    fn turned(&self) -> bool {
        self.rotate == 90 || self.rotate == 270
    }

    fn width(&self) -> f64 {
        if self.turned() {
            self.ury - self.lly
        } else {
            self.urx - self.llx
        }
    }

    fn height(&self) -> f64 {
        if self.turned() {
            self.urx - self.llx
        } else {
            self.ury - self.lly
        }
    }

    /// A point of user space on the displayed page (origin top-left, y down).
    fn display(&self, x: f64, y: f64) -> (f64, f64) {
        let (u, v) = (x - self.llx, self.ury - y);
        let (w, h) = (self.urx - self.llx, self.ury - self.lly);
        match self.rotate {
            90 => (h - v, u),
            180 => (w - u, h - v),
            270 => (v, w - u),
            _ => (u, v),
        }
    }
}

fn number(doc: &Document, o: &Object) -> Option<f64> {
    match doc.dereference(o).ok()?.1 {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)),
        _ => None,
    }
}

fn inherited<'a>(doc: &'a Document, page_id: ObjectId, key: &[u8]) -> Option<&'a Object> {
    let mut dict = doc.get_dictionary(page_id).ok()?;
    for _ in 0..32 {
        if let Ok(v) = dict.get(key) {
            return Some(v);
        }
        let parent = dict.get(b"Parent").ok()?.as_reference().ok()?;
        dict = doc.get_dictionary(parent).ok()?;
    }
    None
}

fn dict<'a>(doc: &'a Document, o: &'a Object) -> Option<&'a Dictionary> {
    doc.dereference(o).ok()?.1.as_dict().ok()
}

/// Ascent and descent of a font as fractions of its size: the font
/// descriptor's (of the descendant font for Type0), else the standard 14
/// fonts' metrics, else poppler's defaults.
fn font_metrics(doc: &Document, font: &Dictionary) -> (f64, f64) {
    let font = match font.get(b"DescendantFonts").ok().and_then(|o| doc.dereference(o).ok()).and_then(|(_, o)| o.as_array().ok()) {
        Some(arr) => arr.first().and_then(|o| dict(doc, o)).unwrap_or(font),
        None => font,
    };
    if let Some(desc) = font.get(b"FontDescriptor").ok().and_then(|o| dict(doc, o)) {
        let get = |k: &[u8]| desc.get(k).ok().and_then(|o| number(doc, o)).map(|v| v / 1000.0);
        let ascent = get(b"Ascent").map(f64::abs).filter(|a| *a > 0.0 && *a < 3.0);
        let descent = get(b"Descent").map(|d| -d.abs()).filter(|d| *d < 0.0 && *d > -3.0);
        if let (Some(a), Some(d)) = (ascent, descent) {
            return (a, d);
        }
    }
    let base =
        font.get(b"BaseFont").ok().and_then(|o| o.as_name().ok()).map(|n| String::from_utf8_lossy(n).to_string()).unwrap_or_default();
    if base.contains("Courier") {
        (0.629, -0.157)
    } else if base.contains("Helvetica") || base.contains("Arial") {
        (0.718, -0.207)
    } else if base.contains("Times") {
        (0.683, -0.217)
    } else {
        (0.95, -0.35)
    }
}

/// The font metrics of every text-showing string of a page, in the order
/// pdf-extract shows them (one `begin_word` per `Tj` and per string of a
/// `TJ`, form XObjects followed), so the output device knows the font of
/// each glyph it is given.
fn shown_fonts(doc: &Document, page_id: ObjectId) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let resources = inherited(doc, page_id, b"Resources").and_then(|o| dict(doc, o));
    if let Ok(content) = doc.get_page_content(page_id) {
        walk(doc, &content, resources, &mut out, 0);
    }
    out
}

fn walk(doc: &Document, content: &[u8], resources: Option<&Dictionary>, out: &mut Vec<(f64, f64)>, depth: u32) {
    let Ok(content) = pdf_extract::content::Content::decode(content) else { return };
    let fonts = resources.and_then(|r| r.get(b"Font").ok()).and_then(|o| dict(doc, o));
    let default = (0.95, -0.35);
    let mut current = default;
    let mut stack = Vec::new();
    for op in &content.operations {
        match op.operator.as_str() {
            "q" => stack.push(current),
            "Q" => current = stack.pop().unwrap_or(current),
            "Tf" => {
                let name = op.operands.first().and_then(|o| o.as_name().ok());
                current = name
                    .and_then(|n| fonts.and_then(|f| f.get(n).ok()))
                    .and_then(|o| dict(doc, o))
                    .map(|f| font_metrics(doc, f))
                    .unwrap_or(default);
            }
            "Tj" => out.push(current),
            "TJ" => {
                if let Some(Ok(arr)) = op.operands.first().map(|o| o.as_array()) {
                    out.extend(arr.iter().filter(|o| matches!(o, Object::String(..))).map(|_| current));
                }
            }
            "Do" if depth < 8 => {
                let name = op.operands.first().and_then(|o| o.as_name().ok());
                let xobjects = resources.and_then(|r| r.get(b"XObject").ok()).and_then(|o| dict(doc, o));
                let stream = name
                    .and_then(|n| xobjects.and_then(|x| x.get(n).ok()))
                    .and_then(|o| doc.dereference(o).ok())
                    .and_then(|(_, o)| o.as_stream().ok());
                if let Some(s) = stream {
                    let inner = s.dict.get(b"Resources").ok().and_then(|o| dict(doc, o)).or(resources);
                    let data = s.decompressed_content().unwrap_or_else(|_| s.content.clone());
                    walk(doc, &data, inner, out, depth + 1);
                }
            }
            _ => {}
        }
    }
}

/// pdf-extract's plain-text layout, recording each written character's glyph.
struct GlyphOutput {
    text: String,
    glyphs: Vec<Option<Glyph>>,
    frame: Option<PageFrame>,
    fonts: Vec<(f64, f64)>,
    words: usize,
    last_end: f64,
    last_y: f64,
    first_char: bool,
    flip_height: f64,
}

impl GlyphOutput {
    fn new(frame: Option<PageFrame>, fonts: Vec<(f64, f64)>) -> Self {
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

    fn clear(&mut self) {
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
