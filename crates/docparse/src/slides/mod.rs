//! Presentations: PPTX (PresentationML) and ODP (OpenDocument), read into
//! the blocks every format becomes.
//!
//! **Slides.** Each slide is a page of the document (`page_idx` is its
//! position in the presentation, so a citation on `page_idx` 6 is on slide
//! 7). A PPTX's slides are taken in the order of `presentation.xml`'s
//! `sldIdLst`, the order the presentation shows them (not the order of the
//! part names: `slide10.xml` may come before `slide2.xml`, and a moved
//! slide keeps its part); an ODP's are its `draw:page`s in document order.
//!
//! **Reading order within a slide.** The title placeholders first
//! (`title`, `ctrTitle`; ODP `presentation:class="title"`), then every
//! other shape in the order of the slide's shape tree (groups in place),
//! which is the order the slide's author and a screen reader go through
//! them; each paragraph a block. Placeholders that are the slide's chrome
//! and not its content (slide number, date, footer, header) are left out.
//! Then the speaker notes: the body of the slide's notes page, after the
//! slide's own text. Text in pictures is not read, except on a slide whose
//! only content is one picture (no text on the slide itself; its notes do
//! not count): that picture (a PPTX `p:pic`'s media part, found through the
//! slide's relationships; an ODP `draw:image`) is handed to the caller
//! ([`Presentation::pictures`]), which reads it through OCR as it reads an
//! image file. Charts and SmartArt are not read (their text lives in parts
//! of their own).
//!
//! **Tables.** A table's first row is its header, kept as such
//! (`Quý | Doanh thu | Lợi nhuận`), and every other row is written with the
//! header's column names, as a spreadsheet's rows are
//! (`Quý: Q1; Doanh thu: 312,5; Lợi nhuận: 41,2`, see `sheet/mod.rs` for why),
//! so a retrieved or cited row is never numbers without their columns. A
//! one-row table is its cells joined by ` | `.
//!
//! **Bounds.** The archive's declared sizes are a first look (an honest
//! bomb is refused before anything inflates); every part read is then
//! bounded by what really inflates: its compressed size times the allowed
//! ratio (plus 1 MiB for small parts), and all parts together by
//! `max_unzipped_bytes`. Only the parts that hold text are inflated, and
//! of the media only a lone picture OCR reads ([`picture`], one at a time,
//! under the same bounds). A presentation with more slides than `max_pages` is refused
//! from its slide list, before any slide is read.
//!
//! **Hostile input.** Not a zip archive, a broken archive or XML, a slide
//! the list names but the archive lacks: `corrupt_presentation`. A
//! password-protected PPTX (an OLE compound file holding the encrypted
//! package) or an ODP with encrypted parts: `encrypted_presentation`.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use quick_xml::events::{BytesStart, Event};

use crate::{Block, Format, Limits, OutputBudget, ParseError, OLE_MAGIC};

mod odp;
mod pptx;

/// A presentation read: its slides' text, and the pictures OCR may read.
pub(crate) struct Presentation {
    /// The slides' text in reading order, slide after slide.
    pub blocks: Vec<Block>,
    pub slides: u32,
    /// Each slide whose only content is one picture, and that picture's
    /// part in the archive ([`picture`] reads it), in slide order.
    pub pictures: Vec<(u32, String)>,
}

/// The blocks of a presentation (its slides' text in reading order), its
/// number of slides and its lone pictures.
pub(crate) fn blocks(format: Format, bytes: &[u8], limits: &Limits, budget: &mut OutputBudget) -> Result<Presentation, ParseError> {
    if bytes.starts_with(OLE_MAGIC) {
        return Err(ole(bytes));
    }
    let mut package = Package::open(bytes, limits)?;
    let slides = match format {
        Format::Odp => odp::odp(&mut package, limits)?,
        _ => pptx::pptx(&mut package, limits)?,
    };
    let mut out = Vec::new();
    let mut pictures = Vec::new();
    for (idx, slide) in (0u32..).zip(&slides) {
        for item in slide.body.iter().chain(&slide.notes) {
            item.write(idx, budget, &mut out)?;
        }
        if let ([], [picture]) = (slide.body.as_slice(), slide.pictures.as_slice()) {
            pictures.push((idx, picture.clone()));
        }
    }
    Ok(Presentation { blocks: out, slides: slides.len() as u32, pictures })
}

/// The bytes of a picture of the presentation (a part [`blocks`] named),
/// inflated under the same bounds as the parts that hold text.
pub(crate) fn picture(bytes: &[u8], limits: &Limits, part: &str) -> Result<Vec<u8>, ParseError> {
    Package::open(bytes, limits)?.require(part)
}

/// An OLE compound file sent as a presentation: Office's password
/// protection (the encrypted package inside an OLE file), or a PowerPoint
/// 97-2003 file under a new name.
fn ole(bytes: &[u8]) -> ParseError {
    let name: Vec<u8> = "EncryptedPackage".encode_utf16().flat_map(u16::to_le_bytes).collect();
    if bytes.windows(name.len()).any(|w| w == name.as_slice()) {
        ParseError::EncryptedPresentation
    } else {
        ParseError::CorruptPresentation(
            "an OLE compound file, not a zip archive: a PowerPoint 97-2003 presentation (.ppt) is not read; save it as .pptx".into(),
        )
    }
}

fn corrupt(e: impl std::fmt::Display) -> ParseError {
    ParseError::CorruptPresentation(e.to_string())
}

/// The zip archive, each part inflated under the bounds.
struct Package<'a> {
    archive: zip::ZipArchive<Cursor<&'a [u8]>>,
    /// Bytes that may still be inflated from the whole archive.
    left: u64,
    ratio: u64,
}

