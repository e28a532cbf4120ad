//! What a page shows, read from the document's objects: its frame (crop
//! box and rotation) and the font metrics of each string it shows.

use pdf_extract::{Dictionary, Document, Object, ObjectId};

/// The page as displayed: the box shown (crop box, else media box) and the
/// clockwise rotation.
#[derive(Debug, Clone, Copy)]
pub(super) struct PageFrame {
    llx: f64,
    lly: f64,
    urx: f64,
    ury: f64,
    rotate: i64,
}

impl PageFrame {
    pub(super) fn of(doc: &Document, page_id: ObjectId) -> Option<PageFrame> {
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

    pub(super) fn width(&self) -> f64 {
        if self.turned() {
            self.ury - self.lly
        } else {
            self.urx - self.llx
        }
    }

    pub(super) fn height(&self) -> f64 {
        if self.turned() {
            self.urx - self.llx
        } else {
            self.ury - self.lly
        }
    }

    /// A point of user space on the displayed page (origin top-left, y down).
    pub(super) fn display(&self, x: f64, y: f64) -> (f64, f64) {
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
pub(super) fn shown_fonts(doc: &Document, page_id: ObjectId) -> Vec<(f64, f64)> {
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
