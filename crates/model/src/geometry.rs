//! Where text is on the page: rectangles, page sizes, the line fragments a
//! segment carries and the boxes a span exposes.
//!
//! Coordinates are on the page *as displayed* (its `/Rotate` applied, the
//! crop box if there is one), origin at the top-left corner, x to the right
//! and y downward, in the page's unit: PDF points (1/72 in) for PDFs and
//! OCR'd pages, the unit Document AI states for its pages. A segment
//! carries one [`LineFragment`] per piece of a line it covers; a fragment
//! knows the edge of every character along its line, so the boxes of any
//! character span are exact, not the whole line's. Building fragments from
//! glyphs, and the boxes of a span from them, are the parser's
//! (`rag_docparse::geometry`).

use serde::{Deserialize, Serialize};

/// An axis-aligned rectangle, `x0 <= x1`, `y0 <= y1`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    pub x0: f32,
    pub y0: f32,
    pub x1: f32,
    pub y1: f32,
}

impl Rect {
    pub fn union(self, o: Rect) -> Rect {
        Rect { x0: self.x0.min(o.x0), y0: self.y0.min(o.y0), x1: self.x1.max(o.x1), y1: self.y1.max(o.y1) }
    }

    /// The rectangle's extent along `axis`: `(x0, x1)` or `(y0, y1)`.
    pub fn along(&self, axis: Axis) -> (f32, f32) {
        match axis {
            Axis::X => (self.x0, self.x1),
            Axis::Y => (self.y0, self.y1),
        }
    }

    /// The rectangle's extent across `axis` (along the other one).
    pub fn across(&self, axis: Axis) -> (f32, f32) {
        self.along(axis.other())
    }

    /// Splits the rectangle into `n` equal parts along `axis` (the glyphs
    /// of a word whose only box is the word's, as OCR gives).
    pub fn split(self, n: usize, axis: Axis) -> Vec<Rect> {
        let (a, b) = self.along(axis);
        let step = (b - a) / n.max(1) as f32;
        (0..n)
            .map(|i| {
                let (s, e) = (a + step * i as f32, a + step * (i + 1) as f32);
                match axis {
                    Axis::X => Rect { x0: s, x1: e, ..self },
                    Axis::Y => Rect { y0: s, y1: e, ..self },
                }
            })
            .collect()
    }
}

/// The direction a line of text runs in, as displayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// Horizontal text (the usual case).
    X,
    /// Vertical text, e.g. a page shown rotated by 90°.
    Y,
}

impl Axis {
    /// The axis across this one.
    pub fn other(self) -> Axis {
        match self {
            Axis::X => Axis::Y,
            Axis::Y => Axis::X,
        }
    }
}

/// Size of one page as displayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageSize {
    /// Zero-based page.
    pub page_idx: u32,
    pub width: f32,
    pub height: f32,
    /// `pt` (PDF points), `px` (pixels of an image as displayed), or what
    /// Document AI states (`px`, `normalized`).
    pub unit: String,
}

/// One piece of one line of a segment: characters `[char_start, char_end)`
/// of the full text, on one page, in one box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineFragment {
    pub page_idx: u32,
    pub char_start: u64,
    pub char_end: u64,
    #[serde(flatten)]
    pub rect: Rect,
    pub axis: Axis,
    /// `char_end - char_start + 1` positions along `axis`: `edges[i]` is
    /// where character `char_start + i` begins, the last one where the
    /// fragment ends. Not necessarily increasing (text can run backwards).
    pub edges: Vec<f32>,
}

/// A box on a page: what segments, chunk mappings and citations expose.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PageBox {
    pub page_idx: u32,
    #[serde(flatten)]
    pub rect: Rect,
}
