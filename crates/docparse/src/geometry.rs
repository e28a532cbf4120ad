//! Where text is on the page.
//!
//! Coordinates are on the page *as displayed* (its `/Rotate`
//! applied, the crop box if there is one), origin at the top-left corner,
//! x to the right and y downward, in the page's unit: PDF points (1/72 in)
//! for PDFs and OCR'd pages, the unit Document AI states for its pages.
//! A segment carries one [`LineFragment`] per piece of a line it covers;
//! a fragment knows the edge of every character along its line, so the
//! boxes of any character span ([`span_boxes`]) are exact, not the whole
//! line's.
//!
//! Line ranges, and the geometry of a span of segments, are in
//! [`crate::segments`]: boxes know nothing of segments.

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

    fn along(&self, axis: Axis) -> (f32, f32) {
        match axis {
            Axis::X => (self.x0, self.x1),
            Axis::Y => (self.y0, self.y1),
        }
    }

    fn across(&self, axis: Axis) -> (f32, f32) {
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
    fn other(self) -> Axis {
        match self {
            Axis::X => Axis::Y,
            Axis::Y => Axis::X,
        }
    }
}

/// The box of one character of the extracted text and its line direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Glyph {
    pub rect: Rect,
    pub axis: Axis,
    /// Text runs towards larger coordinates (false: a page turned by 180°
    /// or 270°).
    pub forward: bool,
}

impl Glyph {
    pub fn new(rect: Rect, axis: Axis) -> Glyph {
        Glyph { rect, axis, forward: true }
    }

