//! A chunk: a run of whole segments that is embedded and retrieved as one,
//! and where it comes from. Cutting segments into chunks is
//! `rag-chunking`'s.

use serde::{Deserialize, Serialize};

/// A chunk and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    pub chunk_id: String,
    pub chunk_index: u32,
    /// Exactly `full_text[char_start..char_end)`.
    pub text: String,
    pub token_count: u32,
    pub page_start: u32,
    pub page_end: u32,
    pub segment_start_index: u32,
    pub segment_end_index: u32,
    pub char_start: u64,
    pub char_end: u64,
    /// Lines of the full text the chunk spans (1-based, inclusive); absent
    /// in chunks written before segments had line ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_start: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_end: Option<u32>,
}
