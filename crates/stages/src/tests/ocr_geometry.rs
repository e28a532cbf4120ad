//! A scanned page through real OCR (poppler + tesseract, installed by
//! `scripts/stack`): the boxes of a cited span must enclose exactly the ink
//! of that text, checked by rendering the page independently.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::ocr::TesseractOcr;
use rag_docparse::geometry::span_boxes;
use rag_docparse::{parse_with_ocr, Limits, PageOcr, Rect};

/// Renders one page as an 8-bit grey PGM at `dpi`: (width, height, pixels).
fn render(pdf: &std::path::Path, page: u32, dpi: u32) -> (usize, usize, Vec<u8>) {
    let dir = std::env::temp_dir().join(format!("rag-ocr-geometry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = (page + 1).to_string();
    let ok = Command::new("pdftoppm")
        .args(["-f", &p, "-l", &p, "-r", &dpi.to_string(), "-gray", "-singlefile"])
        .arg(pdf)
        .arg(dir.join("page"))
        .status()
        .expect("pdftoppm (Debian poppler-utils)");
    assert!(ok.success());
    let data = std::fs::read(dir.join("page.pgm")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    // P5 header: magic, width, height, maxval, one whitespace byte.
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        while data[at].is_ascii_whitespace() {
            at += 1;
        }
        let start = at;
        while !data[at].is_ascii_whitespace() {
            at += 1;
        }
        fields.push(String::from_utf8_lossy(&data[start..at]).to_string());
    }
    assert_eq!(fields[0], "P5");
    let (w, h): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    (w, h, data[at + 1..at + 1 + w * h].to_vec())
}

/// The bounding box, in points, of the dark pixels inside `area` (points).
fn ink(img: &(usize, usize, Vec<u8>), dpi: u32, area: Rect) -> Option<Rect> {
    let s = dpi as f32 / 72.0;
    let (w, h, px) = img;
    let (x0, x1) = ((area.x0 * s).max(0.0) as usize, ((area.x1 * s) as usize).min(*w));
    let (y0, y1) = ((area.y0 * s).max(0.0) as usize, ((area.y1 * s) as usize).min(*h));
    let mut found: Option<(usize, usize, usize, usize)> = None;
    for y in y0..y1 {
        for x in x0..x1 {
            if px[y * w + x] < 128 {
                let f = found.get_or_insert((x, y, x, y));
                *f = (f.0.min(x), f.1.min(y), f.2.max(x), f.3.max(y));
            }
        }
    }
    found.map(|(a, b, c, d)| Rect { x0: a as f32 / s, y0: b as f32 / s, x1: (c + 1) as f32 / s, y1: (d + 1) as f32 / s })
}

#[test]
fn ocr_boxes_enclose_exactly_the_ink_of_the_cited_words() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docparse/tests/fixtures/scanned-text-page.pdf");
    let bytes = std::fs::read(&path).unwrap();
    let ocr =
        TesseractOcr::detect("vie+eng", 300, Duration::from_secs(60)).expect("tesseract with vie or eng (scripts/stack installs them)");
    let doc = parse_with_ocr(&bytes, "application/pdf", "scan.pdf", &Limits::default(), Some(&ocr as &dyn PageOcr)).unwrap();
    assert_eq!(doc.ocr_pages, vec![1]);
    let img = render(&path, 1, 300);
    for needle in ["Revenue grew", "312 tỷ đồng."] {
        let byte = doc.full_text.find(needle).unwrap_or_else(|| panic!("OCR text lacks {needle:?}: {:?}", doc.full_text));
        let start = doc.full_text[..byte].chars().count() as u64;
        let boxes = span_boxes(doc.segments.iter().flat_map(|s| &s.boxes), start, start + needle.chars().count() as u64);
        assert_eq!(boxes.len(), 1, "{needle:?}: one line, one box");
        let b = boxes[0].rect;
        assert_eq!(boxes[0].page_idx, 1);
        // Everything dark inside the box, with a margin of 1.5 pt (less
        // than a space at this size), is exactly the box.
        let m = 1.5;
        let found = ink(&img, 300, Rect { x0: b.x0 - m, y0: b.y0 - m, x1: b.x1 + m, y1: b.y1 + m }).expect("ink in the box");
        for (ours, theirs) in [(b.x0, found.x0), (b.y0, found.y0), (b.x1, found.x1), (b.y1, found.y1)] {
            assert!((ours - theirs).abs() <= 1.0, "{needle:?}: box {b:?}, ink {found:?}");
        }
    }
}

/// The scanned page's picture as an image file of its own: page 2 at
/// 300 dpi, cropped to its text (pixels 0..2480 × 0..1200 of the page).
fn scan_as_png(pdf: &std::path::Path) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("rag-ocr-image-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = Command::new("pdftoppm")
        .args(["-f", "2", "-l", "2", "-r", "300", "-x", "0", "-y", "0", "-W", "2480", "-H", "1200", "-gray", "-png", "-singlefile"])
        .arg(pdf)
        .arg(dir.join("scan"))
        .status()
        .expect("pdftoppm (Debian poppler-utils)");
    assert!(ok.success());
    let png = std::fs::read(dir.join("scan.png")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    png
}

#[test]
fn an_image_is_read_by_ocr_with_boxes_on_its_own_pixels() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docparse/tests/fixtures/scanned-text-page.pdf");
    let png = scan_as_png(&path);
    let ocr =
        TesseractOcr::detect("vie+eng", 300, Duration::from_secs(60)).expect("tesseract with vie or eng (scripts/stack installs them)");
    let started = std::time::Instant::now();
    let doc = parse_with_ocr(&png, "image/png", "scan.png", &Limits::default(), Some(&ocr as &dyn PageOcr)).unwrap();
    eprintln!("OCR of a 2480 × 1200 image: {:.2} s", started.elapsed().as_secs_f32());
    assert_eq!((doc.page_count, doc.ocr_pages.clone()), (1, vec![0]));
    let page = &doc.pages[0];
    assert_eq!((page.width, page.height, page.unit.as_str()), (2480.0, 1200.0, "px"));
    // The same pixels, from the page rendered whole at 300 dpi (the crop is
    // its top-left corner): `ink` at "72 dpi" works in pixels.
    let img = render(&path, 1, 300);
    for needle in ["Revenue grew", "312 tỷ đồng."] {
        let byte = doc.full_text.find(needle).unwrap_or_else(|| panic!("OCR text lacks {needle:?}: {:?}", doc.full_text));
        let start = doc.full_text[..byte].chars().count() as u64;
        let boxes = span_boxes(doc.segments.iter().flat_map(|s| &s.boxes), start, start + needle.chars().count() as u64);
        assert_eq!(boxes.len(), 1, "{needle:?}: one line, one box");
        let b = boxes[0].rect;
        assert_eq!(boxes[0].page_idx, 0);
        // A margin of 6 px (1.5 pt at 300 dpi), within 4 px (1 pt).
        let m = 6.0;
        let found = ink(&img, 72, Rect { x0: b.x0 - m, y0: b.y0 - m, x1: b.x1 + m, y1: b.y1 + m }).expect("ink in the box");
        for (ours, theirs) in [(b.x0, found.x0), (b.y0, found.y0), (b.x1, found.x1), (b.y1, found.y1)] {
            assert!((ours - theirs).abs() <= 4.0, "{needle:?}: box {b:?}, ink {found:?}");
        }
    }
}
