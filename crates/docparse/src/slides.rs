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
//! (`Quý: Q1; Doanh thu: 312,5; Lợi nhuận: 41,2`, see `sheet.rs` for why),
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
use quick_xml::Reader;

use crate::{Block, Format, Limits, OutputBudget, ParseError, OLE_MAGIC};

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
        Format::Odp => odp(&mut package, limits)?,
        _ => pptx(&mut package, limits)?,
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

// ---------------------------------------------------------------- PPTX

const REL_OFFICE_DOCUMENT: &str = "/officeDocument";
const REL_SLIDE: &str = "/slide";
const REL_NOTES: &str = "/notesSlide";
const REL_IMAGE: &str = "/image";

/// Placeholders that are a slide's chrome, not its content.
const CHROME: &[&str] = &["sldNum", "dt", "ftr", "hdr", "sldImg"];

fn pptx(package: &mut Package<'_>, limits: &Limits) -> Result<Vec<Slide>, ParseError> {
    let root = package.read("_rels/.rels")?.map(|x| relationships("", &x)).transpose()?.unwrap_or_default();
    let main = root
        .iter()
        .find(|r| r.kind.ends_with(REL_OFFICE_DOCUMENT))
        .map(|r| r.target.clone())
        .unwrap_or_else(|| "ppt/presentation.xml".to_string());
    let presentation = package.require(&main)?;
    let rels = match package.read(&rels_path(&main))? {
        Some(x) => relationships(&main, &x)?,
        None => Vec::new(),
    };
    let ids = slide_list(&presentation)?;
    if ids.len() as u64 > u64::from(limits.max_pages) {
        return Err(ParseError::TooManyPages { pages: ids.len() as u64, limit: limits.max_pages });
    }
    // The slides' parts by relationship id, looked up once each.
    let parts: HashMap<&str, &str> =
        rels.iter().filter(|r| r.kind.ends_with(REL_SLIDE)).map(|r| (r.id.as_str(), r.target.as_str())).rev().collect();
    let mut slides = Vec::with_capacity(ids.len());
    for (n, id) in ids.iter().enumerate() {
        let part = parts
            .get(id.as_str())
            .map(|p| p.to_string())
            .ok_or_else(|| corrupt(format!("slide {} ({id}) has no part in {}", n + 1, rels_path(&main))))?;
        let xml = package.read(&part)?.ok_or_else(|| corrupt(format!("slide {} ({part}) is missing", n + 1)))?;
        let (body, picture_ids) = shapes(&xml, false).map_err(|e| at_part(e, &part))?;
        let slide_rels = match package.read(&rels_path(&part))? {
            Some(x) => relationships(&part, &x)?,
            None => Vec::new(),
        };
        let notes_part = slide_rels.iter().find(|r| r.kind.ends_with(REL_NOTES)).map(|r| r.target.clone());
        // A picture whose relationship is missing (or external) has no
        // part to read.
        let pictures = picture_ids
            .iter()
            .filter_map(|id| slide_rels.iter().find(|r| &r.id == id && r.kind.ends_with(REL_IMAGE)).map(|r| r.target.clone()))
            .collect();
        let notes = match notes_part {
            Some(p) => match package.read(&p)? {
                Some(x) => shapes(&x, true).map_err(|e| at_part(e, &p))?.0,
                None => Vec::new(),
            },
            None => Vec::new(),
        };
        slides.push(Slide { body, notes, pictures });
    }
    Ok(slides)
}

fn at_part(e: ParseError, part: &str) -> ParseError {
    match e {
        ParseError::CorruptPresentation(why) => ParseError::CorruptPresentation(format!("{part}: {why}")),
        other => other,
    }
}

#[derive(Debug, Clone)]
struct Relationship {
    id: String,
    kind: String,
    /// The target part's name in the archive.
    target: String,
}

