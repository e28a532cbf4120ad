//! Document parsing without I/O: bytes in, the full raw text and the
//! paragraph-level segments that tile it out.
//!
//! Supported: plain text, Markdown, HTML, PDF with a text layer, DOCX,
//! Google Document AI JSON, spreadsheets (CSV, TSV, XLSX, XLS, ODS),
//! presentations (PPTX, ODP: one page per slide), and
//! with a recogniser ([`PageOcr`]) scanned PDF pages and images (PNG, JPEG,
//! TIFF, WebP). Every failure is a [`ParseError`] with a stable
//! [`ParseError::code`]; nothing here panics on hostile input (PDF
//! extraction is additionally isolated with `catch_unwind`).
//!
//! The top-level parse and its output are in `document.rs`, the formats
//! and their detection in `format.rs`, the check of an upload's first
//! bytes in `sniff.rs`, the cost bounds in `limits.rs`, the failures in
//! `error.rs`; each format's parser is a module of its own.

mod cells;
mod docai;
mod document;
mod docx;
mod error;
mod format;
pub mod geometry;
mod html;
pub use html::{BLOCK_ELEMENTS as HTML_BLOCK_ELEMENTS, SKIPPED_ELEMENTS as HTML_SKIPPED_ELEMENTS};
mod limits;
mod numfmt;
mod ocr;
mod pdf;
pub mod raster;
pub mod segments;
pub mod sheet;
mod slides;
mod sniff;

pub use cells::{CellRange, CellText};
pub(crate) use document::utf8;
pub use document::{parse, parse_with_ocr, PageOcr, ParsedDocument};
pub use error::ParseError;
pub use format::{detect_format, Format};
pub use geometry::{Axis, LineFragment, PageBox, PageSize, Rect};
pub(crate) use limits::OutputBudget;
pub use limits::{Limits, MAX_OUTPUT_CHARS};
pub use ocr::{OcrError, OcrPage, OcrWord};
pub use segments::{char_slice, Block, Segment};
pub(crate) use sniff::OLE_MAGIC;
pub use sniff::{sniff, SniffError};

pub const PARSER_NAME: &str = "rag-docparse";
/// Bump when the output for the same input changes.
pub const PARSER_VERSION: &str = "6";

#[cfg(test)]
mod tests;
