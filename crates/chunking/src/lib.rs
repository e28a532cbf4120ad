//! Chunking without I/O: pack whole segments into chunks under a token
//! budget counted the way the embedder counts, each chunk carrying its
//! mapping back to pages, segments and characters of the raw text.

use std::fmt;

use rag_docparse::Segment;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Counts tokens the way the embedding model will.
pub trait TokenCounter: Send + Sync {
    /// Tokens of `text` without the model's special tokens.
    fn count(&self, text: &str) -> usize;
    /// Special tokens the model adds around every input ([CLS], [SEP]).
    fn special_tokens(&self) -> usize {
        2
    }
}

/// The WordPiece tokenizer of a BERT-family model (`tokenizer.json`), e.g.
/// all-MiniLM-L6-v2: the chunk budget then matches what the embedder reads.
pub struct WordPieceCounter {
    tokenizer: tokenizers::Tokenizer,
}

#[derive(Debug, thiserror::Error)]
#[error("loading tokenizer {path}: {message}")]
pub struct TokenizerError {
    pub path: String,
    pub message: String,
}

impl WordPieceCounter {
    pub fn from_file(path: &std::path::Path) -> Result<Self, TokenizerError> {
        let mut tokenizer = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| TokenizerError { path: path.display().to_string(), message: e.to_string() })?;
        // Count every token, not just the first 128 the file truncates to.
        let _ = tokenizer.with_truncation(None);
        tokenizer.with_padding(None);
        Ok(WordPieceCounter { tokenizer })
    }

    pub fn tokenizer(&self) -> &tokenizers::Tokenizer {
        &self.tokenizer
    }
}

impl TokenCounter for WordPieceCounter {
    fn count(&self, text: &str) -> usize {
        match self.tokenizer.encode(text, false) {
            Ok(enc) => enc.len(),
            // Unencodable text (never seen in practice): estimate generously.
            Err(_) => text.split_whitespace().count() * 2,
        }
    }
}

/// A rough counter for tests and for deployments without a model: one token
/// per word or punctuation mark, which undercounts WordPiece by ~30%.
pub struct WordCounter;

impl TokenCounter for WordCounter {
    fn count(&self, text: &str) -> usize {
        text.split(|c: char| c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(|w| 1 + w.chars().filter(|c| c.is_ascii_punctuation()).count())
            .sum()
    }
}

/// A named, versioned way of chunking. The version is part of every chunk
/// id; changing what a profile produces means a new version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkingProfile {
    pub name: String,
    pub version: u32,
    /// Budget per chunk, special tokens included (the model's input limit).
    pub max_tokens: usize,
    /// Whole segments repeated at the start of the next chunk.
    pub overlap_segments: usize,
}

impl ChunkingProfile {
    /// `name@version`, e.g. `default@1`: the chunking version of the index.
    pub fn id(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }
}

impl fmt::Display for ChunkingProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

/// The profiles this build ships. `default@1` fills the 256 word pieces
/// all-MiniLM-L6-v2 reads; `fine@1` makes smaller chunks with one segment
/// of overlap, for precise citations.
pub fn profiles() -> Vec<ChunkingProfile> {
    vec![
        ChunkingProfile { name: "default".into(), version: 1, max_tokens: 256, overlap_segments: 0 },
        ChunkingProfile { name: "fine".into(), version: 1, max_tokens: 128, overlap_segments: 1 },
    ]
}

/// Looks a profile up by `name@version` (or `name` for its latest version).
pub fn profile(spec: &str) -> Option<ChunkingProfile> {
    let all = profiles();
    match spec.split_once('@') {
        Some((name, v)) => {
            let v: u32 = v.parse().ok()?;
            all.into_iter().find(|p| p.name == name && p.version == v)
        }
        None => all.into_iter().filter(|p| p.name == spec).max_by_key(|p| p.version),
    }
}

/// A chunk and where it comes from (`rag-model`'s, shared with the read
/// models and the stages).
pub use rag_model::Chunk;