/// `dir/_rels/name.rels`, where the relationships of part `dir/name` are.
fn rels_path(part: &str) -> String {
    match part.rsplit_once('/') {
        Some((dir, name)) => format!("{dir}/_rels/{name}.rels"),
        None => format!("_rels/{part}.rels"),
    }
}

/// A relationship's target as a part name: relative to the directory of
/// the part it is from, or absolute from the package's root.
fn resolve(from: &str, target: &str) -> String {
    let mut parts: Vec<&str> = match target.strip_prefix('/') {
        Some(_) => Vec::new(),
        None => from.rsplit_once('/').map(|(dir, _)| dir.split('/').collect()).unwrap_or_default(),
    };
    for piece in target.trim_start_matches('/').split('/') {
        match piece {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

fn relationships(from: &str, xml: &[u8]) -> Result<Vec<Relationship>, ParseError> {
    let mut reader = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e) | Event::Empty(e)) if e.local_name().as_ref() == b"Relationship" => {
                if attr(&e, b"TargetMode", false).is_some_and(|m| m.eq_ignore_ascii_case("External")) {
                    continue;
                }
                if let (Some(id), Some(kind), Some(target)) = (attr(&e, b"Id", false), attr(&e, b"Type", false), attr(&e, b"Target", false))
                {
                    out.push(Relationship { id, kind, target: resolve(from, &target) });
                }
            }
            Ok(Event::Eof) => break,
            Err(e) => return Err(corrupt(format!("{}: {e}", rels_path(from)))),
            _ => {}
        }
        buf.clear();
    }
    Ok(out)
}

/// The relationship ids of `sldIdLst`, in the presentation's order.
fn slide_list(xml: &[u8]) -> Result<Vec<String>, ParseError> {
    let mut reader = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut in_list = false;
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) if e.local_name().as_ref() == b"sldIdLst" => in_list = true,
            Ok(Event::End(e)) if e.local_name().as_ref() == b"sldIdLst" => in_list = false,
            Ok(Event::Start(e) | Event::Empty(e)) if in_list && e.local_name().as_ref() == b"sldId" => {
                // `r:id`, the relationship; the unprefixed `id` is a number.
                if let Some(id) = attr(&e, b"id", true) {
                    out.push(id);
                }
            }
            Ok(Event::Eof) => break,
            Err(e) => return Err(corrupt(format!("presentation.xml: {e}"))),
            _ => {}
        }
        buf.clear();
    }
    Ok(out)
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

