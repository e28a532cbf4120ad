//! The plain data types every layer shares: a document's segments and
//! where their text is on the page (line fragments, boxes, page sizes,
//! spreadsheet cells), its chunks, the lexical scorers' query terms and
//! BM25 parameters, and the document status rule.
//!
//! A leaf: no I/O, nothing but serde. The parser (`rag-docparse`) and
//! chunking (`rag-chunking`) make these values, the read models
//! (`rag-store`) keep them, the stages and the API pass them on; each of
//! those crates re-exports the types it used to define, so their old paths
//! still work. The only logic here is what belongs to the types: a cell
//! range's A1 label and the range spanning several, a status's rank. Where
//! a span is on the page (its boxes and lines from its segments) is the
//! parser's rule (`rag_docparse::geometry`, `rag_docparse::segments`),
//! applied by the stages, the API and the CLI to the segments the read
//! models return.

pub mod cells;
pub mod chunk;
pub mod geometry;
pub mod revision;
pub mod search;
pub mod segment;
pub mod status;

pub use cells::{column_name, CellRange, CellText};
pub use chunk::Chunk;
pub use geometry::{Axis, LineFragment, PageBox, PageSize, Rect};
pub use revision::{index_version, split_index_version, FIRST_REVISION};
pub use search::{Bm25, QueryTerm};
pub use segment::Segment;
pub use status::{DocumentStatus, UnknownStatus};

#[cfg(test)]
mod tests;
