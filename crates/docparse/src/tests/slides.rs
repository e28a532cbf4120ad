//! Presentations: each slide a page, its text in reading order (titles,
//! the shape tree, tables with their header, then the notes); poison
//! presentations refused with their codes.

use super::slide_inputs::*;
use crate::segments::char_slice;
use crate::{detect_format, parse, sniff, Format, Limits, ParsedDocument};

fn assert_tiles(doc: &ParsedDocument) {
    let mut at = 0;
    for s in &doc.segments {
        assert_eq!(s.char_start, at);
        assert_eq!(char_slice(&doc.full_text, s.char_start, s.char_end), s.text);
        at = s.char_end;
    }
    assert_eq!(at, doc.full_text.chars().count() as u64);
}

/// Each segment's text (without its separator) and its page.
fn texts(doc: &ParsedDocument) -> Vec<(u32, String)> {
    doc.segments.iter().map(|s| (s.page_idx, s.text.trim_end().to_string())).collect()
}

fn code(bytes: &[u8], content_type: &str, name: &str) -> String {
    match parse(bytes, content_type, name, &Limits::default()) {
        Ok(doc) => panic!("{name} parsed: {:?}", doc.full_text),
        Err(e) => e.code().to_string(),
    }
}

/// What the sales deck reads as, slide by slide.
fn deck_text() -> Vec<(u32, String)> {
    [
        (0, "Kết quả kinh doanh quý 3"),
        (0, "Doanh thu quý 3 tăng 18% so với cùng kỳ."),
        (0, "Khách hàng mới: 1.240 doanh nghiệp."),
        (0, "Nhấn mạnh khách hàng doanh nghiệp ở miền Trung."),
        (1, "Doanh thu theo khu vực"),
        (1, "Khu vực | Doanh thu (tỷ đồng) | Tăng trưởng"),
        (1, "Khu vực: Miền Bắc; Doanh thu (tỷ đồng): 412,5; Tăng trưởng: 12%"),
        (1, "Khu vực: Miền Nam; Doanh thu (tỷ đồng): 538,1; Tăng trưởng: 21%"),
        (2, "Kế hoạch"),
        (2, "Kế hoạch quý 4"),
        (2, "Mở văn phòng tại Đà Nẵng vào tháng 11."),
        (2, "Ngân sách văn phòng Đà Nẵng: 3,2 tỷ đồng."),
        (2, "Người phụ trách: chị Lan."),
    ]
    .into_iter()
    .map(|(p, t)| (p, t.to_string()))
    .collect()
}