/// The text items of one slide (or, `notes`, of a notes page: its body
/// only), titles first, then the shape tree's order; and the relationship
/// ids of its pictures (`p:pic`'s `a:blip r:embed`).
fn shapes(xml: &[u8], notes: bool) -> Result<(Vec<Item>, Vec<String>), ParseError> {
    let mut reader = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let (mut titles, mut items) = (Vec::new(), Vec::new());
    let mut shape: Option<Shape> = None;
    let mut table: Option<Table> = None;
    let mut para: Option<String> = None;
    let mut in_text = false;
    // Inside a p:pic: its picture's relationship once seen.
    let mut pic: Option<Option<String>> = None;
    let mut pictures = Vec::new();
    // Inside mc:Fallback: the same content again, for older readers.
    let mut fallback = 0u32;
    loop {
        let event = match reader.read_event_into(&mut buf) {
            Ok(Event::Eof) => break,
            Ok(e) => e,
            Err(e) => return Err(corrupt(e)),
        };
        if fallback > 0 {
            match &event {
                Event::Start(e) if e.local_name().as_ref() == b"Fallback" => fallback += 1,
                Event::End(e) if e.local_name().as_ref() == b"Fallback" => fallback -= 1,
                _ => {}
            }
            buf.clear();
            continue;
        }
        match &event {
            Event::Start(e) => match e.local_name().as_ref() {
                b"Fallback" => fallback = 1,
                b"sp" => shape = Some(Shape::default()),
                b"pic" => pic = Some(None),
                b"blip" => blip(e, &mut pic),
                b"ph" => placeholder(e, &mut shape),
                b"tbl" => table = Some(Table::default()),
                b"tr" => {
                    if let Some(t) = &mut table {
                        t.row.clear();
                        t.col = 0;
                    }
                }
                b"tc" => start_cell(e, &mut table),
                b"p" => para = Some(String::new()),
                b"t" => in_text = true,
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                b"ph" => placeholder(e, &mut shape),
                b"blip" => blip(e, &mut pic),
                b"br" => {
                    if let Some(p) = &mut para {
                        p.push('\n');
                    }
                }
                b"tc" => {
                    start_cell(e, &mut table);
                    end_cell(&mut table);
                }
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                b"t" => in_text = false,
                b"pic" => {
                    if let Some(Some(id)) = pic.take() {
                        pictures.push(id);
                    }
                }
                b"p" => {
                    if let Some(text) = para.take() {
                        match (&mut table, &mut shape) {
                            (Some(Table { cell: Some((_, cell)), .. }), _) => {
                                if !cell.is_empty() {
                                    cell.push(' ');
                                }
                                cell.push_str(&text);
                            }
                            (_, Some(s)) => s.paragraphs.push(text),
                            _ => {}
                        }
                    }
                }
                b"tc" => end_cell(&mut table),
                b"tr" => {
                    if let Some(t) = &mut table {
                        let row = std::mem::take(&mut t.row);
                        if row.iter().any(|(_, c)| !c.is_empty()) {
                            t.rows.push(row);
                        }
                    }
                }
                b"tbl" => {
                    if let Some(t) = table.take() {
                        if !t.rows.is_empty() {
                            items.push(Item::Table(t.rows));
                        }
                    }
                }
                b"sp" => {
                    if let Some(s) = shape.take() {
                        let kind = s.placeholder.as_deref();
                        let keep = if notes { matches!(kind, None | Some("body")) } else { !kind.is_some_and(|k| CHROME.contains(&k)) };
                        let paragraphs: Vec<String> = s.paragraphs.into_iter().filter(|p| !p.trim().is_empty()).collect();
                        if keep && !paragraphs.is_empty() {
                            match kind {
                                Some("title" | "ctrTitle") => titles.push(Item::Text(paragraphs)),
                                _ => items.push(Item::Text(paragraphs)),
                            }
                        }
                    }
                }
                _ => {}
            },
            other if in_text => {
                if let (Some(p), Some(text)) = (&mut para, event_text(other)?) {
                    p.push_str(&text);
                }
            }
            _ => {}
        }
        buf.clear();
    }
    titles.extend(items);
    Ok((titles, pictures))
}

/// A picture's relationship: the first `a:blip r:embed` of a `p:pic` (an
/// SVG's PNG fallback is that blip; `r:link`, a file outside, is not read).
fn blip(e: &BytesStart<'_>, pic: &mut Option<Option<String>>) {
    if let Some(slot @ None) = pic {
        *slot = attr(e, b"embed", true);
    }
}

fn placeholder(e: &BytesStart<'_>, shape: &mut Option<Shape>) {
    if let Some(s) = shape {
        // A placeholder without a type is an object placeholder (content).
        s.placeholder = Some(attr(e, b"type", false).unwrap_or_else(|| "obj".to_string()));
    }
}

fn start_cell(e: &BytesStart<'_>, table: &mut Option<Table>) {
    if let Some(t) = table {
        // A cell merged into the one before (hMerge/vMerge) is empty and
        // still a column; gridSpan widens a cell over columns.
        let span = attr(e, b"gridSpan", false).and_then(|s| s.parse::<u32>().ok()).unwrap_or(1).clamp(1, 1024);
        t.cell = Some((t.col, String::new()));
        t.col = t.col.saturating_add(span);
    }
}

fn end_cell(table: &mut Option<Table>) {
    if let Some(t) = table {
        if let Some((col, text)) = t.cell.take() {
            t.row.push((col, one_line(&text)));
        }
    }
}

