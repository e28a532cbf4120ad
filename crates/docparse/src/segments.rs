//! Assembling the full raw text and the segments that tile it.
//!
//! Offsets count Unicode scalar values (Rust `char`s) everywhere, citations
//! included: `full_text.chars().skip(char_start).take(char_end - char_start)`
//! is the segment's text. Segments are contiguous and cover the whole text,
//! so concatenating their texts gives `full_text` back. Each segment carries
//! the separator that follows it (`"\n\n"` between paragraphs and pages).
//!
//! **Lines.** Lines are counted in the document's full text the same way
//! for every format: line 1 starts at character 0 and every `\n` starts a
//! new one (blank lines between paragraphs count). A segment's
//! `line_start` is the line of its first character, `line_end` the line of
//! its last character that is not part of the trailing paragraph separator.

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

use crate::cells::{CellRange, CellText};
use crate::geometry::{self, span_boxes, Glyph, PageBox};

/// The segment is `rag-model`'s (shared with chunking, the read models and
/// the API).
pub use rag_model::segment::Segment;

/// A paragraph as extracted from the source, before normalisation.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub page_idx: u32,
    pub text: String,
    /// The box of each character of `text` (None: no box, e.g. a space the
    /// extractor inserted); empty when the source has no geometry.
    pub glyphs: Vec<Option<Glyph>>,
    /// The cells the block's text comes from (a spreadsheet row); every
    /// segment cut from the block carries them.
    pub cells: Option<CellRange>,
}

impl Block {
    pub fn new(page_idx: u32, text: impl Into<String>) -> Block {
        Block { page_idx, text: text.into(), glyphs: Vec::new(), cells: None }
    }
}

pub const PARAGRAPH_SEPARATOR: &str = "\n\n";

/// Unicode NFC, `\r\n`/`\r` to `\n`, no NUL or other control characters
/// except `\n` and `\t`, trimmed.
pub fn normalize(text: &str) -> String {
    let unified = text.replace("\r\n", "\n").replace('\r', "\n");
    let cleaned: String =
        unified.nfc().map(|c| if c == '\u{a0}' { ' ' } else { c }).filter(|c| !c.is_control() || *c == '\n' || *c == '\t').collect();
    cleaned.trim().to_string()
}

/// Splits text into paragraphs at blank lines.
pub fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in text.split('\n') {
        if line.trim().is_empty() {
            if !current.is_empty() {
                out.push(current.join("\n"));
                current.clear();
            }
        } else {
            current.push(line.trim_end());
        }
    }
    if !current.is_empty() {
        out.push(current.join("\n"));
    }
    out
}