/// Deterministic chunk id: scoped to the document and the chunking version,
/// derived from the chunk's text and position (so a paragraph repeated in
/// one document still gets two ids), prefixed `chunk-`.
pub fn chunk_id(document_id: &str, chunking_version: &str, char_start: u64, text: &str) -> String {
    let mut h = Sha256::new();
    for part in [document_id.as_bytes(), chunking_version.as_bytes(), char_start.to_string().as_bytes(), text.as_bytes()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    format!("chunk-{}", &hex::encode(h.finalize())[..32])
}

/// Whether `next` may join a chunk with `prev`: always, except across
/// the sheets of a spreadsheet or the slides of a presentation. A chunk of
/// one sheet's rows is cited as one `Sheet!A5:D9` range, and rows of two
/// tables with different columns read as one passage would mix what their
/// columns mean; a slide is a unit of its own (a hit says "slide 7").
fn same_section(prev: &Segment, next: &Segment) -> bool {
    match (&prev.cells, &next.cells) {
        (None, None) => !(prev.slide || next.slide) || prev.page_idx == next.page_idx,
        (Some(a), Some(b)) => a.sheet == b.sheet && prev.page_idx == next.page_idx,
        _ => false,
    }
}

/// Packs whole segments, in order, into chunks of at most
/// `profile.max_tokens` (special tokens included). A segment longer than
/// the budget becomes a chunk of its own (the embedder reads it in windows).
/// A chunk never holds rows of two sheets or the text of two slides, nor
/// overlaps into the sheet or slide before it.
pub fn chunk(document_id: &str, segments: &[Segment], profile: &ChunkingProfile, counter: &dyn TokenCounter) -> Vec<Chunk> {
    chunk_revision(document_id, rag_model::FIRST_REVISION, segments, profile, counter)
}

/// [`chunk`] for one revision of the document: the chunk ids are scoped to
/// the revision too (`rag_model::index_version`), so two revisions holding
/// the same paragraph at the same place still get two ids, and the first
/// revision's ids are those [`chunk`] always gave.
pub fn chunk_revision(
    document_id: &str,
    revision: i32,
    segments: &[Segment],
    profile: &ChunkingProfile,
    counter: &dyn TokenCounter,
) -> Vec<Chunk> {
    // Segments parsed before line ranges existed get them from the tiling.
    let segments = rag_docparse::segments::with_line_ranges(segments);
    let segments = &segments[..];
    let budget = profile.max_tokens.saturating_sub(counter.special_tokens()).max(1);
    let counts: Vec<usize> = segments.iter().map(|s| counter.count(&s.text)).collect();
    let version = rag_model::index_version(&profile.id(), revision);
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < segments.len() {
        let mut end = start; // exclusive
        let mut tokens = 0;
        while end < segments.len() && (end == start || (tokens + counts[end] <= budget && same_section(&segments[end - 1], &segments[end])))
        {
            tokens += counts[end];
            end += 1;
        }
        let group = &segments[start..end];
        let text: String = group.iter().map(|s| s.text.as_str()).collect();
        let (first, last) = (&group[0], &group[group.len() - 1]);
        chunks.push(Chunk {
            chunk_id: chunk_id(document_id, &version, first.char_start, &text),
            chunk_index: chunks.len() as u32,
            text,
            token_count: tokens as u32,
            page_start: first.page_idx,
            page_end: last.page_idx,
            segment_start_index: first.segment_index,
            segment_end_index: last.segment_index,
            char_start: first.char_start,
            char_end: last.char_end,
            line_start: first.line_start,
            line_end: last.line_end,
        });
        if end >= segments.len() {
            break;
        }
        // Overlap whole segments, but always move forward, and never back
        // across a sheet's boundary.
        let overlap_start = end.saturating_sub(profile.overlap_segments).max(start + 1);
        start = (overlap_start..end).find(|&i| same_section(&segments[i], &segments[end])).unwrap_or(end);
    }
    chunks
}

#[cfg(test)]
mod tests;
