//! Assembling the full raw text and the segments that tile it.
//!
//! Offsets count Unicode scalar values (Rust `char`s) everywhere, citations
//! included: `full_text.chars().skip(char_start).take(char_end - char_start)`
//! is the segment's text. Segments are contiguous and cover the whole text,
//! so concatenating their texts gives `full_text` back. Each segment carries
//! the separator that follows it (`"\n\n"` between paragraphs and pages).

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

/// One paragraph-level unit of the raw text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub segment_index: u32,
    /// Zero-based page the segment is on.
    pub page_idx: u32,
    /// Unicode scalar value offsets into the full text: `[char_start, char_end)`.
    pub char_start: u64,
    pub char_end: u64,
    pub text: String,
}

/// A paragraph as extracted from the source, before normalisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub page_idx: u32,
    pub text: String,
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
    // (page, text, ends a paragraph)
    let mut pieces: Vec<(u32, String, bool)> = Vec::new();
    for block in blocks {
        let text = normalize(&block.text);
        for para in paragraphs(&text) {
            let split = split_long(&para, max_segment_chars);
            let last = split.len() - 1;
            for (i, piece) in split.into_iter().enumerate() {
                pieces.push((block.page_idx, piece, i == last));
            }
        }
    }
    let mut full = String::new();
    let mut segments = Vec::with_capacity(pieces.len());
    let mut offset: u64 = 0;
    let count = pieces.len();
    for (i, (page_idx, mut text, ends_paragraph)) in pieces.into_iter().enumerate() {
        // Pieces of one paragraph join as they were; paragraphs and pages
        // are separated by a blank line that belongs to the segment before.
        if ends_paragraph && i + 1 < count {
            text.push_str(PARAGRAPH_SEPARATOR);
        }
        let len = text.chars().count() as u64;
        segments.push(Segment { segment_index: i as u32, page_idx, char_start: offset, char_end: offset + len, text });
        full.push_str(&segments[i].text);
        offset += len;
    }
    (full, segments)
}

/// `text[start..end)` in Unicode scalar values.
pub fn char_slice(text: &str, start: u64, end: u64) -> String {
    text.chars().skip(start as usize).take(end.saturating_sub(start) as usize).collect()
}