#[test]
fn pptx_slides_read_title_first_then_the_shape_tree_then_tables_with_headers_then_notes() {
    let doc = parse(&pptx(&sales_deck()), PPTX, "ban-hang.pptx", &Limits::default()).unwrap();
    assert_eq!(doc.format, Format::Pptx);
    assert_eq!(doc.page_count, 3);
    assert!(doc.pages.is_empty(), "slides have no page boxes");
    assert_eq!(texts(&doc), deck_text());
    assert!(doc.pages_without_text.is_empty());
    assert_tiles(&doc);
    // Each slide a section of its own (for the chunker), said in the
    // segments' JSON only for slides.
    assert!(doc.segments.iter().all(|s| s.slide));
    assert!(serde_json::to_string(&doc.segments[0]).unwrap().contains(r#""slide":true"#));
    let text = parse(b"one\n\ntwo", "text/plain", "a.txt", &Limits::default()).unwrap();
    assert!(text.segments.iter().all(|s| !s.slide));
    assert!(!serde_json::to_string(&text.segments[0]).unwrap().contains("slide"));
    // The slide numbers (a placeholder on the slide and on the notes page)
    // are the slides' chrome, not their text.
    assert!(!doc.segments.iter().any(|s| s.text.trim() == "1" || s.text.trim() == "3"), "{:?}", texts(&doc));
}

#[test]
fn pptx_slides_follow_sld_id_lst_not_their_part_names() {
    // Presentation order: the deck's slides stored in slide3.xml,
    // slide1.xml, slide2.xml (the archive holds them in name order).
    let doc = parse(&pptx_in_parts(&sales_deck(), &[3, 1, 2]), PPTX, "ban-hang.pptx", &Limits::default()).unwrap();
    assert_eq!(texts(&doc), deck_text());
    // Ten slides: slide10.xml sorts before slide2.xml by name.
    let titles: Vec<String> = (1..=10).map(|i| format!("Trang chiếu số {i}")).collect();
    let slides: Vec<Slide<'_>> = titles.iter().map(|t| Slide { shapes: vec![Shape::Title(t)], notes: vec![] }).collect();
    let doc = parse(&pptx(&slides), PPTX, "muoi.pptx", &Limits::default()).unwrap();
    let got: Vec<(u32, String)> = texts(&doc);
    let want: Vec<(u32, String)> = titles.iter().enumerate().map(|(i, t)| (i as u32, t.clone())).collect();
    assert_eq!(got, want);
}

#[test]
fn a_slide_without_text_is_a_page_without_text_and_line_breaks_stay() {
    let slides = vec![
        Slide { shapes: vec![Shape::Title("Mở đầu"), Shape::Body(vec!["dòng một\ndòng hai"])], notes: vec![] },
        Slide { shapes: vec![Shape::Picture], notes: vec![] },
        Slide { shapes: vec![Shape::TextBox("Kết thúc & cảm ơn <3")], notes: vec![] },
    ];
    let doc = parse(&pptx(&slides), PPTX, "a.pptx", &Limits::default()).unwrap();
    assert_eq!(doc.page_count, 3);
    assert_eq!(doc.pages_without_text, vec![1]);
    let want: Vec<(u32, String)> =
        [(0, "Mở đầu"), (0, "dòng một\ndòng hai"), (2, "Kết thúc & cảm ơn <3")].into_iter().map(|(p, t)| (p, t.to_string())).collect();
    assert_eq!(texts(&doc), want);
}

#[test]
fn odp_reads_like_pptx() {
    let doc = parse(&odp(&sales_deck()), ODP, "ban-hang.odp", &Limits::default()).unwrap();
    assert_eq!(doc.format, Format::Odp);
    assert_eq!(doc.page_count, 3);
    assert_eq!(texts(&doc), deck_text());
    assert_tiles(&doc);
}

#[test]
fn presentation_types_and_names_are_detected_and_sniffed() {
    assert_eq!(detect_format(PPTX, "x"), Some(Format::Pptx));
    assert_eq!(detect_format(ODP, "x"), Some(Format::Odp));
    assert_eq!(detect_format("application/octet-stream", "Báo cáo.PPTX"), Some(Format::Pptx));
    assert_eq!(detect_format("", "deck.odp"), Some(Format::Odp));
    assert_eq!(detect_format("application/octet-stream", "old.ppt"), None, "PowerPoint 97-2003 is not read");
    assert!(Format::ALL.contains(&Format::Pptx) && Format::ALL.contains(&Format::Odp));
    assert!(sniff(Format::Pptx, "a.pptx", &pptx(&sales_deck())[..64]).is_ok());
    assert!(sniff(Format::Pptx, "a.pptx", &encrypted_pptx()[..64]).is_ok(), "let through, so the parser says it is encrypted");
    assert!(sniff(Format::Pptx, "a.pptx", b"%PDF-1.7").is_err());
    assert!(sniff(Format::Odp, "a.odp", &odp(&sales_deck())[..64]).is_ok());
    assert!(sniff(Format::Odp, "a.odp", &encrypted_pptx()[..64]).is_err());
}

#[test]
fn poison_presentations_are_refused_with_their_codes() {
    assert_eq!(code(&encrypted_pptx(), PPTX, "khoa.pptx"), "encrypted_presentation");
    assert_eq!(code(&truncated_pptx(), PPTX, "cat.pptx"), "corrupt_presentation");
    assert_eq!(code(b"PK\x03\x04 not really a zip", PPTX, "gia.pptx"), "corrupt_presentation");
    assert_eq!(code(&pictures_only_pptx(), PPTX, "anh.pptx"), "no_text");
    assert_eq!(code(&pptx(&[]), PPTX, "rong.pptx"), "no_text");
    // A PowerPoint 97-2003 file renamed: an OLE file without an encrypted
    // package.
    let mut ppt = encrypted_pptx();
    let name: Vec<u8> = "EncryptedPackage".encode_utf16().flat_map(u16::to_le_bytes).collect();
    let at = ppt.windows(name.len()).position(|w| w == name.as_slice()).unwrap();
    let other: Vec<u8> = "PowerPoint Docu\0".encode_utf16().flat_map(u16::to_le_bytes).collect();
    ppt[at..at + name.len()].copy_from_slice(&other);
    let err = parse(&ppt, PPTX, "cu.pptx", &Limits::default()).unwrap_err();
    assert_eq!(err.code(), "corrupt_presentation");
    assert!(err.to_string().contains(".ppt"), "{err}");
    // A slide the list names but the archive lacks.
    let mut parts = pptx_parts(&sales_deck(), &[1, 2, 3]);
    parts.retain(|(n, _)| n != "ppt/slides/slide2.xml");
    let err = parse(&zip_parts(parts), PPTX, "thieu.pptx", &Limits::default()).unwrap_err();
    assert_eq!(err.code(), "corrupt_presentation");
    assert!(err.to_string().contains("slide 2"), "{err}");
    // Broken XML in a slide.
    let mut parts = pptx_parts(&sales_deck(), &[1, 2, 3]);
    for (n, body) in &mut parts {
        if n == "ppt/slides/slide3.xml" {
            body.truncate(body.len() - 40);
            body.extend_from_slice(b"</p:wrong></p:sld>");
        }
    }
    assert_eq!(code(&zip_parts(parts), PPTX, "hong.pptx"), "corrupt_presentation");
    // An ODP whose parts are encrypted says so.
    let plain = odp(&sales_deck());
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(plain.as_slice())).unwrap();
    let mut parts = Vec::new();
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).unwrap();
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut body).unwrap();
        if f.name() == "META-INF/manifest.xml" {
            body = String::from_utf8(body)
                .unwrap()
                .replace(
                    r#"manifest:media-type="text/xml"/>"#,
                    r#"manifest:media-type="text/xml"><manifest:encryption-data/></manifest:file-entry>"#,
                )
                .into_bytes();
        }
        parts.push((f.name().to_string(), body));
    }
    assert_eq!(code(&zip_parts(parts), ODP, "khoa.odp"), "encrypted_presentation");
}