// ----------------------------------------------------------------- ODP

/// ODF frames that are a slide's chrome, not its content.
const ODP_CHROME: &[&str] = &["page-number", "date-time", "footer", "header", "page"];

fn odp(package: &mut Package<'_>, limits: &Limits) -> Result<Vec<Slide>, ParseError> {
    if let Some(manifest) = package.read("META-INF/manifest.xml")? {
        if manifest.windows(b"encryption-data".len()).any(|w| w == b"encryption-data") {
            return Err(ParseError::EncryptedPresentation);
        }
    }
    let xml = package.require("content.xml")?;
    let mut reader = Reader::from_reader(xml.as_slice());
    let mut buf = Vec::new();
    let mut slides: Vec<Slide> = Vec::new();
    // The slide being read, its title items apart, and whether in its notes.
    let mut slide: Option<(Slide, Vec<Item>)> = None;
    let mut in_notes = false;
    // The outermost frame or shape being read: its class and paragraphs.
    let mut frame: Option<(u32, Shape)> = None;
    let mut depth = 0u32;
    let mut table: Option<Table> = None;
    let mut para: Option<String> = None;
    loop {
        let event = match reader.read_event_into(&mut buf) {
            Ok(Event::Eof) => break,
            Ok(e) => e,
            Err(e) => return Err(corrupt(format!("content.xml: {e}"))),
        };
        match &event {
            Event::Start(e) => {
                depth += 1;
                match e.local_name().as_ref() {
                    b"page" if slide.is_none() => {
                        if slides.len() as u64 >= u64::from(limits.max_pages) {
                            return Err(ParseError::TooManyPages { pages: slides.len() as u64 + 1, limit: limits.max_pages });
                        }
                        slide = Some((Slide::default(), Vec::new()));
                    }
                    b"notes" if slide.is_some() => in_notes = true,
                    b"frame" | b"custom-shape" | b"rect" | b"ellipse" | b"polygon" | b"path" if frame.is_none() => {
                        frame = Some((depth, Shape { placeholder: attr(e, b"class", true), paragraphs: Vec::new() }));
                    }
                    b"table" => table = Some(Table::default()),
                    b"table-row" => {
                        if let Some(t) = &mut table {
                            t.row.clear();
                            t.col = 0;
                        }
                    }
                    b"table-cell" | b"covered-table-cell" => odp_cell(e, &mut table),
                    b"p" | b"h" if para.is_none() => para = Some(String::new()),
                    b"image" if !in_notes => odp_image(e, &mut slide),
                    _ => {}
                }
            }
            Event::Empty(e) => match e.local_name().as_ref() {
                b"image" if !in_notes => odp_image(e, &mut slide),
                b"s" => {
                    if let Some(p) = &mut para {
                        let n = attr(e, b"c", true).and_then(|c| c.parse::<usize>().ok()).unwrap_or(1).min(64);
                        p.extend(std::iter::repeat_n(' ', n));
                    }
                }
                b"tab" => {
                    if let Some(p) = &mut para {
                        p.push('\t');
                    }
                }
                b"line-break" => {
                    if let Some(p) = &mut para {
                        p.push('\n');
                    }
                }
                b"table-cell" | b"covered-table-cell" => {
                    odp_cell(e, &mut table);
                    end_cell(&mut table);
                }
                _ => {}
            },
            Event::End(e) => {
                match e.local_name().as_ref() {
                    b"p" | b"h" => {
                        if let Some(text) = para.take() {
                            match (&mut table, &mut frame) {
                                (Some(Table { cell: Some((_, cell)), .. }), _) => {
                                    if !cell.is_empty() {
                                        cell.push(' ');
                                    }
                                    cell.push_str(&text);
                                }
                                (_, Some((_, s))) => s.paragraphs.push(text),
                                _ => {
                                    if let Some((s, _)) = &mut slide {
                                        let to = if in_notes { &mut s.notes } else { &mut s.body };
                                        if !text.trim().is_empty() {
                                            to.push(Item::Text(vec![text]));
                                        }
                                    }
                                }
                            }
                        }
                    }
                    b"table-cell" | b"covered-table-cell" => end_cell(&mut table),
                    b"table-row" => {
                        if let Some(t) = &mut table {
                            let row = std::mem::take(&mut t.row);
                            if row.iter().any(|(_, c)| !c.is_empty()) {
                                t.rows.push(row);
                            }
                        }
                    }
                    b"table" => {
                        if let (Some(t), Some((s, _))) = (table.take(), &mut slide) {
                            if !t.rows.is_empty() {
                                let to = if in_notes { &mut s.notes } else { &mut s.body };
                                to.push(Item::Table(t.rows));
                            }
                        }
                    }
                    b"notes" => in_notes = false,
                    b"page" => {
                        if let Some((mut s, titles)) = slide.take() {
                            let body = std::mem::take(&mut s.body);
                            s.body = titles.into_iter().chain(body).collect();
                            slides.push(s);
                        }
                    }
                    _ => {}
                }
                if frame.as_ref().is_some_and(|(d, _)| *d == depth) {
                    if let (Some((_, f)), Some((s, titles))) = (frame.take(), &mut slide) {
                        let class = f.placeholder.as_deref();
                        let paragraphs: Vec<String> = f.paragraphs.into_iter().filter(|p| !p.trim().is_empty()).collect();
                        let keep = !class.is_some_and(|c| ODP_CHROME.contains(&c)) && !paragraphs.is_empty();
                        if keep {
                            match (in_notes, class) {
                                (true, _) => s.notes.push(Item::Text(paragraphs)),
                                (false, Some("title")) => titles.push(Item::Text(paragraphs)),
                                (false, _) => s.body.push(Item::Text(paragraphs)),
                            }
                        }
                    }
                }
                depth = depth.saturating_sub(1);
            }
            other => {
                if let (Some(p), Some(text)) = (&mut para, event_text(other)?) {
                    p.push_str(&text);
                }
            }
        }
        buf.clear();
    }
    Ok(slides)
}

