//! Where text is on the page: the glyphs the extractors give and the line
//! fragments built from them.
//!
//! The types segments carry ([`Rect`], [`Axis`], [`PageSize`],
//! [`LineFragment`], [`PageBox`]) are `rag-model`'s, re-exported here;
//! their coordinates are on the page *as displayed* (see
//! `rag_model::geometry`). The boxes of a character span ([`span_boxes`])
//! are computed here from the line fragments, by whoever shows or cites
//! the span (the answerer, the API, the CLI): the read models only keep
//! the fragments.
//!
//! Line ranges, and the geometry of a span of segments, are in
//! [`crate::segments`]: boxes know nothing of segments.

pub use rag_model::geometry::{Axis, LineFragment, PageBox, PageSize, Rect};

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
