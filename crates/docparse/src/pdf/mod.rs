//! PDF with a text layer, page by page (pure Rust: pdf-extract over lopdf),
//! with the box of every glyph on the page as displayed.
//!
//! The text is laid out exactly as pdf-extract's `PlainTextOutput` does
//! (spaces and line breaks from glyph positions); [`GlyphOutput`] repeats
//! that logic so it can record, for each character it writes, the glyph's
//! box. A glyph's box runs along its advance and, across it, from the
//! font's descent to its ascent (the font descriptor's, as poppler does),
//! so boxes match what PDF viewers select.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pdf_extract::Document;

use crate::geometry::PageSize;
use crate::{Block, Limits, OutputBudget, ParseError};

mod glyphs;
mod page;

use glyphs::GlyphOutput;
use page::{shown_fonts, PageFrame};

pub fn blocks(bytes: &[u8], limits: &Limits, budget: &mut OutputBudget) -> Result<(Vec<Block>, u32, Vec<PageSize>), ParseError> {
    if !bytes.starts_with(b"%PDF") && !bytes[..bytes.len().min(1024)].windows(4).any(|w| w == b"%PDF") {
        return Err(ParseError::CorruptPdf("no %PDF header".into()));
    }
    // lopdf inflates object streams while loading, and pdf-extract content
    // streams while reading, each without a bound: measure first.
    check_inflated_size(bytes, limits)?;
    // pdf-extract can panic on malformed input: contain it.
    let loaded = catch_unwind(AssertUnwindSafe(|| Document::load_mem(bytes)))
        .map_err(|_| ParseError::CorruptPdf("the PDF structure could not be read".into()))?;
    let mut doc = loaded.map_err(|e| ParseError::CorruptPdf(e.to_string()))?;
    if doc.is_encrypted() {
        // An empty user password is common ("owner-only" protection).
        if doc.decrypt("").is_err() {
            return Err(ParseError::EncryptedPdf);
        }
    }
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(ParseError::CorruptPdf("the PDF has no pages".into()));
    }
    if pages.len() as u64 > u64::from(limits.max_pages) {
        return Err(ParseError::TooManyPages { pages: pages.len() as u64, limit: limits.max_pages });
    }
    let page_count = pages.len() as u32;
    let mut blocks = Vec::new();
    let mut sizes = Vec::new();
    for (i, (page_num, page_id)) in pages.iter().enumerate() {
        let frame = catch_unwind(AssertUnwindSafe(|| PageFrame::of(&doc, *page_id))).ok().flatten();
        if let Some(f) = &frame {
            sizes.push(PageSize { page_idx: i as u32, width: f.width() as f32, height: f.height() as f32, unit: "pt".into() });
        }
        let fonts = catch_unwind(AssertUnwindSafe(|| shown_fonts(&doc, *page_id))).unwrap_or_default();
        let mut out = GlyphOutput::new(frame, fonts);
        let result = catch_unwind(AssertUnwindSafe(|| pdf_extract::output_doc_page(&doc, &mut out, *page_num)));
        match result {
            Ok(Ok(())) => {}
            // One unreadable page does not sink the document: it is
            // reported among the pages without text.
            Ok(Err(_)) | Err(_) => out.clear(),
        }
        if !out.text.trim().is_empty() {
            budget.take(out.text.chars().count())?;
            blocks.push(Block { page_idx: i as u32, text: out.text, glyphs: out.glyphs, cells: None });
        }
    }
    Ok((blocks, page_count, sizes))
}

/// Inflates every Flate stream of the file into a counter, not into
/// memory: a stream over `max_unzipped_bytes` or all of them over
/// `max_pdf_inflated_bytes` is a decompression bomb. Streams are found by
/// their `stream` keyword, as a reader recovering a damaged file does;
/// data that is not zlib stops the decoder at once. Like lopdf, a stream
/// whose zlib header is damaged is read again as raw deflate.
fn check_inflated_size(bytes: &[u8], limits: &Limits) -> Result<(), ParseError> {
    use flate2::read::{DeflateDecoder, ZlibDecoder};
    use std::io::Read;
    fn count(mut r: impl Read, cap: u64) -> u64 {
        let mut buf = [0u8; 64 * 1024];
        let mut total = 0u64;
        while total <= cap {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n as u64,
            }
        }
        total
    }
    let mut total: u64 = 0;
    let mut at = 0;
    while let Some(found) = memchr_stream(&bytes[at..]) {
        let keyword = at + found;
        at = keyword + b"stream".len();
        if keyword >= 3 && &bytes[keyword - 3..keyword] == b"end" {
            continue;
        }
        // `stream`, optional spaces (lopdf accepts them), then the line end.
        let mut data_at = at;
        while matches!(bytes.get(data_at), Some(b' ' | b'\t')) {
            data_at += 1;
        }
        let data = match bytes[data_at..] {
            [b'\r', b'\n', ..] => &bytes[data_at + 2..],
            [b'\n', ..] | [b'\r', ..] => &bytes[data_at + 1..],
            _ => continue,
        };
        let cap = limits.max_unzipped_bytes;
        let mut n = count(ZlibDecoder::new(data), cap);
        if n == 0 && data.len() > 2 {
            n = count(DeflateDecoder::new(&data[2..]), cap);
        }
        if n > cap {
            return Err(ParseError::DecompressionBomb(format!("a PDF stream at byte {keyword} inflates past {cap} bytes")));
        }
        total += n;
        if total > limits.max_pdf_inflated_bytes {
            return Err(ParseError::DecompressionBomb(format!(
                "the PDF's streams inflate past {} bytes in all",
                limits.max_pdf_inflated_bytes
            )));
        }
    }
    Ok(())
}

fn memchr_stream(hay: &[u8]) -> Option<usize> {
    hay.windows(6).position(|w| w == b"stream")
}
