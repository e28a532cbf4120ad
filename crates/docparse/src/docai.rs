//! Google Document AI output: the `Document` JSON (`text` plus
//! `pages[].paragraphs[].layout.textAnchor.textSegments[]`), as seed 002's
//! `build_segments_from_docai`. Indices count Unicode code points of `text`.
//!
//! Geometry: each character takes its box from the finest layout element
//! that covers it (`tokens`, else `lines`, else `paragraphs`), its
//! `boundingPoly` converted to the page's `dimension` (normalised vertices
//! multiplied by the page size; absolute vertices as they are), split
//! evenly among the element's characters.

use serde::Deserialize;

use crate::geometry::{Axis, Glyph, PageSize, Rect};
use crate::{Block, OutputBudget, ParseError};

#[derive(Deserialize)]
struct Document {
    text: Option<String>,
    #[serde(default)]
    pages: Vec<Page>,
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    paragraphs: Vec<Element>,
    #[serde(default)]
    lines: Vec<Element>,
    #[serde(default)]
    tokens: Vec<Element>,
    dimension: Option<Dimension>,
}

#[derive(Deserialize)]
struct Dimension {
    #[serde(default)]
    width: f32,
    #[serde(default)]
    height: f32,
    #[serde(default)]
    unit: String,
}

#[derive(Deserialize)]
struct Element {
    layout: Option<Layout>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Layout {
    text_anchor: Option<TextAnchor>,
    bounding_poly: Option<BoundingPoly>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BoundingPoly {
    #[serde(default)]
    vertices: Vec<Vertex>,
    #[serde(default)]
    normalized_vertices: Vec<Vertex>,
}

#[derive(Deserialize, Clone, Copy)]
struct Vertex {
    // Proto3 JSON omits zero.
    #[serde(default)]
    x: f32,
    #[serde(default)]
    y: f32,
}

impl BoundingPoly {
    /// The box in the page's unit, when the polygon has vertices.
    fn rect(&self, dim: Option<&Dimension>) -> Option<Rect> {
        let (points, sx, sy) = match (self.normalized_vertices.is_empty(), dim) {
            (false, Some(d)) if d.width > 0.0 && d.height > 0.0 => (&self.normalized_vertices, d.width, d.height),
            (false, _) => (&self.normalized_vertices, 1.0, 1.0),
            (true, _) if !self.vertices.is_empty() => (&self.vertices, 1.0, 1.0),
            _ => return None,
        };
        let first = Rect { x0: points[0].x * sx, y0: points[0].y * sy, x1: points[0].x * sx, y1: points[0].y * sy };
        Some(points.iter().fold(first, |r, v| r.union(Rect { x0: v.x * sx, y0: v.y * sy, x1: v.x * sx, y1: v.y * sy })))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TextAnchor {
    #[serde(default)]
    text_segments: Vec<TextSegment>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TextSegment {
    // Proto3 JSON writes int64 as strings; omits zero.
    #[serde(default, deserialize_with = "int64")]
    start_index: u64,
    #[serde(default, deserialize_with = "int64")]
    end_index: u64,
}

fn int64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum N {
        S(String),
        U(u64),
    }
    match N::deserialize(d)? {
        N::U(n) => Ok(n),
        N::S(s) => s.parse().map_err(serde::de::Error::custom),
    }
}

/// The character ranges of an anchor, checked against the text.
fn ranges(anchor: &TextAnchor, len: usize) -> Result<Vec<(usize, usize)>, ParseError> {
    anchor
        .text_segments
        .iter()
        .map(|seg| {
            let (a, b) = (seg.start_index as usize, seg.end_index as usize);
            if a > b || b > len {
                return Err(ParseError::InvalidDocAi(format!("text segment [{a}, {b}) is outside the text ({len} characters)")));
            }
            Ok((a, b))
        })
        .collect()
}

/// `budget` bounds the characters copied: anchors may overlap, so a small
/// JSON whose every paragraph anchors the whole text would otherwise copy
/// the text once per paragraph (and walk it once per token).
pub fn blocks(json: &str, budget: &mut OutputBudget) -> Result<(Vec<Block>, u32, Vec<PageSize>), ParseError> {
    let doc: Document = serde_json::from_str(json).map_err(|e| ParseError::InvalidDocAi(e.to_string()))?;
    let text = doc.text.ok_or_else(|| ParseError::InvalidDocAi("no `text` field".into()))?;
    if doc.pages.is_empty() {
        return Err(ParseError::InvalidDocAi("no `pages`".into()));
    }
    let chars: Vec<char> = text.chars().collect();
    // Each character's box, from the finest elements of its page.
    let mut glyph_of: Vec<Option<Glyph>> = vec![None; chars.len()];
    let mut sizes = Vec::new();
    for (page_idx, page) in doc.pages.iter().enumerate() {
        let dim = page.dimension.as_ref().filter(|d| d.width > 0.0 && d.height > 0.0);
        let (width, height, unit) = match dim {
            Some(d) => (d.width, d.height, if d.unit.is_empty() { "px".to_string() } else { d.unit.clone() }),
            None => (1.0, 1.0, "normalized".to_string()),
        };
        sizes.push(PageSize { page_idx: page_idx as u32, width, height, unit });
        let finest = [&page.tokens, &page.lines, &page.paragraphs].into_iter().find(|e| !e.is_empty());
        for el in finest.into_iter().flatten() {
            let Some(layout) = &el.layout else { continue };
            let (Some(anchor), Some(rect)) = (&layout.text_anchor, layout.bounding_poly.as_ref().and_then(|p| p.rect(dim))) else {
                continue;
            };
            for (a, b) in ranges(anchor, chars.len())? {
                budget.take(b - a)?;
                // Trailing whitespace (a token's space or newline) has no box.
                let visible: Vec<usize> = (a..b).filter(|i| !chars[*i].is_whitespace()).collect();
                for (i, r) in visible.iter().zip(rect.split(visible.len(), Axis::X)) {
                    glyph_of[*i] = Some(Glyph::new(r, Axis::X));
                }
            }
        }
    }
    let mut blocks = Vec::new();
    for (page_idx, page) in doc.pages.iter().enumerate() {
        for para in &page.paragraphs {
            let Some(anchor) = para.layout.as_ref().and_then(|l| l.text_anchor.as_ref()) else { continue };
            let mut s = String::new();
            let mut glyphs = Vec::new();
            for (a, b) in ranges(anchor, chars.len())? {
                budget.take(b - a)?;
                s.extend(&chars[a..b]);
                glyphs.extend_from_slice(&glyph_of[a..b]);
            }
            if !glyphs.iter().any(Option::is_some) {
                glyphs.clear();
            }
            if !s.trim().is_empty() {
                blocks.push(Block { page_idx: page_idx as u32, text: s, glyphs, cells: None });
            }
        }
    }
    Ok((blocks, doc.pages.len() as u32, sizes))
}
