//! ODP (OpenDocument presentation): the `draw:page`s of `content.xml`, in
//! document order, with their notes.

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::{attr, corrupt, end_cell, event_text, Item, Package, Shape, Slide, Table};
use crate::{Limits, ParseError};

/// ODF frames that are a slide's chrome, not its content.
const ODP_CHROME: &[&str] = &["page-number", "date-time", "footer", "header", "page"];

pub(super) fn odp(package: &mut Package<'_>, limits: &Limits) -> Result<Vec<Slide>, ParseError> {
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