    /// Where the glyph begins and ends in reading direction.
    fn ends(&self) -> (f32, f32) {
        let (a, b) = self.rect.along(self.axis);
        if self.forward {
            (a, b)
        } else {
            (b, a)
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

fn round2(v: f32) -> f32 {
    (v * 100.0).round() / 100.0
}

/// Builds the line fragments of the characters `chars` that start at
/// offset `base` of the full text, from each character's page and glyph
/// (None for characters without a box: inserted spaces, newlines). A new
/// fragment starts at a newline, a page change, a change of direction, a
/// character off the current line, or a gap wider than twice the line
/// height (a table cell, the other column).
pub fn fragments(base: u64, chars: &[char], glyphs: &[Option<(u32, Glyph)>]) -> Vec<LineFragment> {
    struct Open {
        page: u32,
        axis: Axis,
        forward: bool,
        /// Index (into `chars`) of the first and one past the last boxed character.
        start: usize,
        end: usize,
        rect: Rect,
        last: Rect,
    }
    let mut out = Vec::new();
    let mut open: Option<Open> = None;
    let close = |o: Open, out: &mut Vec<LineFragment>| {
        // Edges: a boxed character begins at its glyph; one without a box
        // (a space) spans from the previous glyph's end to the next's start.
        let mut edges = Vec::with_capacity(o.end - o.start + 1);
        let mut prev_end = None;
        for i in o.start..o.end {
            let edge = match (glyphs[i], prev_end) {
                // The boundary between two glyphs is the end of the first:
                // exact for a span that ends there.
                (Some(_), Some(p)) if glyphs[i - 1].is_some() => p,
                (Some((_, g)), _) => g.ends().0,
                (None, p) => p.unwrap_or(0.0),
            };
            edges.push(round2(edge));
            if let Some((_, g)) = glyphs[i] {
                prev_end = Some(g.ends().1);
            }
        }
        edges.push(round2(prev_end.unwrap_or(0.0)));
        let r = o.rect;
        out.push(LineFragment {
            page_idx: o.page,
            char_start: base + o.start as u64,
            char_end: base + o.end as u64,
            rect: Rect { x0: round2(r.x0), y0: round2(r.y0), x1: round2(r.x1), y1: round2(r.y1) },
            axis: o.axis,
            edges,
        });
    };
    for (i, c) in chars.iter().enumerate() {
        if *c == '\n' {
            if let Some(o) = open.take() {
                close(o, &mut out);
            }
            continue;
        }
        let Some((page, g)) = glyphs.get(i).copied().flatten() else { continue };
        if let Some(o) = &mut open {
            let (a0, a1) = o.last.across(o.axis);
            let (b0, b1) = g.rect.across(o.axis);
            let overlap = a1.min(b1) - a0.max(b0);
            let height = (a1 - a0).max(b1 - b0).max(0.01);
            let (l0, l1) = o.last.along(o.axis);
            let (g0, g1) = g.rect.along(o.axis);
            let gap = (g0 - l1).abs().min((l0 - g1).abs());
            if o.page == page
                && o.axis == g.axis
                && o.forward == g.forward
                && overlap >= 0.5 * (a1 - a0).min(b1 - b0)
                && gap <= 2.0 * height
            {
                o.end = i + 1;
                o.rect = o.rect.union(g.rect);
                o.last = g.rect;
                continue;
            }
        }
        if let Some(o) = open.take() {
            close(o, &mut out);
        }
        open = Some(Open { page, axis: g.axis, forward: g.forward, start: i, end: i + 1, rect: g.rect, last: g.rect });
    }
    if let Some(o) = open.take() {
        close(o, &mut out);
    }
    out
}

/// The boxes of the characters `[start, end)` of the full text: one per
/// line fragment they touch, narrowed along the line to exactly those
/// characters.
pub fn span_boxes<'a>(fragments: impl IntoIterator<Item = &'a LineFragment>, start: u64, end: u64) -> Vec<PageBox> {
    let mut out = Vec::new();
    for f in fragments {
        let (a, b) = (start.max(f.char_start), end.min(f.char_end));
        if a >= b {
            continue;
        }
        let (ia, ib) = ((a - f.char_start) as usize, (b - f.char_start) as usize);
        let (Some(&ea), Some(&eb)) = (f.edges.get(ia), f.edges.get(ib)) else { continue };
        let (lo, hi) = (ea.min(eb), ea.max(eb));
        let rect = match f.axis {
            Axis::X => Rect { x0: lo, x1: hi, ..f.rect },
            Axis::Y => Rect { y0: lo, y1: hi, ..f.rect },
        };
        out.push(PageBox { page_idx: f.page_idx, rect });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(x0: f32, x1: f32, y: f32) -> Option<(u32, Glyph)> {
        Some((0, Glyph::new(Rect { x0, y0: y, x1, y1: y + 10.0 }, Axis::X)))
    }

    #[test]
    fn fragments_split_at_lines_and_spans_narrow_to_their_characters() {
        // "ab cd\nef": a space without a box, then a second line.
        let chars: Vec<char> = "ab cd\nef".chars().collect();
        let glyphs = vec![g(0., 5., 0.), g(5., 10., 0.), None, g(13., 18., 0.), g(18., 23., 0.), None, g(0., 6., 12.), g(6., 12., 12.)];
        let f = fragments(100, &chars, &glyphs);
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].char_start, f[0].char_end), (100, 105));
        assert_eq!(f[0].edges, vec![0., 5., 10., 13., 18., 23.]);
        assert_eq!((f[1].char_start, f[1].char_end, f[1].rect.y0), (106, 108, 12.));
        // "cd\ne" -> two boxes, each only those characters.
        let b = span_boxes(&f, 103, 107);
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].rect.x0, b[0].rect.x1), (13., 23.));
        assert_eq!((b[1].rect.x0, b[1].rect.x1), (0., 6.));
        // Nothing outside the fragments.
        assert!(span_boxes(&f, 0, 100).is_empty());
    }

    #[test]
    fn a_wide_gap_or_another_page_starts_a_new_fragment() {
        let chars: Vec<char> = "abc".chars().collect();
        let mut glyphs = vec![g(0., 5., 0.), g(300., 305., 0.), g(305., 310., 0.)];
        assert_eq!(fragments(0, &chars, &glyphs).len(), 2);
        glyphs[2] = Some((1, Glyph::new(Rect { x0: 305., y0: 0., x1: 310., y1: 10. }, Axis::X)));
        assert_eq!(fragments(0, &chars, &glyphs).len(), 3);
    }

    #[test]
    fn split_divides_a_word_box_evenly() {
        let parts = Rect { x0: 0., y0: 0., x1: 9., y1: 3. }.split(3, Axis::X);
        assert_eq!(parts.iter().map(|r| (r.x0, r.x1)).collect::<Vec<_>>(), [(0., 3.), (3., 6.), (6., 9.)]);
    }
}
