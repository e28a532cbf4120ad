//! DOCX: paragraphs of `word/document.xml`, with explicit and last-rendered
//! page breaks as page boundaries. The archive is read under limits so a
//! decompression bomb is refused instead of exhausting memory.

use std::io::{Cursor, Read};

use quick_xml::events::Event;
use quick_xml::Reader;

use crate::{Block, Limits, OutputBudget, ParseError};

pub fn blocks(bytes: &[u8], limits: &Limits, budget: &mut OutputBudget) -> Result<(Vec<Block>, u32), ParseError> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| ParseError::CorruptDocx(e.to_string()))?;
    // The sizes an archive declares are only a first look (an honest bomb
    // is refused before inflating anything); what is read below is bounded
    // by the bytes actually inflated, since a lying archive declares little.
    let mut declared: u64 = 0;
    for i in 0..archive.len() {
        let f = archive.by_index_raw(i).map_err(|e| ParseError::CorruptDocx(e.to_string()))?;
        declared = declared.saturating_add(f.size());
        let ratio = f.size() / f.compressed_size().max(1);
        if f.size() > 1024 * 1024 && ratio > limits.max_compression_ratio {
            return Err(ParseError::DecompressionBomb(format!("{} expands {ratio}x ({} bytes)", f.name(), f.size())));
        }
    }
    if declared > limits.max_unzipped_bytes {
        return Err(ParseError::DecompressionBomb(format!("the archive expands to {declared} bytes, over {}", limits.max_unzipped_bytes)));
    }
    let mut file = archive.by_name("word/document.xml").map_err(|_| ParseError::CorruptDocx("word/document.xml is missing".into()))?;
    // At most the ratio allowed of what the entry really occupies in the
    // archive (with 1 MiB of slack for small entries), and never over the
    // archive limit: read one byte more than that to tell.
    let allowed =
        file.compressed_size().saturating_mul(limits.max_compression_ratio).saturating_add(1024 * 1024).min(limits.max_unzipped_bytes);
    let mut xml = Vec::new();
    (&mut file).take(allowed + 1).read_to_end(&mut xml).map_err(|e| ParseError::CorruptDocx(e.to_string()))?;
    if xml.len() as u64 > allowed {
        return Err(ParseError::DecompressionBomb(format!(
            "word/document.xml inflates past {allowed} bytes ({} compressed)",
            file.compressed_size()
        )));
    }
    let (blocks, pages) = paragraphs(&xml)?;
    for b in &blocks {
        budget.take(b.text.chars().count())?;
    }
    Ok((blocks, pages))
}

fn paragraphs(xml: &[u8]) -> Result<(Vec<Block>, u32), ParseError> {
    let mut reader = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut blocks = Vec::new();
    let mut page: u32 = 0;
    let mut current = String::new();
    let mut in_text = false;
    let mut pending_break = false;
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => match e.local_name().as_ref() {
                b"t" => in_text = true,
                b"p" => current.clear(),
                _ => {}
            },
            Ok(Event::Empty(e)) => match e.local_name().as_ref() {
                b"tab" => current.push('\t'),
                b"br" | b"cr" => {
                    let is_page = e.attributes().flatten().any(|a| a.key.local_name().as_ref() == b"type" && a.value.as_ref() == b"page");
                    if is_page {
                        pending_break = true;
                    } else {
                        current.push('\n');
                    }
                }
                b"lastRenderedPageBreak" => pending_break = true,
                _ => {}
            },
            Ok(Event::Text(t)) if in_text => {
                let text = t.decode().map_err(|e| ParseError::CorruptDocx(e.to_string()))?;
                let text = quick_xml::escape::unescape(&text).map_err(|e| ParseError::CorruptDocx(e.to_string()))?;
                current.push_str(&text);
            }
            Ok(Event::GeneralRef(r)) if in_text => {
                let name = r.decode().map_err(|e| ParseError::CorruptDocx(e.to_string()))?;
                let entity = format!("&{name};");
                if let Ok(s) = quick_xml::escape::unescape(&entity) {
                    current.push_str(&s);
                }
            }
            Ok(Event::End(e)) => match e.local_name().as_ref() {
                b"t" => in_text = false,
                b"p" => {
                    if pending_break {
                        // A break inside a paragraph starts the next page
                        // with this paragraph's text.
                        page += 1;
                        pending_break = false;
                    }
                    if !current.trim().is_empty() {
                        blocks.push(Block::new(page, std::mem::take(&mut current)));
                    }
                    current.clear();
                }
                _ => {}
            },
            Ok(Event::Eof) => break,
            Err(e) => return Err(ParseError::CorruptDocx(format!("document.xml: {e}"))),
            _ => {}
        }
        buf.clear();
    }
    Ok((blocks, page + 1))
}
