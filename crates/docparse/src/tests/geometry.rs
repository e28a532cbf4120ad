//! Boxes and line ranges against an independent reader: poppler's
//! `pdftotext -bbox` (Debian poppler-utils, installed by `scripts/stack`)
//! gives each word's box from the PDF's own glyph positions. The boxes of a
//! cited span must enclose exactly the words of that span, within a point.

use std::path::PathBuf;
use std::process::Command;

use crate::geometry::span_boxes;
use crate::{parse, parse_with_ocr, Format, Limits, OcrPage, OcrWord, PageBox, ParsedDocument, Rect};

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn parse_fixture(name: &str) -> ParsedDocument {
    let bytes = std::fs::read(fixture_path(name)).unwrap();
    parse(&bytes, "application/pdf", name, &Limits::default()).unwrap()
}

/// Words per page as poppler reads them.
fn poppler_words(name: &str) -> Vec<Vec<(Rect, String)>> {
    let out = Command::new("pdftotext")
        .arg("-bbox")
        .arg(fixture_path(name))
        .arg("-")
        .output()
        .expect("pdftotext (Debian poppler-utils; scripts/stack installs it)");
    assert!(out.status.success());
    let xml = String::from_utf8(out.stdout).unwrap();
    let attr = |line: &str, key: &str| -> f32 {
        let at = line.find(&format!("{key}=\"")).unwrap() + key.len() + 2;
        line[at..].split('"').next().unwrap().parse().unwrap()
    };
    let mut pages: Vec<Vec<(Rect, String)>> = Vec::new();
    for line in xml.lines().map(str::trim) {
        if line.starts_with("<page ") {
            pages.push(Vec::new());
        } else if line.starts_with("<word ") {
            let rect = Rect { x0: attr(line, "xMin"), y0: attr(line, "yMin"), x1: attr(line, "xMax"), y1: attr(line, "yMax") };
            let text = line.split('>').nth(1).unwrap().split('<').next().unwrap().replace("&amp;", "&");
            pages.last_mut().unwrap().push((rect, text));
        }
    }
    pages
}

fn boxes_of(doc: &ParsedDocument, needle: &str) -> (Vec<PageBox>, String) {
    let byte = doc.full_text.find(needle).unwrap_or_else(|| panic!("{needle:?} not in the text"));
    let start = doc.full_text[..byte].chars().count() as u64;
    let end = start + needle.chars().count() as u64;
    let boxes = span_boxes(doc.segments.iter().flat_map(|s| &s.boxes), start, end);
    (boxes, needle.to_string())
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1.0
}