#[test]
fn a_pptx_zip_bomb_is_refused_before_it_inflates() {
    let limits = Limits { max_unzipped_bytes: 16 << 20, ..Limits::default() };
    let bomb = pptx_bomb(64 << 20);
    assert!(bomb.len() < 256 * 1024, "{} bytes", bomb.len());
    let err = parse(&bomb, PPTX, "bom.pptx", &limits).unwrap_err();
    assert_eq!(err.code(), "decompression_bomb", "{err}");
    // A slide within the ratio, over the archive's total.
    let total = Limits { max_unzipped_bytes: 2 << 20, ..Limits::default() };
    let err = parse(&pptx_bomb(4 << 20), PPTX, "bom.pptx", &total).unwrap_err();
    assert_eq!(err.code(), "decompression_bomb", "{err}");
    // The archive lies about its sizes: what inflates is what counts.
    let mut lying = pptx_bomb(64 << 20);
    lie_about_sizes(&mut lying);
    let err = parse(&lying, PPTX, "noi-doi.pptx", &limits).unwrap_err();
    assert_eq!(err.code(), "decompression_bomb", "{err}");
    // Padding within the bounds is harmless.
    let doc = parse(&pptx_bomb(512 << 10), PPTX, "ok.pptx", &Limits::default()).unwrap();
    assert_eq!(texts(&doc), vec![(0, "Bom".to_string())]);
}

#[test]
fn a_presentation_past_the_page_limit_is_refused_from_its_slide_list() {
    let titles: Vec<String> = (1..=5).map(|i| format!("Trang {i}")).collect();
    let slides: Vec<Slide<'_>> = titles.iter().map(|t| Slide { shapes: vec![Shape::Title(t)], notes: vec![] }).collect();
    let limits = Limits { max_pages: 4, ..Limits::default() };
    assert_eq!(parse(&pptx(&slides), PPTX, "a.pptx", &limits).unwrap_err().code(), "too_many_pages");
    assert_eq!(parse(&odp(&slides), ODP, "a.odp", &limits).unwrap_err().code(), "too_many_pages");
}