impl<'a> Package<'a> {
    fn open(bytes: &'a [u8], limits: &Limits) -> Result<Self, ParseError> {
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| corrupt(format!("not a readable zip archive: {e}")))?;
        let mut declared: u64 = 0;
        for i in 0..archive.len() {
            let f = archive.by_index_raw(i).map_err(corrupt)?;
            declared = declared.saturating_add(f.size());
            let ratio = f.size() / f.compressed_size().max(1);
            if f.size() > 1024 * 1024 && ratio > limits.max_compression_ratio {
                return Err(ParseError::DecompressionBomb(format!("{} expands {ratio}x ({} bytes)", f.name(), f.size())));
            }
        }
        if declared > limits.max_unzipped_bytes {
            return Err(ParseError::DecompressionBomb(format!(
                "the archive expands to {declared} bytes, over {}",
                limits.max_unzipped_bytes
            )));
        }
        Ok(Package { archive, left: limits.max_unzipped_bytes, ratio: limits.max_compression_ratio })
    }

    /// The part's bytes, None when the archive has no such part.
    fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, ParseError> {
        let mut file = match self.archive.by_name(name) {
            Ok(f) => f,
            Err(zip::result::ZipError::FileNotFound) => return Ok(None),
            Err(e) => return Err(corrupt(format!("{name}: {e}"))),
        };
        let allowed = file.compressed_size().saturating_mul(self.ratio).saturating_add(1024 * 1024).min(self.left);
        let mut out = Vec::new();
        (&mut file).take(allowed + 1).read_to_end(&mut out).map_err(|e| corrupt(format!("{name}: {e}")))?;
        if out.len() as u64 > allowed {
            let why = if allowed == self.left {
                format!("the archive inflates past its limit (at {name})")
            } else {
                format!("{name} inflates past {allowed} bytes from {} compressed", file.compressed_size())
            };
            return Err(ParseError::DecompressionBomb(why));
        }
        self.left -= out.len() as u64;
        Ok(Some(out))
    }

    fn require(&mut self, name: &str) -> Result<Vec<u8>, ParseError> {
        self.read(name)?.ok_or_else(|| corrupt(format!("{name} is missing")))
    }
}

/// What a slide shows, in reading order.
#[derive(Debug, Default)]
struct Slide {
    body: Vec<Item>,
    notes: Vec<Item>,
    /// The parts of the slide's pictures.
    pictures: Vec<String>,
}

#[derive(Debug)]
enum Item {
    /// A shape's paragraphs.
    Text(Vec<String>),
    /// A table's rows, each its cells by column.
    Table(Vec<Vec<(u32, String)>>),
}

impl Item {
    fn write(&self, page_idx: u32, budget: &mut OutputBudget, out: &mut Vec<Block>) -> Result<(), ParseError> {
        let mut push = |text: String| -> Result<(), ParseError> {
            if !text.trim().is_empty() {
                budget.take(text.chars().count() + 2)?;
                out.push(Block::new(page_idx, text));
            }
            Ok(())
        };
        match self {
            Item::Text(paragraphs) => {
                for p in paragraphs {
                    push(p.clone())?;
                }
            }
            Item::Table(rows) => {
                let Some(header) = rows.first() else { return Ok(()) };
                push(header.iter().filter(|(_, t)| !t.is_empty()).map(|(_, t)| t.as_str()).collect::<Vec<_>>().join(" | "))?;
                let names: HashMap<u32, &str> =
                    header.iter().map(|(c, t)| (*c, t.trim_end_matches(':').trim())).filter(|(_, t)| !t.is_empty()).collect();
                for row in &rows[1..] {
                    let text = row
                        .iter()
                        .filter(|(_, t)| !t.is_empty())
                        .map(|(c, t)| match names.get(c) {
                            Some(name) => format!("{name}: {t}"),
                            None => t.clone(),
                        })
                        .collect::<Vec<_>>()
                        .join("; ");
                    push(text)?;
                }
            }
        }
        Ok(())
    }
}

/// A cell's or a paragraph's text: runs of whitespace one space (a table
/// cell stays on one line).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn attr(e: &BytesStart<'_>, local: &[u8], prefixed: bool) -> Option<String> {
    e.attributes().flatten().find(|a| a.key.local_name().as_ref() == local && a.key.prefix().is_some() == prefixed).map(|a| {
        let raw = String::from_utf8_lossy(&a.value).into_owned();
        quick_xml::escape::unescape(&raw).map(|s| s.into_owned()).unwrap_or(raw)
    })
}

/// The text of an XML text or entity event.
fn event_text(event: &Event<'_>) -> Result<Option<String>, ParseError> {
    Ok(match event {
        Event::Text(t) => {
            let text = t.decode().map_err(corrupt)?;
            Some(quick_xml::escape::unescape(&text).map_err(corrupt)?.into_owned())
        }
        Event::CData(t) => Some(String::from_utf8_lossy(t).into_owned()),
        Event::GeneralRef(r) => {
            let name = r.decode().map_err(corrupt)?;
            quick_xml::escape::unescape(&format!("&{name};")).ok().map(|s| s.into_owned())
        }
        _ => None,
    })
}

/// A shape being read: its placeholder type and paragraphs.
#[derive(Debug, Default)]
struct Shape {
    placeholder: Option<String>,
    paragraphs: Vec<String>,
}

/// A table being read.
#[derive(Debug, Default)]
struct Table {
    rows: Vec<Vec<(u32, String)>>,
    row: Vec<(u32, String)>,
    col: u32,
    cell: Option<(u32, String)>,
}

fn end_cell(table: &mut Option<Table>) {
    if let Some(t) = table {
        if let Some((col, text)) = t.cell.take() {
            t.row.push((col, one_line(&text)));
        }
    }
}
