//! PPTX (PresentationML): the slides in `sldIdLst` order through the
//! package's relationships, each slide's shape tree, its notes page and its
//! pictures.

use std::collections::HashMap;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::{attr, corrupt, end_cell, event_text, Item, Package, Shape, Slide, Table};
use crate::{Limits, ParseError};

const REL_OFFICE_DOCUMENT: &str = "/officeDocument";
const REL_SLIDE: &str = "/slide";
const REL_NOTES: &str = "/notesSlide";
const REL_IMAGE: &str = "/image";

/// Placeholders that are a slide's chrome, not its content.
const CHROME: &[&str] = &["sldNum", "dt", "ftr", "hdr", "sldImg"];

pub(super) fn pptx(package: &mut Package<'_>, limits: &Limits) -> Result<Vec<Slide>, ParseError> {
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