/// Splits an overlong paragraph into pieces of at most `max_chars`, at
/// sentence boundaries (UAX #29, which serves Vietnamese and English alike),
/// then at word boundaries, then anywhere. Pieces concatenate back to the
/// paragraph.
pub fn split_long(paragraph: &str, max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(16);
    if paragraph.chars().count() <= max_chars {
        return vec![paragraph.to_string()];
    }
    let mut units: Vec<String> = Vec::new();
    for sentence in paragraph.split_sentence_bounds() {
        if sentence.chars().count() <= max_chars {
            units.push(sentence.to_string());
            continue;
        }
        for word in sentence.split_word_bounds() {
            if word.chars().count() <= max_chars {
                units.push(word.to_string());
            } else {
                let chars: Vec<char> = word.chars().collect();
                units.extend(chars.chunks(max_chars).map(|c| c.iter().collect::<String>()));
            }
        }
    }
    let mut pieces: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut current_len = 0;
    for unit in units {
        let len = unit.chars().count();
        // Whitespace stays with the piece before it, so no piece is blank.
        let blank = unit.trim().is_empty();
        if current_len + len > max_chars && !current.is_empty() && !blank {
            pieces.push(std::mem::take(&mut current));
            current_len = 0;
        }
        current.push_str(&unit);
        current_len += len;
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    // Leading whitespace can still form a blank piece: fold it into the next.
    let mut merged: Vec<String> = Vec::with_capacity(pieces.len());
    let mut carry = String::new();
    for piece in pieces {
        if piece.trim().is_empty() {
            carry.push_str(&piece);
        } else {
            merged.push(std::mem::take(&mut carry) + &piece);
        }
    }
    match merged.last_mut() {
        Some(last) => last.push_str(&carry),
        None => merged.push(carry),
    }
    merged
}

/// Builds the full text and its tiling segments from blocks in reading order.
pub fn assemble(blocks: &[Block], max_segment_chars: usize) -> (String, Vec<Segment>) {
    // (block, text, ends a paragraph)
    let mut pieces: Vec<(usize, String, bool)> = Vec::new();
    for (b, block) in blocks.iter().enumerate() {
        let text = normalize(&block.text);
        for para in paragraphs(&text) {
            let split = split_long(&para, max_segment_chars);
            let last = split.len() - 1;
            for (i, piece) in split.into_iter().enumerate() {
                pieces.push((b, piece, i == last));
            }
        }
    }
    let mut full = String::new();
    let mut segments = Vec::with_capacity(pieces.len());
    // Per character of the full text: its page and glyph, when known.
    let mut glyphs: Vec<Option<(u32, Glyph)>> = Vec::new();
    let mut offset: u64 = 0;
    let count = pieces.len();
    let mut i = 0;
    while i < count {
        // The pieces of one block, aligned with its glyphs at once.
        let block = pieces[i].0;
        let page_idx = blocks[block].page_idx;
        let mut j = i;
        let mut block_chars: Vec<char> = Vec::new();
        while j < count && pieces[j].0 == block {
            block_chars.extend(pieces[j].1.chars());
            j += 1;
        }
        let aligned = align(&blocks[block], &block_chars);
        // A spreadsheet row's cells, placed in the block's text: kept only
        // when normalisation left that text as it was (sheet.rs writes it
        // so), never placed wrong.
        let cells = blocks[block].cells.as_ref().map(|c| {
            let intact = !c.values.is_empty() && blocks[block].text.chars().eq(block_chars.iter().copied());
            CellRange { values: if intact { c.values.clone() } else { Vec::new() }, ..c.clone() }
        });
        let mut k = 0;
        for (n, (_, text, ends_paragraph)) in pieces[i..j].iter().enumerate() {
            let n = i + n;
            let mut text = text.clone();
            let own = text.chars().count();
            glyphs.extend((k..k + own).map(|c| aligned.as_ref().and_then(|a| a[c]).map(|g| (page_idx, g))));
            let piece_cells = cells.as_ref().map(|c| cells_of_piece(c, k as u64, (k + own) as u64, offset));
            k += own;
            // Pieces of one paragraph join as they were; paragraphs and pages
            // are separated by a blank line that belongs to the segment before.
            if *ends_paragraph && n + 1 < count {
                text.push_str(PARAGRAPH_SEPARATOR);
                glyphs.extend([None, None]);
            }
            let len = text.chars().count() as u64;
            let mut seg = Segment::new(n as u32, page_idx, offset, &text);
            let chars: Vec<char> = text.chars().collect();
            seg.boxes = geometry::fragments(offset, &chars, &glyphs[offset as usize..(offset + len) as usize]);
            seg.cells = piece_cells;
            full.push_str(&text);
            segments.push(seg);
            offset += len;
        }
        i = j;
    }
    number_lines(&mut segments);
    (full, segments)
}

/// A block's cells for its piece `[from, to)` (characters of the block's
/// text) that starts at `offset` of the full text: the values in the piece,
/// cut to it, in full-text characters.
fn cells_of_piece(cells: &CellRange, from: u64, to: u64, offset: u64) -> CellRange {
    let values = cells
        .values
        .iter()
        .filter(|v| v.char_start < to && from < v.char_end.max(v.char_start + 1))
        .map(|v| CellText { col: v.col, char_start: offset + v.char_start.max(from) - from, char_end: offset + v.char_end.min(to) - from })
        .collect();
    CellRange { values, ..cells.clone() }
}

/// The glyph of each character of `out`, the block's text after
/// normalisation and paragraph splitting, which only drops whitespace and
/// control characters, composes (NFC) and turns `\r`, NBSP into `\n`, space.
/// None when the block has no geometry or the texts do not align (then the
/// block goes without boxes rather than with wrong ones).
fn align(block: &Block, out: &[char]) -> Option<Vec<Option<Glyph>>> {
    if block.glyphs.is_empty() {
        return None;
    }
    // The raw text decomposed, each unit keeping its character's glyph.
    let raw: Vec<(char, Option<Glyph>)> = block
        .text
        .chars()
        .zip(block.glyphs.iter().chain(std::iter::repeat(&None)))
        .flat_map(|(c, g)| std::iter::once(c).nfd().map(move |d| (d, *g)).collect::<Vec<_>>())
        .collect();
    let loose = |c: char| c.is_whitespace() || c.is_control() || c == '\u{a0}';
    let mut at = 0;
    let mut result = Vec::with_capacity(out.len());
    for &o in out {
        if loose(o) {
            if at < raw.len() && loose(raw[at].0) {
                at += 1;
            }
            result.push(None);
            continue;
        }
        let mut rect: Option<Glyph> = None;
        for (n, d) in std::iter::once(o).nfd().enumerate() {
            if n == 0 {
                while at < raw.len() && raw[at].0 != d && loose(raw[at].0) {
                    at += 1;
                }
            }
            if at >= raw.len() || raw[at].0 != d {
                return None;
            }
            if let Some(g) = raw[at].1 {
                rect = Some(match rect {
                    Some(r) => Glyph { rect: r.rect.union(g.rect), ..r },
                    None => g,
                });
            }
            at += 1;
        }
        result.push(rect);
    }
    Some(result)
}

/// `text[start..end)` in Unicode scalar values.
pub fn char_slice(text: &str, start: u64, end: u64) -> String {
    text.chars().skip(start as usize).take(end.saturating_sub(start) as usize).collect()
}

/// Fills in every segment's line range from the tiling (segments are
/// contiguous from offset 0, so their texts are the full text). Idempotent;
/// used for segments written before line ranges existed too.
pub fn number_lines(segments: &mut [Segment]) {
    let mut line: u32 = 1;
    for s in segments.iter_mut() {
        let start = line;
        let body = s.text.trim_end_matches('\n');
        let end = start + body.matches('\n').count() as u32;
        line += s.text.matches('\n').count() as u32;
        s.line_start = Some(start);
        s.line_end = Some(end);
    }
}

/// The segments with line ranges: as they are, or numbered from the
/// tiling when they were parsed before line ranges existed.
pub fn with_line_ranges(segments: &[Segment]) -> std::borrow::Cow<'_, [Segment]> {
    if segments.iter().all(|s| s.line_start.is_some() && s.line_end.is_some()) {
        return std::borrow::Cow::Borrowed(segments);
    }
    let mut v = segments.to_vec();
    number_lines(&mut v);
    std::borrow::Cow::Owned(v)
}

