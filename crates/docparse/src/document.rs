//! The parser's output and the top-level parse: the format's parser,
//! then OCR of the pages without text, then the segments.

use serde::{Deserialize, Serialize};

use crate::error::ParseError;
use crate::format::{detect_format, Format};
use crate::geometry::PageSize;
use crate::limits::{Limits, OutputBudget};
use crate::ocr::{OcrError, OcrPage};
use crate::segments::{self, Block, Segment};
use crate::{docai, docx, html, pdf, raster, sheet, slides};

/// The parser's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedDocument {
    pub format: Format,
    pub full_text: String,
    pub segments: Vec<Segment>,
    /// Pages in the source (1 for formats without pages).
    pub page_count: u32,
    /// Zero-based pages left without text: no text layer and OCR absent,
    /// failed or empty. Their content is not searchable.
    pub pages_without_text: Vec<u32>,
    /// Zero-based pages whose text came from OCR.
    pub ocr_pages: Vec<u32>,
    /// Why OCR failed, per page (the page stays in `pages_without_text`).
    pub ocr_failures: Vec<(u32, String)>,
    /// Size of each page the boxes of the segments are on (formats with
    /// pages only).
    pub pages: Vec<PageSize>,
}

/// Text recognition for PDF pages without a text layer. The parser stays
/// free of I/O: the caller supplies the recogniser (tesseract in the
/// parser stage, a fake in tests).
pub trait PageOcr: Send + Sync {
    /// The words of zero-based page `page_idx` of the PDF `pdf`, with
    /// their boxes in points on the page as displayed.
    /// `size` is the page's displayed size in points when the parser knows
    /// it (a recogniser bounds its rendering by it).
    fn recognize(&self, pdf: &[u8], page_idx: u32, size: Option<&PageSize>) -> Result<OcrPage, OcrError>;

    /// The words of one image page (already oriented), with their boxes
    /// in its pixels.
    fn recognize_image(&self, image: &raster::GrayImage) -> Result<OcrPage, OcrError> {
        let _ = image;
        Err(OcrError::Unsupported("this recogniser reads PDF pages only"))
    }
}

impl ParsedDocument {
    pub fn char_count(&self) -> u64 {
        self.segments.last().map(|s| s.char_end).unwrap_or(0)
    }
}

/// Parses one document, without OCR.
pub fn parse(bytes: &[u8], content_type: &str, filename: &str, limits: &Limits) -> Result<ParsedDocument, ParseError> {
    parse_with_ocr(bytes, content_type, filename, limits, None)
}