/// A `draw:image` of a slide: its picture in the package (`Pictures/…`);
/// a linked file outside it and an embedded object's replacement picture
/// (`ObjectReplacements/…`, a chart's or a formula's) are not pictures.
fn odp_image(e: &BytesStart<'_>, slide: &mut Option<(Slide, Vec<Item>)>) {
    let (Some((s, _)), Some(href)) = (slide, attr(e, b"href", true)) else { return };
    let part = href.trim_start_matches("./");
    if !part.is_empty() && !part.contains(':') && !part.starts_with('/') && !part.starts_with("ObjectReplacements/") {
        s.pictures.push(part.to_string());
    }
}

fn odp_cell(e: &BytesStart<'_>, table: &mut Option<Table>) {
    if let Some(t) = table {
        let repeat = attr(e, b"number-columns-repeated", true).and_then(|s| s.parse::<u32>().ok()).unwrap_or(1).clamp(1, 1024);
        t.cell = Some((t.col, String::new()));
        t.col = t.col.saturating_add(repeat);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_against_their_part() {
        assert_eq!(resolve("ppt/presentation.xml", "slides/slide1.xml"), "ppt/slides/slide1.xml");
        assert_eq!(resolve("ppt/slides/slide1.xml", "../notesSlides/notesSlide1.xml"), "ppt/notesSlides/notesSlide1.xml");
        assert_eq!(resolve("", "ppt/presentation.xml"), "ppt/presentation.xml");
        assert_eq!(resolve("ppt/slides/slide1.xml", "/ppt/x/./y.xml"), "ppt/x/y.xml");
        assert_eq!(rels_path("ppt/slides/slide1.xml"), "ppt/slides/_rels/slide1.xml.rels");
        assert_eq!(rels_path("ppt/presentation.xml"), "ppt/_rels/presentation.xml.rels");
    }
}