/// The line range of a run of segments (a chunk): first segment's start,
/// last segment's end.
pub fn line_range(segments: &[Segment]) -> Option<(u32, u32)> {
    Some((segments.first()?.line_start?, segments.last()?.line_end?))
}

/// Where a span of the full text is: its boxes, its lines, and for a
/// spreadsheet its sheet and cells.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpanGeometry {
    pub boxes: Vec<PageBox>,
    pub line_start: Option<u32>,
    pub line_end: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<CellRange>,
}

/// The geometry of the characters `[start, end)` from the segments that
/// overlap them (in order, each with its line range): what a citation and
/// a highlighted page show, computed from the stored segments
/// (`rag_store::raw::span_segments`).
pub fn span_geometry(segments: &[Segment], start: u64, end: u64) -> SpanGeometry {
    let boxes = span_boxes(segments.iter().flat_map(|s| &s.boxes), start, end);
    // The line of a character: its segment's first line plus the newlines
    // before it in the segment.
    let line_of = |at: u64| -> Option<u32> {
        let s = segments.iter().find(|s| s.char_start <= at && at < s.char_end)?;
        let before = s.text.chars().take((at - s.char_start) as usize).filter(|c| *c == '\n').count() as u32;
        Some(s.line_start? + before)
    };
    let last = (start..end).rev().find(|at| {
        segments.iter().find(|s| s.char_start <= *at && *at < s.char_end).and_then(|s| s.text.chars().nth((*at - s.char_start) as usize))
            != Some('\n')
    });
    // The rows the span touches (an empty span: the row it is in).
    let touched = segments.iter().filter(|s| s.char_start < end.max(start + 1) && start < s.char_end);
    let cells = CellRange::spanning(touched.filter_map(|s| s.cells.as_ref()));
    SpanGeometry { boxes, line_start: line_of(start), line_end: last.and_then(line_of), cells }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_count_every_newline_and_end_before_the_separator() {
        let mut segs =
            vec![Segment::new(0, 0, 0, "Title\n\n"), Segment::new(1, 0, 7, "Line one\nline two\n\n"), Segment::new(2, 1, 27, "Last")];
        number_lines(&mut segs);
        let ranges: Vec<_> = segs.iter().map(|s| (s.line_start.unwrap(), s.line_end.unwrap())).collect();
        assert_eq!(ranges, [(1, 1), (3, 4), (6, 6)]);
        assert_eq!(line_range(&segs[1..]), Some((3, 6)));
    }

    #[test]
    fn a_span_knows_its_lines_without_a_trailing_newline() {
        let mut segs = vec![Segment::new(0, 0, 0, "Title\n\n"), Segment::new(1, 0, 7, "Line one\nline two\n\n")];
        number_lines(&mut segs);
        // "one\nline" -> lines 3..4; "two\n\n" ends on line 4.
        let g = span_geometry(&segs, 12, 20);
        assert_eq!((g.line_start, g.line_end), (Some(3), Some(4)));
        let g = span_geometry(&segs, 21, 26);
        assert_eq!((g.line_start, g.line_end), (Some(4), Some(4)));
        assert!(g.boxes.is_empty());
    }

    #[test]
    fn a_span_has_the_boxes_of_exactly_its_characters_and_its_lines() {
        use crate::geometry::{Axis, LineFragment, Rect};
        let mut first = Segment::new(0, 0, 0, "ab cd\n\n");
        first.line_start = Some(1);
        first.line_end = Some(1);
        first.boxes = vec![LineFragment {
            page_idx: 0,
            char_start: 0,
            char_end: 5,
            rect: Rect { x0: 0., y0: 0., x1: 23., y1: 10. },
            axis: Axis::X,
            edges: vec![0., 5., 10., 13., 18., 23.],
        }];
        let mut second = Segment::new(1, 0, 7, "one\ntwo");
        second.line_start = Some(3);
        second.line_end = Some(4);
        let segments = [first, second];
        // "cd\n\none\nt": the box of "cd", lines 1..4.
        let g = span_geometry(&segments, 3, 12);
        assert_eq!(g.boxes, [PageBox { page_idx: 0, rect: Rect { x0: 13., y0: 0., x1: 23., y1: 10. } }]);
        assert_eq!((g.line_start, g.line_end), (Some(1), Some(4)));
        // A span ending on a newline ends on the line before it.
        let g = span_geometry(&segments, 7, 11);
        assert_eq!((g.line_start, g.line_end), (Some(3), Some(3)));
        assert!(g.boxes.is_empty());
    }
}