/// Parses one document; PDF pages without a text layer go through `ocr`
/// when one is given.
pub fn parse_with_ocr(
    bytes: &[u8],
    content_type: &str,
    filename: &str,
    limits: &Limits,
    ocr: Option<&dyn PageOcr>,
) -> Result<ParsedDocument, ParseError> {
    if bytes.len() as u64 > limits.max_bytes {
        return Err(ParseError::TooLarge { size: bytes.len() as u64, limit: limits.max_bytes });
    }
    if bytes.is_empty() {
        return Err(ParseError::Empty);
    }
    let format = detect_format(content_type, filename)
        .ok_or_else(|| ParseError::UnsupportedContentType { content_type: content_type.to_string(), filename: filename.to_string() })?;
    let mut budget = OutputBudget::new(limits, bytes.len());
    // A presentation's slides whose only content is one picture, and its part.
    let mut slide_pictures: Vec<(u32, String)> = Vec::new();
    let (blocks, page_count, pages) = match format {
        Format::Text | Format::Markdown => (vec![Block::new(0, utf8(bytes)?)], 1, Vec::new()),
        Format::Html => (html::blocks(utf8(bytes)?, &mut budget)?, 1, Vec::new()),
        Format::Pdf => pdf::blocks(bytes, limits, &mut budget)?,
        Format::Docx => {
            let (b, n) = docx::blocks(bytes, limits, &mut budget)?;
            (b, n, Vec::new())
        }
        Format::Pptx | Format::Odp => {
            let deck = slides::blocks(format, bytes, limits, &mut budget)?;
            slide_pictures = deck.pictures;
            (deck.blocks, deck.slides, Vec::new())
        }
        Format::DocAi => docai::blocks(utf8(bytes)?, &mut budget)?,
        Format::Csv | Format::Tsv | Format::Xlsx | Format::Xls | Format::Ods => {
            let (b, n) = sheet::blocks(format, bytes, filename, limits, &mut budget)?;
            (b, n, Vec::new())
        }
        // Headers only: text comes from OCR below, page by page.
        Format::Png | Format::Jpeg | Format::Tiff | Format::Webp => {
            let sizes = raster::pages(format, bytes, limits)?;
            (Vec::new(), sizes.len() as u32, sizes)
        }
    };
    if page_count > limits.max_pages {
        return Err(ParseError::TooManyPages { pages: page_count.into(), limit: limits.max_pages });
    }
    let (mut blocks, mut ocr_pages, mut ocr_failures) = (blocks, Vec::new(), Vec::new());
    // The first image page that could not be decoded: the document's
    // failure if no page has text.
    let mut undecodable: Option<ParseError> = None;
    if let (Format::Pdf | Format::Png | Format::Jpeg | Format::Tiff | Format::Webp | Format::Pptx | Format::Odp, Some(ocr)) = (format, ocr)
    {
        let with_text: std::collections::HashSet<u32> = blocks.iter().filter(|b| !b.text.trim().is_empty()).map(|b| b.page_idx).collect();
        // A page without text is read; of a presentation, a slide that is
        // one picture.
        let wanted: Vec<u32> = if format.is_presentation() {
            slide_pictures.iter().map(|(p, _)| *p).collect()
        } else {
            (0..page_count).filter(|p| !with_text.contains(p)).collect()
        };
        // OCR is the costliest step (a process pair per page): bounded in
        // pages and in time per document, so a PDF of thousands of blank
        // pages cannot hold a parser for hours.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(limits.ocr_budget_secs);
        let (mut tried, mut refused) = (0u32, None::<String>);
        for page in wanted {
            if refused.is_none() && tried >= limits.ocr_max_pages {
                refused = Some(format!("not read: OCR reads at most {} pages of a document", limits.ocr_max_pages));
            }
            if refused.is_none() && std::time::Instant::now() >= deadline {
                refused = Some(format!("not read: the document's OCR time budget ({} s) is spent", limits.ocr_budget_secs));
            }
            if let Some(why) = &refused {
                ocr_failures.push((page, why.clone()));
                continue;
            }
            tried += 1;
            let words = match format {
                // A page that cannot be decoded (a TIFF page whose strips are
                // broken) is left without text, its reason in ocr_failures,
                // as a PDF page OCR cannot read: the other pages stay.
                Format::Png | Format::Jpeg | Format::Tiff | Format::Webp => match raster::page_gray(bytes, page, limits) {
                    Ok(grey) => ocr.recognize_image(&grey),
                    Err(e) => {
                        ocr_failures.push((page, e.to_string()));
                        undecodable.get_or_insert(e);
                        continue;
                    }
                },
                // A slide's picture is read as an image file is (its header,
                // pixel and byte limits, its orientation); its words keep
                // no boxes: they would be in the picture's pixels, not on
                // the slide, which has no geometry.
                Format::Pptx | Format::Odp => {
                    let part = slide_pictures.iter().find(|(p, _)| *p == page).map(|(_, part)| part.as_str()).unwrap_or_default();
                    match slides::picture(bytes, limits, part).and_then(|picture| raster::page_gray(&picture, 0, limits)) {
                        Ok(grey) => ocr.recognize_image(&grey).map(OcrPage::without_boxes),
                        Err(e) => {
                            ocr_failures.push((page, format!("the slide's picture {part}: {e}")));
                            continue;
                        }
                    }
                }
                _ => ocr.recognize(bytes, page, pages.iter().find(|s| s.page_idx == page)),
            };
            match words {
                Ok(words) if !words.is_blank() => {
                    let block = words.block(page);
                    budget.take(block.text.chars().count())?;
                    // Before the page's other blocks (a slide's notes).
                    blocks.insert(blocks.partition_point(|b| b.page_idx < page), block);
                    ocr_pages.push(page);
                }
                Ok(_) => {}
                Err(e) => ocr_failures.push((page, e.to_string())),
            }
        }
        // Stable: a page's own blocks keep their order.
        blocks.sort_by_key(|b| b.page_idx);
    }
    let (full_text, mut segments) = segments::assemble(&blocks, limits.max_segment_chars);
    // A slide is a section of its own: chunks stay within one.
    segments.iter_mut().for_each(|s| s.slide = format.is_presentation());
    let mut pages_without_text: Vec<u32> = (0..page_count).filter(|p| !segments.iter().any(|s| s.page_idx == *p)).collect();
    if segments.is_empty() {
        // An image none of whose pages has text, one of them broken: that
        // is why (a truncated PNG is corrupt_image, not no_text).
        if let Some(e) = undecodable {
            return Err(e);
        }
        return Err(ParseError::NoText(match format {
            Format::Pdf if ocr.is_some() => format!("{page_count} page(s) without a text layer, and OCR found no text"),
            Format::Pdf => format!("{page_count} page(s) without a text layer (OCR is not available)"),
            Format::Png | Format::Jpeg | Format::Tiff | Format::Webp if ocr.is_some() => {
                format!("{page_count} image page(s), and OCR found no text")
            }
            Format::Png | Format::Jpeg | Format::Tiff | Format::Webp => {
                format!("{page_count} image page(s): an image is read by OCR, which is not available")
            }
            Format::Csv | Format::Tsv | Format::Xlsx | Format::Xls | Format::Ods => {
                format!("{page_count} sheet(s), none with a non-empty cell")
            }
            Format::Pptx | Format::Odp if ocr.is_some() => {
                format!("{page_count} slide(s), none with text (a slide's pictures are read only when one picture is all it shows)")
            }
            Format::Pptx | Format::Odp => {
                format!("{page_count} slide(s), none with text (text in pictures is read by OCR, which is not available)")
            }
            _ => "the document holds only whitespace or markup".to_string(),
        }));
    }
    pages_without_text.dedup();
    ocr_pages.retain(|p| !pages_without_text.contains(p));
    ocr_failures.retain(|(p, _)| pages_without_text.contains(p));
    Ok(ParsedDocument { format, full_text, segments, page_count, pages_without_text, ocr_pages, ocr_failures, pages })
}

pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, ParseError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| ParseError::InvalidUtf8(e.valid_up_to()))
}
