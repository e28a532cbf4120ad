//! PDF with a text layer, page by page (pure Rust: pdf-extract over lopdf).

use std::panic::{catch_unwind, AssertUnwindSafe};

use pdf_extract::{Document, PlainTextOutput};

use crate::{Block, ParseError};

pub fn blocks(bytes: &[u8]) -> Result<(Vec<Block>, u32), ParseError> {
    if !bytes.starts_with(b"%PDF") && !bytes[..bytes.len().min(1024)].windows(4).any(|w| w == b"%PDF") {
        return Err(ParseError::CorruptPdf("no %PDF header".into()));
    }
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
    let page_count = pages.len() as u32;
    let mut blocks = Vec::new();
    for (i, page_num) in pages.keys().enumerate() {
        let mut text = String::new();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut out = PlainTextOutput::new(&mut text);
            pdf_extract::output_doc_page(&doc, &mut out, *page_num)
        }));
        match result {
            Ok(Ok(())) => {}
            // One unreadable page does not sink the document: it is
            // reported among the pages without text.
            Ok(Err(_)) | Err(_) => text.clear(),
        }
        if !text.trim().is_empty() {
            blocks.push(Block { page_idx: i as u32, text });
        }
    }
    Ok((blocks, page_count))
}
