//! A segment: one paragraph-level unit of a document's full raw text, and
//! the geometry of a span of segments.
//!
//! Offsets count Unicode scalar values (Rust `char`s) everywhere, citations
//! included. Segments are contiguous and tile the whole text.
//!
//! **Lines.** Lines are counted in the document's full text the same way
//! for every format: line 1 starts at character 0 and every `\n` starts a
//! new one (blank lines between paragraphs count). A segment's
//! `line_start` is the line of its first character, `line_end` the line of
//! its last character that is not part of the trailing paragraph separator.
//! Building segments and numbering their lines is the parser's
//! (`rag_docparse::segments`).

use serde::{Deserialize, Serialize};

use crate::cells::CellRange;
use crate::geometry::{span_boxes, LineFragment, PageBox};

/// One paragraph-level unit of the raw text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub segment_index: u32,
    /// Zero-based page the segment is on.
    pub page_idx: u32,
    /// Unicode scalar value offsets into the full text: `[char_start, char_end)`.
    pub char_start: u64,
    pub char_end: u64,
    pub text: String,
    /// Lines of the full text the segment spans, 1-based and inclusive
    /// (see the module's documentation). Absent in segments written before
    /// v3 of the parser; `rag_docparse::segments::number_lines` fills them
    /// in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_start: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_end: Option<u32>,
    /// Where the segment is on its page, one fragment per piece of line;
    /// empty for formats without pages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<LineFragment>,
    /// The sheet and cells the segment holds (spreadsheets only: one row,
    /// or the header row). Absent for other formats and in segments
    /// written before spreadsheets were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<CellRange>,
    /// The segment's page is a slide of a presentation (PPTX, ODP): a
    /// slide is a section of its own, which no chunk crosses. Absent
    /// (false) for other formats and in segments written before slides
    /// were read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub slide: bool,
}

impl Segment {
    /// A segment without line range or boxes (tests, old blobs).
    pub fn new(segment_index: u32, page_idx: u32, char_start: u64, text: &str) -> Segment {
        let char_end = char_start + text.chars().count() as u64;
        Segment {
            segment_index,
            page_idx,
            char_start,
            char_end,
            text: text.to_string(),
            line_start: None,
            line_end: None,
            boxes: Vec::new(),
            cells: None,
            slide: false,
        }
    }
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
/// overlap them (in order, each with its line range).
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