fn zip_parts(parts: Vec<(String, Vec<u8>)>) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, body) in parts {
        zip.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
        zip.write_all(&body).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// Rewrites every entry's declared uncompressed size, in the local headers
/// and the central directory, to 1 KiB (walking the headers, so no byte of
/// compressed data is touched).
fn lie_about_sizes(zip: &mut [u8]) {
    let u16_at = |z: &[u8], at: usize| u16::from_le_bytes([z[at], z[at + 1]]) as usize;
    let u32_at = |z: &[u8], at: usize| u32::from_le_bytes([z[at], z[at + 1], z[at + 2], z[at + 3]]) as usize;
    let mut i = 0;
    while zip[i..i + 4] == *b"PK\x03\x04" {
        zip[i + 22..i + 26].copy_from_slice(&1024u32.to_le_bytes());
        i += 30 + u16_at(zip, i + 26) + u16_at(zip, i + 28) + u32_at(zip, i + 18);
    }
    let mut entries = 0;
    while zip[i..i + 4] == *b"PK\x01\x02" {
        zip[i + 24..i + 28].copy_from_slice(&1024u32.to_le_bytes());
        i += 46 + u16_at(zip, i + 28) + u16_at(zip, i + 30) + u16_at(zip, i + 32);
        entries += 1;
    }
    assert!(entries > 3, "walked the central directory");
}

#[test]
fn a_five_hundred_slide_deck_parses_in_bounded_time() {
    let texts: Vec<(String, Vec<String>)> = (0..500)
        .map(|i| {
            (format!("Trang chiếu {i}"), (0..8).map(|j| format!("Ý {j} của trang {i}: doanh thu tăng {j}% so với kỳ trước.")).collect())
        })
        .collect();
    let rows: Vec<Vec<String>> = (0..10).map(|r| (0..4).map(|c| format!("ô {r}-{c}")).collect()).collect();
    let deck: Vec<Slide<'_>> = texts
        .iter()
        .map(|(title, body)| Slide {
            shapes: vec![
                Shape::Title(title),
                Shape::Body(body.iter().map(String::as_str).collect()),
                Shape::Table(rows.iter().map(|r| r.iter().map(String::as_str).collect()).collect()),
            ],
            notes: vec!["Ghi chú của người trình bày."],
        })
        .collect();
    let bytes = pptx(&deck);
    let started = std::time::Instant::now();
    let doc = parse(&bytes, PPTX, "dai.pptx", &Limits::default()).unwrap();
    let took = started.elapsed();
    assert_eq!(doc.page_count, 500);
    assert_eq!(doc.segments.len(), 500 * (1 + 8 + 10 + 1));
    eprintln!("500 slides (8 paragraphs, a 10 x 4 table, notes each): PPTX ({} KiB) {took:?}", bytes.len() / 1024);
    // Generous: a debug build on a busy 2-core machine.
    assert!(took.as_secs() < 30);
}

/// Reads every picture it is shown as two lines, `Doanh thu quý 3` and
/// `<W>x<H>` (the picture's size as shown, upright), with boxes in its
/// pixels, and remembers the sizes.
#[derive(Default)]
struct PictureOcr {
    seen: std::sync::Mutex<Vec<(u32, u32)>>,
}

impl crate::PageOcr for PictureOcr {
    fn recognize(&self, _pdf: &[u8], _page: u32, _size: Option<&crate::PageSize>) -> Result<crate::OcrPage, crate::OcrError> {
        panic!("a slide is not a PDF")
    }

    fn recognize_image(&self, img: &crate::raster::GrayImage) -> Result<crate::OcrPage, crate::OcrError> {
        self.seen.lock().unwrap().push((img.width, img.height));
        let word = |text: String, line: u32, x: f32| crate::OcrWord {
            text,
            paragraph: 1,
            line,
            rect: Some(crate::Rect { x0: x, y0: line as f32 * 10.0, x1: x + 8.0, y1: line as f32 * 10.0 + 8.0 }),
        };
        Ok(crate::OcrPage {
            words: vec![
                word("Doanh".into(), 1, 0.0),
                word("thu".into(), 1, 10.0),
                word("quý".into(), 1, 20.0),
                word("3".into(), 1, 30.0),
                word(format!("{}x{}", img.width, img.height), 2, 0.0),
            ],
        })
    }
}

#[test]
fn a_slide_that_is_one_picture_is_read_by_ocr_as_text_without_boxes() {
    let img = super::image_inputs::png(&super::image_inputs::gray(60, 20, |x, y| x > 5 && x < 50 && y > 5 && y < 12));
    // The same picture stored sideways, its EXIF saying "turn it".
    let sideways = super::image_inputs::with_exif(
        super::image_inputs::png(&super::image_inputs::stored_for_orientation_6(&super::image_inputs::gray(60, 20, |_, y| y == 3))),
        6,
    );
    let slides = vec![
        Slide { shapes: vec![Shape::Title("Mở đầu")], notes: vec![] },
        // One picture and a slide number (chrome): read; the notes after.
        Slide { shapes: vec![Shape::Image(&img), Shape::SlideNumber("2")], notes: vec!["Ghi chú của ảnh."] },
        // A picture beside text: not read.
        Slide { shapes: vec![Shape::Image(&img), Shape::TextBox("Chú thích")], notes: vec![] },
        // Two pictures: not read.
        Slide { shapes: vec![Shape::Image(&img), Shape::Image(&img)], notes: vec![] },
        // In a group, sideways: read upright.
        Slide { shapes: vec![Shape::Group(vec![Shape::Image(&sideways)])], notes: vec![] },
    ];
    for (bytes, ct, name) in [(pptx(&slides), PPTX, "anh.pptx"), (odp(&slides), ODP, "anh.odp")] {
        let ocr = PictureOcr::default();
        let doc = crate::parse_with_ocr(&bytes, ct, name, &Limits::default(), Some(&ocr)).unwrap();
        assert_eq!(*ocr.seen.lock().unwrap(), vec![(60, 20), (60, 20)], "{name}: the lone pictures, upright");
        assert_eq!(doc.ocr_pages, vec![1, 4], "{name}");
        assert_eq!(doc.pages_without_text, vec![3], "{name}");
        let want: Vec<(u32, String)> =
            [(0, "Mở đầu"), (1, "Doanh thu quý 3\n60x20"), (1, "Ghi chú của ảnh."), (2, "Chú thích"), (4, "Doanh thu quý 3\n60x20")]
                .into_iter()
                .map(|(p, t)| (p, t.to_string()))
                .collect();
        assert_eq!(texts(&doc), want, "{name}");
        assert_tiles(&doc);
        // Text only: the boxes would be in the picture's pixels, not on
        // the slide; the lines are placed.
        assert!(doc.segments.iter().all(|s| s.boxes.is_empty()), "{name}");
        assert!(doc.pages.is_empty(), "{name}");
        let read = doc.segments.iter().find(|s| s.page_idx == 1).unwrap();
        assert_eq!((read.line_start, read.line_end), (Some(3), Some(4)), "{name}: its lines in the raw text");
        assert!(read.slide, "{name}");

        // Without OCR those slides stay without text (the second has its
        // notes).
        let plain = parse(&bytes, ct, name, &Limits::default()).unwrap();
        assert_eq!(plain.pages_without_text, vec![3, 4], "{name}");
    }
}

#[test]
fn a_slide_picture_shares_the_ocr_bounds_and_a_bad_one_fails_its_slide_only() {
    let img = super::image_inputs::png(&super::image_inputs::gray(30, 10, |x, _| x < 3));
    let bomb = super::image_inputs::png_bomb(20_000);
    let slides = vec![
        Slide { shapes: vec![Shape::Image(&bomb)], notes: vec![] },
        Slide { shapes: vec![Shape::Image(b"not a picture at all")], notes: vec![] },
        Slide { shapes: vec![Shape::Image(&img)], notes: vec![] },
        Slide { shapes: vec![Shape::Image(&img)], notes: vec![] },
    ];
    let bytes = pptx(&slides);
    let ocr = PictureOcr::default();
    // OCR's page bound counts slides as it counts PDF pages and images.
    let limits = Limits { ocr_max_pages: 3, ..Limits::default() };
    let doc = crate::parse_with_ocr(&bytes, PPTX, "anh.pptx", &limits, Some(&ocr)).unwrap();
    assert_eq!(doc.ocr_pages, vec![2]);
    assert_eq!(doc.pages_without_text, vec![0, 1, 3]);
    let failures: Vec<(u32, &str)> = doc.ocr_failures.iter().map(|(p, why)| (*p, why.as_str())).collect();
    assert_eq!(failures.len(), 3, "{failures:?}");
    assert!(failures[0].0 == 0 && failures[0].1.contains("20000 × 20000 pixels"), "refused from its header: {failures:?}");
    assert!(failures[1].0 == 1 && failures[1].1.contains("not a PNG, JPEG, TIFF or WebP"), "{failures:?}");
    assert!(failures[2].0 == 3 && failures[2].1.contains("at most 3 pages"), "{failures:?}");
    assert_eq!(*ocr.seen.lock().unwrap(), vec![(30, 10)]);
}
