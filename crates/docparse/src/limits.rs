//! What one document may cost the parser, and the budget its output is
//! counted against.

use serde::{Deserialize, Serialize};

use crate::error::ParseError;

/// What one document may cost the parser. Every bound is checked against
/// work actually done (bytes inflated, characters produced, pages seen),
/// never against sizes the input declares about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Largest input accepted.
    pub max_bytes: u64,
    /// Longest segment; longer paragraphs split at sentence boundaries.
    pub max_segment_chars: usize,
    /// Largest number of bytes inflated from one archive entry or one PDF
    /// stream, and from a whole DOCX.
    pub max_unzipped_bytes: u64,
    /// Largest number of bytes inflated from all the streams of one PDF.
    pub max_pdf_inflated_bytes: u64,
    /// Largest decompressed/compressed ratio of an archive entry.
    pub max_compression_ratio: u64,
    /// Most pages a document may have.
    pub max_pages: u32,
    /// The text produced (characters, each with its box) may be at most
    /// this multiple of the input's size ...
    pub max_output_ratio: u64,
    /// ... or this many characters, whichever is larger (a small compressed
    /// input may legitimately expand).
    pub min_output_chars: u64,
    /// Most pages of one document read by OCR; later pages stay without text.
    pub ocr_max_pages: u32,
    /// OCR time for one document, in seconds, all pages together.
    pub ocr_budget_secs: u64,
    /// Most non-empty cells one sheet of a spreadsheet may have; a larger
    /// sheet is refused (`too_many_cells`), never read into memory whole.
    pub max_sheet_cells: u64,
    /// Most pixels of one image (one page of a TIFF), read from its header
    /// before anything is decoded: a larger one is refused
    /// (`image_too_large`), so a decompression bomb never allocates its
    /// pixels.
    pub max_image_pixels: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 100 * 1024 * 1024,
            max_segment_chars: 600,
            max_unzipped_bytes: 256 * 1024 * 1024,
            max_pdf_inflated_bytes: 1024 * 1024 * 1024,
            max_compression_ratio: 200,
            max_pages: 2_000,
            max_output_ratio: 16,
            min_output_chars: 4 * 1024 * 1024,
            ocr_max_pages: 100,
            ocr_budget_secs: 600,
            max_sheet_cells: 1_000_000,
            max_image_pixels: 50_000_000,
        }
    }
}

impl Limits {
    /// Most characters of text (and per-character boxes) a document of
    /// `input_len` bytes may produce: never over [`MAX_OUTPUT_CHARS`].
    pub fn max_output_chars(&self, input_len: usize) -> u64 {
        (input_len as u64).saturating_mul(self.max_output_ratio).max(self.min_output_chars).min(MAX_OUTPUT_CHARS)
    }
}

/// Most characters any document may produce: 64 Mi, a book of some
/// 30,000 pages. It bounds what a parse worker hands back to the process.
pub const MAX_OUTPUT_CHARS: u64 = 64 * 1024 * 1024;

/// Counts output against [`Limits::max_output_chars`]; a parser takes from
/// it before it copies text, so a hostile input is refused before it
/// costs the memory.
#[derive(Debug)]
pub(crate) struct OutputBudget {
    left: u64,
    limit: u64,
}

impl OutputBudget {
    pub(crate) fn new(limits: &Limits, input_len: usize) -> Self {
        let limit = limits.max_output_chars(input_len);
        OutputBudget { left: limit, limit }
    }

    pub(crate) fn take(&mut self, chars: usize) -> Result<(), ParseError> {
        match self.left.checked_sub(chars as u64) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(ParseError::OutputTooLarge { limit: self.limit }),
        }
    }
}