/// Every box holds exactly the poppler words whose centre it contains,
/// those words are the cited text in order, and the box is their union
/// within a point on every side.
fn assert_encloses_exactly(name: &str, needle: &str) -> Vec<PageBox> {
    let doc = parse_fixture(name);
    let words = poppler_words(name);
    let (boxes, text) = boxes_of(&doc, needle);
    assert!(!boxes.is_empty(), "{name}: no boxes for {needle:?}");
    let mut seen: Vec<String> = Vec::new();
    for b in &boxes {
        let inside: Vec<&(Rect, String)> = words[b.page_idx as usize]
            .iter()
            .filter(|(r, _)| {
                let (cx, cy) = ((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0);
                cx >= b.rect.x0 && cx <= b.rect.x1 && cy >= b.rect.y0 && cy <= b.rect.y1
            })
            .collect();
        assert!(!inside.is_empty(), "{name}: box {b:?} holds no word");
        let union = inside.iter().map(|(r, _)| *r).reduce(Rect::union).unwrap();
        assert!(
            close(union.x0, b.rect.x0) && close(union.x1, b.rect.x1) && close(union.y0, b.rect.y0) && close(union.y1, b.rect.y1),
            "{name}: box {:?} vs the words' {union:?} ({:?})",
            b.rect,
            inside.iter().map(|w| &w.1).collect::<Vec<_>>()
        );
        seen.extend(inside.iter().map(|w| w.1.clone()));
    }
    assert_eq!(seen.join(" "), text.split_whitespace().collect::<Vec<_>>().join(" "), "{name}: the boxes hold other words");
    boxes
}

#[test]
fn one_column_span_across_a_line_break_has_a_box_per_line() {
    let boxes =
        assert_encloses_exactly("geometry-one-column.pdf", "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng\n12,4% so với năm 2022");
    assert_eq!(boxes.len(), 2);
    assert!(boxes[1].rect.y0 > boxes[0].rect.y1 - 1.0, "the second line is below the first");
    // A span inside a line: narrower than the line.
    let inner = assert_encloses_exactly("geometry-one-column.pdf", "187,3 tỷ đồng.");
    assert_eq!(inner.len(), 1);
    // Second page.
    let p2 = assert_encloses_exactly("geometry-one-column.pdf", "tổng dư nợ, được phòng ngừa");
    assert_eq!(p2[0].page_idx, 1);
}

#[test]
fn two_columns_keep_their_boxes_in_their_column() {
    for needle in ["doanh thu quý một\ntăng đều", "lợi nhuận gộp\nđạt 312 tỷ đồng", "phòng\nngừa bằng hợp đồng"]
    {
        let boxes = assert_encloses_exactly("geometry-two-columns.pdf", needle);
        let left = boxes[0].rect.x0 < 300.0;
        assert!(boxes.iter().all(|b| (b.rect.x1 < 300.0) == left), "{needle:?} crosses the gutter: {boxes:?}");
    }
}

#[test]
fn a_rotated_page_gives_boxes_on_the_page_as_displayed() {
    let doc = parse_fixture("geometry-rotated.pdf");
    assert_eq!((doc.pages[1].width.round(), doc.pages[1].height.round()), (842.0, 595.0), "turned: landscape");
    let boxes = assert_encloses_exactly("geometry-rotated.pdf", "bảng lương tháng 12\nđược in");
    // Shown turned clockwise, the lines run down the page.
    assert!(boxes.iter().all(|b| b.rect.y1 - b.rect.y0 > b.rect.x1 - b.rect.x0));
    assert!(boxes.iter().all(|b| b.rect.x1 <= doc.pages[1].width));
    assert_encloses_exactly("geometry-rotated.pdf", "đọc bình thường.");
}

#[test]
fn line_ranges_agree_between_a_text_file_and_the_pdf_made_from_it() {
    let text = std::fs::read(fixture_path("geometry-source.txt")).unwrap();
    let txt = parse(&text, "text/plain", "source.txt", &Limits::default()).unwrap();
    let pdf = parse_fixture("geometry-one-column.pdf");
    assert_eq!(pdf.format, Format::Pdf);
    assert_eq!(txt.full_text, pdf.full_text, "same content, same full text");
    let lines = |d: &ParsedDocument| d.segments.iter().map(|s| (s.text.clone(), s.line_start, s.line_end)).collect::<Vec<_>>();
    assert_eq!(lines(&txt), lines(&pdf));
    // Lines count every newline of the full text.
    for s in &txt.segments {
        let before = txt.full_text.chars().take(s.char_start as usize).filter(|c| *c == '\n').count() as u32;
        assert_eq!(s.line_start, Some(before + 1));
    }
    assert!(txt.segments.iter().all(|s| s.boxes.is_empty()), "a text file has no pages to point at");
    assert!(pdf.segments.iter().all(|s| !s.boxes.is_empty()));
}

#[test]
fn ocr_words_give_boxes_split_among_their_characters() {
    let bytes = std::fs::read(fixture_path("scanned-text-page.pdf")).unwrap();
    struct Words;
    impl crate::PageOcr for Words {
        fn recognize(&self, _pdf: &[u8], _page: u32, _size: Option<&crate::PageSize>) -> Result<OcrPage, crate::OcrError> {
            let w = |text: &str, line, x0: f32| OcrWord {
                text: text.into(),
                paragraph: 1,
                line,
                rect: Some(Rect { x0, y0: 10.0 * line as f32, x1: x0 + 6.0 * text.chars().count() as f32, y1: 10.0 * line as f32 + 8.0 }),
            };
            Ok(OcrPage { words: vec![w("Lợi", 1, 50.0), w("nhuận", 1, 72.0), w("gộp", 2, 50.0)] })
        }
    }
    let doc = parse_with_ocr(&bytes, "application/pdf", "s.pdf", &Limits::default(), Some(&Words)).unwrap();
    let (boxes, _) = boxes_of(&doc, "nhuận\ngộp");
    assert_eq!(boxes.len(), 2);
    assert_eq!((boxes[0].page_idx, boxes[0].rect.x0, boxes[0].rect.x1), (1, 72.0, 102.0));
    assert_eq!((boxes[1].rect.x0, boxes[1].rect.x1, boxes[1].rect.y0), (50.0, 68.0, 20.0));
    let (part, _) = boxes_of(&doc, "uận");
    assert_eq!((part[0].rect.x0, part[0].rect.x1), (84.0, 102.0), "a word's box is split evenly among its characters");
}

#[test]
fn document_ai_tokens_give_boxes_in_the_page_unit() {
    let text = "Doanh thu tăng\n12,4%.\n";
    let token = |a: u32, b: u32, x0: f32, x1: f32, y0: f32, y1: f32| {
        serde_json::json!({"layout": {"textAnchor": {"textSegments": [{"startIndex": a.to_string(), "endIndex": b.to_string()}]},
            "boundingPoly": {"normalizedVertices": [{"x": x0, "y": y0}, {"x": x1, "y": y0}, {"x": x1, "y": y1}, {"x": x0, "y": y1}]}}})
    };
    let json = serde_json::json!({
        "text": text,
        "pages": [{
            "dimension": {"width": 1000, "height": 2000, "unit": "pixels"},
            "paragraphs": [{"layout": {"textAnchor": {"textSegments": [{"endIndex": "22"}]}}}],
            "tokens": [token(0, 6, 0.1, 0.2, 0.1, 0.11), token(6, 10, 0.21, 0.25, 0.1, 0.11), token(10, 15, 0.26, 0.31, 0.1, 0.11),
                       token(15, 22, 0.1, 0.16, 0.12, 0.13)]
        }]
    });
    let doc = parse(json.to_string().as_bytes(), "application/json", "ocr.json", &Limits::default()).unwrap();
    assert_eq!((doc.pages[0].width, doc.pages[0].height, doc.pages[0].unit.as_str()), (1000.0, 2000.0, "pixels"));
    let (boxes, _) = boxes_of(&doc, "thu tăng\n12,4%.");
    assert_eq!(boxes.len(), 2);
    let r = boxes[0].rect;
    assert!(close(r.x0, 210.0) && close(r.x1, 310.0) && close(r.y0, 200.0) && close(r.y1, 220.0), "{r:?}");
    let r = boxes[1].rect;
    assert!(close(r.x0, 100.0) && close(r.x1, 160.0) && close(r.y0, 240.0), "{r:?}");
}
