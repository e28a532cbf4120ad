//! A segment: one paragraph-level unit of a document's full raw text.
//!
//! Offsets count Unicode scalar values (Rust `char`s) everywhere, citations
//! included. Segments are contiguous and tile the whole text.
//!
//! **Lines.** Lines are counted in the document's full text the same way
//! for every format: line 1 starts at character 0 and every `\n` starts a
//! new one (blank lines between paragraphs count). A segment's
//! `line_start` is the line of its first character, `line_end` the line of
//! its last character that is not part of the trailing paragraph separator.
//! Building segments, numbering their lines and the geometry of a span of
//! segments are the parser's (`rag_docparse::segments`).

use serde::{Deserialize, Serialize};

use crate::cells::CellRange;
use crate::geometry::LineFragment;

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
